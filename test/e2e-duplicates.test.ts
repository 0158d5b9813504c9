/**
 * At-least-once, best-effort-order delivery, end to end: EventBridge may deliver an event to a
 * target more than once, and an SQS standard queue may hand a message over more than once and
 * out of order (the SQS guide: standard queues deliver at least once, in best-effort order).
 * With the embedded buses set to deliver every event twice (`duplicateDeliveryRate: 1`:
 * submissions, cancels, reports, heartbeats, status changes, ECS task events) and the queues to
 * take waiting messages in any order (`queueOrder: "shuffled"`), sessions end as they would with
 * one delivery in order: one execution each, each run recorded once, the capacity back once.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { sessionResult } from "../functions/core/sessions.ts";
import { SessionStatus } from "../functions/core/status.ts";
import { HISTORY_TO_RUNNING, historyLines } from "./support/histories.ts";
import { assertLifecycleInvariants, startTestRuntime, type TestRuntime } from "./support/runtime.ts";

describe("every event delivered twice, the queues in any order (end to end)", () => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startTestRuntime({ agents: 1, duplicateDeliveryRate: 1, queueOrder: "shuffled" });
  }, 120_000);
  afterAll(async () => {
    await rt?.stop();
  });

  test("a session that succeeds, one retried once, one cancelled while running: each ends as with one delivery", async () => {
    const run = Date.now().toString(36);
    const ok = `dup-ok-${run}`;
    const retried = `dup-retried-${run}`;
    const cancelled = `dup-cancelled-${run}`;
    await rt.submit({ sessionId: ok, spec: { name: "ok", command: ["/bin/sh", "-c", "echo ran"] } });
    await rt.submit({
      sessionId: retried,
      spec: { name: "retried", command: ["/bin/sh", "-c", "exit 3"], retry: { maxRetriesFailure: 1 } },
    });
    await rt.submit({ sessionId: cancelled, spec: { name: "cancelled", command: ["/bin/sleep", "600"] } });
    await rt.waitForStatus(cancelled, SessionStatus.RUNNING, 60_000);
    await rt.cancel(cancelled, "not needed");

    const [a, b, c] = await Promise.all([ok, retried, cancelled].map((id) => rt.waitForEnd(id, 120_000)));
    expect(sessionResult(a!)).toBe("succeeded");
    expect(sessionResult(b!)).toBe("failed");
    expect(b!.session.runIndex).toBe(1);
    expect(sessionResult(c!)).toBe("cancelled");
    // The same history one delivery gives, each record once.
    expect(historyLines(await rt.store.listHistory(ok))).toEqual([
      ...HISTORY_TO_RUNNING,
      "DetectTermination SUCCESS RUNNING->TERMINATING",
      "PromoteToTerminated SUCCESS TERMINATING->TERMINATED",
    ]);
    // Each run recorded once, however often its reports and status changes arrived.
    expect((await rt.store.listRuns(ok)).map((r) => [r.runIndex, r.decision])).toEqual([[0, "finished"]]);
    expect((await rt.store.listRuns(retried)).map((r) => [r.runIndex, r.decision])).toEqual([
      [0, "retry"],
      [1, "finished"],
    ]);
    // The buses did deliver twice.
    expect(rt.runtime.bus.stats().duplicated).toBeGreaterThan(0);
    // Every agent's capacity is back, once.
    for (const agent of await rt.store.listAgents()) expect(agent.free, agent.id).toEqual(agent.capacity);
    await assertLifecycleInvariants(rt);
  }, 180_000);
});
