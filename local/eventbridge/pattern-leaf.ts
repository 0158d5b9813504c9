/**
 * One value array of an event pattern (`"state": ["running", {"prefix": "init"}]`) compiled to a
 * predicate over the field's leaf values. Semantics follow AWS EventBridge / aws/event-ruler:
 * the array is an OR; when the event field is an array, any element may satisfy it; string
 * operators only match strings, `numeric` only numbers; `anything-but` needs the field present.
 */
import { compileCidr } from "./cidr.ts";
import { compileWildcard, type StringTest } from "./wildcard.ts";

export type JsonPrimitive = string | number | boolean | null;

/** A compiled value array. `absentOk`: an `{"exists": false}` is among the alternatives. */
export interface LeafMatcher {
  readonly absentOk: boolean;
  readonly presentOk: boolean;
  readonly test: (value: JsonPrimitive) => boolean;
  /**
   * For AWS's complexity limit: each `wildcard` value alone, each anything-but `wildcard` list
   * together (event-ruler compiles such a list as one pattern).
   */
  readonly wildcards: readonly (readonly string[])[];
}

type Fail = (reason: string) => never;
type Test = (value: JsonPrimitive) => boolean;

/** Names that are operators, not fields; they may not be used as field names inside `$or`. */
export const OPERATOR_NAMES: ReadonlySet<string> = new Set([
  "prefix",
  "suffix",
  "equals-ignore-case",
  "wildcard",
  "anything-but",
  "numeric",
  "exists",
  "cidr",
]);

/** AWS compares numbers only within ±5e9 (aws/event-ruler ComparableNumber). */
const NUMERIC_LIMIT = 5.0e9;

export function compileLeaf(values: readonly unknown[], fail: Fail): LeafMatcher {
  if (values.length === 0) fail("Empty arrays are not allowed");
  const tests: Test[] = [];
  const wildcards: string[][] = [];
  let absentOk = false;
  let presentOk = false;
  for (const value of values) {
    if (value === null || typeof value === "string" || typeof value === "boolean") {
      tests.push((v) => v === value);
    } else if (typeof value === "number") {
      if (!Number.isFinite(value)) fail(`Match value ${value} is not a number`);
      tests.push((v) => v === value);
    } else if (isPlainObject(value)) {
      const exists = existsOperand(value, fail);
      if (exists === true) presentOk = true;
      else if (exists === false) absentOk = true;
      else tests.push(compileOperator(value, fail, wildcards));
    } else {
      fail("Match value must be String, number, true, false, or null");
    }
  }
  const test = combine(tests);
  return { absentOk, presentOk, test, wildcards };
}

function combine(tests: readonly Test[]): Test {
  if (tests.length === 0) return () => false;
  if (tests.length === 1) return tests[0]!;
  return (v) => {
    for (const t of tests) if (t(v)) return true;
    return false;
  };
}

function existsOperand(expr: Record<string, unknown>, fail: Fail): boolean | undefined {
  if (!Object.hasOwn(expr, "exists")) return undefined;
  onlyKey(expr, "exists", fail);
  if (typeof expr.exists !== "boolean") fail("exists match pattern must be either true or false.");
  return expr.exists;
}

function compileOperator(expr: Record<string, unknown>, fail: Fail, wildcards: string[][]): Test {
  const keys = Object.keys(expr);
  if (keys.length === 0) fail("Match expression name not found (empty object in value array)");
  if (keys.length > 1) fail(`Only one key allowed in match expression, got ${keys.join(", ")}`);
  const op = keys[0]!;
  const arg = expr[op];
  switch (op) {
    case "prefix":
      return stringsOnly(affix("prefix", arg, fail));
    case "suffix":
      return stringsOnly(affix("suffix", arg, fail));
    case "equals-ignore-case": {
      const folded = fold(requireString(op, arg, fail));
      return stringsOnly((s) => fold(s) === folded);
    }
    case "wildcard": {
      const value = requireString(op, arg, fail);
      wildcards.push([value]);
      return stringsOnly(compileWildcard(value, fail));
    }
    case "cidr":
      return stringsOnly(compileCidr(requireString(op, arg, fail), fail));
    case "numeric":
      return compileNumeric(arg, fail);
    case "anything-but":
      return compileAnythingBut(arg, fail, wildcards);
    default:
      return fail(`Unrecognized match type ${op}`);
  }
}

