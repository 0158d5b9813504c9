/**
 * Agent registration, fencing and loss against DynamoDB Local: a registration
 * declares capacity and a signing key per incarnation; a heartbeat of another or a lost
 * incarnation is refused; losing an agent is recorded once.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { DynamoSessionStore } from "../functions/adapters/dynamo/dynamo-session-store.ts";
import { fargatePoolCapacity, fargatePoolId } from "../functions/core/fargate-pool.ts";
import { caught, freshTable, newSession, T0, type TestTable } from "./store-fixtures.ts";

const CAPACITY = { cpu: 4, memoryMiB: 4096 };
const registration = (agentId: string, incarnation: string, nowMs = T0) => ({
  agentId,
  incarnation,
  capacity: CAPACITY,
  labels: { zone: "a" },
  signingKey: `key-of-${incarnation}-padded-to-thirty-two-chars`,
  nowMs,
});

describe("agent registration", () => {
  let table: TestTable;
  let store: DynamoSessionStore;
  beforeAll(async () => {
    table = await freshTable("cairn-store-agents");
    store = table.store();
  });
  afterAll(() => table.drop());

  test("a registration stores capacity, labels, incarnation and key; the same incarnation again changes nothing", async () => {
    const first = await store.registerAgent(registration("ag-1", "inc-aaaa-1"));
    expect(first.previous).toBeUndefined();
    expect(first.agent).toMatchObject({
      id: "ag-1",
      capacity: CAPACITY,
      free: CAPACITY,
      labels: { zone: "a" },
      incarnation: "inc-aaaa-1",
      signingKey: "key-of-inc-aaaa-1-padded-to-thirty-two-chars",
      registeredAtMs: T0,
    });
    const again = await store.registerAgent({
      ...registration("ag-1", "inc-aaaa-1", T0 + 5),
      signingKey: "x".repeat(32),
    });
    expect(again.agent).toEqual(first.agent);
    expect(await store.getAgent("ag-1")).toEqual(first.agent);
  });

  test("a heartbeat of the registered incarnation moves the clock and can mark it draining, for good", async () => {
    await store.registerAgent(registration("ag-2", "inc-bbbb-1"));
    const beat = await store.heartbeatAgent({
      agentId: "ag-2",
      capacity: CAPACITY,
      incarnation: "inc-bbbb-1",
      draining: true,
      nowMs: T0 + 1_000,
    });
    expect(beat).toMatchObject({ lastHeartbeatAtMs: T0 + 1_000, draining: true });
    // A heartbeat the agent sent before draining, handled after (heartbeats are handled
    // concurrently): the clock moves, the drain stays.
    const earlier = await store.heartbeatAgent({
      agentId: "ag-2",
      capacity: CAPACITY,
      incarnation: "inc-bbbb-1",
      draining: false,
      nowMs: T0 + 2_000,
    });
    expect(earlier).toMatchObject({ lastHeartbeatAtMs: T0 + 2_000, draining: true });
    // The next process registers: not draining.
    const next = await store.registerAgent(registration("ag-2", "inc-bbbb-2", T0 + 3_000));
    expect(next.agent.draining).toBeUndefined();
  });

  test("a heartbeat of a replaced or lost incarnation is fenced, and changes nothing", async () => {
    await store.registerAgent(registration("ag-3", "inc-cccc-1"));
    const replaced = await store.registerAgent(registration("ag-3", "inc-cccc-2", T0 + 10));
    expect(replaced.previous?.incarnation).toBe("inc-cccc-1");
    const stale = await caught(() =>
      store.heartbeatAgent({
        agentId: "ag-3",
        capacity: CAPACITY,
        incarnation: "inc-cccc-1",
        nowMs: T0 + 20,
      }),
    );
    expect(stale).toMatchObject({
      code: "AGENT_FENCED",
      message: "agent ag-3 incarnation inc-cccc-1 was replaced by inc-cccc-2",
    });

    expect(await store.markAgentLost({ agentId: "ag-3", incarnation: "inc-cccc-2", nowMs: T0 + 30 })).toBe(
      true,
    );
    const lost = await caught(() =>
      store.heartbeatAgent({
        agentId: "ag-3",
        capacity: CAPACITY,
        incarnation: "inc-cccc-2",
        nowMs: T0 + 40,
      }),
    );
    expect(lost).toMatchObject({ code: "AGENT_FENCED" });
    expect((lost as Error).message).toMatch(/^agent ag-3 incarnation inc-cccc-2 was declared lost at /);
    expect((await store.getAgent("ag-3"))?.lastHeartbeatAtMs).toBe(T0 + 10);
  });

  test("an agent is declared lost once, only while still silent, and a new registration clears it", async () => {
    await store.registerAgent(registration("ag-4", "inc-dddd-1"));
    // It heartbeated after the threshold: not silent.
    expect(
      await store.markAgentLost({
        agentId: "ag-4",
        incarnation: "inc-dddd-1",
        silentSinceMs: T0,
        nowMs: T0 + 99,
      }),
    ).toBe(false);
    expect(
      await store.markAgentLost({
        agentId: "ag-4",
        incarnation: "inc-dddd-1",
        silentSinceMs: T0 + 1,
        nowMs: T0 + 99,
      }),
    ).toBe(true);
    expect(
      await store.markAgentLost({
        agentId: "ag-4",
        incarnation: "inc-dddd-1",
        silentSinceMs: T0 + 1,
        nowMs: T0 + 100,
      }),
    ).toBe(false);
    expect((await store.getAgent("ag-4"))?.lostAtMs).toBe(T0 + 99);
    const back = await store.registerAgent(registration("ag-4", "inc-dddd-2", T0 + 200));
    expect(back.agent.lostAtMs).toBeUndefined();
    expect(back.agent.incarnation).toBe("inc-dddd-2");
  });

  test("re-registering with another capacity moves free by the difference (sessions keep what they hold)", async () => {
    await store.registerAgent(registration("ag-5", "inc-eeee-1"));
    await store.createSession(newSession("ag-5-s", { replicas: 1 }));
    await store.reserveCapacity({
      sessionId: "ag-5-s",
      expected: { status: "PENDING", version: 0 },
      nowMs: T0,
      placements: [{ kernelIndex: 0, agentId: "ag-5", resources: { cpu: 1, memoryMiB: 512 } }],
    });
    const bigger = await store.registerAgent({
      ...registration("ag-5", "inc-eeee-2", T0 + 1),
      capacity: { cpu: 8, memoryMiB: 8192 },
    });
    expect(bigger.agent.free).toEqual({ cpu: 7, memoryMiB: 7680 });
  });

  test("a queue's Fargate pool is upserted without an incarnation: created, then resized by the quota's change", async () => {
    const agentId = fargatePoolId("fg-queue");
    const quota4 = fargatePoolCapacity({ vcpuQuota: 4 });
    const created = await store.heartbeatAgent({ agentId, capacity: quota4, nowMs: T0 });
    expect(created).toMatchObject({ id: agentId, capacity: quota4, free: quota4, version: 0 });
    expect(created.incarnation).toBeUndefined();
    // The pool is on the roster, as agents are: placement lists it.
    expect((await store.listAgents()).map((a) => a.id)).toContain(agentId);
    await store.createSession(newSession("fg-s", { replicas: 1 }));
    await store.reserveCapacity({
      sessionId: "fg-s",
      expected: { status: "PENDING", version: 0 },
      nowMs: T0 + 1,
      placements: [{ kernelIndex: 0, agentId, resources: { cpu: 1, memoryMiB: 2048 } }],
    });
    // The quota raised to 16: free moves by the difference, the session keeps what it holds.
    const quota16 = fargatePoolCapacity({ vcpuQuota: 16 });
    const resized = await store.heartbeatAgent({ agentId, capacity: quota16, nowMs: T0 + 2 });
    expect(resized).toMatchObject({
      capacity: quota16,
      free: { cpu: 15, memoryMiB: quota16.memoryMiB - 2048 },
      lastHeartbeatAtMs: T0 + 2,
    });
    // Lowered below what is held: free goes negative until releases (placement waits meanwhile).
    const lowered = await store.heartbeatAgent({
      agentId,
      capacity: { cpu: 0.5, memoryMiB: 4096 },
      nowMs: T0 + 3,
    });
    expect(lowered.free).toEqual({ cpu: -0.5, memoryMiB: 2048 });
    await store.releaseCapacity("fg-s");
    expect((await store.getAgent(agentId))?.free).toEqual({ cpu: 0.5, memoryMiB: 4096 });
  });

  test("a placement is on the incarnation it read: the kernel records it, a retired one is refused, unplacing clears it", async () => {
    const store = table.store();
    await store.registerAgent(registration("ag-inc", "inc-ffff-1"));
    await store.createSession(newSession("inc-s", { replicas: 1 }));
    await store.reserveCapacity({
      sessionId: "inc-s",
      expected: { status: "PENDING", version: 0 },
      nowMs: T0 + 1,
      placements: [
        {
          kernelIndex: 0,
          agentId: "ag-inc",
          resources: { cpu: 1, memoryMiB: 512 },
          incarnation: "inc-ffff-1",
        },
      ],
    });
    let read = (await store.getSession("inc-s"))!;
    expect(read.kernels[0]).toMatchObject({ agentId: "ag-inc", agentIncarnation: "inc-ffff-1", version: 1 });
    // Unplaced (a return to PENDING): the incarnation goes with the agent.
    await store.applyWrite({
      sessionId: "inc-s",
      expected: { status: "PENDING", version: 0 },
      nowMs: T0 + 2,
      kernels: [{ index: 0, expectedVersion: 1, agentId: null }],
    });
    await store.releaseCapacity("inc-s");
    read = (await store.getSession("inc-s"))!;
    expect(read.kernels[0]?.agentId).toBeUndefined();
    expect(read.kernels[0]?.agentIncarnation).toBeUndefined();
    // The agent restarted: a placement made from a copy of the old incarnation takes nothing.
    await store.markAgentLost({ agentId: "ag-inc", incarnation: "inc-ffff-1", nowMs: T0 + 3 });
    await store.registerAgent(registration("ag-inc", "inc-ffff-2", T0 + 4));
    const refused = await caught(() =>
      store.reserveCapacity({
        sessionId: "inc-s",
        expected: { status: "PENDING", version: 1 },
        nowMs: T0 + 5,
        placements: [
          {
            kernelIndex: 0,
            agentId: "ag-inc",
            resources: { cpu: 1, memoryMiB: 512 },
            incarnation: "inc-ffff-1",
          },
        ],
      }),
    );
    expect(refused).toMatchObject({ code: "CAPACITY", agentId: "ag-inc" });
    expect((await store.getSession("inc-s"))?.kernels[0]?.agentId).toBeUndefined();
  });
});
