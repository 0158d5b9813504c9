/**
 * Replayed lifecycles of one session: scripted steps through the real
 * coordinator and EnterStage on DynamoDB Local, a simulated clock, invariants after every step
 * (harness.ts). Each scenario opens its own table, so ids repeat across scenarios.
 */
import { describe, expect, test } from "vitest";
import { sessionResult } from "../../functions/core/sessions.ts";
import type { SessionWithKernels } from "../../functions/core/model.ts";
import { WAITING_SESSION_STATUSES } from "../../functions/core/status.ts";
import { CAP, HISTORY_TO_RUNNING, replaysClosedAfterEach, T0, type Replay } from "./harness.ts";

const open = replaysClosedAfterEach();

/**
 * A one-kernel session that ran and exited 0: TERMINATED, succeeded, its full history, every
 * status announced, its execution SUCCEEDED, no error logged. Returns it as stored.
 */
async function expectSucceeded(h: Replay, id: string): Promise<SessionWithKernels> {
  const done = await h.session(id);
  expect(done.session.status, h.stepLog).toBe("TERMINATED");
  expect(sessionResult(done)).toBe("succeeded");
  expect(done.kernels).toMatchObject([{ index: 0, status: "TERMINATED", exitCode: 0, outcome: "SUCCEEDED" }]);
  expect(await h.history(id), h.stepLog).toEqual([
    ...HISTORY_TO_RUNNING,
    "DetectTermination SUCCESS RUNNING->TERMINATING",
    "PromoteToTerminated SUCCESS TERMINATING->TERMINATED",
  ]);
  // Every waiting status in order (PENDING … TERMINATING), then TERMINATED.
  expect(h.statusChanges.filter((c) => c.sessionId === id).map((c) => c.to)).toEqual([
    ...WAITING_SESSION_STATUSES,
    "TERMINATED",
  ]);
  expect(h.driver.executions.get(id)?.status).toBe("SUCCEEDED");
  expect(h.errors).toEqual([]);
  return done;
}

const WRITES = new Set(["applyWrite", "reserveCapacity", "patchKernels", "releaseCapacity", "finishJob"]);

/** The store's writes for the session, in order, by method. */
function writesOf(h: Replay, id: string): string[] {
  return h.storeCalls.filter((c) => c.sessionId === id && WRITES.has(c.method)).map((c) => c.method);
}