function stringsOnly(test: StringTest): Test {
  return (v) => typeof v === "string" && test(v);
}

/** `{"prefix": "x"}` or `{"prefix": {"equals-ignore-case": "x"}}`, same for suffix. */
function affix(op: "prefix" | "suffix", arg: unknown, fail: Fail): StringTest {
  if (isPlainObject(arg)) {
    onlyKey(
      arg,
      "equals-ignore-case",
      fail,
      `${op} match pattern must be a string or {"equals-ignore-case": string}`,
    );
    const needle = fold(requireString(`${op}/equals-ignore-case`, arg["equals-ignore-case"], fail));
    return op === "prefix" ? (s) => fold(s).startsWith(needle) : (s) => fold(s).endsWith(needle);
  }
  const needle = requireString(op, arg, fail);
  return op === "prefix" ? (s) => s.startsWith(needle) : (s) => s.endsWith(needle);
}

function compileAnythingBut(arg: unknown, fail: Fail, wildcards: string[][]): Test {
  if (typeof arg === "string") return (v) => v !== arg;
  if (typeof arg === "number") {
    checkNumber(arg, fail);
    return (v) => typeof v === "number" && v !== arg;
  }
  if (Array.isArray(arg)) {
    if (arg.length === 0) fail("Value of anything-but must not be an empty array");
    if (arg.every((x) => typeof x === "string")) {
      const set = new Set<JsonPrimitive>(arg);
      return (v) => !set.has(v);
    }
    if (arg.every((x) => typeof x === "number")) {
      for (const n of arg) checkNumber(n, fail);
      const set = new Set<JsonPrimitive>(arg);
      return (v) => typeof v === "number" && !set.has(v);
    }
    if (arg.some((x) => x === null || typeof x === "boolean" || typeof x === "object")) {
      fail("Inside anything but list, start|null|boolean is not supported.");
    }
    return fail(
      "Inside anything but list, either all values are number or string, mixed type is not supported",
    );
  }
  if (isPlainObject(arg)) {
    const keys = Object.keys(arg);
    if (keys.length !== 1) fail("Only one key allowed in anything-but expression");
    const op = keys[0]!;
    const inner = arg[op];
    let excluded: StringTest;
    switch (op) {
      // Each takes one string or a list of strings (aws/event-ruler README: "Anything-but prefix
      // list", "... suffix list", "... wildcard list", "Anything-but-ignore-case list").
      case "prefix":
      case "suffix": {
        const needles = anythingButStrings(inner, "prefix/suffix match pattern must be a string", fail);
        if (needles.includes("")) fail("Null prefix/suffix not allowed");
        excluded =
          op === "prefix"
            ? (s) => needles.some((n) => s.startsWith(n))
            : (s) => needles.some((n) => s.endsWith(n));
        break;
      }
      case "equals-ignore-case": {
        const folded = new Set(
          anythingButStrings(
            inner,
            "Inside anything-but/equals-ignore-case list, number|start|null|boolean is not supported.",
            fail,
          ).map(fold),
        );
        excluded = (s) => folded.has(fold(s));
        break;
      }
      case "wildcard": {
        const values = anythingButStrings(inner, "wildcard match pattern must be a string", fail);
        const tests = values.map((w) => compileWildcard(w, fail));
        wildcards.push(values);
        excluded = (s) => tests.some((t) => t(s));
        break;
      }
      default:
        return fail(`Unsupported anything-but pattern: ${op}`);
    }
    // Non-string values are never excluded by a string operator, so they match.
    return (v) => typeof v !== "string" || !excluded(v);
  }
  return fail("Value of anything-but must be an array or single string/number value.");
}

