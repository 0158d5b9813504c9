/**
 * Replayed: each scheduling queue's waiting sessions are read per queue, as Backend.AI's Sokovan
 * schedules each resource group on its own: a backlog in one queue that cannot be placed, longer
 * than a pass reads at once (the batch limit), holds back no session of another queue that fits.
 */
import { expect, test } from "vitest";
import { CAP, replaysClosedAfterEach, type Replay } from "./harness.ts";

const BATCH_LIMIT = 5;
const open = replaysClosedAfterEach({ batchLimit: BATCH_LIMIT });

/** More sessions in queue `alpha` than a pass reads, none fitting an agent, then one of `beta` that fits. */
async function backlogAhead(h: Replay): Promise<void> {
  for (const name of ["alpha", "beta"])
    await h.store.createQueue({ name, priority: 0, retryPolicies: [] }, h.nowMs);
  const tooLarge = { command: ["true"], queue: "alpha", resources: { cpu: CAP.cpu * 16 } };
  for (let i = 0; i < BATCH_LIMIT * 2; i++)
    await h.submit(`a-${String(i).padStart(3, "0")}`, { name: `a${i}`, ...tooLarge });
  await h.submit("b-001", { name: "b", command: ["true"], queue: "beta", resources: { cpu: 1 } });
  expect((await h.session("b-001")).session.status, h.stepLog).toBe("PENDING");
}

for (const leases of [false, true]) {
  const how = leases ? "placement under each queue's lease" : "placement without leases";
  test(`an agent arriving places another queue's session behind a backlog longer than the batch limit (${how})`, async () => {
    const h = await open(`placement-queues-arrive-${leases}`, { placementLeases: leases });
    await backlogAhead(h);
    await h.register("agent-a", CAP);
    expect((await h.session("b-001")).kernels[0]?.agentId, h.stepLog).toBe("agent-a");
    expect((await h.session("a-000")).session.status, h.stepLog).toBe("PENDING");
    expect(h.errors, h.stepLog).toEqual([]);
  });
}

test("a queue's whole round under its lease reads that queue's sessions behind another queue's backlog", async () => {
  const h = await open("placement-queues-whole", { placementLeases: true });
  await backlogAhead(h);
  // Another run holds beta's placement a second: the agent's arrival hands beta's round to it,
  // asking it to go again, and the holder dies with the request unanswered.
  expect(await h.leases?.acquireLease("placement#beta", "dead-holder", h.nowMs, h.nowMs + 1_000)).toBe(true);
  await h.register("agent-a", CAP);
  expect((await h.session("b-001")).session.status, h.stepLog).toBe("PENDING");
  await h.advance(2_000);
  // The next run placing beta, for a session that fits nowhere, takes the lapsed lease with the
  // request on it, and so places the whole queue once more, b-001 with it.
  await h.submit("b-002", { name: "b2", command: ["true"], queue: "beta", resources: { cpu: CAP.cpu * 16 } });
  expect((await h.session("b-001")).kernels[0]?.agentId, h.stepLog).toBe("agent-a");
  expect((await h.session("b-002")).session.status, h.stepLog).toBe("PENDING");
  expect(h.errors, h.stepLog).toEqual([]);
});

test("the sweep places another queue's session behind a backlog longer than the batch limit", async () => {
  const h = await open("placement-queues-sweep", { placementLeases: true });
  await backlogAhead(h);
  // Another run holds beta's placement a second when the agent arrives, and dies: beta's round
  // is left to the sweep.
  expect(await h.leases?.acquireLease("placement#beta", "dead-holder", h.nowMs, h.nowMs + 1_000)).toBe(true);
  await h.register("agent-a", CAP);
  expect((await h.session("b-001")).session.status, h.stepLog).toBe("PENDING");
  await h.advance(2_000);
  await h.sweep();
  expect((await h.session("b-001")).kernels[0]?.agentId, h.stepLog).toBe("agent-a");
  expect(h.errors, h.stepLog).toEqual([]);
});

test("capacity a kernel's end frees goes to the first batch; a queue's session behind another's backlog waits for the sweep", async () => {
  const h = await open("placement-queues-exit", { placementLeases: true });
  for (const name of ["alpha", "beta"])
    await h.store.createQueue({ name, priority: 0, retryPolicies: [] }, h.nowMs);
  await h.register("agent-a", CAP);
  // The agent's whole capacity is taken while the backlog and beta's session arrive.
  await h.submit("c-001", { name: "c", command: ["true"], queue: "beta", resources: { cpu: CAP.cpu } });
  expect((await h.session("c-001")).session.status, h.stepLog).toBe("RUNNING");
  const tooLarge = { command: ["true"], queue: "alpha", resources: { cpu: CAP.cpu * 16 } };
  for (let i = 0; i < BATCH_LIMIT * 2; i++)
    await h.submit(`a-${String(i).padStart(3, "0")}`, { name: `a${i}`, ...tooLarge });
  await h.submit("b-001", { name: "b", command: ["true"], queue: "beta", resources: { cpu: 1 } });
  expect((await h.session("b-001")).session.status, h.stepLog).toBe("PENDING");
  // Its end frees the capacity: the pass it wakes reads the first batch, all of it alpha's, and
  // no further (a kernel's end is the busiest trigger; a scan past the backlog each time would
  // cost reads in proportion to it).
  await h.exit("c-001", 0, 0);
  expect((await h.session("c-001")).session.status, h.stepLog).toBe("TERMINATED");
  expect((await h.session("b-001")).session.status, h.stepLog).toBe("PENDING");
  // The sweep's pass reads every queue.
  await h.sweep();
  expect((await h.session("b-001")).kernels[0]?.agentId, h.stepLog).toBe("agent-a");
  expect(h.errors, h.stepLog).toEqual([]);
});
