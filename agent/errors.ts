/**
 * The local agent's errors. Callers branch on `code` (stable across boundaries), never on
 * `instanceof`.
 */
export class LocalAgentError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = code;
    this.code = code;
  }
}

/** A launch, option or argument the agent cannot accept; `field` names the culprit. */
export class InvalidAgentInputError extends LocalAgentError {
  readonly field: string;
  constructor(field: string, reason: string) {
    super("InvalidAgentInput", `${field}: ${reason}`);
    this.field = field;
  }
}

export class ExecutableNotFoundError extends LocalAgentError {
  readonly executable: string;
  constructor(executable: string, where: string) {
    super("ExecutableNotFound", `executable "${executable}" not found ${where}`);
    this.executable = executable;
  }
}

export class ExecutableNotRunnableError extends LocalAgentError {
  readonly executable: string;
  constructor(executable: string, reason: string) {
    super("ExecutableNotRunnable", `executable "${executable}" ${reason}`);
    this.executable = executable;
  }
}

export class LogsNotFoundError extends LocalAgentError {
  constructor(what: string, path: string) {
    super("LogsNotFound", `no logs for ${what}: ${path} does not exist`);
  }
}
