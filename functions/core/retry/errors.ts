/**
 * Errors of the retry core. Callers across Lambda / Step Functions / EventBridge boundaries branch
 * on `name` or `code`, never on `instanceof`.
 */
import { CoreError } from "../errors.ts";
import { invalidMessage, type ValidationIssue } from "../validation-issue.ts";

export abstract class RetryError extends CoreError {
  abstract override readonly code: string;
}

/** A RetryPolicy document breaks the schema; `issues` holds every problem as `<path>: <reason>`. */
export class RetryPolicyValidationError extends RetryError {
  override readonly name = "RetryPolicyValidationError";
  readonly code = "INVALID_RETRY_POLICY";
  readonly issues: readonly ValidationIssue[];

  constructor(issues: readonly ValidationIssue[]) {
    super(invalidMessage("retry policy", issues));
    this.issues = issues;
  }
}

/** The policy text is not YAML/JSON at all. Line and column are 1-based. */
export class RetryPolicySyntaxError extends RetryError {
  override readonly name = "RetryPolicySyntaxError";
  readonly code = "RETRY_POLICY_SYNTAX";
  readonly line: number;
  readonly column: number;
  readonly reason: string;

  constructor(line: number, column: number, reason: string) {
    super(`invalid retry policy: syntax error at line ${line}, column ${column}: ${reason}`);
    this.line = line;
    this.column = column;
    this.reason = reason;
  }
}

/** The operator's global retry configuration breaks its schema. */
export class RetryConfigValidationError extends RetryError {
  override readonly name = "RetryConfigValidationError";
  readonly code = "INVALID_RETRY_CONFIG";
  readonly issues: readonly ValidationIssue[];

  constructor(issues: readonly ValidationIssue[]) {
    super(invalidMessage("retry configuration", issues));
    this.issues = issues;
  }
}

/** A caller broke the contract of a retry function (a programming error, not user input). */
export class RetryInputError extends RetryError {
  override readonly name = "RetryInputError";
  readonly code = "INVALID_RETRY_INPUT";
}
