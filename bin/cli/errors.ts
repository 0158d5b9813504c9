/**
 * The CLI's errors. Each carries the exit code it ends the process with and a stable `code`;
 * the message is what the user reads after `cairn: `.
 */
import { ExitCode } from "./exit-codes.ts";
import type { ValidationIssue } from "../../functions/core/spec.ts";

export abstract class CliError extends Error {
  abstract readonly code: string;
  abstract readonly exitCode: ExitCode;
}

/** Bad arguments. `command` names the command whose `--help` to point at. */
export class UsageError extends CliError {
  override readonly name = "UsageError";
  readonly code = "USAGE";
  readonly exitCode = ExitCode.Usage;
  readonly command: string | undefined;
  constructor(message: string, command?: string) {
    super(message);
    this.command = command;
  }
}

/** The spec file cannot be read, is not YAML/JSON, or breaks the schema. Nothing was sent. */
export class InvalidSpecError extends CliError {
  override readonly name = "InvalidSpecError";
  readonly code = "INVALID_SPEC";
  readonly exitCode = ExitCode.Usage;
  /** Every schema problem (empty for syntax or read errors). */
  readonly issues: readonly ValidationIssue[];
  constructor(message: string, issues: readonly ValidationIssue[] = []) {
    super(message);
    this.issues = issues;
  }
}

/** A policy file or retry settings that break their schema. Nothing was stored. */
export class InvalidInputError extends CliError {
  override readonly name = "InvalidInputError";
  readonly code = "INVALID_INPUT";
  readonly exitCode = ExitCode.Usage;
  readonly issues: readonly ValidationIssue[];
  constructor(message: string, issues: readonly ValidationIssue[] = []) {
    super(message);
    this.issues = issues;
  }
}

/** The change clashes with what is stored (a name taken, a policy in use, an unknown policy). */
export class ConflictError extends CliError {
  override readonly name = "ConflictError";
  readonly code = "CONFLICT";
  readonly exitCode = ExitCode.Usage;
}

/** A named retry policy or queue does not exist. */
export class ResourceNotFoundError extends CliError {
  override readonly name = "ResourceNotFoundError";
  readonly code = "NOT_FOUND";
  readonly exitCode = ExitCode.NotFound;
}

export class SessionNotFoundError extends CliError {
  override readonly name = "SessionNotFoundError";
  readonly code = "NOT_FOUND";
  readonly exitCode = ExitCode.NotFound;
  readonly sessionId: string;
  /** `hint`: where to look instead (the id names a job of independent tasks). */
  constructor(sessionId: string, hint?: string) {
    super(`session ${sessionId} not found${hint === undefined ? "" : `: ${hint}`}`);
    this.sessionId = sessionId;
  }
}

/** No job with the id, or no such task in it (`hint` says where to look instead, if anywhere). */
export class JobNotFoundError extends CliError {
  override readonly name = "JobNotFoundError";
  readonly code = "NOT_FOUND";
  readonly exitCode = ExitCode.NotFound;
  readonly jobId: string;
  readonly hint: string | undefined;
  constructor(jobId: string, hint?: string) {
    super(`job ${jobId} not found${hint === undefined ? "" : `: ${hint}`}`);
    this.jobId = jobId;
    this.hint = hint;
  }
}

/** The task (or every task asked for) has not started a run yet: there is nothing to read. */
export class NoLogsError extends CliError {
  override readonly name = "NoLogsError";
  readonly code = "NO_LOGS";
  readonly exitCode = ExitCode.NotFound;
}

/**
 * The kernels' output cannot be read here: the connection names no kernel log group (a stack
 * or runtime from before logs went to CloudWatch Logs, `--endpoint` alone), or the group is missing.
 */
export class LogsUnavailableError extends CliError {
  override readonly name = "LogsUnavailableError";
  readonly code = "LOGS_UNAVAILABLE";
  readonly exitCode = ExitCode.Unreachable;
}

/** No runtime file, or the services did not answer, refused the credentials or lack a resource. */
export class UnreachableError extends CliError {
  override readonly name = "UnreachableError";
  readonly code = "UNREACHABLE";
  readonly exitCode = ExitCode.Unreachable;
  constructor(message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
  }
}

