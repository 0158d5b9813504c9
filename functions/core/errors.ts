/**
 * The core's errors: input its pure decisions refuse (a spec, a retry policy, an event, a job
 * template, a handler's answer). One root (CoreError) with a stable `code`, and never retryable:
 * the core has no I/O, so the same input fails the same way every time. Same shape as the
 * ports' errors (ports/errors.ts) and the application's (app/errors.ts), so one reader
 * (app/retryable.ts) judges all three from their data.
 */
export abstract class CoreError extends Error {
  abstract readonly code: string;
  /** The same input is refused again: nothing to retry. */
  readonly retryable = false;
}