/**
 * `numeric`: `["=", n]`, `["<" | "<=", n]`, `[">" | ">=", n]` or a range
 * `[">" | ">=", low, "<" | "<=", high]`, as in aws/event-ruler's JsonRuleCompiler.
 */
function compileNumeric(arg: unknown, fail: Fail): Test {
  if (!Array.isArray(arg)) fail("Value of numeric must be an array.");
  const terms: readonly unknown[] = arg;
  const op = terms[0];
  if (typeof op !== "string") fail(`Invalid member in numeric match: ${JSON.stringify(op)}`);
  const value = terms[1];
  if (typeof value !== "number") fail(`Value of ${op} must be numeric`);
  checkNumber(value, fail);
  const inRange = (v: JsonPrimitive): v is number =>
    typeof v === "number" && v >= -NUMERIC_LIMIT && v <= NUMERIC_LIMIT;
  switch (op) {
    case "=":
      if (terms.length > 2) fail("Too many elements in numeric expression");
      return (v) => inRange(v) && v === value;
    case "<":
      if (terms.length > 2) fail("Too many elements in numeric expression");
      return (v) => inRange(v) && v < value;
    case "<=":
      if (terms.length > 2) fail("Too many elements in numeric expression");
      return (v) => inRange(v) && v <= value;
    case ">":
    case ">=": {
      const low = value;
      const lowOpen = op === ">";
      if (terms.length === 2) return lowOpen ? (v) => inRange(v) && v > low : (v) => inRange(v) && v >= low;
      const topOp = terms[2];
      if (typeof topOp !== "string") fail(`Bad value in numeric range: ${JSON.stringify(topOp)}`);
      if (topOp !== "<" && topOp !== "<=") fail(`Bad numeric range operator: ${topOp}`);
      const high = terms[3];
      if (typeof high !== "number") fail(`Value of ${topOp} must be numeric`);
      checkNumber(high, fail);
      if (terms.length > 4) fail("Too many terms in numeric range expression");
      if (!(low < high)) fail(`Bottom must be less than top (${low} is not below ${high})`);
      const highOpen = topOp === "<";
      return (v) => inRange(v) && (lowOpen ? v > low : v >= low) && (highOpen ? v < high : v <= high);
    }
    default:
      return fail(`Unrecognized numeric range operator: ${op}`);
  }
}

function checkNumber(n: number, fail: Fail): void {
  if (!Number.isFinite(n) || n < -NUMERIC_LIMIT || n > NUMERIC_LIMIT) {
    fail(`Value ${n} must be between -5.0E9 and 5.0E9, inclusive`);
  }
}

function requireString(op: string, arg: unknown, fail: Fail): string {
  if (typeof arg !== "string") fail(`${op} match pattern must be a string`);
  return arg;
}

/**
 * The operand of anything-but's prefix / suffix / equals-ignore-case / wildcard: a string or a
 * list of them. Anything else is refused with event-ruler's message for that operator (`notString`).
 */
function anythingButStrings(arg: unknown, notString: string, fail: Fail): string[] {
  if (typeof arg === "string") return [arg];
  if (!Array.isArray(arg)) {
    // A number is named by the operator's own message; an object or a boolean is not a value at all.
    if (typeof arg === "number") fail(notString);
    return fail("Value of anything-but must be an array or single string/number value.");
  }
  // An empty list would exclude nothing; AWS's behaviour for it is not documented, so refuse it.
  if (arg.length === 0) fail("Value of anything-but must not be an empty array");
  for (const x of arg) if (typeof x !== "string") fail(notString);
  return arg as string[];
}

function onlyKey(obj: Record<string, unknown>, key: string, fail: Fail, message?: string): void {
  const keys = Object.keys(obj);
  if (keys.length !== 1 || keys[0] !== key) {
    fail(message ?? `Only one key allowed in match expression, got ${keys.join(", ")}`);
  }
}

function fold(s: string): string {
  return s.toLowerCase();
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
