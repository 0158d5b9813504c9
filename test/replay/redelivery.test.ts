/**
 * The same lifecycles replayed with at-least-once delivery: every batch of
 * events the bus delivers (submissions, reports, heartbeats, status changes) is delivered again
 * in the next coordinator run. Consumers are idempotent, so each history is exactly the one a
 * single delivery gives (lifecycle.test.ts, gang-retry.test.ts), and the invariants hold after
 * every run (harness.ts).
 */
import { describe, expect, test } from "vitest";
import { sessionResult } from "../../functions/core/sessions.ts";
import { AGENT_TIMEOUT_MS, CAP, HISTORY_TO_RUNNING, replaysClosedAfterEach } from "./harness.ts";

const open = replaysClosedAfterEach({ redeliver: true });

describe("every event delivered twice", () => {
  test("happy path: the same history, one execution, the capacity back once", async () => {
    const h = await open("twice-happy");
    await h.register("agent-a", CAP);
    await h.submit("s-001", { name: "hello", command: ["true"] });
    await h.exit("s-001", 0, 0);
    const done = await h.session("s-001");
    expect(sessionResult(done), h.stepLog).toBe("succeeded");
    expect(await h.history("s-001"), h.stepLog).toEqual([
      ...HISTORY_TO_RUNNING,
      "DetectTermination SUCCESS RUNNING->TERMINATING",
      "PromoteToTerminated SUCCESS TERMINATING->TERMINATED",
    ]);
    expect(h.driver.executions.size).toBe(1);
    const [agent] = await h.store.listAgents();
    expect(agent?.free).toEqual(agent?.capacity);
    expect(h.errors).toEqual([]);
  });

  test("cancel in RUNNING: stopped once, result cancelled", async () => {
    const h = await open("twice-cancel");
    const a = await h.register("agent-a", CAP);
    await h.submit("s-001", { name: "cancel-running", command: ["sleep", "60"] });
    await h.cancel("s-001");
    const done = await h.session("s-001");
    expect(sessionResult(done), h.stepLog).toBe("cancelled");
    expect(done.kernels[0]).toMatchObject({ status: "TERMINATED", exitCode: 143, outcome: "KILLED" });
    expect((await h.history("s-001")).slice(-2), h.stepLog).toEqual([
      "Cancel CANCELLED RUNNING->TERMINATING",
      "PromoteToTerminated SUCCESS TERMINATING->TERMINATED",
    ]);
    const stops = a.received.filter((m) => m.type === "command" && m.command.action === "stop");
    expect(stops, h.stepLog).toHaveLength(1);
    expect(h.errors).toEqual([]);
  });

  test("an agent lost mid-RUNNING: retried once, on the other agent", async () => {
    const h = await open("twice-lost");
    const a = await h.register("agent-a", CAP);
    await h.submit("s-001", { name: "lost", command: ["sleep", "600"] });
    await h.register("agent-b", CAP);
    a.silent = true;
    await h.advance(AGENT_TIMEOUT_MS + 10_000);
    const retried = await h.session("s-001");
    expect(retried.session.status, h.stepLog).toBe("RUNNING");
    expect(retried.session.runIndex).toBe(1);
    expect(retried.session.retry).toMatchObject({ preemptionCount: 1, failureCount: 0 });
    expect(retried.kernels[0]?.agentId).toBe("agent-b");
    await h.exit("s-001", 0, 0);
    expect(await h.history("s-001"), h.stepLog).toEqual([
      ...HISTORY_TO_RUNNING,
      "DetectTermination SUCCESS RUNNING->TERMINATING",
      "Retry REQUEUED TERMINATING->PENDING",
      "Retry REQUEUED PENDING->PENDING",
      ...HISTORY_TO_RUNNING.slice(1),
      "DetectTermination SUCCESS RUNNING->TERMINATING",
      "PromoteToTerminated SUCCESS TERMINATING->TERMINATED",
    ]);
    expect(h.requeues).toHaveLength(1);
    expect(h.errors).toEqual([]);
  });

  test("a gang of 4 on two agents: placed once, all at once", async () => {
    const h = await open("twice-gang");
    await h.register("agent-a", CAP);
    await h.register("agent-b", CAP);
    await h.submit("s-001", {
      name: "gang",
      replicas: 4,
      perAgent: 2,
      resources: { cpu: 2 },
      command: ["true"],
    });
    for (const i of [0, 1, 2, 3]) await h.exit("s-001", i, 0);
    expect(sessionResult(await h.session("s-001")), h.stepLog).toBe("succeeded");
    expect(await h.history("s-001"), h.stepLog).toEqual([
      ...HISTORY_TO_RUNNING,
      "DetectTermination SUCCESS RUNNING->TERMINATING",
      "PromoteToTerminated SUCCESS TERMINATING->TERMINATED",
    ]);
    for (const agent of await h.store.listAgents()) expect(agent.free).toEqual(agent.capacity);
    expect(h.errors).toEqual([]);
  });
});
