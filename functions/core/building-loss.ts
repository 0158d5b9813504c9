/**
 * A run lost before RUNNING: preempted for a higher-priority session, or its agent lost. Iris's
 * task states retry only an ASSIGNED task for free: "ASSIGNED tasks: always retry to PENDING
 * regardless of budget (the task never started executing, so preemption is free). BUILDING or
 * RUNNING tasks: preemption_count is incremented and compared against max_retries_preemption."
 * A worker's death is judged the same way, under the same budget. In Cairn's mapping ASSIGNED is
 * SCHEDULED (placed, nothing prepared yet) and BUILDING is PREPARING, PREPARED and CREATING.
 *
 * So a loss in SCHEDULED goes back to PENDING as it always did, at no cost; a loss while BUILDING
 * charges the preemption budget (the spec's `retry.maxRetriesPreemption`, default 100) on its
 * way back to PENDING. With the budget spent, the run ends at the next pass with the loss's
 * outcome, PREEMPTED or WORKER_FAILED, terminal (coordinator/unrecoverable.ts): the lifecycle
 * has no edge to TERMINATED from PREPARED or CREATING, and PENDING → TERMINATED is the one a run
 * that cannot go on already takes. The budget alone judges these losses, retry policies or not:
 * no kernel has run, so there is nothing for a rule's exit codes or messages to read. Pure.
 */
import type { Session, StageTransition } from "./model.ts";
import { BUDGET_DEFAULTS, judgeBudget } from "./retry/budgets.ts";
import { INITIAL_RETRY_STATE, type RetryState } from "./retry/evaluate.ts";
import { SessionStatus, type AttemptOutcome } from "./status.ts";

/** Iris's BUILDING in Cairn's session statuses. */
export const BUILDING_STATUSES: ReadonlySet<SessionStatus> = new Set([
  SessionStatus.PREPARING,
  SessionStatus.PREPARED,
  SessionStatus.CREATING,
]);

export type LossOutcome = typeof AttemptOutcome.PREEMPTED | typeof AttemptOutcome.WORKER_FAILED;

/** Whether a run lost before RUNNING in this status goes back free (ASSIGNED), not charged (BUILDING). */
export function lossIsFree(status: SessionStatus): boolean {
  return !BUILDING_STATUSES.has(status);
}

/**
 * The return to PENDING of a run lost in `transition.from`, with the budget charged when the run
 * was BUILDING (`charged`, and the judgment appended to the message); unchanged when it was not.
 */
export function chargeLossBeforeRunning(
  session: Session,
  transition: StageTransition,
  outcome: LossOutcome,
): StageTransition {
  if (transition.to !== SessionStatus.PENDING || lossIsFree(transition.from)) return transition;
  const before = session.retry ?? INITIAL_RETRY_STATE;
  const limits = {
    maxRetriesFailure: session.spec.retry?.maxRetriesFailure ?? BUDGET_DEFAULTS.maxRetriesFailure,
    maxRetriesPreemption: session.spec.retry?.maxRetriesPreemption ?? BUDGET_DEFAULTS.maxRetriesPreemption,
  };
  const judged = judgeBudget(before, limits, { outcome, startedRunning: true });
  const retried = judged.decision === "retry";
  const charged: RetryState = {
    ...before,
    ...judged.counters,
    totalRetries: before.totalRetries + (retried ? 1 : 0),
    ...(retried ? {} : { budgetSpentBy: outcome }),
  };
  const judgment =
    `lost while BUILDING (${transition.from}): ${judged.reason}` +
    (retried ? "; placed again" : "; the run ends");
  return {
    ...transition,
    message: transition.message !== undefined ? `${transition.message}; ${judgment}` : judgment,
    charged,
  };
}

/** Why a run whose loss spent the budget ends (coordinator/unrecoverable.ts), or undefined. */
export function budgetSpentReason(session: Session): string | undefined {
  const outcome = session.retry?.budgetSpentBy;
  if (outcome === undefined) return undefined;
  const limit = session.spec.retry?.maxRetriesPreemption ?? BUDGET_DEFAULTS.maxRetriesPreemption;
  return (
    `${outcome} while BUILDING with the preemption budget spent ` +
    `(preemption count ${session.retry?.preemptionCount ?? 0} > maxRetriesPreemption ${limit})`
  );
}
