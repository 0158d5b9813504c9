/** Iris's two retry budgets and `is_finished()`, rule by rule. */
import { describe, expect, test } from "vitest";
import {
  BUDGET_DEFAULTS,
  budgetKindOf,
  isFinished,
  judgeBudget,
  type BudgetCounters,
  type BudgetLimits,
} from "../../../functions/core/retry/budgets.ts";
import { RetryInputError } from "../../../functions/core/retry/errors.ts";
import type { AttemptOutcome } from "../../../functions/core/status.ts";

const c = (failureCount: number, preemptionCount: number): BudgetCounters => ({
  failureCount,
  preemptionCount,
});
const lim = (maxRetriesFailure: number, maxRetriesPreemption: number): BudgetLimits => ({
  maxRetriesFailure,
  maxRetriesPreemption,
});

describe("defaults (Iris's budget table)", () => {
  test("maxRetriesFailure 0 (no retries), maxRetriesPreemption 100", () => {
    expect(BUDGET_DEFAULTS).toEqual({ maxRetriesFailure: 0, maxRetriesPreemption: 100 });
  });
});

describe("judgeBudget: increment the counter, retry iff counter <= limit", () => {
  type Row = [
    name: string,
    counters: BudgetCounters,
    limits: BudgetLimits,
    outcome: AttemptOutcome,
    startedRunning: boolean,
    decision: "retry" | "finished",
    after: BudgetCounters,
    budget: "failure" | "preemption" | "none",
    reason: string,
  ];
  // prettier-ignore
  const rows: Row[] = [
    // FAILED → failure budget.
    ["FAILED with the default budget is not retried", c(0, 0), BUDGET_DEFAULTS, "FAILED", true, "finished", c(1, 0), "failure", "FAILED: failure count 1 > maxRetriesFailure 0"],
    ["FAILED, first failure of 2 allowed", c(0, 0), lim(2, 100), "FAILED", true, "retry", c(1, 0), "failure", "FAILED: failure count 1 <= maxRetriesFailure 2"],
    ["FAILED, count reaches the limit: still retried", c(1, 0), lim(2, 100), "FAILED", true, "retry", c(2, 0), "failure", "FAILED: failure count 2 <= maxRetriesFailure 2"],
    ["FAILED, count passes the limit: finished", c(2, 0), lim(2, 100), "FAILED", true, "finished", c(3, 0), "failure", "FAILED: failure count 3 > maxRetriesFailure 2"],
    ["FAILED leaves the preemption count alone", c(0, 7), lim(1, 100), "FAILED", true, "retry", c(1, 7), "failure", "FAILED: failure count 1 <= maxRetriesFailure 1"],
    // WORKER_FAILED and PREEMPTED → preemption budget.
    ["WORKER_FAILED, 100th preemption", c(0, 99), BUDGET_DEFAULTS, "WORKER_FAILED", true, "retry", c(0, 100), "preemption", "WORKER_FAILED: preemption count 100 <= maxRetriesPreemption 100"],
    ["WORKER_FAILED, 101st preemption", c(0, 100), BUDGET_DEFAULTS, "WORKER_FAILED", true, "finished", c(0, 101), "preemption", "WORKER_FAILED: preemption count 101 > maxRetriesPreemption 100"],
    ["WORKER_FAILED before the run started still counts", c(0, 0), lim(0, 0), "WORKER_FAILED", false, "finished", c(0, 1), "preemption", "WORKER_FAILED: preemption count 1 > maxRetriesPreemption 0"],
    ["WORKER_FAILED ignores the failure budget", c(5, 0), lim(0, 100), "WORKER_FAILED", true, "retry", c(5, 1), "preemption", "WORKER_FAILED: preemption count 1 <= maxRetriesPreemption 100"],
    ["PREEMPTED while running counts", c(0, 5), BUDGET_DEFAULTS, "PREEMPTED", true, "retry", c(0, 6), "preemption", "PREEMPTED: preemption count 6 <= maxRetriesPreemption 100"],
    ["PREEMPTED while running, budget exhausted", c(0, 2), lim(0, 2), "PREEMPTED", true, "finished", c(0, 3), "preemption", "PREEMPTED: preemption count 3 > maxRetriesPreemption 2"],
    // Iris ASSIGNED: preempted before it started — always retried, free.
    ["PREEMPTED before it started: free, even with no budget left", c(0, 2), lim(0, 2), "PREEMPTED", false, "retry", c(0, 2), "none", "preempted before it started running: retried at no cost"],
    ["PREEMPTED before it started: free with a zero budget", c(0, 0), lim(0, 0), "PREEMPTED", false, "retry", c(0, 0), "none", "preempted before it started running: retried at no cost"],
    // Never retried.
    ["SUCCEEDED", c(0, 0), BUDGET_DEFAULTS, "SUCCEEDED", true, "finished", c(0, 0), "none", "SUCCEEDED runs are never retried"],
    ["KILLED, whatever the budget", c(0, 0), lim(100, 100), "KILLED", true, "finished", c(0, 0), "none", "KILLED runs are never retried"],
    ["UNSCHEDULABLE, whatever the budget", c(0, 0), lim(100, 100), "UNSCHEDULABLE", false, "finished", c(0, 0), "none", "UNSCHEDULABLE runs are never retried"],
  ];

  test.each(rows)(
    "%s",
    (_name, counters, limits, outcome, startedRunning, decision, after, budget, reason) => {
      expect(judgeBudget(counters, limits, { outcome, startedRunning })).toEqual({
        decision,
        counters: after,
        budget,
        reason,
      });
    },
  );

  test("the counters passed in are not modified", () => {
    const counters = Object.freeze(c(1, 1));
    judgeBudget(counters, BUDGET_DEFAULTS, { outcome: "FAILED", startedRunning: true });
    expect(counters).toEqual(c(1, 1));
  });

  test("negative or fractional counters and limits are contract violations", () => {
    const run = { outcome: "FAILED", startedRunning: true } as const;
    expect(() => judgeBudget(c(-1, 0), BUDGET_DEFAULTS, run)).toThrow(
      new RetryInputError("failureCount must be a non-negative integer, got -1"),
    );
    expect(() => judgeBudget(c(0, 0), lim(0, 1.5), run)).toThrow(
      new RetryInputError("maxRetriesPreemption must be a non-negative integer, got 1.5"),
    );
  });
});

