/**
 * The application's errors: what a use case refuses or cannot do now. One root (AppError) with
 * a stable `code`, whether the same call may succeed later (`retryable`) and, where known, how
 * long to wait first (`retryAfterMs`), all as data, the same shape as the ports' errors
 * (core/ports/errors.ts): retryable.ts reads both the same way, and callers branch on `code`,
 * never on `instanceof` or the message.
 */
export abstract class AppError extends Error {
  abstract readonly code: string;
  /** Whether the same call may succeed later (contention that passes, a stage not yet written). */
  readonly retryable: boolean = false;
  /** When known, how long until the same call may succeed. */
  readonly retryAfterMs?: number;
}
