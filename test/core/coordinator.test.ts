/**
 * Scenarios of the coordinator's judgment (`judge()`) and of the writes that carry a decision or
 * a stage entry out (`decisionWrite()`, `stageEntryWrite()`). Given / when / then.
 */
import { describe, expect, test } from "vitest";
import { judge, judgePromotions, type Decision } from "../../functions/core/coordinator/decide.ts";
import { HandlerContractError } from "../../functions/core/coordinator/errors.ts";
import { decisionWrite, stageEntryWrite } from "../../functions/core/effects.ts";
import { LIFECYCLE_HANDLERS, PROMOTION_HANDLERS } from "../../functions/core/handlers.ts";
import { historyRecord, kernel, NOW_MS, result, session, SPEC, target } from "./fixtures.ts";

const schedule = LIFECYCLE_HANDLERS.ScheduleNewSessions;
const prepare = LIFECYCLE_HANDLERS.PrepareSessions;
const summary = (ds: Decision[]) => ds.map((d) => `${d.sessionId}:${d.result}`);

describe("judge(): order and coverage of decisions", () => {
  test("decisions come as SUCCESS, GIVE_UP, EXPIRED, NEED_RETRY, SKIPPED, each in handler-list order", () => {
    // Given one target per outcome, listed by the handler in a mixed order
    const targets = [
      target("skip", "PENDING"),
      target("retry", "PENDING", { tries: 0 }),
      target("late", "PENDING", { expiresAtMs: NOW_MS - 1 }),
      target("gaveup", "PENDING", { tries: 2 }),
      target("ok2", "PENDING"),
      target("ok1", "PENDING"),
    ];
    // When
    const decisions = judge({
      handler: schedule,
      result: result({ successes: ["ok1", "ok2"], failures: ["retry", "gaveup"], skipped: ["skip"] }),
      targets,
      nowMs: NOW_MS,
    });
    // Then
    expect(summary(decisions)).toEqual([
      "ok1:SUCCESS",
      "ok2:SUCCESS",
      "gaveup:GIVE_UP",
      "late:EXPIRED",
      "retry:NEED_RETRY",
      "skip:SKIPPED",
    ]);
  });

  test("a target in no list whose stage has not expired gets no decision", () => {
    const decisions = judge({
      handler: schedule,
      result: result({ successes: ["a"] }),
      targets: [target("a", "PENDING"), target("idle", "PENDING", { expiresAtMs: NOW_MS + 1 })],
      nowMs: NOW_MS,
    });
    expect(summary(decisions)).toEqual(["a:SUCCESS"]);
  });

  test("an empty result over unexpired targets decides nothing", () => {
    expect(
      judge({ handler: schedule, result: result(), targets: [target("a", "PENDING")], nowMs: NOW_MS }),
    ).toEqual([]);
  });
});

