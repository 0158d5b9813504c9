/**
 * A run leaving TERMINATING, or never placed, judged by the pure core
 * (core/coordinator/finished-run.ts): over, or retried back to PENDING with its backoff, the
 * retry state it spends and its record.
 */
import { describe, expect, test } from "vitest";
import { judgeFinishedRun, runNeedsRetryCatalog } from "../../functions/core/coordinator/finished-run.ts";
import type { SessionWithKernels, StageTransition } from "../../functions/core/model.ts";
import { RETRY_CONFIG_DEFAULTS } from "../../functions/core/retry/config.ts";
import { INITIAL_RETRY_STATE } from "../../functions/core/retry/evaluate.ts";
import { parseRetryPolicy } from "../../functions/core/retry/policy.ts";
import { newSession, T0 } from "../store-fixtures.ts";

const ended: StageTransition = {
  from: "TERMINATING",
  to: "TERMINATED",
  result: "SUCCESS",
  handler: "TerminateSessions",
};
const NOW = T0 + 60_000;
const catalog = { config: RETRY_CONFIG_DEFAULTS, policies: [] };

function ran(
  exitCodes: readonly number[],
  more: Partial<SessionWithKernels["session"]> = {},
): SessionWithKernels {
  const s = newSession("s-run", {
    status: "TERMINATING",
    replicas: exitCodes.length,
    kernelStatus: "TERMINATED",
  });
  return {
    session: { ...s.session, ...more },
    kernels: s.kernels.map((k, i) => ({
      ...k,
      agentId: "agent-a",
      startedAtMs: T0,
      finishedAtMs: T0 + 1_000,
      exitCode: exitCodes[i]!,
      outcome: exitCodes[i] === 0 ? "SUCCEEDED" : "FAILED",
    })),
  };
}

describe("a finished run, judged", () => {
  test("every kernel exited 0: the run is over, without the catalog", () => {
    const s = ran([0, 0]);
    expect(runNeedsRetryCatalog(s, ended)).toBe(false);
    const t = judgeFinishedRun(s, ended, NOW);
    expect(t).toMatchObject({ to: "TERMINATED", message: "every kernel exited 0" });
    expect(t.run).toMatchObject({ runIndex: 0, decision: "finished" });
  });

  test("a cancelled run is not retried, whatever it exited with", () => {
    const s = ran([3], { cancelRequestedAtMs: T0 });
    expect(runNeedsRetryCatalog(s, ended)).toBe(false);
    expect(judgeFinishedRun(s, ended, NOW)).toMatchObject({
      to: "TERMINATED",
      message: "cancelled: not retried",
    });
  });

  test("a failed run within its failure budget goes back to PENDING with its backoff and record", () => {
    const s = ran([0, 3], { spec: { ...ran([0]).session.spec, retry: { maxRetriesFailure: 1 } } });
    expect(runNeedsRetryCatalog(s, ended)).toBe(true);
    expect(() => judgeFinishedRun(s, ended, NOW)).toThrow(/needs the retry catalog/);
    const t = judgeFinishedRun(s, ended, NOW, catalog);
    expect(t).toMatchObject({ from: "TERMINATING", to: "PENDING", result: "REQUEUED", handler: "Retry" });
    expect(t.requeue?.retry.failureCount).toBe(1);
    expect(t.requeue?.delaySeconds).toBeGreaterThanOrEqual(0);
    expect(t.run).toMatchObject({ runIndex: 0, decision: "retry" });
  });

  test("a run preempted while running: retried by default; with rerunnable: false over, without the catalog", () => {
    const preempted = (spec: Partial<SessionWithKernels["session"]["spec"]>): SessionWithKernels => {
      const s = ran([143]);
      return {
        session: { ...s.session, spec: { ...s.session.spec, ...spec } },
        kernels: s.kernels.map((k) => ({
          ...k,
          outcome: "PREEMPTED" as const,
          condition: "Preempted" as const,
        })),
      };
    };
    const retried = judgeFinishedRun(preempted({}), ended, NOW, catalog);
    expect(retried).toMatchObject({ to: "PENDING", result: "REQUEUED" });
    expect(retried.requeue?.retry.preemptionCount).toBe(1);
    const once = preempted({ rerunnable: false });
    expect(runNeedsRetryCatalog(once, ended)).toBe(false);
    expect(judgeFinishedRun(once, ended, NOW)).toMatchObject({
      to: "TERMINATED",
      message: "preempted while running, and the spec says rerunnable: false: not run again",
      run: { decision: "finished", outcome: "PREEMPTED" },
    });
    // A failure that is not a preemption is judged by the budgets as before.
    const failing = ran([3], {
      spec: { ...ran([0]).session.spec, rerunnable: false, retry: { maxRetriesFailure: 1 } },
    });
    expect(judgeFinishedRun(failing, ended, NOW, catalog)).toMatchObject({ to: "PENDING" });
  });

  test("a failed run with no budget left is over, and says why", () => {
    const s = ran([3], { spec: { ...ran([0]).session.spec, retry: { maxRetriesFailure: 0 } } });
    const t = judgeFinishedRun(s, ended, NOW, catalog);
    expect(t.to).toBe("TERMINATED");
    expect(t.run?.decision).toBe("finished");
    expect(t.message).toMatch(/./);
  });

  test("a Fargate kernel's task is in the run's record (its output is the task's stream)", () => {
    const s = ran([0, 3], { spec: { ...ran([0]).session.spec, retry: { maxRetriesFailure: 1 } } });
    const taskArn = "arn:aws:ecs:us-east-1:123456789012:task/cairn/0123456789abcdef0123456789abcdef";
    const fargate = { ...s, kernels: s.kernels.map((k) => (k.index === 1 ? { ...k, taskArn } : k)) };
    const kernels = judgeFinishedRun(fargate, ended, NOW, catalog).run?.kernels;
    expect(kernels?.map((k) => k.taskArn)).toEqual([undefined, taskArn]);
    expect(kernels?.[0]).not.toHaveProperty("taskArn");
  });

  test("any other transition passes through untouched", () => {
    const other: StageTransition = {
      from: "RUNNING",
      to: "TERMINATING",
      result: "SUCCESS",
      handler: "DetectTermination",
    };
    expect(runNeedsRetryCatalog(ran([3]), other)).toBe(false);
    expect(judgeFinishedRun(ran([3]), other, NOW)).toBe(other);
  });
});

