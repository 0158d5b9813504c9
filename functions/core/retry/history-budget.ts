/**
 * One lifecycle execution holds at most 25,000 history events (a hard Step Functions quota), and
 * a session lives in one execution. Everything that can make a session loop is bounded here so
 * that no session can reach that limit (its execution would fail, losing the session): the retried runs (the spec's budgets
 * and the operator's global cap) and the free returns to PENDING (give-up and expiry before the
 * run starts, pre-start preemptions, agent loss before RUNNING, preemptions retried at no cost).
 *
 * Measured on the local engine, which writes AWS-shaped history (test/e2e-loops.test.ts measures
 * them again and fails if they grow past the budget below):
 * - a retried run (PENDING → … → TERMINATING → Requeued → Backoff → PENDING): 65 events;
 * - a return to PENDING from PREPARING (the executable-missing loop): 24 events; from CREATING,
 *   the longest way back, 5 callback states × 8 events = 40.
 *
 * Each cycle is budgeted at 80 events, above the longest measured (65) by a quarter, for Lambda
 * retries inside a cycle (3 events each) and for states added later. With 200 counted retries
 * (201 runs) and 100 free returns (the 101st ends the session):
 *   (201 + 101) × 80 = 24,160 events, plus 20 for the start and the end = 24,180 < 25,000.
 * Measured rather than budgeted: 201 × 65 + 101 × 40 = 17,105.
 */

/** The Step Functions quota on one execution's history. */
export const MAX_EXECUTION_HISTORY_EVENTS = 25_000;

/** The longest measured cycle (a retried run); every return to PENDING is shorter. */
export const MEASURED_EVENTS_PER_RUN = 65;

/** What one cycle (a run or a free return) is budgeted at: the measured 65 with margin. */
export const EVENTS_PER_CYCLE_BUDGET = 80;

/** Events outside the cycles: ExecutionStarted, Submitted, the terminal state, the end. */
export const EVENTS_OUTSIDE_CYCLES = 20;

/**
 * Counted retries a session may be granted: the sum of its budgets (`maxRetriesFailure` +
 * `maxRetriesPreemption`), and under policies the global cap (`globalMaxRetries`), are at most this.
 */
export const MAX_COUNTED_RETRIES = 200;

/**
 * Free returns to PENDING in a session's life (nothing else counts them): the return past this
 * ends the session FAILED with the reason.
 */
export const MAX_FREE_RETURNS = 100;

/** Events the worst session can write: the quota must hold it. */
export function worstCaseHistoryEvents(eventsPerCycle: number = EVENTS_PER_CYCLE_BUDGET): number {
  const runs = MAX_COUNTED_RETRIES + 1;
  const returns = MAX_FREE_RETURNS + 1;
  return (runs + returns) * eventsPerCycle + EVENTS_OUTSIDE_CYCLES;
}

/** Why a limit is what it is, for validation messages. */
export const HISTORY_LIMIT_REASON = `a session lives in one lifecycle execution, which holds 25,000 history events (up to ${EVENTS_PER_CYCLE_BUDGET} a run)`;
