/**
 * Retry policy text (a file `cairn retry-policy apply` reads) to a policy: YAML, or JSON when the
 * text starts with `{` or `[`. Apart from policy.ts so that only the CLI carries the YAML parser
 * (the functions read policies from the table, never from text).
 */
import { readDocumentText } from "../document-text.ts";
import { RetryPolicySyntaxError } from "./errors.ts";
import { parseRetryPolicy, type RetryPolicy } from "./policy.ts";

/** Parses policy text: YAML, or JSON when the text starts with `{` or `[`. */
export function parseRetryPolicyText(text: string): RetryPolicy {
  return parseRetryPolicy(
    readDocumentText(text, ({ line, column, reason }) => {
      throw new RetryPolicySyntaxError(line, column, reason);
    }),
  );
}