describe("a run never placed (PENDING → CANCELLED), judged", () => {
  const expired: StageTransition = {
    from: "PENDING",
    to: "CANCELLED",
    result: "EXPIRED",
    handler: "Lifecycle",
    message: "pending stage timed out",
  };
  const gaveUp: StageTransition = { ...expired, result: "GIVE_UP", handler: "ScheduleNewSessions" };
  const waiting = (more: Partial<SessionWithKernels["session"]> = {}): SessionWithKernels => {
    const s = newSession("s-wait", { status: "PENDING", replicas: 2 });
    return { session: { ...s.session, ...more }, kernels: s.kernels };
  };
  const policy = (rule: Record<string, unknown>) =>
    parseRetryPolicy({
      apiVersion: "cairn.dev/v1",
      kind: "RetryPolicy",
      metadata: { name: "unsched" },
      spec: { rules: [{ action: "Retry", retryLimit: 1, ...rule }] },
    });
  const withRule = { config: RETRY_CONFIG_DEFAULTS, policies: [policy({ onConditions: ["Unschedulable"] })] };

  test.each([
    ["expired", expired],
    ["gave up", gaveUp],
  ])(
    "%s, under a rule on Unschedulable: retried as a new run from PENDING, its kernels recorded Unschedulable",
    (_, t) => {
      const s = waiting();
      expect(runNeedsRetryCatalog(s, t)).toBe(true);
      expect(() => judgeFinishedRun(s, t, NOW)).toThrow(/needs the retry catalog/);
      const judged = judgeFinishedRun(s, t, NOW, withRule);
      expect(judged).toMatchObject({ from: "PENDING", to: "PENDING", result: "REQUEUED", handler: "Retry" });
      expect(judged.requeue).toMatchObject({ delaySeconds: 0, avoidAgentIds: [] });
      expect(judged.requeue?.retry).toMatchObject({ totalRetries: 1, ruleRetries: { "unsched#0": 1 } });
      expect(judged.run).toMatchObject({ runIndex: 0, decision: "retry", outcome: "UNSCHEDULABLE" });
      expect(judged.run?.kernels).toEqual(
        [0, 1].map((index) => ({
          index,
          status: "PENDING",
          outcome: "UNSCHEDULABLE",
          condition: "Unschedulable",
          message: "pending stage timed out",
          finishedAtMs: NOW,
        })),
      );
    },
  );

  test("its rule's retries used up: CANCELLED as it was, the rule's reason added", () => {
    const s = waiting({
      retry: { ...INITIAL_RETRY_STATE, totalRetries: 1, ruleRetries: { "unsched#0": 1 } },
    });
    const judged = judgeFinishedRun(s, expired, NOW, withRule);
    expect(judged).toMatchObject({ from: "PENDING", to: "CANCELLED", result: "EXPIRED" });
    expect(judged.message).toBe(
      "pending stage timed out; unsched rule 0 (Retry) matched kernel 0 (condition Unschedulable), but its 1 retry is used up (rule limit)",
    );
    expect(judged.run).toBeUndefined();
  });

  test("no policy, or a rule on another condition: the budgets never retry it, and nothing is added", () => {
    const none = judgeFinishedRun(waiting(), expired, NOW, catalog);
    expect(none).toEqual(expired);
    const other = { config: RETRY_CONFIG_DEFAULTS, policies: [policy({ onConditions: ["OOMKilled"] })] };
    expect(judgeFinishedRun(waiting(), expired, NOW, other)).toMatchObject({ to: "CANCELLED" });
  });

  test("a cancel request is never retried, and needs no catalog", () => {
    const s = waiting({ cancelRequestedAtMs: T0 });
    expect(runNeedsRetryCatalog(s, expired)).toBe(false);
    expect(judgeFinishedRun(s, expired, NOW)).toEqual(expired);
  });
});
