/**
 * Replayed gangs and retries: a gang placed all-or-nothing across agents, an
 * agent lost mid-run (the clock passes the agent timeout) whose run is retried under the
 * preemption budget, and a stage retried up to maxTries then given up. Invariants after every
 * step (harness.ts): in particular no split gang and capacity conserved.
 */
import { describe, expect, test } from "vitest";
import { MAX_FREE_RETURNS } from "../../functions/core/retry/history-budget.ts";
import { sessionResult } from "../../functions/core/sessions.ts";
import { SPEC_LIMITS } from "../../functions/core/spec.ts";
import { AGENT_TIMEOUT_MS, CAP, HISTORY_TO_RUNNING, replaysClosedAfterEach } from "./harness.ts";

const open = replaysClosedAfterEach();

describe("gangs", () => {
  test("a gang of 4 kernels waits whole while one agent cannot hold it, then is placed all at once on two", async () => {
    const h = await open("gang");
    await h.register("agent-a", CAP);
    await h.submit("s-001", {
      name: "gang",
      replicas: 4,
      perAgent: 2,
      resources: { cpu: 2 },
      command: ["true"],
    });
    const waiting = await h.session("s-001");
    expect(waiting.session.status, h.stepLog).toBe("PENDING");
    expect(waiting.kernels.filter((k) => k.agentId !== undefined)).toEqual([]);
    expect((await h.store.getAgent("agent-a"))?.free.cpu).toBe(4);

    await h.register("agent-b", CAP);
    const running = await h.session("s-001");
    expect(running.session.status, h.stepLog).toBe("RUNNING");
    expect(running.kernels.map((k) => k.agentId).sort()).toEqual([
      "agent-a",
      "agent-a",
      "agent-b",
      "agent-b",
    ]);
    for (const agent of await h.store.listAgents()) expect(agent.free.cpu).toBe(0);

    // One kernel finishing early does not stop its siblings.
    await h.exit("s-001", 0, 0);
    expect((await h.session("s-001")).session.status, h.stepLog).toBe("RUNNING");
    for (const i of [1, 2, 3]) await h.exit("s-001", i, 0);

    const done = await h.session("s-001");
    expect(sessionResult(done), h.stepLog).toBe("succeeded");
    expect(done.kernels.map((k) => k.outcome)).toEqual(["SUCCEEDED", "SUCCEEDED", "SUCCEEDED", "SUCCEEDED"]);
    expect(await h.history("s-001"), h.stepLog).toEqual([
      "Submit SUBMITTED PENDING->PENDING",
      "ScheduleNewSessions SKIPPED PENDING->=",
      "ScheduleNewSessions SUCCESS PENDING->SCHEDULED",
      "PrepareSessions SUCCESS SCHEDULED->PREPARING",
      "PromoteToPrepared SUCCESS PREPARING->PREPARED",
      "StartSessions SUCCESS PREPARED->CREATING",
      "PromoteToRunning SUCCESS CREATING->RUNNING",
      "DetectTermination SUCCESS RUNNING->TERMINATING",
      "PromoteToTerminated SUCCESS TERMINATING->TERMINATED",
    ]);
    for (const agent of await h.store.listAgents()) expect(agent.free).toEqual(agent.capacity);
    expect(h.errors).toEqual([]);
  });
});

