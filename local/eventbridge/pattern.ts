/**
 * EventBridge event patterns: validation (the cases where AWS answers
 * `InvalidEventPatternException`) and content filtering.
 *
 * Semantics follow the AWS EventBridge User Guide ("Event patterns", "Content filtering",
 * "Arrays in event patterns", "Comparison operators") and aws/event-ruler, the library
 * EventBridge matches with:
 * - fields of an object are ANDed, the values of a field's array are ORed;
 * - a pattern field must be an object (descend) or a non-empty array (leaf);
 * - when the event holds an array, any element may match; an object sub-pattern must be matched
 *   by a single element (array-consistent matching, event-ruler's `rulesForJSONEvent`);
 * - `exists` works on leaf nodes only: an object-valued field counts as absent;
 * - `$or` holds two or more objects, each matched at the level where `$or` appears;
 * - a field is named by its path joined with dots, in patterns and events alike (event-ruler's
 *   "Compiled rules and JSON keys with dots"): `{"a.b": [1]}` and `{"a": {"b": [1]}}` are the
 *   same field, matching `{"a": {"b": 1}}` and `{"a.b": 1}` both. One path given twice is
 *   refused with event-ruler's message for it ("Path `a.b` cannot be allowed multiple times"):
 *   AWS documents nothing for it and event-ruler, by default, silently keeps the last, so a
 *   pattern that would mean something else on AWS never passes here;
 * - wildcards are limited by AWS's complexity measure (wildcard.ts, wildcardComplexity).
 */
import { InvalidEventPatternError } from "./errors.ts";
import { MAX_WILDCARD_COMPLEXITY, WILDCARD_TOO_COMPLEX, wildcardComplexity } from "./wildcard.ts";
import {
  compileLeaf,
  isPlainObject,
  OPERATOR_NAMES,
  type JsonPrimitive,
  type LeafMatcher,
} from "./pattern-leaf.ts";

export type EventPattern = Record<string, unknown>;

export interface CompiledEventPattern {
  /** The pattern as given (parsed when it was a string). */
  readonly pattern: EventPattern;
  matches(event: unknown): boolean;
}

interface ObjectMatcher {
  readonly fields: readonly FieldMatcher[];
  /** Each entry is one `$or`: at least one of its branches must match. */
  readonly ors: readonly (readonly ObjectMatcher[])[];
}

type FieldMatcher =
  | { readonly kind: "leaf"; readonly key: string; readonly leaf: LeafMatcher }
  | { readonly kind: "object"; readonly key: string; readonly object: ObjectMatcher };

/** Parses (when given as a JSON string) and compiles a pattern; throws InvalidEventPatternError. */
export function compileEventPattern(pattern: unknown): CompiledEventPattern {
  const parsed = parsePattern(pattern);
  const context: CompileContext = { wildcards: new Map() };
  const root = compileObject(parsed, "", false, context, new Set());
  // One byte machine per field path (event-ruler merges the same field across `$or` branches),
  // so the wildcards of a path are measured together.
  for (const [path, values] of context.wildcards) {
    if (wildcardComplexity(values) > MAX_WILDCARD_COMPLEXITY) {
      throw new InvalidEventPatternError(path, WILDCARD_TOO_COMPLEX);
    }
  }
  return { pattern: parsed, matches: (event) => matchObject(root, expandDottedKeys(event)) };
}

interface CompileContext {
  /** Every wildcard pattern (one value, or an anything-but list), by its field's flattened path. */
  readonly wildcards: Map<string, (readonly string[])[]>;
}

/** Throws InvalidEventPatternError with the reason and the path of the first problem found. */
export function validateEventPattern(pattern: unknown): void {
  compileEventPattern(pattern);
}

const compiledStrings = new Map<string, CompiledEventPattern>();
const COMPILED_STRINGS_MAX = 256;

/**
 * One-shot form. Patterns given as JSON strings are cached (they are immutable); objects are
 * compiled on every call, so hot paths should hold a `compileEventPattern` result instead.
 */
