/**
 * Lifecycle loop limits in the pure core: the limits that keep a session inside one
 * execution's history, the counters of returns to PENDING, and the runs that end FAILED because
 * they can never start.
 */
import { describe, expect, test } from "vitest";
import {
  partitionUnrecoverable,
  unrecoverableReason,
} from "../../functions/core/coordinator/unrecoverable.ts";
import { countReturn, stageEntryWrite } from "../../functions/core/effects.ts";
import { kernelReportPatch } from "../../functions/core/kernel-reports.ts";
import type { HistoryRecord, SessionSpec, StageTransition } from "../../functions/core/model.ts";
import { parseRetryConfig } from "../../functions/core/retry/config.ts";
import { evaluateRetry, INITIAL_RETRY_STATE, type RetryState } from "../../functions/core/retry/evaluate.ts";
import {
  MAX_COUNTED_RETRIES,
  MAX_EXECUTION_HISTORY_EVENTS,
  MAX_FREE_RETURNS,
  worstCaseHistoryEvents,
} from "../../functions/core/retry/history-budget.ts";
import type { SpecValidationError } from "../../functions/core/spec.ts";
import { parseSessionSpec, SPEC_DEFAULTS } from "../../functions/core/spec.ts";
import { historyRecord, kernel, NOW_MS, session, SPEC } from "./fixtures.ts";

const REASON =
  "a session lives in one lifecycle execution, which holds 25,000 history events (up to 80 a run)";

function specProblems(input: Record<string, unknown>): string[] {
  try {
    parseSessionSpec({ name: "x", command: ["true"], ...input });
    return [];
  } catch (error) {
    return (error as SpecValidationError).issues.map((i) => `${i.path}: ${i.message}`);
  }
}

describe("the history budget", () => {
  test("the worst session the bounds allow fits in one execution's history", () => {
    // (201 runs + 101 free returns) × 80 events + 20 = 24,180.
    expect(worstCaseHistoryEvents()).toBe(24_180);
    expect(worstCaseHistoryEvents()).toBeLessThan(MAX_EXECUTION_HISTORY_EVENTS);
  });
});

describe("spec and policy limits that keep a session in one execution", () => {
  test("maxPendingReturns defaults to 5 and is 0 to the session's bound on free returns", () => {
    expect(SPEC_DEFAULTS.maxPendingReturns).toBe(5);
    expect(specProblems({ maxPendingReturns: 0 })).toEqual([]);
    expect(specProblems({ maxPendingReturns: MAX_FREE_RETURNS })).toEqual([]);
    expect(specProblems({ maxPendingReturns: MAX_FREE_RETURNS + 1 })).toEqual([
      `maxPendingReturns: must be at most 100: ${REASON}`,
    ]);
    expect(specProblems({ maxPendingReturns: -1 })).toEqual(["maxPendingReturns: must be at least 0"]);
  });

  test("each budget is at most 200", () => {
    expect(specProblems({ retry: { maxRetriesPreemption: MAX_COUNTED_RETRIES + 1 } })).toEqual([
      `retry.maxRetriesPreemption: must be at most 200: ${REASON}`,
    ]);
    expect(specProblems({ retry: { maxRetriesFailure: 1000, maxRetriesPreemption: 0 } })).toEqual([
      `retry.maxRetriesFailure: must be at most 200: ${REASON}`,
    ]);
  });

  test("the two budgets together are at most 200, the preemption default counted", () => {
    expect(specProblems({ retry: { maxRetriesFailure: 100 } })).toEqual([]);
    expect(specProblems({ retry: { maxRetriesFailure: 101 } })).toEqual([
      `retry.maxRetriesFailure: maxRetriesFailure (101) + maxRetriesPreemption (100, the default) allow 201 retries, more than 200: ${REASON}`,
    ]);
    expect(specProblems({ retry: { maxRetriesFailure: 150, maxRetriesPreemption: 50 } })).toEqual([]);
    expect(specProblems({ retry: { maxRetriesFailure: 150, maxRetriesPreemption: 51 } })).toEqual([
      `retry.maxRetriesFailure: maxRetriesFailure (150) + maxRetriesPreemption (51) allow 201 retries, more than 200: ${REASON}`,
    ]);
  });

  test("the global retry cap is at most 200", () => {
    expect(parseRetryConfig({ globalMaxRetries: 200 }).globalMaxRetries).toBe(200);
    expect(() => parseRetryConfig({ globalMaxRetries: 201 })).toThrow(
      `globalMaxRetries: must be at most 200: ${REASON}`,
    );
  });
});

const SPEC3: SessionSpec = { ...SPEC, replicas: 1, maxPendingReturns: 3 };

