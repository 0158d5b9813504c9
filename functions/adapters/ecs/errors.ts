/**
 * The ECS adapter's failures, with retryability as data: the application decides from
 * `retryable` (and ECS's `awsCode`), never from message text or classes.
 */
import { PortError } from "../../core/ports/errors.ts";

export class FargateTasksError extends PortError {
  override readonly name = "FargateTasksError";
  readonly code = "FARGATE_TASKS";
  /** ECS's error name (`ClientException`, `ThrottlingException`, …), or `NetworkError`. */
  readonly awsCode: string;
  /** Whether the same call may succeed later. */
  override readonly retryable: boolean;
  constructor(message: string, awsCode: string, retryable: boolean, options?: ErrorOptions) {
    super(message, options);
    this.awsCode = awsCode;
    this.retryable = retryable;
  }
}

/** ECS's error names that asking again can cure; everything else is the request's fault. */
const RETRYABLE_CODES: ReadonlySet<string> = new Set([
  "ThrottlingException",
  "ServerException",
  "ServiceUnavailableException",
  "RequestLimitExceeded",
  "InternalFailure",
]);

/** ClientExceptions ECS raises for momentary limits rather than a bad request. */
const RETRYABLE_CLIENT_MESSAGE = /capacity limit exceeded|rate exceeded|try again/i;

export interface Classified {
  readonly awsCode: string;
  readonly message: string;
  readonly retryable: boolean;
}

/** An SDK exception (or a network failure) as code, ECS's message and retryability. */
export function classify(error: unknown): Classified {
  const e = error as { name?: unknown; message?: unknown; $metadata?: { httpStatusCode?: number } };
  const message = typeof e?.message === "string" ? e.message : String(error);
  const name = typeof e?.name === "string" ? e.name : "Error";
  if (e?.$metadata?.httpStatusCode === undefined && !name.endsWith("Exception")) {
    // Never reached ECS (refused connection, DNS, timeout): the call itself may work later.
    return { awsCode: "NetworkError", message, retryable: true };
  }
  const retryable =
    RETRYABLE_CODES.has(name) ||
    (e.$metadata?.httpStatusCode ?? 0) >= 500 ||
    (name === "ClientException" && RETRYABLE_CLIENT_MESSAGE.test(message));
  return { awsCode: name, message, retryable };
}

/**
 * RunTask's own `failures[]` reasons: capacity (`Capacity is unavailable at this time…`,
 * `RESOURCE:…`) passes; a missing or invalid resource (`MISSING`, `INACTIVE`…) does not.
 */
export function isRetryableRunFailure(reason: string): boolean {
  return /capacity|RESOURCE:|AGENT|try again/i.test(reason);
}

export function toError(what: string, error: unknown): FargateTasksError {
  const c = classify(error);
  return new FargateTasksError(`${what}: ${c.awsCode}: ${c.message}`, c.awsCode, c.retryable, {
    cause: error,
  });
}