export function matchesEventPattern(pattern: unknown, event: unknown): boolean {
  if (typeof pattern !== "string") return compileEventPattern(pattern).matches(event);
  let compiled = compiledStrings.get(pattern);
  if (!compiled) {
    compiled = compileEventPattern(pattern);
    if (compiledStrings.size >= COMPILED_STRINGS_MAX) compiledStrings.clear();
    compiledStrings.set(pattern, compiled);
  }
  return compiled.matches(event);
}

function parsePattern(pattern: unknown): EventPattern {
  let value = pattern;
  if (typeof pattern === "string") {
    try {
      value = JSON.parse(pattern);
    } catch (err) {
      throw new InvalidEventPatternError("", `pattern is not valid JSON (${(err as Error).message})`);
    }
  }
  if (!isPlainObject(value)) throw new InvalidEventPatternError("", "Filter is not an object");
  return value;
}

/**
 * `used`: the flattened paths of the leaves already in this conjunction (an `$or` branch gets
 * its own copy), to refuse one path given twice.
 */
function compileObject(
  obj: Record<string, unknown>,
  path: string,
  insideOr: boolean,
  context: CompileContext,
  used: Set<string>,
): ObjectMatcher {
  const keys = Object.keys(obj);
  if (keys.length === 0) throw new InvalidEventPatternError(path, "Empty objects are not allowed");
  const fields: FieldMatcher[] = [];
  const ors: ObjectMatcher[][] = [];
  // Plain fields first, then `$or` (whose branches then see every plain field of this level).
  for (const key of [...keys.filter((k) => k !== "$or"), ...keys.filter((k) => k === "$or")]) {
    const value = obj[key];
    const here = path ? `${path}.${key}` : key;
    if (key === "$or") {
      ors.push(compileOr(value, here, path, context, used));
      continue;
    }
    if (insideOr && OPERATOR_NAMES.has(key)) {
      throw new InvalidEventPatternError(
        here,
        `${key} is a reserved field name which cannot be used inside $or.`,
      );
    }
    if (Array.isArray(value)) {
      const fail = (reason: string): never => {
        throw new InvalidEventPatternError(here, reason);
      };
      if (used.has(here)) fail(`Path \`${here}\` cannot be allowed multiple times`);
      used.add(here);
      const leaf = compileLeaf(value, fail);
      if (leaf.wildcards.length > 0) {
        context.wildcards.set(here, [...(context.wildcards.get(here) ?? []), ...leaf.wildcards]);
      }
      fields.push(nested(key, { kind: "leaf", key: lastSegment(key), leaf }));
    } else if (isPlainObject(value)) {
      const object = compileObject(value, here, insideOr, context, used);
      fields.push(nested(key, { kind: "object", key: lastSegment(key), object }));
    } else {
      throw new InvalidEventPatternError(here, `"${key}" must be an object or an array`);
    }
  }
  return { fields: mergeObjectFields(fields), ors };
}

/**
 * `{"a.b": [..], "a": {"c": [..]}}` names two fields under one object `a`: they are matched
 * together, so that with an array of objects both must hold in one element, as in event-ruler.
 */
function mergeObjectFields(fields: readonly FieldMatcher[]): FieldMatcher[] {
  const out: FieldMatcher[] = [];
  const objects = new Map<string, number>();
  for (const field of fields) {
    const at = field.kind === "object" ? objects.get(field.key) : undefined;
    const existing = at === undefined ? undefined : out[at];
    if (field.kind === "object" && existing?.kind === "object") {
      out[at!] = {
        kind: "object",
        key: field.key,
        object: {
          fields: mergeObjectFields([...existing.object.fields, ...field.object.fields]),
          ors: [...existing.object.ors, ...field.object.ors],
        },
      };
      continue;
    }
    if (field.kind === "object") objects.set(field.key, out.length);
    out.push(field);
  }
  return out;
}

/** `"a.b.c": m` is matched as `a: {b: {c: m}}`, the events' dotted keys being expanded alike. */
function nested(key: string, inner: FieldMatcher): FieldMatcher {
  const segments = key.split(".");
  let field = inner;
  for (let i = segments.length - 2; i >= 0; i--) {
    field = { kind: "object", key: segments[i]!, object: { fields: [field], ors: [] } };
  }
  return field;
}

function lastSegment(key: string): string {
  return key.slice(key.lastIndexOf(".") + 1);
}

