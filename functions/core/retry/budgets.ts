/**
 * The two retry budgets of Iris's task states, per session (Iris's "task" is a Cairn session):
 *
 * | Budget     | Counter         | Limit                | Default | Counted outcomes        |
 * |------------|-----------------|----------------------|---------|-------------------------|
 * | failure    | failureCount    | maxRetriesFailure    | 0       | FAILED                  |
 * | preemption | preemptionCount | maxRetriesPreemption | 100     | WORKER_FAILED, PREEMPTED|
 *
 * The counter is incremented first, then the run is retried iff `counter <= limit`. A PREEMPTED
 * run that had not started (Iris: ASSIGNED; Cairn: SCHEDULED, before any kernel was prepared) is
 * always retried and costs nothing; from BUILDING on (PREPARING … CREATING, then RUNNING) it is
 * charged: "BUILDING or RUNNING tasks: preemption_count is incremented" (building-loss.ts).
 * SUCCEEDED, KILLED and UNSCHEDULABLE are never retried.
 */
import { AttemptOutcome } from "../status.ts";
import { RetryInputError } from "./errors.ts";

export interface BudgetLimits {
  readonly maxRetriesFailure: number;
  readonly maxRetriesPreemption: number;
}

export const BUDGET_DEFAULTS: BudgetLimits = Object.freeze({
  maxRetriesFailure: 0,
  maxRetriesPreemption: 100,
});

export interface BudgetCounters {
  readonly failureCount: number;
  readonly preemptionCount: number;
}

export const ZERO_BUDGET_COUNTERS: BudgetCounters = Object.freeze({ failureCount: 0, preemptionCount: 0 });

/** How a run ended, as the budgets see it. */
export interface RunOutcome {
  readonly outcome: AttemptOutcome;
  /**
   * Whether the run got past ASSIGNED: Iris's BUILDING or RUNNING (a finished run judged out of
   * TERMINATING always did; a loss before RUNNING did from PREPARING on).
   */
  readonly startedRunning: boolean;
}

export type BudgetKind = "failure" | "preemption" | "none";

export interface BudgetJudgement {
  readonly decision: "retry" | "finished";
  readonly counters: BudgetCounters;
  /** The budget the run was charged to; "none" for free and never-retried runs. */
  readonly budget: BudgetKind;
  readonly reason: string;
}

/** True for the one retry that costs nothing: preempted before it started running. */
export function isFreePreemption(run: RunOutcome): boolean {
  return run.outcome === AttemptOutcome.PREEMPTED && !run.startedRunning;
}

/** The budget a run is charged to. */
export function budgetKindOf(run: RunOutcome): BudgetKind {
  switch (run.outcome) {
    case AttemptOutcome.FAILED:
      return "failure";
    case AttemptOutcome.WORKER_FAILED:
      return "preemption";
    case AttemptOutcome.PREEMPTED:
      return run.startedRunning ? "preemption" : "none";
    case AttemptOutcome.SUCCEEDED:
    case AttemptOutcome.KILLED:
    case AttemptOutcome.UNSCHEDULABLE:
      return "none";
  }
}

/** The counters after charging a run to its budget. */
export function chargeRun(counters: BudgetCounters, run: RunOutcome): BudgetCounters {
  checkCounters(counters);
  switch (budgetKindOf(run)) {
    case "failure":
      return { failureCount: counters.failureCount + 1, preemptionCount: counters.preemptionCount };
    case "preemption":
      return { failureCount: counters.failureCount, preemptionCount: counters.preemptionCount + 1 };
    case "none":
      return { failureCount: counters.failureCount, preemptionCount: counters.preemptionCount };
  }
}

/** Iris's `_handle_failure`: charge the run, then retry while the budget holds. */
export function judgeBudget(
  counters: BudgetCounters,
  limits: BudgetLimits,
  run: RunOutcome,
): BudgetJudgement {
  checkLimits(limits);
  const charged = chargeRun(counters, run);
  const budget = budgetKindOf(run);
  if (isFreePreemption(run)) {
    return {
      decision: "retry",
      counters: charged,
      budget,
      reason: "preempted before it started running: retried at no cost",
    };
  }
  if (budget === "none") {
    return {
      decision: "finished",
      counters: charged,
      budget,
      reason: `${run.outcome} runs are never retried`,
    };
  }
  const [count, limit, countName, limitName] =
    budget === "failure"
      ? [charged.failureCount, limits.maxRetriesFailure, "failure count", "maxRetriesFailure"]
      : [charged.preemptionCount, limits.maxRetriesPreemption, "preemption count", "maxRetriesPreemption"];
  const retry = count <= limit;
  return {
    decision: retry ? "retry" : "finished",
    counters: charged,
    budget,
    reason: `${run.outcome}: ${countName} ${count} ${retry ? "<=" : ">"} ${limitName} ${limit}`,
  };
}

/**
 * Iris's `is_finished()` for a session whose latest run ended with `outcome`, given the
 * counters after that run was charged. A FAILED run with budget left is terminal as an attempt
 * but not finished as a session: it will run again.
 */
export function isFinished(outcome: AttemptOutcome, counters: BudgetCounters, limits: BudgetLimits): boolean {
  switch (outcome) {
    case AttemptOutcome.SUCCEEDED:
    case AttemptOutcome.KILLED:
    case AttemptOutcome.UNSCHEDULABLE:
      return true;
    case AttemptOutcome.FAILED:
      return counters.failureCount > limits.maxRetriesFailure;
    case AttemptOutcome.WORKER_FAILED:
    case AttemptOutcome.PREEMPTED:
      return counters.preemptionCount > limits.maxRetriesPreemption;
  }
}

function checkCounters(counters: BudgetCounters): void {
  checkNonNegative([
    ["failureCount", counters.failureCount],
    ["preemptionCount", counters.preemptionCount],
  ]);
}

function checkLimits(limits: BudgetLimits): void {
  checkNonNegative([
    ["maxRetriesFailure", limits.maxRetriesFailure],
    ["maxRetriesPreemption", limits.maxRetriesPreemption],
  ]);
}

function checkNonNegative(fields: readonly (readonly [string, number])[]): void {
  for (const [field, value] of fields) {
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new RetryInputError(`${field} must be a non-negative integer, got ${String(value)}`);
    }
  }
}
