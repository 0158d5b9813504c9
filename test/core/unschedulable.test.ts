/**
 * Pending expiry: a session whose pending timeout expires ends with Armada's `Unschedulable`
 * condition ("Pod couldn't be scheduled") on its kernels, so a retry rule on that condition
 * matches the run. Given a PENDING session, when the stage ends, then its kernels as written are
 * what evaluateRetry reads.
 */
import { describe, expect, test } from "vitest";
import { judge } from "../../functions/core/coordinator/decide.ts";
import { endsUnplaced, stageEntryWrite } from "../../functions/core/effects.ts";
import { LIFECYCLE_HANDLERS } from "../../functions/core/handlers.ts";
import type { SessionWithKernels, StageTransition } from "../../functions/core/model.ts";
import { RETRY_CONFIG_DEFAULTS } from "../../functions/core/retry/config.ts";
import { evaluateRetry, INITIAL_RETRY_STATE } from "../../functions/core/retry/evaluate.ts";
import { parseRetryPolicy, type RetryPolicy } from "../../functions/core/retry/policy.ts";
import { sessionAfterWrite } from "../../functions/core/session-after-write.ts";
import { kernel, NOW_MS, result, session, target } from "./fixtures.ts";

const pending = (): SessionWithKernels => ({
  session: session("s1", "PENDING"),
  kernels: [kernel("s1", 0, "PENDING"), kernel("s1", 1, "PENDING")],
});

/** The state machine's own timer: the PendingExpired state's transition, as the ASL writes it. */
const TIMER_EXPIRED: StageTransition = {
  from: "PENDING",
  to: "CANCELLED",
  result: "EXPIRED",
  handler: "Lifecycle",
  message: "pending stage timed out",
};

/** The coordinator's expiry of the same stage (ScheduleNewSessions' expired transition). */
function coordinatorTransition(kind: "expired" | "gave up", message?: string): StageTransition {
  const messages = message === undefined ? {} : { messages: { s1: message } };
  const [decision] = judge({
    handler: LIFECYCLE_HANDLERS.ScheduleNewSessions,
    result: kind === "expired" ? result(messages) : result({ failures: ["s1"], ...messages }),
    targets: [
      target("s1", "PENDING", kind === "expired" ? { expiresAtMs: NOW_MS } : { tries: 2, maxTries: 3 }),
    ],
    nowMs: NOW_MS,
  });
  if (!decision?.complete) throw new Error("expected the stage to be completed");
  return decision.complete;
}

function ended(transition: StageTransition): SessionWithKernels {
  const before = pending();
  return sessionAfterWrite(before, stageEntryWrite({ ...before, transition, nowMs: NOW_MS }));
}

const policy = (name: string, rules: unknown[], defaultAction = "Fail"): RetryPolicy =>
  parseRetryPolicy({
    apiVersion: "cairn.dev/v1",
    kind: "RetryPolicy",
    metadata: { name },
    spec: { defaultAction, rules },
  });

function judgeRun(s: SessionWithKernels, policies: readonly RetryPolicy[]) {
  return evaluateRetry({
    run: { startedRunning: false, kernels: s.kernels },
    policies,
    state: INITIAL_RETRY_STATE,
    config: RETRY_CONFIG_DEFAULTS,
  });
}

describe("the kernels of a session whose PENDING stage ended", () => {
  const rows: [string, () => StageTransition, Record<string, unknown> | undefined][] = [
    [
      "pending timeout, the state machine's timer",
      () => TIMER_EXPIRED,
      {
        status: "CANCELLED",
        outcome: "UNSCHEDULABLE",
        condition: "Unschedulable",
        message: "pending stage timed out",
      },
    ],
    [
      "pending timeout, the coordinator's expiry",
      () => coordinatorTransition("expired"),
      { status: "CANCELLED", outcome: "UNSCHEDULABLE", condition: "Unschedulable" },
    ],
    [
      "placement gave up (tries spent)",
      () => coordinatorTransition("gave up"),
      { status: "CANCELLED", outcome: "UNSCHEDULABLE", condition: "Unschedulable" },
    ],
    [
      "a cancel request: KILLED, no condition",
      () => ({ from: "PENDING", to: "CANCELLED", result: "CANCELLED", handler: "Cancel" }),
      undefined,
    ],
  ];
  test.each(rows)("%s", (_, transition, expected) => {
    const t = transition();
    const { kernels } = ended(t);
    expect(endsUnplaced(t)).toBe(expected !== undefined);
    for (const k of kernels) {
      if (expected) {
        expect(k).toMatchObject({ ...expected, finishedAtMs: NOW_MS });
      } else {
        expect(k.status).toBe("CANCELLED");
        expect(k).not.toHaveProperty("condition");
        expect(k).not.toHaveProperty("outcome");
      }
    }
  });

  test.each([
    ["expired", "no agent has 8 cpu free; largest free is 4", "no agent has 8 cpu free; largest free is 4"],
    ["expired", undefined, "not placed before the pending timeout"],
    ["gave up", undefined, "placement gave up"],
  ] as const)("%s, the handler's message %j: the kernels' message is %j", (kind, message, expected) => {
    expect(ended(coordinatorTransition(kind, message)).kernels.map((k) => k.message)).toEqual([
      expected,
      expected,
    ]);
  });
});

describe("a rule on Unschedulable matches a session whose pending timeout expired", () => {
  const expired = ended(TIMER_EXPIRED);
  const cases: [string, RetryPolicy[], Record<string, unknown>][] = [
    [
      "Retry on [Unschedulable]",
      [policy("sched", [{ action: "Retry", onConditions: ["Unschedulable"], retryLimit: 2 }])],
      {
        action: "retry",
        basis: "rule",
        outcome: "UNSCHEDULABLE",
        matchedRule: { policy: "sched", index: 0 },
        reason:
          "sched rule 0 (Retry) matched kernel 0 (condition Unschedulable): retry 1 of 2 (rule limit), 1 of 20 in total; wait 0s",
      },
    ],
    [
      "Fail on [Unschedulable], before a Retry-everything default",
      [policy("strict", [{ action: "Fail", onConditions: ["Unschedulable"] }], "Retry")],
      {
        action: "fail",
        basis: "rule",
        matchedRule: { policy: "strict", index: 0 },
        reason: "strict rule 0 (Fail) matched kernel 0 (condition Unschedulable)",
      },
    ],
    [
      "a rule on other conditions does not match: the default action decides",
      [policy("infra", [{ action: "Retry", onConditions: ["Preempted", "Evicted"] }])],
      {
        action: "fail",
        basis: "default-action",
        matchedRule: { policy: "infra", index: "default" },
        reason:
          "no rule matched kernel 0 (UNSCHEDULABLE, condition Unschedulable); infra default action Fail",
      },
    ],
    [
      "no policy: the budgets never retry UNSCHEDULABLE (Iris)",
      [],
      { action: "fail", basis: "not-retriable", reason: "UNSCHEDULABLE runs are never retried" },
    ],
  ];
  test.each(cases)("%s", (_, policies, expected) => {
    expect(judgeRun(expired, policies)).toMatchObject(expected);
  });

  test("before this item the same session's kernels matched nothing: a cancel leaves no condition", () => {
    const cancelled = ended({ from: "PENDING", to: "CANCELLED", result: "CANCELLED", handler: "Cancel" });
    expect(() =>
      judgeRun(cancelled, [policy("sched", [{ action: "Retry", onConditions: ["Unschedulable"] }])]),
    ).toThrow("the run has no failed kernel: only failed runs are judged");
  });
});
