/**
 * Reads and validates the documents the CLI is given (`submit -f`, `retry-policy create -f`,
 * `failure-category create -f`, `deployment create -f`) before Cairn is even looked for: a read failure, a syntax error or
 * every schema problem (`<path>: <reason>`) becomes one usage-level error, and nothing is sent.
 */
import { resolve } from "node:path";
import type { DeploymentSpec } from "../../functions/core/deployments/spec.ts";
import type { SessionSpec } from "../../functions/core/model.ts";
import type { RetryPolicy } from "../../functions/core/retry/policy.ts";
import { parseRetryPolicyText } from "../../functions/core/retry/policy-text.ts";
import type { FailureCategoryDefinition } from "../../functions/core/retry/category-definitions.ts";
import { parseFailureCategoryText } from "../../functions/core/retry/category-text.ts";
import type { JobTemplate } from "../../functions/core/templates.ts";
import { parseJobTemplateText } from "../../functions/core/template-text.ts";
import type { ValidationIssue } from "../../functions/core/spec.ts";
import { invalidMessage } from "../../functions/core/validation-issue.ts";
import { parseSpecText, readSpecText } from "../../functions/core/spec-text.ts";
import { parseSessionSpec } from "../../functions/core/spec.ts";
import { parseDeploymentSpecText } from "./deployment-text.ts";
import { InvalidInputError, InvalidSpecError } from "./errors.ts";
import type { CliIo } from "./io.ts";
import { findDuplicateKey } from "./json-duplicate-keys.ts";

/**
 * The largest document the CLI reads. A valid spec travels as compact JSON in one EventBridge
 * entry (256 KiB) and a policy is stored in one DynamoDB item (400 KB); a file may hold either
 * with comments and indentation, so the bound is the item's size. The file is read up to one
 * byte past it and no further: `-f /dev/zero` fails at once instead of filling memory.
 */
export const MAX_DOCUMENT_BYTES = 400 * 1024;

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

const FAILURE_CATEGORY: DocumentKind<FailureCategoryDefinition> = {
  noun: "the failure category",
  title: "failure category",
  parse: parseFailureCategoryText,
  codes: { invalid: "INVALID_FAILURE_CATEGORY", syntax: "FAILURE_CATEGORY_SYNTAX" },
  error: (message, issues) => new InvalidInputError(message, issues),
};

const DEPLOYMENT_SPEC: DocumentKind<DeploymentSpec> = {
  noun: "the deployment spec",
  title: "deployment spec",
  parse: parseDeploymentSpecText,
  codes: { invalid: "INVALID_SPEC", syntax: "DEPLOYMENT_SPEC_SYNTAX" },
  error: (message, issues) => new InvalidSpecError(message, issues),
};

const JOB_TEMPLATE: DocumentKind<JobTemplate> = {
  noun: "the job template",
  title: "job template",
  parse: parseJobTemplateText,
  codes: { invalid: "INVALID_JOB_TEMPLATE", syntax: "JOB_TEMPLATE_SYNTAX" },
  error: (message, issues) => new InvalidInputError(message, issues),
};

export function readTemplateFile(file: string, io: FileIo): JobTemplate {
  return readDocumentFile(file, io, JOB_TEMPLATE);
}

export function readDeploymentFile(file: string, io: FileIo): DeploymentSpec {
  return readDocumentFile(file, io, DEPLOYMENT_SPEC);
}

export function readSpecFile(file: string, io: FileIo): SessionSpec {
  return readDocumentFile(file, io, SPEC);
}

/** The spec validated, and as written (before defaults): a submission sends what was written. */
export function readWrittenSpecFile(file: string, io: FileIo): { spec: SessionSpec; written: unknown } {
  return readDocumentFile(file, io, {
    ...SPEC,
    parse: (text) => {
      const written = readSpecText(text);
      return { spec: parseSessionSpec(written), written };
    },
  });
}

export function readPolicyFile(file: string, io: FileIo): RetryPolicy {
  return readDocumentFile(file, io, RETRY_POLICY);
}

export function readFailureCategoryFile(file: string, io: FileIo): FailureCategoryDefinition {
  return readDocumentFile(file, io, FAILURE_CATEGORY);
}

function readDocumentFile<T>(file: string, io: FileIo, kind: DocumentKind<T>): T {
  const name = file === "-" ? "(stdin)" : file;
  let text: string;
  const tooLarge = () =>
    kind.error(
      `cannot read ${kind.noun} ${name}: it is larger than ${MAX_DOCUMENT_BYTES} bytes, the most a ${kind.title} can be`,
    );
  try {
    text =
      file === "-"
        ? io.readStdin(MAX_DOCUMENT_BYTES)
        : io.readFile(resolve(io.cwd, file), MAX_DOCUMENT_BYTES);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === "EFBIG") throw tooLarge();
    const why =
      code === "ENOENT" ? "no such file" : code === "EISDIR" ? "it is a directory" : (error as Error).message;
    throw kind.error(`cannot read ${kind.noun} ${name}: ${why}`);
  }
  if (Buffer.byteLength(text) > MAX_DOCUMENT_BYTES) throw tooLarge();
  // JSON.parse would keep the last of two equal keys silently; YAML rejects them already.
  const source = text.startsWith("\uFEFF") ? text.slice(1) : text;
  if (/^\s*[{[]/.test(source)) {
    const duplicate = findDuplicateKey(source);
    if (duplicate) {
      throw kind.error(
        `${name}: invalid ${kind.title}: JSON syntax error at line ${duplicate.line}, column ${duplicate.column}: ` +
          `duplicate key "${duplicate.key}"${duplicate.path ? ` in ${duplicate.path}` : ""}`,
      );
    }
  }
  try {
    return kind.parse(text);
  } catch (error) {
    // Branch on the parser module's stable codes, never on instanceof.
    const code = (error as { code?: unknown }).code;
    if (code === kind.codes.invalid) {
      const issues = (error as { issues: readonly ValidationIssue[] }).issues;
      throw kind.error(invalidMessage(`${kind.title} ${name}`, issues), issues);
    }
    if (code === kind.codes.syntax) throw kind.error(`${name}: ${(error as Error).message}`);
    throw error;
  }
}
