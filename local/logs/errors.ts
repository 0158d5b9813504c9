/**
 * Errors of the embedded CloudWatch Logs. `code` is the error type AWS returns for the same fault
 * (the server sends it as `__type`, and the SDK throws an exception of that name), so callers
 * branch on `name`/`code` exactly as against AWS.
 */
export class LocalLogsError extends Error {
  readonly code: string;
  /** The HTTP status AWS answers this error with. */
  readonly status: number;
  constructor(code: string, message: string, status = 400) {
    super(message);
    this.name = code;
    this.code = code;
    this.status = status;
  }
}

/** A parameter is missing, malformed or breaks a limit; the message names it. */
export class InvalidParameterError extends LocalLogsError {
  constructor(message: string) {
    super("InvalidParameterException", message);
  }
}

export class ResourceNotFoundError extends LocalLogsError {
  constructor(message: string) {
    super("ResourceNotFoundException", message);
  }
}

export class ResourceAlreadyExistsError extends LocalLogsError {
  constructor(message: string) {
    super("ResourceAlreadyExistsException", message);
  }
}

/** Thrown by tests' fault hooks and by nothing else: the local store never throttles. */
export class ThrottlingError extends LocalLogsError {
  constructor(message = "Rate exceeded") {
    super("ThrottlingException", message);
  }
}

export class ServiceUnavailableError extends LocalLogsError {
  constructor(message = "The service cannot complete the request.") {
    super("ServiceUnavailableException", message, 500);
  }
}

/** `1 validation error detected: Value 'x' at 'field' failed to satisfy constraint: …`, as AWS words it. */
export function constraintError(field: string, value: unknown, constraint: string): InvalidParameterError {
  const shown = typeof value === "string" ? value : JSON.stringify(value);
  return new InvalidParameterError(
    `1 validation error detected: Value '${shown}' at '${field}' failed to satisfy constraint: ${constraint}`,
  );
}
