/**
 * Replayed stage timers and cancels: the execution's own timer fires when the
 * simulated clock passes a stage's timeout, as Step Functions' TimeoutSeconds would; a cancel is
 * honoured from the stage the session waits in. Invariants after every step (harness.ts).
 */
import { describe, expect, test } from "vitest";
import { sessionResult } from "../../functions/core/sessions.ts";
import { hpcSessionState } from "../../functions/core/hpc-view.ts";
import { CAP, HISTORY_TO_RUNNING, replaysClosedAfterEach, T0 } from "./harness.ts";

const open = replaysClosedAfterEach();
const TOO_BIG = "no agent matches: a task needs 64 cpu and 256 MiB; the largest agent has 4 cpu and 4096 MiB";

describe("stage timers", () => {
  test("a session no agent can hold waits SKIPPED with its reason, then expires to CANCELLED at the stage timeout", async () => {
    const h = await open("too-big");
    await h.register("agent-a", CAP);
    await h.submit("s-001", {
      name: "too-big",
      command: ["true"],
      resources: { cpu: 64 },
      timeouts: { pending: 60 },
    });
    const waiting = await h.session("s-001");
    expect(waiting.session.status, h.stepLog).toBe("PENDING");
    expect(waiting.session.pendingReason).toBe(TOO_BIG);

    // One second short of the timeout it still waits.
    await h.advance(59_000);
    expect((await h.session("s-001")).session.status, h.stepLog).toBe("PENDING");
    await h.advance(1_000);

    const done = await h.session("s-001");
    expect(done.session.status, h.stepLog).toBe("CANCELLED");
    expect(sessionResult(done)).toBe("cancelled");
    expect(done.kernels.map((k) => k.status)).toEqual(["CANCELLED"]);
    expect(await h.history("s-001"), h.stepLog).toEqual([
      "Submit SUBMITTED PENDING->PENDING",
      "ScheduleNewSessions SKIPPED PENDING->=",
      "Lifecycle EXPIRED PENDING->CANCELLED",
    ]);
    const history = await h.store.listHistory("s-001");
    expect(history[1]?.message).toBe(TOO_BIG);
    expect(history.at(-1)?.firstAtMs).toBe(T0 + 60_000);
    expect(h.errors).toEqual([]);
  });

  test("a stage expiry after SCHEDULED returns the session to PENDING with its capacity released", async () => {
    const h = await open("prep-expiry");
    // Two kernels of 4 cpu fill both agents: the session can only be placed again if the first
    // placement was released.
    const a = await h.register("agent-a", CAP);
    const b = await h.register("agent-b", CAP);
    a.prepare = "hold";
    b.prepare = "hold";
    await h.submit("s-001", {
      name: "prep-expiry",
      replicas: 2,
      resources: { cpu: 4 },
      command: ["true"],
      timeouts: { preparing: 60 },
    });
    const preparing = await h.session("s-001");
    expect(preparing.session.status, h.stepLog).toBe("PREPARING");
    expect(preparing.kernels.map((k) => k.agentId)).toEqual(["agent-a", "agent-b"]);
    for (const agent of await h.store.listAgents()) expect(agent.free.cpu).toBe(0);

    await h.advance(60_000);

    const again = await h.session("s-001");
    expect(again.session.status, h.stepLog).toBe("PREPARING");
    expect(await h.history("s-001"), h.stepLog).toEqual([
      "Submit SUBMITTED PENDING->PENDING",
      "ScheduleNewSessions SUCCESS PENDING->SCHEDULED",
      "PrepareSessions SUCCESS SCHEDULED->PREPARING",
      "Lifecycle EXPIRED PREPARING->PENDING",
      "ScheduleNewSessions SUCCESS PENDING->SCHEDULED",
      "PrepareSessions SUCCESS SCHEDULED->PREPARING",
    ]);
    expect(again.kernels.every((k) => k.agentId !== undefined)).toBe(true);
    expect(again.session.retry?.freeReturns).toBe(1);

    await h.cancel("s-001");
    expect((await h.session("s-001")).session.status, h.stepLog).toBe("CANCELLED");
    expect(await h.store.allocationsOf("s-001")).toEqual([]);
    for (const agent of await h.store.listAgents()) expect(agent.free).toEqual(agent.capacity);
    expect(h.errors).toEqual([]);
  });
});

describe("run-time limit", () => {
  test("RUNNING's timer is the run-time limit: the kernel is stopped as DeadlineExceeded and the run ends", async () => {
    const h = await open("deadline");
    const a = await h.register("agent-a", CAP);
    await h.submit("s-001", { name: "deadline", command: ["sleep", "600"], timeouts: { running: 30 } });
    await h.advance(30_000);

    const done = await h.session("s-001");
    expect(done.session.status, h.stepLog).toBe("TERMINATED");
    expect(sessionResult(done)).toBe("failed");
    // HPC Pack: a running task is marked Failed when it "has exceeded its maximum runtime".
    expect(hpcSessionState(done.session, done.kernels)).toBe("Failed");
    expect(done.kernels[0]).toMatchObject({ status: "TERMINATED", condition: "DeadlineExceeded" });
    const stop = a.received.find((m) => m.type === "command" && m.command.action === "stop");
    expect(stop?.type === "command" && stop.command.condition).toBe("DeadlineExceeded");
    expect((await h.history("s-001")).slice(-2), h.stepLog).toEqual([
      "Lifecycle EXPIRED RUNNING->TERMINATING",
      "PromoteToTerminated SUCCESS TERMINATING->TERMINATED",
    ]);
    expect(h.errors).toEqual([]);
  });
});

