/**
 * Retry policy text (a file `cairn retry-policy apply` reads) to a policy: YAML, or JSON when the
 * text starts with `{` or `[`. Apart from policy.ts so that only the CLI carries the YAML parser
 * (the functions read policies from the table, never from text).
 */
import { LineCounter, parseDocument, visit } from "yaml";
import { RetryPolicySyntaxError } from "./errors.ts";
import { parseRetryPolicy, type RetryPolicy } from "./policy.ts";

/** Parses policy text: YAML, or JSON when the text starts with `{` or `[`. */
export function parseRetryPolicyText(text: string): RetryPolicy {
  const source = text.startsWith("\uFEFF") ? text.slice(1) : text;
  const lineCounter = new LineCounter();
  // JSON is read as YAML too (same line/column errors), with the JSON schema so that a bare word
  // where a JSON value belongs is an error rather than a string.
  const json = /^\s*[{[]/.test(source);
  const doc = parseDocument(source, {
    lineCounter,
    uniqueKeys: true,
    prettyErrors: false,
    ...(json ? { schema: "json" as const } : {}),
  });
  // Warnings (an unresolved `!tag`) mean the operator wrote something Cairn would silently drop.
  const problem = doc.errors[0] ?? doc.warnings[0];
  if (problem) {
    const { line, col } = lineCounter.linePos(problem.pos[0]);
    throw new RetryPolicySyntaxError(line, col, problem.message);
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (error) {
    // Unresolved alias or alias bomb: point at the first alias.
    let offset = 0;
    visit(doc, {
      Alias(_key, node) {
        offset = node.range?.[0] ?? 0;
        return visit.BREAK;
      },
    });
    const { line, col } = lineCounter.linePos(offset);
    throw new RetryPolicySyntaxError(line, col, (error as Error).message);
  }
  return parseRetryPolicy(value);
}