/**
 * The event with every dotted key expanded into nested objects (`{"a.b": 1}` → `{"a": {"b": 1}}`),
 * merged with what is already there; two values landing on one path become a list, as
 * event-ruler sees two values of one flattened field. Events without dotted keys come back as is.
 */
export function expandDottedKeys(value: unknown): unknown {
  if (!hasDottedKey(value)) return value;
  return expand(value);
}

function hasDottedKey(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(hasDottedKey);
  if (!isPlainObject(value)) return false;
  for (const key of Object.keys(value)) if (key.includes(".") || hasDottedKey(value[key])) return true;
  return false;
}

function expand(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(expand);
  if (!isPlainObject(value)) return value;
  // No prototype: an event key "__proto__" or "constructor" is data, nothing more.
  const out = Object.create(null) as Record<string, unknown>;
  for (const key of Object.keys(value)) {
    const segments = key.split(".");
    let inner = expand(value[key]);
    for (let i = segments.length - 1; i >= 1; i--) {
      const wrapper = Object.create(null) as Record<string, unknown>;
      wrapper[segments[i]!] = inner;
      inner = wrapper;
    }
    const head = segments[0]!;
    out[head] = Object.hasOwn(out, head) ? merge(out[head], inner) : inner;
  }
  return out;
}

function merge(a: unknown, b: unknown): unknown {
  if (isPlainObject(a) && isPlainObject(b)) {
    const out = Object.create(null) as Record<string, unknown>;
    for (const key of Object.keys(a)) out[key] = a[key];
    for (const key of Object.keys(b)) out[key] = Object.hasOwn(out, key) ? merge(out[key], b[key]) : b[key];
    return out;
  }
  const list = (x: unknown): readonly unknown[] => (Array.isArray(x) ? (x as unknown[]) : [x]);
  return [...list(a), ...list(b)];
}

function compileOr(
  value: unknown,
  here: string,
  path: string,
  context: CompileContext,
  used: Set<string>,
): ObjectMatcher[] {
  if (!Array.isArray(value))
    throw new InvalidEventPatternError(here, "It must be an Array followed with $or.");
  const branches: unknown[] = value;
  if (branches.length < 2) {
    throw new InvalidEventPatternError(here, "There must have at least 2 Objects in $or relationship.");
  }
  return branches.map((branch, i) => {
    if (!isPlainObject(branch)) {
      throw new InvalidEventPatternError(
        `${here}[${i}]`,
        "Only JSON object is allowed in array of $or relationship.",
      );
    }
    return compileObject(branch, path, true, context, new Set(used));
  });
}

function matchObject(m: ObjectMatcher, value: unknown): boolean {
  if (Array.isArray(value)) {
    if (value.length === 0) return matchFields(m, undefined);
    for (const element of value) if (matchObject(m, element)) return true;
    return false;
  }
  return matchFields(m, isPlainObject(value) ? value : undefined);
}

function matchFields(m: ObjectMatcher, obj: Record<string, unknown> | undefined): boolean {
  for (const field of m.fields) {
    const value = obj !== undefined && Object.hasOwn(obj, field.key) ? obj[field.key] : undefined;
    const ok = field.kind === "leaf" ? matchLeaf(field.leaf, value) : matchObject(field.object, value);
    if (!ok) return false;
  }
  for (const branches of m.ors) {
    let any = false;
    for (const branch of branches) {
      if (matchFields(branch, obj)) {
        any = true;
        break;
      }
    }
    if (!any) return false;
  }
  return true;
}

function matchLeaf(leaf: LeafMatcher, value: unknown): boolean {
  if (value === undefined || isPlainObject(value)) return leaf.absentOk;
  if (!Array.isArray(value)) return leaf.presentOk || leaf.test(value as JsonPrimitive);
  let present = false;
  for (const element of flattenLeaves(value)) {
    present = true;
    if (leaf.presentOk || leaf.test(element)) return true;
  }
  return !present && leaf.absentOk;
}

function* flattenLeaves(values: readonly unknown[]): Generator<JsonPrimitive> {
  for (const v of values) {
    if (Array.isArray(v)) yield* flattenLeaves(v);
    else if (!isPlainObject(v) && v !== undefined) yield v as JsonPrimitive;
  }
}
