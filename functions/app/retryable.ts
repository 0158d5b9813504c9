/** Whether a failed call may succeed if made again: read from the error's own data, never its text. */

/** Node's network error codes: the request may not have reached the service at all. */
const NETWORK_CODES: ReadonlySet<string> = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "ETIMEDOUT",
  "EPIPE",
  "EAI_AGAIN",
]);

/**
 * Retryability read from the error's own data: `retryable` when it says so (the store's and the
 * publisher's errors), the AWS SDK's marks (`$retryable`: throttling and transient
 * faults; `$fault: "server"`: a 5xx), and network failures.
 */
export function isTransient(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  const e = error as { retryable?: unknown; code?: unknown; $retryable?: unknown; $fault?: unknown };
  if (typeof e.retryable === "boolean") return e.retryable;
  if (typeof e.code === "string" && NETWORK_CODES.has(e.code)) return true;
  return e.$retryable !== undefined || e.$fault === "server";
}