describe("judge(): tries", () => {
  test("a failure spends a try (NEED_RETRY and GIVE_UP alike); success, skip and expiry never do", () => {
    const decisions = judge({
      handler: schedule,
      result: result({ successes: ["ok"], failures: ["f0", "f2"], skipped: ["sk"] }),
      targets: [
        target("ok", "PENDING"),
        target("f0", "PENDING", { tries: 0 }),
        target("f2", "PENDING", { tries: 2 }),
        target("sk", "PENDING"),
        target("late", "PENDING", { expiresAtMs: NOW_MS }),
      ],
      nowMs: NOW_MS,
    });
    expect(Object.fromEntries(decisions.map((d) => [d.sessionId, [d.result, d.spendsTry]]))).toEqual({
      ok: ["SUCCESS", false],
      f0: ["NEED_RETRY", true],
      f2: ["GIVE_UP", true],
      sk: ["SKIPPED", false],
      late: ["EXPIRED", false],
    });
  });

  test("a session skipped many sweeps in a row never spends a try and is never given up", () => {
    // Given a session already at its last try, skipped (queued behind others)
    const t = target("s", "PENDING", { tries: 2, maxTries: 3 });
    for (let sweep = 0; sweep < 10; sweep++) {
      // When it is skipped again
      const [d] = judge({
        handler: schedule,
        result: result({ skipped: ["s"] }),
        targets: [t],
        nowMs: NOW_MS,
      });
      // Then it stays SKIPPED: no try spent, no status change
      expect(d).toMatchObject({ result: "SKIPPED", spendsTry: false });
      expect(d?.toStatus).toBeUndefined();
      expect(d?.complete).toBeUndefined();
    }
  });

  /**
   * decide.ts (isGiveUp): `maxTries` counts attempts, so the failure that spends the last try gives up:
   * GIVE_UP exactly when triesSpentBefore + 1 >= maxTries. With maxTries = 3 the failures at
   * tries 0 and 1 are NEED_RETRY and the one at tries 2 is GIVE_UP; maxTries = 1 gives up at once.
   */
  test.each([
    { maxTries: 1, tries: 0, expected: "GIVE_UP" },
    { maxTries: 2, tries: 0, expected: "NEED_RETRY" },
    { maxTries: 2, tries: 1, expected: "GIVE_UP" },
    { maxTries: 3, tries: 0, expected: "NEED_RETRY" },
    { maxTries: 3, tries: 1, expected: "NEED_RETRY" },
    { maxTries: 3, tries: 2, expected: "GIVE_UP" },
    // Already past the limit (e.g. maxTries lowered by a policy change): still gives up.
    { maxTries: 3, tries: 7, expected: "GIVE_UP" },
  ])(
    "maxTries $maxTries, $tries tries spent before: a failure is $expected",
    ({ maxTries, tries, expected }) => {
      const [d] = judge({
        handler: schedule,
        result: result({ failures: ["s"] }),
        targets: [target("s", "PENDING", { tries, maxTries })],
        nowMs: NOW_MS,
      });
      expect(d?.result).toBe(expected);
    },
  );

  test("three consecutive failures with maxTries 3: retry, retry, give up", () => {
    const outcomes: string[] = [];
    let tries = 0;
    for (let attempt = 0; attempt < 3; attempt++) {
      const [d] = judge({
        handler: prepare,
        result: result({ failures: ["s"] }),
        targets: [target("s", "SCHEDULED", { tries, maxTries: 3 })],
        nowMs: NOW_MS,
      });
      outcomes.push(d!.result);
      if (d!.spendsTry) tries++;
    }
    expect(outcomes).toEqual(["NEED_RETRY", "NEED_RETRY", "GIVE_UP"]);
  });
});

describe("judge(): expiry", () => {
  test("the deadline itself counts as expired (now >= expiresAtMs)", () => {
    const decide = (expiresAtMs: number) =>
      judge({
        handler: schedule,
        result: result(),
        targets: [target("s", "PENDING", { expiresAtMs })],
        nowMs: NOW_MS,
      });
    expect(summary(decide(NOW_MS - 1))).toEqual(["s:EXPIRED"]);
    expect(summary(decide(NOW_MS))).toEqual(["s:EXPIRED"]);
    expect(summary(decide(NOW_MS + 1))).toEqual([]);
  });

  test("a success or a failure is never judged EXPIRED, however late", () => {
    const late = { expiresAtMs: NOW_MS - 3_600_000 };
    const decisions = judge({
      handler: schedule,
      result: result({ successes: ["ok"], failures: ["f"] }),
      targets: [target("ok", "PENDING", late), target("f", "PENDING", late)],
      nowMs: NOW_MS,
    });
    expect(summary(decisions)).toEqual(["ok:SUCCESS", "f:NEED_RETRY"]);
  });

  test("skipped and expired: one decision, EXPIRED, with the skip's message", () => {
    const [d, ...rest] = judge({
      handler: schedule,
      result: result({ skipped: ["s"], messages: { s: "no agent has 8 GPUs" } }),
      targets: [target("s", "PENDING", { expiresAtMs: NOW_MS })],
      nowMs: NOW_MS,
    });
    expect(rest).toEqual([]);
    expect(d).toMatchObject({
      result: "EXPIRED",
      toStatus: "CANCELLED",
      kernelStatus: "CANCELLED",
      spendsTry: false,
    });
    expect(d?.complete).toEqual({
      from: "PENDING",
      to: "CANCELLED",
      result: "EXPIRED",
      handler: "ScheduleNewSessions",
      message: "no agent has 8 GPUs",
    });
  });
});

