/**
 * Reads and validates a RetryPolicy file for `retry-policy create|update`, before Cairn is even
 * looked for: every problem becomes one InvalidInputError listing `<path>: <reason>`.
 */
import { resolve } from "node:path";
import { parseRetryPolicyText, type RetryPolicy } from "../../functions/core/retry/policy.ts";
import type { ValidationIssue } from "../../functions/core/spec.ts";
import { InvalidInputError } from "./errors.ts";
import type { CliIo } from "./io.ts";

export function readPolicyFile(file: string, io: Pick<CliIo, "cwd" | "readFile" | "readStdin">): RetryPolicy {
  const name = file === "-" ? "(stdin)" : file;
  let text: string;
  try {
    text = file === "-" ? io.readStdin() : io.readFile(resolve(io.cwd, file));
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const why =
      code === "ENOENT" ? "no such file" : code === "EISDIR" ? "it is a directory" : (error as Error).message;
    throw new InvalidInputError(`cannot read the retry policy ${name}: ${why}`);
  }
  try {
    return parseRetryPolicyText(text);
  } catch (error) {
    // Branch on the retry module's stable codes.
    const code = (error as { code?: unknown }).code;
    if (code === "INVALID_RETRY_POLICY") {
      const issues = (error as { issues: readonly ValidationIssue[] }).issues;
      throw new InvalidInputError(
        `invalid retry policy ${name} (${issues.length} ${issues.length === 1 ? "problem" : "problems"}):\n` +
          issues.map((issue) => `  ${issue.path}: ${issue.message}`).join("\n"),
        issues,
      );
    }
    if (code === "RETRY_POLICY_SYNTAX") throw new InvalidInputError(`${name}: ${(error as Error).message}`);
    throw error;
  }
}
