/**
 * Whether a failed call may succeed if made again, and when: read from the error's own data,
 * never its text or class. The ports' errors (core/ports/errors.ts) and the application's
 * (app/errors.ts) carry `code`, `retryable` and, when known, `retryAfterMs`; the AWS SDK's carry
 * its own marks; Node's network errors their codes.
 */

/** Node's network error codes: the request may not have reached the service at all. */
const NETWORK_CODES: ReadonlySet<string> = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "ETIMEDOUT",
  "EPIPE",
  "EAI_AGAIN",
]);

/**
 * Retryability read from the error's own data: `retryable` when it says so (every PortError and
 * AppError), the AWS SDK's marks (`$retryable`: throttling and transient faults;
 * `$fault: "server"`: a 5xx), and network failures.
 */
export function isTransient(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  const e = error as { retryable?: unknown; code?: unknown; $retryable?: unknown; $fault?: unknown };
  if (typeof e.retryable === "boolean") return e.retryable;
  if (typeof e.code === "string" && NETWORK_CODES.has(e.code)) return true;
  return e.$retryable !== undefined || e.$fault === "server";
}

/**
 * How long to wait before calling again, when the error says (`retryAfterMs`: 0 for a conflict,
 * re-read at once; a deleted queue's name held for a minute); undefined when it does not say, or
 * the error is not transient at all.
 */
export function retryDelayMs(error: unknown): number | undefined {
  if (!isTransient(error)) return undefined;
  const delay = (error as { retryAfterMs?: unknown }).retryAfterMs;
  return typeof delay === "number" && Number.isFinite(delay) && delay >= 0 ? delay : undefined;
}