function entry(from: "SCHEDULED" | "PREPARING" | "CREATING", result: StageTransition["result"]) {
  return { from, to: "PENDING", result, handler: "PrepareSessions" } as const satisfies StageTransition;
}

describe("counting returns to PENDING", () => {
  test("a stage's give-up or expiry is one of the run's returns and one of the session's", () => {
    const s = session("s1", "PREPARING", { spec: SPEC3 });
    expect(countReturn(s, entry("PREPARING", "GIVE_UP"))).toMatchObject({
      pendingReturns: 1,
      freeReturns: 1,
    });
    const again = session("s1", "CREATING", {
      spec: SPEC3,
      retry: { ...INITIAL_RETRY_STATE, pendingReturns: 1, freeReturns: 4 },
    });
    expect(countReturn(again, entry("CREATING", "EXPIRED"))).toMatchObject({
      pendingReturns: 2,
      freeReturns: 5,
    });
  });

  test("a pre-start preemption or an agent lost before RUNNING is free: only the session counts it", () => {
    const s = session("s1", "SCHEDULED", {
      spec: SPEC3,
      retry: { ...INITIAL_RETRY_STATE, pendingReturns: 2, freeReturns: 2 },
    });
    expect(countReturn(s, entry("SCHEDULED", "PREEMPTED"))).toMatchObject({
      pendingReturns: 2,
      freeReturns: 3,
    });
    expect(countReturn(s, entry("SCHEDULED", "AGENT_LOST"))).toMatchObject({
      pendingReturns: 2,
      freeReturns: 3,
    });
  });

  test("a retried run starts its own count; a counted retry is not a free return, a free one is", () => {
    const before: RetryState = { ...INITIAL_RETRY_STATE, totalRetries: 1, pendingReturns: 2, freeReturns: 7 };
    const s = session("s1", "TERMINATING", { spec: SPEC3, retry: before });
    const requeue = (totalRetries: number): StageTransition => ({
      from: "TERMINATING",
      to: "PENDING",
      result: "REQUEUED",
      handler: "Retry",
      requeue: { retry: { ...before, totalRetries }, avoidAgentIds: [], delaySeconds: 0 },
    });
    expect(countReturn(s, requeue(2))).toMatchObject({ totalRetries: 2, pendingReturns: 0, freeReturns: 7 });
    expect(countReturn(s, requeue(1))).toMatchObject({ totalRetries: 1, pendingReturns: 0, freeReturns: 8 });
  });

  test("the stage entry writes the counters with the status", () => {
    const s = session("s1", "PREPARING", { spec: SPEC3 });
    const write = stageEntryWrite({
      session: s,
      kernels: [kernel("s1", 0, "PREPARING", { agentId: "a1", error: "not executable" })],
      transition: entry("PREPARING", "GIVE_UP"),
      taskToken: "token-new",
      nowMs: NOW_MS,
    });
    expect(write).toMatchObject({ status: "PENDING", retry: { pendingReturns: 1, freeReturns: 1 } });
  });
});

const returned = (from: string, message: string): HistoryRecord =>
  historyRecord({
    sessionId: "s1",
    fromStatus: from as HistoryRecord["fromStatus"],
    toStatus: "PENDING",
    result: "GIVE_UP",
    message,
  });