describe("cancels", () => {
  test("cancel in PENDING ends the session CANCELLED", async () => {
    const h = await open("cancel-pending");
    await h.register("agent-a", CAP);
    await h.submit("s-001", { name: "cancel-pending", command: ["true"], resources: { cpu: 64 } });
    expect((await h.session("s-001")).session.pendingReason).toBe(TOO_BIG);
    await h.advance(1_000);
    await h.cancel("s-001", "changed my mind");

    const done = await h.session("s-001");
    expect(done.session.status, h.stepLog).toBe("CANCELLED");
    expect(sessionResult(done)).toBe("cancelled");
    expect(done.session.cancelReason).toBe("changed my mind");
    expect(await h.history("s-001"), h.stepLog).toEqual([
      "Submit SUBMITTED PENDING->PENDING",
      "ScheduleNewSessions SKIPPED PENDING->=",
      "Cancel CANCELLED PENDING->CANCELLED",
    ]);
    expect(h.driver.executions.get("s-001")?.status).toBe("SUCCEEDED");
    expect(h.errors).toEqual([]);
  });

  test("cancel in RUNNING stops the kernel: TERMINATING → TERMINATED, result cancelled", async () => {
    const h = await open("cancel-running");
    const a = await h.register("agent-a", CAP);
    await h.submit("s-001", { name: "cancel-running", command: ["sleep", "60"] });
    expect((await h.session("s-001")).session.status, h.stepLog).toBe("RUNNING");
    await h.advance(2_000);
    await h.cancel("s-001");

    const done = await h.session("s-001");
    expect(done.session.status, h.stepLog).toBe("TERMINATED");
    expect(sessionResult(done)).toBe("cancelled");
    expect(done.kernels[0]).toMatchObject({ status: "TERMINATED", exitCode: 143, outcome: "KILLED" });
    expect(
      a.received.filter((m) => m.type === "command").map((m) => m.type === "command" && m.command.action),
    ).toEqual(["prepare", "start", "stop"]);
    expect((await h.history("s-001")).slice(-2), h.stepLog).toEqual([
      "Cancel CANCELLED RUNNING->TERMINATING",
      "PromoteToTerminated SUCCESS TERMINATING->TERMINATED",
    ]);
    expect(h.errors).toEqual([]);
  });
});

describe("force cancel (HPC Pack's Force Cancel)", () => {
  test("a running session whose agent went silent ends TERMINATED in the cancel's own step, its capacity given back", async () => {
    const h = await open("force-cancel");
    const a = await h.register("agent-a", CAP);
    await h.submit("s-001", { name: "stuck", command: ["sleep", "600"], resources: { cpu: 4 } });
    expect((await h.session("s-001")).session.status, h.stepLog).toBe("RUNNING");
    // Silent, not yet lost: a plain cancel would wait in TERMINATING for its report.
    a.silent = true;
    await h.put("force cancel s-001", {
      source: "cairn.client",
      detailType: "Session Cancel Requested",
      detail: { sessionId: "s-001", reason: "stuck", force: true },
    });
    const done = await h.session("s-001");
    expect(done.session.status, h.stepLog).toBe("TERMINATED");
    expect(sessionResult(done)).toBe("cancelled");
    expect(done.kernels.map((k) => [k.status, k.outcome])).toEqual([["TERMINATED", "KILLED"]]);
    expect(done.kernels[0]?.message).toMatch(/^force cancelled: killed without a grace period/);
    expect(hpcSessionState(done.session, done.kernels)).toBe("Failed");
    expect((await h.store.getAgent("agent-a"))?.free.cpu).toBe(4);
    expect(await h.history("s-001"), h.stepLog).toEqual([
      ...HISTORY_TO_RUNNING,
      "Cancel CANCELLED RUNNING->TERMINATING",
      "TerminateSessions SUCCESS TERMINATING->TERMINATED",
    ]);
    expect(h.errors).toEqual([]);
  });
});

describe("the sweep's job run-time limit check", () => {
  test("reads the roster of jobs with a limit, never the waiting queue: a queue of 30 without limits costs it nothing", async () => {
    const h = await open("limit-roster");
    // Nothing can hold these: they wait in PENDING.
    for (let i = 0; i < 30; i++) {
      await h.submit(`s-${String(i).padStart(3, "0")}`, {
        name: "waits",
        command: ["true"],
        resources: { cpu: 64 },
      });
    }
    const before = h.storeCalls.length;
    await h.sweep();
    const calls = h.storeCalls.slice(before).map((c) => c.method);
    expect(calls.filter((m) => m === "listJobsWithRunTimeLimit")).toHaveLength(1);
    expect(calls).not.toContain("listSessionsByStatus");
    expect(calls).not.toContain("getJobs");
    expect(h.errors).toEqual([]);
  });
});
