/**
 * Reads and validates the documents the CLI is given (`submit -f`, `retry-policy create -f`)
 * before Cairn is even looked for: a read failure, a syntax error or every schema problem
 * (`<path>: <reason>`) becomes one usage-level error, and nothing is sent.
 */
import { resolve } from "node:path";
import type { SessionSpec } from "../../functions/core/model.ts";
import { parseRetryPolicyText, type RetryPolicy } from "../../functions/core/retry/policy.ts";
import { parseSpecText, type ValidationIssue } from "../../functions/core/spec.ts";
import { InvalidInputError, InvalidSpecError } from "./errors.ts";
import type { CliIo } from "./io.ts";

type FileIo = Pick<CliIo, "cwd" | "readFile" | "readStdin">;

interface DocumentKind<T> {
  /** How a read failure names the document: "the spec", "the retry policy". */
  readonly noun: string;
  /** How a validation failure names it: "session spec", "retry policy". */
  readonly title: string;
  readonly parse: (text: string) => T;
  /** The parser module's stable error codes. */
  readonly codes: { readonly invalid: string; readonly syntax: string };
  readonly error: (message: string, issues?: readonly ValidationIssue[]) => Error;
}

const SPEC: DocumentKind<SessionSpec> = {
  noun: "the spec",
  title: "session spec",
  parse: parseSpecText,
  codes: { invalid: "INVALID_SPEC", syntax: "SPEC_SYNTAX" },
  error: (message, issues) => new InvalidSpecError(message, issues),
};

const RETRY_POLICY: DocumentKind<RetryPolicy> = {
  noun: "the retry policy",
  title: "retry policy",
  parse: parseRetryPolicyText,
  codes: { invalid: "INVALID_RETRY_POLICY", syntax: "RETRY_POLICY_SYNTAX" },
  error: (message, issues) => new InvalidInputError(message, issues),
};

export function readSpecFile(file: string, io: FileIo): SessionSpec {
  return readDocumentFile(file, io, SPEC);
}

export function readPolicyFile(file: string, io: FileIo): RetryPolicy {
  return readDocumentFile(file, io, RETRY_POLICY);
}

function readDocumentFile<T>(file: string, io: FileIo, kind: DocumentKind<T>): T {
  const name = file === "-" ? "(stdin)" : file;
  let text: string;
  try {
    text = file === "-" ? io.readStdin() : io.readFile(resolve(io.cwd, file));
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const why =
      code === "ENOENT" ? "no such file" : code === "EISDIR" ? "it is a directory" : (error as Error).message;
    throw kind.error(`cannot read ${kind.noun} ${name}: ${why}`);
  }
  try {
    return kind.parse(text);
  } catch (error) {
    // Branch on the parser module's stable codes, never on instanceof.
    const code = (error as { code?: unknown }).code;
    if (code === kind.codes.invalid) {
      const issues = (error as { issues: readonly ValidationIssue[] }).issues;
      throw kind.error(
        `invalid ${kind.title} ${name} (${issues.length} ${issues.length === 1 ? "problem" : "problems"}):\n` +
          issues.map((issue) => `  ${issue.path}: ${issue.message}`).join("\n"),
        issues,
      );
    }
    if (code === kind.codes.syntax) throw kind.error(`${name}: ${(error as Error).message}`);
    throw error;
  }
}