describe("retries", () => {
  test("an agent lost mid-RUNNING (the clock passes the agent timeout): the run is retried on another agent", async () => {
    const h = await open("agent-lost");
    const a = await h.register("agent-a", CAP);
    await h.submit("s-001", { name: "lost", command: ["sleep", "600"] });
    expect((await h.session("s-001")).kernels[0]?.agentId, h.stepLog).toBe("agent-a");
    await h.register("agent-b", CAP);

    // agent-a's host dies: no more heartbeats; agent-b's go on every 10 s.
    a.silent = true;
    await h.advance(AGENT_TIMEOUT_MS + 10_000);

    expect((await h.store.getAgent("agent-a"))?.lostAtMs, h.stepLog).toBeDefined();
    const retried = await h.session("s-001");
    expect(retried.session.runIndex, h.stepLog).toBe(1);
    expect(retried.session.retry).toMatchObject({ preemptionCount: 1, failureCount: 0 });
    const runs = await h.store.listRuns("s-001");
    expect(runs.map((r) => [r.runIndex, r.decision])).toEqual([[0, "retry"]]);
    expect(runs[0]?.kernels[0]).toMatchObject({ outcome: "WORKER_FAILED", condition: "AgentLost" });
    // The retry's backoff (0 s for the first) is the execution's Wait state, passed on the way.
    expect(retried.session.status, h.stepLog).toBe("RUNNING");
    expect(retried.kernels[0]?.agentId).toBe("agent-b");

    await h.exit("s-001", 0, 0);
    const done = await h.session("s-001");
    expect(sessionResult(done), h.stepLog).toBe("succeeded");
    expect(await h.history("s-001"), h.stepLog).toEqual([
      ...HISTORY_TO_RUNNING,
      // The lost kernel ended WORKER_FAILED: the run ends, and is retried (a preemption).
      "DetectTermination SUCCESS RUNNING->TERMINATING",
      "Retry REQUEUED TERMINATING->PENDING",
      "Retry REQUEUED PENDING->PENDING",
      "ScheduleNewSessions SUCCESS PENDING->SCHEDULED",
      "PrepareSessions SUCCESS SCHEDULED->PREPARING",
      "PromoteToPrepared SUCCESS PREPARING->PREPARED",
      "StartSessions SUCCESS PREPARED->CREATING",
      "PromoteToRunning SUCCESS CREATING->RUNNING",
      "DetectTermination SUCCESS RUNNING->TERMINATING",
      "PromoteToTerminated SUCCESS TERMINATING->TERMINATED",
    ]);
    expect(h.requeues).toHaveLength(1);
    expect(h.errors).toEqual([]);
  });

  test("a stage failing repeatedly is retried (NEED_RETRY) up to maxTries, then given up (GIVE_UP)", async () => {
    const h = await open("give-up");
    const a = await h.register("agent-a", CAP);
    a.prepare = { error: 'cannot run "/work/package.json": it is not executable' };
    await h.submit("s-001", {
      name: "give-up",
      command: ["/work/package.json"],
      maxTries: { preparing: 3 },
      maxPendingReturns: 1,
    });
    // Each placement: two failures retried (merged into one record), the third gives up and
    // returns the session to PENDING; maxPendingReturns 1 allows one return, the next ends it.
    expect(await h.history("s-001"), h.stepLog).toEqual([
      "Submit SUBMITTED PENDING->PENDING",
      "ScheduleNewSessions SUCCESS PENDING->SCHEDULED",
      "PrepareSessions SUCCESS SCHEDULED->PREPARING",
      "PrepareSessions NEED_RETRY PREPARING->= x2",
      "PrepareSessions GIVE_UP PREPARING->PENDING",
      "ScheduleNewSessions SUCCESS PENDING->SCHEDULED",
      "PrepareSessions SUCCESS SCHEDULED->PREPARING",
      "PrepareSessions NEED_RETRY PREPARING->= x2",
      "PrepareSessions GIVE_UP PREPARING->PENDING",
      "ScheduleNewSessions FAILED PENDING->TERMINATED",
    ]);
    const history = await h.store.listHistory("s-001");
    expect(history[3]?.message).toContain("is not executable");
    const done = await h.session("s-001");
    expect(sessionResult(done)).toBe("failed");
    expect(done.kernels[0]).toMatchObject({ status: "ERROR", outcome: "FAILED" });
    const actions = a.received.flatMap((m) =>
      m.type === "command" ? [`${m.command.action} ${m.command.placement ?? 0}`] : [],
    );
    // Per placement: the first prepare, two retried, one more sent by the pass that gives up
    // (its answer finds the kernel no longer placed and is refused), and the stop on leaving.
    expect(actions, h.stepLog).toEqual([
      ...["prepare 0", "prepare 0", "prepare 0", "prepare 0", "stop 0"],
      ...["prepare 1", "prepare 1", "prepare 1", "prepare 1", "stop 1"],
    ]);
    expect(h.rejections).toEqual([
      "detail.agentId: kernel 0 of session s-001 is not placed, not on agent-a",
      "detail.agentId: kernel 0 of session s-001 is not placed, not on agent-a",
    ]);
    expect(h.errors).toEqual([]);
  });

  test("a session at the largest maxPendingReturns ends at the session's own bound on free returns", async () => {
    // Every placement fails to prepare once and gives up (maxTries 1): a free return to PENDING.
    // The run's limit (maxPendingReturns) is as high as the spec allows, so the session's own bound
    // on free returns (MAX_FREE_RETURNS, which sizes the execution's history) is what ends it.
    const h = await open("free-returns", { maxRunsPerStep: 2_000 });
    const a = await h.register("agent-a", CAP);
    a.prepare = { error: 'cannot run "/work/package.json": it is not executable' };
    await h.submit("s-001", {
      name: "bound",
      command: ["/work/package.json"],
      maxPendingReturns: SPEC_LIMITS.maxPendingReturns.max,
      maxTries: { preparing: 1 },
    });
    const done = await h.session("s-001");
    expect(sessionResult(done), h.stepLog).toBe("failed");
    const history = await h.store.listHistory("s-001");
    const returns = history
      .filter((r) => r.toStatus === "PENDING" && r.fromStatus !== "PENDING")
      .reduce((sum, r) => sum + r.count, 0);
    expect(returns).toBe(MAX_FREE_RETURNS + 1);
    expect(history.at(-1)).toMatchObject({ result: "FAILED", fromStatus: "PENDING", toStatus: "TERMINATED" });
    expect(history.at(-1)?.message).toContain(
      `returned to PENDING ${MAX_FREE_RETURNS + 1} times without a counted retry, more than the ${MAX_FREE_RETURNS}`,
    );
    expect(done.session.runIndex).toBe(0);
    expect(h.errors).toEqual([]);
  });
});
