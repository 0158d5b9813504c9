/**
 * When a retry may start: exponential backoff configured at three levels (rule, policy, global
 * default; the most specific wins, field by field) and the graceful-shutdown wait of Armada's retry-policy proposal:
 * a retry waits `max(backoff, grace period)` but may start as soon as the old run is confirmed
 * terminated, never before the backoff has elapsed.
 */

export interface Backoff {
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
  /** At least 1. */
  readonly multiplier: number;
}

/** A level's backoff: each field it leaves out comes from the next, less specific level. */
export type BackoffOverride = Partial<Backoff>;

/** The backoff in force: for each field, the first level (most specific first) that sets it. */
export function effectiveBackoff(
  levels: readonly (BackoffOverride | undefined)[],
  fallback: Backoff,
): Backoff {
  const pick = <K extends keyof Backoff>(key: K): Backoff[K] =>
    levels.find((level) => level?.[key] !== undefined)?.[key] ?? fallback[key];
  return {
    initialDelayMs: pick("initialDelayMs"),
    maxDelayMs: pick("maxDelayMs"),
    multiplier: pick("multiplier"),
  };
}

/**
 * Armada's proposal: `min(initialDelay * multiplier^(failureCount-1), maxDelay)`, in whole milliseconds,
 * where `failureCount` (≥ 1) is the session's failure count, this failure included (see
 * sessionFailureCount). Overflow of the power lands on maxDelay; a zero initial delay stays zero.
 */
export function backoffDelayMs(backoff: Backoff, failureCount: number): number {
  if (!Number.isInteger(failureCount) || failureCount < 1) {
    throw new RangeError(`failure count must be an integer >= 1, got ${failureCount}`);
  }
  if (backoff.initialDelayMs === 0) return 0;
  const raw = backoff.initialDelayMs * backoff.multiplier ** (failureCount - 1);
  return Number.isFinite(raw) ? Math.min(Math.round(raw), backoff.maxDelayMs) : backoff.maxDelayMs;
}

/**
 * Armada's `failureCount` for a failure being judged: the session's counted failures so far,
 * this one included — the retries it has counted (`totalRetries`, every retry but a free one)
 * plus one, since every earlier counted failure was retried or the session would have ended. A
 * run preempted before it started costs nothing and is not a failure here. It is the session's
 * count, not the matched rule's: a rule first matching at the third failure waits the third
 * delay. (Not Iris's `failureCount` budget counter, which counts FAILED runs only.)
 */
export function sessionFailureCount(totalRetries: number): number {
  return totalRetries + 1;
}

/** How long a retry waits, and whether confirmation of the old run's end may cut the wait short. */
export interface RetryWait {
  /** `max(backoffMs, gracePeriodMs)`: the wait when no termination confirmation arrives. */
  readonly delayMs: number;
  readonly backoffMs: number;
  readonly gracePeriodMs: number;
  /**
   * True when the grace period is what makes the wait longer than the backoff: confirmation that
   * the old run terminated then ends the wait early (but never before the backoff has elapsed).
   */
  readonly endsEarlyOnTermination: boolean;
}

export function retryWait(backoffMs: number, gracePeriodMs: number): RetryWait {
  return {
    delayMs: Math.max(backoffMs, gracePeriodMs),
    backoffMs,
    gracePeriodMs,
    endsEarlyOnTermination: gracePeriodMs > backoffMs,
  };
}

/**
 * The moment a retry decided at `decidedAtMs` becomes eligible to be scheduled: at the end of its
 * wait, or when the old run is confirmed terminated if that comes first, but not before backoff.
 */
export function retryEligibleAtMs(
  decidedAtMs: number,
  wait: Pick<RetryWait, "delayMs" | "backoffMs">,
  terminationConfirmedAtMs?: number,
): number {
  const timerEndsAtMs = decidedAtMs + wait.delayMs;
  if (terminationConfirmedAtMs === undefined) return timerEndsAtMs;
  return Math.max(decidedAtMs + wait.backoffMs, Math.min(terminationConfirmedAtMs, timerEndsAtMs));
}