describe("judge(): handler contract", () => {
  const targets = [target("a", "PENDING"), target("b", "PENDING")];

  test.each([
    ["successes", "failures", result({ successes: ["a"], failures: ["a"] })],
    ["failures", "skipped", result({ failures: ["b"], skipped: ["b"] })],
    ["successes", "skipped", result({ successes: ["a"], skipped: ["a"] })],
    ["successes", "successes", result({ successes: ["a", "a"] })],
  ] as const)("an id in both %s and %s is rejected with the id", (first, second, given) => {
    const run = () => judge({ handler: schedule, result: given, targets, nowMs: NOW_MS });
    expect(run).toThrow(HandlerContractError);
    expect(run).toThrow(
      new RegExp(`^ScheduleNewSessions returned session [ab] in both ${first} and ${second}$`),
    );
  });

  test.each(["successes", "failures", "skipped"] as const)(
    "an id in %s that was not a target is rejected",
    (list) => {
      let caught: unknown;
      try {
        judge({ handler: schedule, result: result({ [list]: ["ghost"] }), targets, nowMs: NOW_MS });
      } catch (e) {
        caught = e;
      }
      expect(caught).toBeInstanceOf(HandlerContractError);
      const err = caught as HandlerContractError;
      expect(err.message).toBe(
        `ScheduleNewSessions returned session ghost in ${list} but it was not a target`,
      );
      expect(err).toMatchObject({
        name: "HandlerContractError",
        code: "HANDLER_CONTRACT",
        sessionId: "ghost",
      });
    },
  );
});

describe("judgePromotions(): contract", () => {
  test("a promoted id that was not a target is rejected, naming the promotion handler and the id", () => {
    const run = () =>
      judgePromotions(PROMOTION_HANDLERS.PromoteToRunning, ["ghost"], [target("s1", "CREATING")], NOW_MS);
    expect(run).toThrow(HandlerContractError);
    expect(run).toThrow("PromoteToRunning returned session ghost that was not among its targets");
  });
});

describe("judge(): messages and history", () => {
  test("each decision carries a history draft; messages land in it and in the completion", () => {
    const decisions = judge({
      handler: schedule,
      result: result({
        successes: ["ok"],
        failures: ["f"],
        skipped: ["sk"],
        messages: { f: "image pull failed", sk: "queue full" },
      }),
      targets: [target("ok", "PENDING"), target("f", "PENDING"), target("sk", "PENDING")],
      nowMs: NOW_MS,
    });
    expect(decisions.map((d) => d.history)).toEqual([
      {
        sessionId: "ok",
        handler: "ScheduleNewSessions",
        result: "SUCCESS",
        fromStatus: "PENDING",
        toStatus: "SCHEDULED",
        atMs: NOW_MS,
      },
      {
        sessionId: "f",
        handler: "ScheduleNewSessions",
        result: "NEED_RETRY",
        fromStatus: "PENDING",
        message: "image pull failed",
        atMs: NOW_MS,
      },
      {
        sessionId: "sk",
        handler: "ScheduleNewSessions",
        result: "SKIPPED",
        fromStatus: "PENDING",
        message: "queue full",
        atMs: NOW_MS,
      },
    ]);
  });
});

