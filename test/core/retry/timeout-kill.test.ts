/**
 * A per-task timeout KILLs. Iris: "KILLED … Set by the controller: job cancellation
 * (_on_job_cancelled), job failure cascade (_mark_remaining_tasks_killed), per-task timeout" and
 * "KILLED is always terminal and never retried". HPC Pack still calls such a task
 * Failed: "a running task is marked as Failed when: … The HPC Job Scheduler Service cancels a
 * task because it has exceeded its maximum runtime." An operator who wants timeouts retried
 * writes an Armada rule on the condition `DeadlineExceeded`.
 */
import { describe, expect, test } from "vitest";
import { hpcJobState, hpcTaskState } from "../../../functions/core/hpc-view.ts";
import { deriveJobState, jobTasks, newJob } from "../../../functions/core/jobs.ts";
import { kernelReportPatch } from "../../../functions/core/kernel-reports.ts";
import {
  evaluateRetry,
  INITIAL_RETRY_STATE,
  type RetryInput,
} from "../../../functions/core/retry/evaluate.ts";
import { parseSessionSpec } from "../../../functions/core/spec.ts";
import { sessionResult } from "../../../functions/core/sessions.ts";
import { kernel, session } from "../fixtures.ts";
import { config, kernels, NOW_MS, policy, run } from "./fixtures.ts";

const timedOut = kernels.killed({ condition: "DeadlineExceeded" });

function evaluate(input: Partial<RetryInput> & Pick<RetryInput, "run">) {
  return evaluateRetry({ policies: [], state: INITIAL_RETRY_STATE, config: config(), ...input });
}

describe("the run-time limit's end is KILLED", () => {
  test("a kernel stopped at its run-time limit (DeadlineExceeded) ends KILLED, whatever it exited with", () => {
    for (const exitCode of [143, 1, 0]) {
      const patch = kernelReportPatch(
        kernel("s", 0, "TERMINATING"),
        { status: "TERMINATED", exitCode, condition: "DeadlineExceeded", atMs: NOW_MS },
        { cancelled: false },
      );
      expect(patch?.outcome).toBe("KILLED");
    }
  });

  test("the budgets never retry it, however much failure budget is left", () => {
    expect(evaluate({ run: run(timedOut), budgets: { maxRetriesFailure: 5 } })).toMatchObject({
      action: "fail",
      basis: "not-retriable",
      outcome: "KILLED",
      reason:
        "KILLED by its run-time limit: not retried (only a rule matching DeadlineExceeded with action Retry retries it)",
      state: { failureCount: 0, preemptionCount: 0, totalRetries: 0 },
    });
  });

  test("nor does a policy's default action Retry: only a rule that matches it", () => {
    const lenient = policy("lenient", { defaultAction: "Retry" });
    expect(evaluate({ run: run(timedOut), policies: [lenient] })).toMatchObject({ action: "fail" });
  });

  test("an Armada rule on DeadlineExceeded with action Retry retries it, counted against the rule's limit", () => {
    const timeouts = policy("timeouts", {
      retryLimit: 2,
      rules: [{ action: "Retry", onConditions: ["DeadlineExceeded"] }],
    });
    const first = evaluate({ run: run(timedOut), policies: [timeouts] });
    expect(first).toMatchObject({
      action: "retry",
      basis: "rule",
      matchedRule: { policy: "timeouts", index: 0 },
      state: { totalRetries: 1, ruleRetries: { "timeouts#0": 1 }, failureCount: 0 },
    });
    expect(first.reason).toMatch(
      /^timeouts rule 0 \(Retry\) matched kernel 0 \(condition DeadlineExceeded\): retry 1 of 2/,
    );
    const third = evaluate({
      run: run(timedOut),
      policies: [timeouts],
      state: { ...first.state, totalRetries: 2, ruleRetries: { "timeouts#0": 2 } },
    });
    expect(third).toMatchObject({ action: "fail", basis: "rule-limit" });
  });

  test("a rule matching it with action Fail, or policies switched off, leave it KILLED", () => {
    const failing = policy("strict", { rules: [{ action: "Fail", onConditions: ["DeadlineExceeded"] }] });
    expect(evaluate({ run: run(timedOut), policies: [failing] }).action).toBe("fail");
    const retrying = policy("timeouts", { rules: [{ action: "Retry", onConditions: ["DeadlineExceeded"] }] });
    expect(
      evaluate({ run: run(timedOut), policies: [retrying], config: config({ enabled: false }) }).action,
    ).toBe("fail");
  });

  test("a KILLED run without DeadlineExceeded (cancelled) is never retried, even by a rule that matches its exit code", () => {
    const byExit = policy("by-exit", {
      rules: [{ action: "Retry", onExitCodes: { operator: "In", values: [143] } }],
    });
    expect(evaluate({ run: run(kernels.killed()), policies: [byExit] })).toMatchObject({
      action: "fail",
      reason: "KILLED runs are never retried",
    });
  });
});

describe("how a timed-out task reads", () => {
  const ended = {
    session: session("t-1", "TERMINATED"),
    kernels: [
      kernel("t-1", 0, "TERMINATED", {
        exitCode: 0,
        condition: "DeadlineExceeded",
        outcome: "KILLED",
        message: "run-time limit of 30 s (timeouts.running) exceeded",
      }),
    ],
  };

  test("Iris: the task is KILLED, and so is its job", () => {
    const job = newJob("t-1", parseSessionSpec({ name: "t", command: ["true"] }), NOW_MS);
    const tasks = jobTasks(job, [ended]);
    expect(tasks[0]).toMatchObject({ state: "KILLED", finished: true });
    expect(deriveJobState(tasks, 0)).toEqual({
      state: "KILLED",
      reason: "1 task killed: run-time limit of 30 s (timeouts.running) exceeded",
    });
  });

  test("HPC Pack: the task is Failed (cancelled for exceeding its run time), even when it exited 0", () => {
    expect(hpcTaskState(ended.session, ended.kernels[0]!)).toBe("Failed");
    expect(sessionResult(ended)).toBe("failed");
  });

  test("HPC Pack: the job of a task its own limit killed is Failed; one cancelled (or past its job limit) Canceled", () => {
    const facts = { tasks: ["Failed" as const], final: "KILLED" as const, cancelRequested: false };
    expect(hpcJobState({ ...facts, taskTimedOut: true })).toBe("Failed");
    expect(hpcJobState(facts)).toBe("Canceled");
  });
});
