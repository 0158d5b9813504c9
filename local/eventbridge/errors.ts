/**
 * Errors of the embedded EventBridge. `code` is the AWS error type the real service returns for
 * the same fault (the HTTP server sends it as `__type`), so callers branch on `code` or `name`,
 * never on `instanceof`, exactly as they would against AWS.
 */
export class LocalEventBridgeError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = code;
    this.code = code;
  }
}

/** The pattern cannot be compiled; `path` is where in the pattern the problem is ("" = the root). */
export class InvalidEventPatternError extends LocalEventBridgeError {
  readonly path: string;
  readonly reason: string;
  constructor(path: string, reason: string) {
    super(
      "InvalidEventPatternException",
      `Event pattern is not valid. Reason: ${path ? `at "${path}": ` : ""}${reason}`,
    );
    this.path = path;
    this.reason = reason;
  }
}

/** A request or parameter the service rejects as a whole (too many entries, bad retry policy, …). */
export class ValidationError extends LocalEventBridgeError {
  constructor(message: string) {
    super("ValidationException", message);
  }
}

export class ResourceNotFoundError extends LocalEventBridgeError {
  constructor(message: string) {
    super("ResourceNotFoundException", message);
  }
}

export class LimitExceededError extends LocalEventBridgeError {
  constructor(message: string) {
    super("LimitExceededException", message);
  }
}

/** The bus was closed; it accepts no more events. */
export class BusClosedError extends LocalEventBridgeError {
  constructor(busName: string) {
    super("BusClosed", `event bus ${busName} is closed`);
  }
}