export class WaitTimeoutError extends CliError {
  override readonly name = "WaitTimeoutError";
  readonly code = "WAIT_TIMEOUT";
  readonly exitCode = ExitCode.WaitTimedOut;
  readonly sessionId: string;
  readonly timeoutSeconds: number;
  /** The last status seen; undefined when the session was never recorded. */
  readonly lastStatus: string | undefined;
  constructor(sessionId: string, timeoutSeconds: number, lastStatus: string | undefined) {
    super(
      lastStatus === undefined
        ? `timed out after ${timeoutSeconds} s: session ${sessionId} was never recorded ` +
            `(is the control plane processing events?)`
        : `timed out after ${timeoutSeconds} s waiting for session ${sessionId} (last status ${lastStatus}); ` +
            `it keeps going: follow it with \`cairn get ${sessionId}\`, or stop it with \`cairn cancel ${sessionId}\``,
    );
    this.sessionId = sessionId;
    this.timeoutSeconds = timeoutSeconds;
    this.lastStatus = lastStatus;
  }
}

/** `submit --wait --timeout` of a job of many tasks: the job had not ended in time. */
export class JobWaitTimeoutError extends CliError {
  override readonly name = "JobWaitTimeoutError";
  readonly code = "WAIT_TIMEOUT";
  readonly exitCode = ExitCode.WaitTimedOut;
  readonly jobId: string;
  readonly timeoutSeconds: number;
  /** The last job state seen; undefined when the job was never recorded. */
  readonly lastState: string | undefined;
  constructor(jobId: string, timeoutSeconds: number, lastState: string | undefined) {
    super(
      lastState === undefined
        ? `timed out after ${timeoutSeconds} s: job ${jobId} was never recorded ` +
            `(is the control plane processing events?)`
        : `timed out after ${timeoutSeconds} s waiting for job ${jobId} (last state ${lastState}); ` +
            `it keeps going: follow it with \`cairn job get ${jobId}\`, or stop it with \`cairn cancel ${jobId}\``,
    );
    this.jobId = jobId;
    this.timeoutSeconds = timeoutSeconds;
    this.lastState = lastState;
  }
}

/** `deployment … --wait --timeout`: the deployment had not reached what was waited for in time. */
/** The control plane refused a deployment request (`--wait` read its recorded reason). */
export class DeploymentRejectedError extends CliError {
  override readonly name = "DeploymentRejectedError";
  readonly code = "REJECTED";
  readonly exitCode = ExitCode.Usage;
  constructor(deploymentId: string, reason: string) {
    super(`the request for deployment ${deploymentId} was rejected: ${reason}`);
  }
}

export class DeploymentWaitTimeoutError extends CliError {
  override readonly name = "DeploymentWaitTimeoutError";
  readonly code = "WAIT_TIMEOUT";
  readonly exitCode = ExitCode.WaitTimedOut;
  readonly deploymentId: string;
  readonly timeoutSeconds: number;
  /** The last status seen; undefined when the deployment was never recorded. */
  readonly lastStatus: string | undefined;
  /** Why it had not got there (the deployment's reason), when it says. */
  readonly reason: string | undefined;
  constructor(
    deploymentId: string,
    timeoutSeconds: number,
    goal: string,
    lastStatus: string | undefined,
    reason?: string,
  ) {
    super(
      lastStatus === undefined
        ? `timed out after ${timeoutSeconds} s: deployment ${deploymentId} was never recorded ` +
            `(is the control plane processing events?)`
        : `timed out after ${timeoutSeconds} s waiting for deployment ${deploymentId} to be ${goal} ` +
            `(last status ${lastStatus}${reason === undefined ? "" : `; ${reason}`}); ` +
            `it keeps going: follow it with \`cairn deployment get ${deploymentId}\``,
    );
    this.reason = reason;
    this.deploymentId = deploymentId;
    this.timeoutSeconds = timeoutSeconds;
    this.lastStatus = lastStatus;
  }
}
