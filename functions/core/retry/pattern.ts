/**
 * Termination-message patterns as Armada reads them. Armada's rules match
 * `onTerminationMessage: { pattern: ".*TRANSIENT.*" }`, and Armada compiles the pattern with Go's
 * `regexp` package: RE2 syntax, matched anywhere in the message (`MatchString`). So a policy
 * copied from Armada means the same here, patterns are compiled by RE2JS, a port of RE2 to
 * JavaScript, not by JavaScript's `RegExp`:
 *
 * - RE2's syntax is accepted as written: leading and scoped inline flags (`(?i)transient`,
 *   `(?s:.)`, `(?U)`), `(?P<name>…)`, `\pN`, `\z`, POSIX classes such as `[[:digit:]]`;
 * - what RE2 refuses, Armada refuses too, so it is refused with RE2's own words
 *   (`missing closing )`, `invalid escape sequence: \1` for a backreference,
 *   `invalid named capture` for a lookbehind) when the policy is written;
 * - matching takes time linear in the message, whatever the pattern (no catastrophic
 *   backtracking in the coordinator, whose messages come from user processes).
 *
 * An empty (or absent) termination message never matches a pattern, even one that matches the
 * empty string such as `.*`: as in Armada, a rule on the message applies to a kernel that wrote
 * one.
 */
import { RE2JS } from "re2js";

/** Compiled patterns, by source: a policy's patterns are few and are matched on every failed run. */
const compiled = new Map<string, RE2JS>();
const CACHE_LIMIT = 1000;

function compile(pattern: string): RE2JS {
  const known = compiled.get(pattern);
  if (known) return known;
  const re = RE2JS.compile(pattern);
  if (compiled.size >= CACHE_LIMIT) compiled.clear();
  compiled.set(pattern, re);
  return re;
}

/** Why `pattern` is not an RE2 regular expression (RE2's message), or undefined when it is. */
export function patternProblem(pattern: string): string | undefined {
  try {
    compile(pattern);
    return undefined;
  } catch (error) {
    // RE2: "error parsing regexp: missing closing ): `(`" — keep the part after the prefix.
    const message = (error as Error).message;
    return message.replace(/^error parsing regexp: /, "") || message;
  }
}

/** Whether a (valid) pattern matches anywhere in a non-empty message. */
export function patternMatches(pattern: string, message: string | undefined): boolean {
  if (message === undefined || message === "") return false;
  return compile(pattern).test(message);
}
