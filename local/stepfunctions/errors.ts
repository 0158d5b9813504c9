/**
 * Errors of the local Step Functions service. Every error has a stable `code`, and `name`
 * equals it: for API errors the code is the AWS error code, so the HTTP endpoint can return it
 * as `__type` and the SDK raises the matching typed exception (`TaskTimedOut`, ...).
 */

export const SfnApiErrorCode = {
  ExecutionAlreadyExists: "ExecutionAlreadyExists",
  ExecutionDoesNotExist: "ExecutionDoesNotExist",
  InvalidArn: "InvalidArn",
  InvalidDefinition: "InvalidDefinition",
  InvalidExecutionInput: "InvalidExecutionInput",
  InvalidName: "InvalidName",
  InvalidOutput: "InvalidOutput",
  InvalidToken: "InvalidToken",
  StateMachineAlreadyExists: "StateMachineAlreadyExists",
  StateMachineDoesNotExist: "StateMachineDoesNotExist",
  TaskTimedOut: "TaskTimedOut",
  ValidationException: "ValidationException",
  /** Not an AWS code: the local service was closed and takes no more calls. */
  ServiceClosed: "ServiceClosed",
} as const;
export type SfnApiErrorCode = (typeof SfnApiErrorCode)[keyof typeof SfnApiErrorCode];

export abstract class LocalStepFunctionsError extends Error {
  abstract readonly code: string;
}

/** An API call was refused, exactly as AWS would refuse it (HTTP 400 on the wire). */
export class SfnApiError extends LocalStepFunctionsError {
  readonly code: SfnApiErrorCode;
  constructor(code: SfnApiErrorCode, message: string) {
    super(message);
    this.code = code;
    this.name = code;
  }
}

/** `substituteDefinition` found `${Key}` placeholders it has no value for. */
export class UnresolvedSubstitutionError extends LocalStepFunctionsError {
  readonly code = "UnresolvedSubstitution";
  readonly missingKeys: readonly string[];
  constructor(missingKeys: readonly string[]) {
    super(
      `definition has unresolved substitution placeholder(s): ${missingKeys.map((k) => "${" + k + "}").join(", ")}`,
    );
    this.name = this.code;
    this.missingKeys = missingKeys;
  }
}

/**
 * An error raised inside an execution (a task failure, `States.Timeout`, ...). The interpreter
 * matches Retry/Catch on `name` and reads `isRetryable`/`isCatchable`; the Catch output's
 * `Cause` is the `message`. Terminal errors (States.DataLimitExceeded, and the internal abort)
 * are neither retried nor caught, as AWS's terminal errors escape States.ALL.
 */
export class AslError extends Error {
  readonly code: string;
  readonly isRetryable: boolean;
  readonly isCatchable: boolean;
  constructor(errorName: string, cause: string, options: { terminal?: boolean } = {}) {
    super(cause);
    this.name = errorName;
    this.code = errorName;
    this.isRetryable = !options.terminal;
    this.isCatchable = !options.terminal;
  }
}

export const StatesErrorName = {
  Timeout: "States.Timeout",
  HeartbeatTimeout: "States.HeartbeatTimeout",
  DataLimitExceeded: "States.DataLimitExceeded",
  Runtime: "States.Runtime",
  TaskFailed: "States.TaskFailed",
} as const;

/** Settles a task the execution no longer waits for (stopped, closed); never caught. */
export const EXECUTION_CLOSED_ERROR = "Local.ExecutionClosed";
