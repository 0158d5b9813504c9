/**
 * One failed placement message never stalls all scheduling, end to end: the embedded runtime's
 * queues honour the visibility timeout as SQS does (a failed batch comes back only when it has
 * passed), and its fault switch fails the placement batch of one scheduling queue's session once,
 * as a failed invocation would. Placement is serialized per scheduling queue (a lease per queue),
 * not by one message group, so another queue's session is placed meanwhile; the failed one is
 * placed when its message comes back, and nothing is lost.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { SessionStatus } from "../functions/core/status.ts";
import { QueueName } from "../functions/topology/index.ts";
import { assertLifecycleInvariants, startTestRuntime, type TestRuntime } from "./support/runtime.ts";

// Long enough that the other queue's session is placed well within it on a busy machine.
const VISIBILITY_MS = 10_000;
const suffix = Date.now().toString(36);
const failing = `pq-a-${suffix}`;
const other = `pq-b-${suffix}`;
let rt: TestRuntime;

beforeAll(async () => {
  rt = await startTestRuntime({
    queueVisibilityTimeoutMs: VISIBILITY_MS,
    // The first placement batch holding the failing session's status change fails, once.
    queueFaults: { [QueueName.PlacementQueue]: [{ bodyContains: failing, times: 1 }] },
    // No sweep during the scenario: only the message coming back may place the session.
    sweepMs: 600_000,
  });
  for (const name of ["alpha", "beta"]) {
    await rt.store.createQueue({ name, priority: 0, retryPolicies: [] }, Date.now());
  }
}, 120_000);

afterAll(async () => {
  await rt?.stop();
});

/** When the session's placement was recorded (ScheduleNewSessions' success). */
async function placedAtMs(sessionId: string): Promise<number> {
  const record = (await rt.store.listHistory(sessionId)).find(
    (h) => h.handler === "ScheduleNewSessions" && h.result === "SUCCESS",
  );
  if (!record) throw new Error(`${sessionId} has no placement record`);
  return record.firstAtMs;
}

describe("given a placement batch of one scheduling queue that fails once", () => {
  test("another queue's session is placed meanwhile, and the failed one after the visibility timeout, nothing lost", async () => {
    const placement = rt.runtime.queues.get(QueueName.PlacementQueue)!;
    const submittedAtMs = Date.now();
    await rt.submit({
      sessionId: failing,
      spec: { name: "a", queue: "alpha", resources: { cpu: 1, memoryMiB: 64 }, command: ["/bin/sleep", "1"] },
    });
    // The batch holding its entry to PENDING failed: the message is in flight until its timeout.
    const deadline = Date.now() + 30_000;
    while (placement.stats().faulted === 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    expect(placement.stats().faulted).toBe(1);

    // Another queue's session is placed while the failed message waits; it runs past the
    // timeout, so no capacity comes free to place the first one early.
    await rt.submit({
      sessionId: other,
      spec: { name: "b", queue: "beta", resources: { cpu: 1, memoryMiB: 64 }, command: ["/bin/sleep", "25"] },
    });
    await rt.waitFor(other, (s) => s.session.status !== SessionStatus.PENDING, "placed");
    const meanwhile = await rt.store.getSession(failing);
    expect(meanwhile?.session.status).toBe(SessionStatus.PENDING);

    // The failed message comes back after the visibility timeout, and its session is placed.
    const ended = await rt.waitForEnd(failing, 60_000);
    expect(ended.session.status).toBe(SessionStatus.TERMINATED);
    expect(await placedAtMs(failing)).toBeGreaterThanOrEqual(submittedAtMs + VISIBILITY_MS);
    expect(await placedAtMs(other)).toBeLessThan(await placedAtMs(failing));
    expect((await rt.waitForEnd(other, 60_000)).session.status).toBe(SessionStatus.TERMINATED);

    // Nothing lost: the failed batch was delivered again, nothing was dead-lettered, and every
    // queue drained.
    expect(placement.stats()).toMatchObject({ faulted: 1, deadLettered: 0 });
    expect(placement.stats().redelivered).toBeGreaterThanOrEqual(1);
    for (const queue of rt.runtime.queues.values()) expect(queue.deadLetters()).toEqual([]);
    await assertLifecycleInvariants(rt);
  }, 120_000);
});