describe("decisionWrite()", () => {
  test("a SKIPPED message becomes the pending reason and is merged into the latest history record", () => {
    // Given a session whose latest record is the same skip
    const s = session("s1", "PENDING", { lastHistory: historyRecord({ seq: 4, count: 3 }) });
    const [d] = judge({
      handler: schedule,
      result: result({ skipped: ["s1"], messages: { s1: "queue full" } }),
      targets: [target("s1", "PENDING")],
      nowMs: NOW_MS,
    });
    // When
    const write = decisionWrite(s, d!, NOW_MS);
    // Then
    expect(write).toEqual({
      sessionId: "s1",
      expected: { status: "PENDING", version: 7 },
      nowMs: NOW_MS,
      history: [historyRecord({ seq: 4, count: 4, lastAtMs: NOW_MS })],
      pendingReason: "queue full",
    });
  });

  test("a SKIPPED without a message leaves the pending reason alone", () => {
    const [d] = judge({
      handler: schedule,
      result: result({ skipped: ["s1"] }),
      targets: [target("s1", "PENDING")],
      nowMs: NOW_MS,
    });
    const write = decisionWrite(session("s1", "PENDING"), d!, NOW_MS);
    expect(write).not.toHaveProperty("pendingReason");
    expect(write.history).toHaveLength(1);
    expect(write.history?.[0]).toMatchObject({ seq: 0, count: 1, result: "SKIPPED" });
  });

  test("NEED_RETRY spends a try and appends history; status, stage and kernels are left alone", () => {
    const s = session("s1", "SCHEDULED", { lastHistory: historyRecord({ seq: 2 }) });
    const [d] = judge({
      handler: prepare,
      result: result({ failures: ["s1"], messages: { s1: "agent unreachable" } }),
      targets: [target("s1", "SCHEDULED")],
      nowMs: NOW_MS,
    });
    expect(decisionWrite(s, d!, NOW_MS)).toEqual({
      sessionId: "s1",
      expected: { status: "SCHEDULED", version: 7 },
      nowMs: NOW_MS,
      tries: "increment",
      history: [
        {
          sessionId: "s1",
          seq: 3,
          handler: "PrepareSessions",
          result: "NEED_RETRY",
          fromStatus: "SCHEDULED",
          message: "agent unreachable",
          count: 1,
          firstAtMs: NOW_MS,
          lastAtMs: NOW_MS,
        },
      ],
    });
  });

  test("a completing SUCCESS only claims the stage, keeping its token under the claim: no status, history or kernels until the next entry", () => {
    const [d] = judge({
      handler: schedule,
      result: result({ successes: ["s1"] }),
      targets: [target("s1", "PENDING")],
      nowMs: NOW_MS,
    });
    expect(d?.complete).toBeDefined();
    expect(decisionWrite(session("s1", "PENDING"), d!, NOW_MS)).toEqual({
      sessionId: "s1",
      expected: { status: "PENDING", version: 7 },
      nowMs: NOW_MS,
      claimStage: true,
      claimedToken: "token-old",
    });
  });

  test("a completing GIVE_UP claims the stage and counts its try (the next entry resets tries)", () => {
    const [d] = judge({
      handler: schedule,
      result: result({ failures: ["s1"] }),
      targets: [target("s1", "PENDING", { tries: 2 })],
      nowMs: NOW_MS,
    });
    expect(decisionWrite(session("s1", "PENDING", { tries: 2 }), d!, NOW_MS)).toEqual({
      sessionId: "s1",
      expected: { status: "PENDING", version: 7 },
      nowMs: NOW_MS,
      tries: "increment",
      claimStage: true,
      claimedToken: "token-old",
    });
  });
});