describe("one session, replayed", () => {
  test("happy path: one kernel runs PENDING → … → TERMINATED with its full history", async () => {
    const h = await open("happy");
    await h.register("agent-a", CAP);
    await h.submit("s-001", { name: "hello", command: ["echo", "hello"] });
    const running = await h.session("s-001");
    expect(running.session.status, h.stepLog).toBe("RUNNING");
    expect(running.kernels, h.stepLog).toMatchObject([{ index: 0, status: "RUNNING", agentId: "agent-a" }]);

    await h.advance(5_000);
    await h.exit("s-001", 0, 0);

    const done = await expectSucceeded(h, "s-001");
    expect(done.session.updatedAtMs).toBe(T0 + 5_000);
    expect(await h.store.allocationsOf("s-001")).toEqual([]);
    // The execution's input carries the session as created, and each completed callback the
    // coordinator's copy: no entry reads the session.
    expect(h.entryReads, h.stepLog).toEqual([]);
    // One write per stage entered, and one claim per stage an outcome decides: the stages decided
    // on entry are written claimed (the token in the table, as the claim of the step taken right
    // after), the placement claims PENDING, and the report that decides a stage writes its
    // kernels and the claim together; each callback is completed with the claimed token.
    expect(writesOf(h, "s-001"), h.stepLog).toEqual([
      ...["applyWrite", "reserveCapacity"], // PENDING entered; placed and claimed in one transaction
      "applyWrite", // SCHEDULED entered claimed: its step found the agent live and completed it
      ...["applyWrite", "applyWrite"], // PREPARING entered; the PREPARED report + claim
      "applyWrite", // PREPARED entered claimed: its step sent the start and completed it
      ...["applyWrite", "applyWrite"], // CREATING entered; the RUNNING report + claim
      ...["applyWrite", "applyWrite"], // RUNNING entered; the exit report and the claim
      "applyWrite", // TERMINATING entered claimed: every kernel ended, its step judged the run over
      ...["releaseCapacity", "applyWrite"], // capacity back; TERMINATED entered, with the run's record
      "finishJob", // the job settled
    ]);
  });

  test("a kernel that exits as it starts: RUNNING is entered claimed, and its promotion completes it with the claimed token", async () => {
    const h = await open("run-over-on-entry");
    const agent = await h.register("agent-a", CAP);
    agent.exitsOnStart = 0;
    await h.submit("s-001", { name: "at-once", command: ["true"] });

    await expectSucceeded(h, "s-001");
    expect(writesOf(h, "s-001"), h.stepLog).toEqual([
      ...["applyWrite", "reserveCapacity"], // PENDING entered; placed and claimed
      "applyWrite", // SCHEDULED entered claimed, completed by its step
      ...["applyWrite", "applyWrite"], // PREPARING entered; PREPARED report + claim
      "applyWrite", // PREPARED entered claimed, completed by its step
      ...["applyWrite", "applyWrite"], // CREATING entered; the exit report (through RUNNING) + claim
      "applyWrite", // RUNNING entered claimed: the promotion completed it with the claimed token
      "applyWrite", // TERMINATING entered claimed, completed by its step
      ...["releaseCapacity", "applyWrite"], // capacity back; TERMINATED entered
      "finishJob",
    ]);
  });

  test("a stage claimed on entry whose step fails gives its token back, and the stage is retried", async () => {
    const h = await open("held-token");
    await h.register("agent-a", CAP);
    await h.submit("s-001", { name: "held", command: ["sleep", "60"] });
    h.failSends = 1;
    await h.cancel("s-001");
    // TERMINATING was entered claimed; the stop could not be sent: the decision (NEED_RETRY)
    // was written with the token back (no stage stranded: checked after every step), and the
    // kernel was not marked as stopped, so the status change's own pass retried the stage and
    // sent the stop; the kernel's end, reported, leaves nothing for TerminateSessions to stop and
    // PromoteToTerminated ends the session.
    expect((await h.history("s-001")).slice(-3), h.stepLog).toEqual([
      "Cancel CANCELLED RUNNING->TERMINATING",
      "TerminateSessions NEED_RETRY TERMINATING->=",
      "PromoteToTerminated SUCCESS TERMINATING->TERMINATED",
    ]);
    expect(h.agent("agent-a").runs("s-001", 0), h.stepLog).toBe(false);
    expect((await h.session("s-001")).kernels[0], h.stepLog).toMatchObject({
      status: "TERMINATED",
      outcome: "KILLED",
    });
  });

  test("a prepare that could not be sent: PrepareSessions fails in SCHEDULED, the stage is retried at once, and nothing waits for a timer", async () => {
    const h = await open("pass-send");
    await h.register("agent-a", CAP);
    h.failSends = 1;
    await h.submit("s-001", { name: "pass-send", command: ["true"], timeouts: { preparing: 60 } });
    // The pass that decided SCHEDULED → PREPARING sends the prepare; its failure is the stage's
    // (a try, NEED_RETRY, the token given back), and the status change's own pass sends again.
    // PREPARING is entered only once a prepare is out: the session never waits in PREPARING for
    // a command that was not sent.
    expect((await h.session("s-001")).session.status, h.stepLog).toBe("RUNNING");
    expect(
      h
        .agent("agent-a")
        .received.filter((m) => m.type === "command")
        .map((m) => m.command.action),
      h.stepLog,
    ).toEqual(["prepare", "start"]);
    await h.exit("s-001", 0, 0);
    const done = await h.session("s-001");
    expect(sessionResult(done), h.stepLog).toBe("succeeded");
    expect(await h.history("s-001"), h.stepLog).toEqual([
      "Submit SUBMITTED PENDING->PENDING",
      "ScheduleNewSessions SUCCESS PENDING->SCHEDULED",
      "PrepareSessions NEED_RETRY SCHEDULED->=",
      "PrepareSessions SUCCESS SCHEDULED->PREPARING",
      "PromoteToPrepared SUCCESS PREPARING->PREPARED",
      "StartSessions SUCCESS PREPARED->CREATING",
      "PromoteToRunning SUCCESS CREATING->RUNNING",
      "DetectTermination SUCCESS RUNNING->TERMINATING",
      "PromoteToTerminated SUCCESS TERMINATING->TERMINATED",
    ]);
  });

  test("a non-zero exit ends RUNNING → TERMINATING → TERMINATED with the exit code recorded", async () => {
    const h = await open("exit3");
    await h.register("agent-a", CAP);
    await h.submit("s-001", { name: "exit3", command: ["sh", "-c", "exit 3"] });
    await h.exit("s-001", 0, 3);

    const done = await h.session("s-001");
    expect(done.session.status, h.stepLog).toBe("TERMINATED");
    expect(sessionResult(done)).toBe("failed");
    expect(done.kernels[0]).toMatchObject({ status: "TERMINATED", exitCode: 3, outcome: "FAILED" });
    expect((await h.history("s-001")).slice(-2), h.stepLog).toEqual([
      "DetectTermination SUCCESS RUNNING->TERMINATING",
      "PromoteToTerminated SUCCESS TERMINATING->TERMINATED",
    ]);
    // Without a failure budget or policy the failed run is not retried.
    expect((await h.store.listRuns("s-001")).map((r) => [r.runIndex, r.decision])).toEqual([[0, "finished"]]);
    expect(h.requeues).toEqual([]);
    expect(h.errors).toEqual([]);
  });

  test("a duplicate submission creates one session and one execution", async () => {
    const h = await open("dup");
    await h.register("agent-a", CAP);
    const detail = { sessionId: "s-001", spec: { name: "dup", command: ["true"] } };
    const submission = { source: "cairn.client", detailType: "Session Submitted", detail };
    // Twice in one batch (at-least-once delivery), then once more later.
    await h.put("submit s-001 twice", submission, submission);
    await h.advance(1_000);
    await h.put("submit s-001 again", submission);

    expect(h.driver.executions.size).toBe(1);
    // Each delivery starts the execution again; the name (the session id) makes it the same one.
    expect(h.driver.startCalls).toEqual(["s-001", "s-001", "s-001"]);
    expect(h.driver.executions.get("s-001")?.status).toBe("RUNNING");
    const history = await h.history("s-001");
    expect(history.filter((r) => r.startsWith("Submit "))).toEqual(["Submit SUBMITTED PENDING->PENDING"]);
    expect(history.at(-1), h.stepLog).toBe("PromoteToRunning SUCCESS CREATING->RUNNING");
    await h.exit("s-001", 0, 0);
    expect((await h.session("s-001")).session.status).toBe("TERMINATED");
    expect(h.rejections).toEqual([]);
    expect(h.errors).toEqual([]);
  });

  test("malformed events and specs are rejected with named fields while good ones beside them proceed", async () => {
    const h = await open("malformed");
    const a = await h.register("agent-a", CAP);
    await h.put(
      "a bad spec, a cancel without a session, a heartbeat without capacity, and a good submission",
      {
        source: "cairn.client",
        detailType: "Session Submitted",
        detail: { sessionId: "s-bad", spec: { name: "bad", command: ["true"], resources: { cpu: -1 } } },
      },
      { source: "cairn.client", detailType: "Session Cancel Requested", detail: { reason: "x" } },
      { source: "cairn.agent", detailType: "Agent Heartbeat", detail: { agentId: "agent-a" } },
      {
        source: "cairn.client",
        detailType: "Session Submitted",
        detail: { sessionId: "s-001", spec: { name: "good", command: ["true"] } },
      },
    );
    expect(h.rejections.join("\n")).toContain("detail.spec.resources.cpu: must be greater than 0");
    expect(h.rejections.join("\n")).toContain("detail.sessionId: required");
    expect(h.rejections.join("\n")).toContain("detail.capacity: required");
    expect(h.rejections).toHaveLength(3);
    expect(await h.store.getSession("s-bad")).toBeUndefined();
    expect(h.driver.startCalls).toEqual(["s-001"]);
    await h.exit("s-001", 0, 0);
    expect(sessionResult(await h.session("s-001"))).toBe("succeeded");
    expect(a.received.filter((m) => m.type === "fenced")).toEqual([]);
    expect(h.errors).toEqual([]);
  });
});