describe("budgetKindOf", () => {
  test.each([
    ["FAILED", true, "failure"],
    ["FAILED", false, "failure"],
    ["WORKER_FAILED", true, "preemption"],
    ["WORKER_FAILED", false, "preemption"],
    ["PREEMPTED", true, "preemption"],
    ["PREEMPTED", false, "none"],
    ["SUCCEEDED", true, "none"],
    ["KILLED", true, "none"],
    ["UNSCHEDULABLE", false, "none"],
  ] as const)("%s (started: %s) → %s", (outcome, startedRunning, kind) => {
    expect(budgetKindOf({ outcome, startedRunning })).toBe(kind);
  });
});

describe("isFinished (Iris's table)", () => {
  const limits = lim(2, 3);
  test.each([
    ["SUCCEEDED", c(0, 0), true],
    ["KILLED", c(0, 0), true],
    ["UNSCHEDULABLE", c(0, 0), true],
    ["FAILED", c(2, 0), false],
    ["FAILED", c(3, 0), true],
    ["FAILED", c(0, 99), false],
    ["WORKER_FAILED", c(0, 3), false],
    ["WORKER_FAILED", c(0, 4), true],
    ["WORKER_FAILED", c(99, 0), false],
    ["PREEMPTED", c(0, 3), false],
    ["PREEMPTED", c(0, 4), true],
    ["PREEMPTED", c(99, 0), false],
  ] as const)("%s with %o → %s", (outcome, counters, finished) => {
    expect(isFinished(outcome, counters, limits)).toBe(finished);
  });

  test("a FAILED session with budget left is terminal as an attempt, not finished as a session", () => {
    const judged = judgeBudget(c(0, 0), lim(1, 0), { outcome: "FAILED", startedRunning: true });
    expect(judged.decision).toBe("retry");
    expect(isFinished("FAILED", judged.counters, lim(1, 0))).toBe(false);
  });
});