describe("stageEntryWrite()", () => {
  test("first entry into PENDING records the stage (token, deadline) and nothing else", () => {
    const write = stageEntryWrite({
      session: session("s1", "PENDING", { version: 1 }),
      kernels: [kernel("s1", 0, "PENDING")],
      taskToken: "tok-pending",
      nowMs: NOW_MS,
    });
    expect(write).toEqual({
      sessionId: "s1",
      expected: { status: "PENDING", version: 1 },
      nowMs: NOW_MS,
      stage: {
        enteredAtMs: NOW_MS,
        expiresAtMs: NOW_MS + SPEC.timeouts.pending * 1000,
        taskToken: "tok-pending",
      },
    });
  });

  test("SCHEDULED → PREPARING: kernels PREPARING, tries reset, history from/to, preparing deadline", () => {
    const s = session("s1", "SCHEDULED", {
      tries: 1,
      lastHistory: historyRecord({ seq: 5, result: "SUCCESS" }),
    });
    const write = stageEntryWrite({
      session: s,
      kernels: [
        kernel("s1", 0, "SCHEDULED", { agentId: "a1" }),
        kernel("s1", 1, "SCHEDULED", { agentId: "a2" }),
      ],
      transition: { from: "SCHEDULED", to: "PREPARING", result: "SUCCESS", handler: "PrepareSessions" },
      taskToken: "tok-preparing",
      nowMs: NOW_MS,
    });
    expect(write).toEqual({
      sessionId: "s1",
      expected: { status: "SCHEDULED", version: 7 },
      nowMs: NOW_MS,
      stage: {
        enteredAtMs: NOW_MS,
        expiresAtMs: NOW_MS + SPEC.timeouts.preparing * 1000,
        taskToken: "tok-preparing",
      },
      status: "PREPARING",
      tries: "reset",
      // Placement is kept: no agentId in the patch.
      kernels: [
        { index: 0, status: "PREPARING", expectedVersion: 0 },
        { index: 1, status: "PREPARING", expectedVersion: 0 },
      ],
      history: [
        {
          sessionId: "s1",
          seq: 6,
          handler: "PrepareSessions",
          result: "SUCCESS",
          fromStatus: "SCHEDULED",
          toStatus: "PREPARING",
          count: 1,
          firstAtMs: NOW_MS,
          lastAtMs: NOW_MS,
        },
      ],
    });
  });

  test("re-scheduling PREPARED → PENDING on give-up: kernels PENDING with their agents cleared", () => {
    const write = stageEntryWrite({
      session: session("s1", "PREPARED"),
      kernels: [
        kernel("s1", 0, "PREPARED", { agentId: "a1" }),
        kernel("s1", 1, "PREPARED", { agentId: "a2" }),
      ],
      transition: {
        from: "PREPARED",
        to: "PENDING",
        result: "GIVE_UP",
        handler: "StartSessions",
        message: "boom",
      },
      taskToken: "tok-pending-2",
      nowMs: NOW_MS,
    });
    expect(write.status).toBe("PENDING");
    expect(write.tries).toBe("reset");
    // toMatchObject: a re-scheduled kernel may clear more than its placement.
    expect(write.kernels).toMatchObject([
      { index: 0, status: "PENDING", agentId: null },
      { index: 1, status: "PENDING", agentId: null },
    ]);
    expect(write.history?.[0]).toMatchObject({
      result: "GIVE_UP",
      fromStatus: "PREPARED",
      toStatus: "PENDING",
    });
    expect(write.history?.[0]?.message).toBe("boom");
    expect(write.stage?.expiresAtMs).toBe(NOW_MS + SPEC.timeouts.pending * 1000);
    // Only leaving PENDING clears the pending reason.
    expect(write).not.toHaveProperty("pendingReason");
  });

  test("CREATING expired by the state machine's timer → PENDING: its governing handler (StartSessions) resets kernels", () => {
    const write = stageEntryWrite({
      session: session("s1", "CREATING"),
      kernels: [kernel("s1", 0, "CREATING", { agentId: "a1" })],
      transition: { from: "CREATING", to: "PENDING", result: "EXPIRED", handler: "Lifecycle" },
      taskToken: "tok",
      nowMs: NOW_MS,
    });
    expect(write.kernels).toMatchObject([{ index: 0, status: "PENDING", agentId: null }]);
  });

  test("a Fargate kernel sent back to PENDING loses its task with its placement: the next start runs a new one", () => {
    const write = stageEntryWrite({
      session: session("s1", "CREATING"),
      kernels: [kernel("s1", 0, "CREATING", { agentId: "fargate_default", taskArn: "arn:task/1" })],
      transition: { from: "CREATING", to: "PENDING", result: "EXPIRED", handler: "Lifecycle" },
      taskToken: "tok",
      nowMs: NOW_MS,
    });
    expect(write.kernels).toMatchObject([{ index: 0, status: "PENDING", agentId: null, taskArn: null }]);
  });

  test("PENDING → CANCELLED on expiry by the state machine's timer: kernels CANCELLED, terminal stage", () => {
    const write = stageEntryWrite({
      session: session("s1", "PENDING", { pendingReason: "queue full" }),
      kernels: [kernel("s1", 0, "PENDING"), kernel("s1", 1, "PENDING")],
      transition: { from: "PENDING", to: "CANCELLED", result: "EXPIRED", handler: "Lifecycle" },
      nowMs: NOW_MS,
    });
    expect(write).toMatchObject({
      status: "CANCELLED",
      tries: "reset",
      // A terminal state has no token and no timer.
      stage: { enteredAtMs: NOW_MS, expiresAtMs: NOW_MS },
      kernels: [
        { index: 0, status: "CANCELLED" },
        { index: 1, status: "CANCELLED" },
      ],
      pendingReason: null,
    });
    expect(write.stage).not.toHaveProperty("taskToken");
    expect(write.history?.[0]).toMatchObject({
      handler: "Lifecycle",
      result: "EXPIRED",
      fromStatus: "PENDING",
      toStatus: "CANCELLED",
    });
  });

  test("TERMINATING → TERMINATED keeps kernels that already ended, with their exit codes", () => {
    const write = stageEntryWrite({
      session: session("s1", "TERMINATING"),
      kernels: [
        kernel("s1", 0, "TERMINATED", { exitCode: 0 }),
        kernel("s1", 1, "ERROR", { exitCode: 137 }),
        kernel("s1", 2, "TERMINATING"),
      ],
      transition: { from: "TERMINATING", to: "TERMINATED", result: "EXPIRED", handler: "TerminateSessions" },
      nowMs: NOW_MS,
    });
    expect(write.status).toBe("TERMINATED");
    // Only the kernel still shutting down is patched; no patch carries an exit code.
    expect(write.kernels).toEqual([{ index: 2, status: "TERMINATED", expectedVersion: 0 }]);
  });

  test("cancel from RUNNING → TERMINATING: kernels untouched (TerminateSessions stops them)", () => {
    const write = stageEntryWrite({
      session: session("s1", "RUNNING"),
      kernels: [kernel("s1", 0, "RUNNING"), kernel("s1", 1, "RUNNING")],
      transition: { from: "RUNNING", to: "TERMINATING", result: "CANCELLED", handler: "Cancel" },
      taskToken: "tok-terminating",
      nowMs: NOW_MS,
    });
    expect(write.status).toBe("TERMINATING");
    expect(write).not.toHaveProperty("kernels");
    expect(write.stage?.expiresAtMs).toBe(NOW_MS + SPEC.timeouts.terminating * 1000);
    expect(write.history?.[0]).toMatchObject({
      handler: "Cancel",
      result: "CANCELLED",
      toStatus: "TERMINATING",
    });
  });

  test("cancel from PENDING → CANCELLED: kernels CANCELLED", () => {
    const write = stageEntryWrite({
      session: session("s1", "PENDING"),
      kernels: [kernel("s1", 0, "PENDING")],
      transition: { from: "PENDING", to: "CANCELLED", result: "CANCELLED", handler: "Cancel" },
      nowMs: NOW_MS,
    });
    expect(write.kernels).toEqual([{ index: 0, status: "CANCELLED", expectedVersion: 0 }]);
  });
});
