/** What a session carries between runs for the retry judgment (functions/core/retry/evaluate.ts). */
import type { BudgetCounters } from "./budgets.ts";

export interface RetryState extends BudgetCounters {
  /** Retries granted that counted (every retry but free ones): what the global cap limits. */
  readonly totalRetries: number;
  /** Retries granted per rule, keyed by `ruleKey`. */
  readonly ruleRetries: Readonly<Record<string, number>>;
  /**
   * Returns to PENDING in the current run before it started (a stage gave up or expired):
   * capped by the spec's `maxPendingReturns`; a retried run starts again from 0.
   */
  readonly pendingReturns?: number;
  /**
   * Returns to PENDING in the session's life that no budget counts (give-up and expiry, pre-start
   * preemptions, agent loss before RUNNING, free retries): capped by MAX_FREE_RETURNS.
   */
  readonly freeReturns?: number;
  /**
   * Runs that could not start because of the cluster (a kernel ERROR before it ran: spawn failed,
   * no capacity left on the agent, the agent shutting down, a Fargate task that failed to start),
   * each retried automatically up to the spec's `retry.maxRetriesStart` (start-failures.ts).
   */
  readonly startRetries?: number;
  /**
   * A preemption or an agent loss while BUILDING (PREPARING … CREATING) spent the preemption
   * budget (building-loss.ts): the run went back to PENDING, and the next pass ends it with this
   * outcome (PENDING → TERMINATED), terminal as Iris's PREEMPTED or WORKER_FAILED is.
   */
  readonly budgetSpentBy?: "PREEMPTED" | "WORKER_FAILED";
}