describe("runs that can never start", () => {
  test("a run back in PENDING more often than maxPendingReturns ends, naming the stage and the count", () => {
    const within = session("s1", "PENDING", {
      spec: SPEC3,
      retry: { ...INITIAL_RETRY_STATE, pendingReturns: 3, freeReturns: 3 },
    });
    expect(unrecoverableReason({ session: within, kernels: [] })).toBeUndefined();
    const over = {
      ...within,
      retry: { ...INITIAL_RETRY_STATE, pendingReturns: 4, freeReturns: 4 },
      lastHistory: returned("PREPARING", "kernel 0: not executable"),
    };
    expect(unrecoverableReason({ session: over, kernels: [] })).toBe(
      "returned to PENDING 4 times in run 0, more than maxPendingReturns 3; the last from PREPARING (give_up: kernel 0: not executable)",
    );
  });

  test("the session's free returns are bounded across runs, whatever maxPendingReturns says", () => {
    const s = session("s1", "PENDING", {
      spec: { ...SPEC3, maxPendingReturns: MAX_FREE_RETURNS },
      runIndex: 7,
      retry: {
        ...INITIAL_RETRY_STATE,
        totalRetries: 7,
        pendingReturns: 1,
        freeReturns: MAX_FREE_RETURNS + 1,
      },
      lastHistory: { ...returned("SCHEDULED", "preempted by hi"), result: "PREEMPTED" },
    });
    expect(unrecoverableReason({ session: s, kernels: [] })).toBe(
      "returned to PENDING 101 times without a counted retry, more than the 100 one lifecycle execution's history holds; the last from SCHEDULED (preempted: preempted by hi)",
    );
  });

  test("a preparation error no retry can clear ends the run from PREPARING; another one does not", () => {
    const s = session("s1", "PREPARING", { spec: SPEC3 });
    const missing = kernel("s1", 0, "PREPARING", {
      error: 'executable "/no/such" not found at /no/such',
      failureCategory: "executable_not_found",
    });
    expect(unrecoverableReason({ session: s, kernels: [missing] })).toBe(
      'kernel 0: executable "/no/such" not found at /no/such (executable_not_found: no retry can clear it)',
    );
    const other = kernel("s1", 0, "PREPARING", { error: "not executable" });
    expect(unrecoverableReason({ session: s, kernels: [other] })).toBeUndefined();
  });

  test("the decision completes the stage to TERMINATED as FAILED, and the others go to the handler", () => {
    const ending = {
      session: session("s-one", "PREPARING", { spec: SPEC3 }),
      kernels: [kernel("s-one", 0, "PREPARING", { error: "gone", failureCategory: "executable_not_found" })],
    };
    const fine = {
      session: session("s-two", "PREPARING", { spec: SPEC3 }),
      kernels: [kernel("s-two", 0, "PREPARING")],
    };
    const { ending: decisions, rest } = partitionUnrecoverable([ending, fine], "PrepareSessions", NOW_MS);
    expect(rest).toEqual([fine]);
    expect(decisions).toHaveLength(1);
    expect(decisions[0]).toMatchObject({
      sessionId: "s-one",
      fromStatus: "PREPARING",
      toStatus: "TERMINATED",
      spendsTry: false,
      history: { result: "FAILED", toStatus: "TERMINATED" },
      complete: {
        from: "PREPARING",
        to: "TERMINATED",
        result: "FAILED",
        run: { outcome: "FAILED", decision: "finished" },
      },
    });
  });

  test("entering TERMINATED as FAILED ends each kernel FAILED with its own error", () => {
    const s = session("s1", "PREPARING", { spec: { ...SPEC3, replicas: 2 } });
    const write = stageEntryWrite({
      session: s,
      kernels: [kernel("s1", 0, "PREPARING", { error: "gone" }), kernel("s1", 1, "PREPARED")],
      transition: {
        from: "PREPARING",
        to: "TERMINATED",
        result: "FAILED",
        handler: "PrepareSessions",
        message: "why",
      },
      nowMs: NOW_MS,
    });
    expect(write.kernels).toEqual([
      {
        index: 0,
        status: "ERROR",
        outcome: "FAILED",
        message: "gone",
        finishedAtMs: NOW_MS,
        expectedVersion: 0,
      },
      {
        index: 1,
        status: "ERROR",
        outcome: "FAILED",
        message: "why",
        finishedAtMs: NOW_MS,
        expectedVersion: 0,
      },
    ]);
  });

  test("a preparation error keeps the agent's failure category", () => {
    const patch = kernelReportPatch(
      kernel("s1", 0, "PREPARING"),
      { status: "ERROR", message: "not found", failureCategory: "executable_not_found", atMs: NOW_MS },
      { cancelled: false },
    );
    expect(patch).toEqual({
      index: 0,
      status: "PREPARING",
      error: "not found",
      failureCategory: "executable_not_found",
    });
  });

  test("a failed run whose error no retry can clear is not retried, whatever the budgets allow", () => {
    const decision = evaluateRetry({
      run: {
        startedRunning: false,
        kernels: [{ index: 0, outcome: "FAILED", failureCategory: "arguments_too_large" }],
      },
      policies: [],
      state: INITIAL_RETRY_STATE,
      config: parseRetryConfig({}),
      budgets: { maxRetriesFailure: 5 },
    });
    expect(decision).toMatchObject({
      action: "fail",
      basis: "not-retriable",
      reason: "kernel 0 failed with arguments_too_large, which no retry can clear: not retried",
    });
  });

  test("a session that has used every retry one execution holds is not retried, in either mode", () => {
    const decision = evaluateRetry({
      run: { startedRunning: true, kernels: [{ index: 0, outcome: "WORKER_FAILED" }] },
      policies: [],
      state: { ...INITIAL_RETRY_STATE, totalRetries: MAX_COUNTED_RETRIES },
      config: parseRetryConfig({}),
    });
    expect(decision).toMatchObject({
      action: "fail",
      reason: "200 retries used, all that fit in one lifecycle execution's history: not retried",
    });
  });
});
