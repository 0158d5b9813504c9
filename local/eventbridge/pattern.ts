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
 * - `$or` holds two or more objects, each matched at the level where `$or` appears.
 */
import { InvalidEventPatternError } from "./errors.ts";
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
  const root = compileObject(parsed, "", false);
  return { pattern: parsed, matches: (event) => matchObject(root, event) };
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

function compileObject(obj: Record<string, unknown>, path: string, insideOr: boolean): ObjectMatcher {
  const keys = Object.keys(obj);
  if (keys.length === 0) throw new InvalidEventPatternError(path, "Empty objects are not allowed");
  const fields: FieldMatcher[] = [];
  const ors: ObjectMatcher[][] = [];
  for (const key of keys) {
    const value = obj[key];
    const here = path ? `${path}.${key}` : key;
    if (key === "$or") {
      ors.push(compileOr(value, here, path));
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
      fields.push({ kind: "leaf", key, leaf: compileLeaf(value, fail) });
    } else if (isPlainObject(value)) {
      fields.push({ kind: "object", key, object: compileObject(value, here, insideOr) });
    } else {
      throw new InvalidEventPatternError(here, `"${key}" must be an object or an array`);
    }
  }
  return { fields, ors };
}

function compileOr(value: unknown, here: string, path: string): ObjectMatcher[] {
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
    return compileObject(branch, path, true);
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
