/**
 * Agents and capacity against DynamoDB Local: heartbeats, whole-session reservations (all
 * kernels or none) and idempotent release.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { RequestCounter } from "../functions/adapters/dynamo/metrics.ts";
import type { DynamoSessionStore } from "../functions/adapters/dynamo/dynamo-session-store.ts";
import type { ReservationRequest } from "../functions/core/ports/agents.ts";
import { sessionAfterPlacement } from "../functions/core/session-after-write.ts";
import { agentRegistration, caught, freshTable, newSession, T0, type TestTable } from "./store-fixtures.ts";

const small = { cpu: 1, memoryMiB: 512 };

describe("agents and capacity", () => {
  let table: TestTable;
  let store: DynamoSessionStore;
  beforeAll(async () => {
    table = await freshTable("cairn-store-capacity");
    store = table.store();
  });
  afterAll(() => table.drop());

  test("a heartbeat registers an agent, later ones move its clock, a resize moves free by the difference", async () => {
    const registered = await store.heartbeatAgent({
      agentId: "hb-1",
      capacity: { cpu: 4, memoryMiB: 4096 },
      nowMs: T0,
    });
    expect(registered).toEqual({
      id: "hb-1",
      capacity: { cpu: 4, memoryMiB: 4096 },
      free: { cpu: 4, memoryMiB: 4096 },
      lastHeartbeatAtMs: T0,
      version: 0,
    });
    const beat = await store.heartbeatAgent({
      agentId: "hb-1",
      capacity: { cpu: 4, memoryMiB: 4096 },
      nowMs: T0 + 10,
    });
    expect(beat).toMatchObject({ lastHeartbeatAtMs: T0 + 10, version: 1 });
    await store.createSession(newSession("hb-s", { replicas: 1 }));
    await store.reserveCapacity({
      sessionId: "hb-s",
      expected: { status: "PENDING", version: 0 },
      nowMs: T0 + 11,
      placements: [{ kernelIndex: 0, agentId: "hb-1", resources: { cpu: 1.5, memoryMiB: 1024 } }],
    });
    const resized = await store.heartbeatAgent({
      agentId: "hb-1",
      capacity: { cpu: 2, memoryMiB: 8192 },
      nowMs: T0 + 20,
    });
    expect(resized).toMatchObject({
      capacity: { cpu: 2, memoryMiB: 8192 },
      free: { cpu: 0.5, memoryMiB: 7168 },
      lastHeartbeatAtMs: T0 + 20,
    });
    const late = await store.heartbeatAgent({
      agentId: "hb-1",
      capacity: { cpu: 4, memoryMiB: 4096 },
      nowMs: T0 + 15,
    });
    expect(late).toEqual(resized);
    expect(await store.getAgent("hb-1")).toEqual(resized);
  });

  test("listAgents returns every registered agent with current free capacity", async () => {
    await store.heartbeatAgent({ agentId: "list-a", capacity: small, nowMs: T0 });
    await store.heartbeatAgent({ agentId: "list-b", capacity: small, nowMs: T0 });
    const ids = (await store.listAgents()).map((a) => a.id);
    expect(ids).toEqual(expect.arrayContaining(["list-a", "list-b", "hb-1"]));
    expect((await store.listAgents()).find((a) => a.id === "hb-1")?.free).toEqual({
      cpu: 0.5,
      memoryMiB: 7168,
    });
  });

  test("a reservation that claims the stage reads back as sessionAfterPlacement computes it", async () => {
    await store.registerAgent(agentRegistration("claim-a"));
    await store.createSession(newSession("claim-1", { replicas: 2, taskToken: "tok-claim" }));
    const copy = (await store.getSession("claim-1"))!;
    expect(copy.session.stage.taskToken).toBe("tok-claim");
    const request: ReservationRequest = {
      sessionId: "claim-1",
      expected: { status: copy.session.status, version: copy.session.version },
      nowMs: T0 + 5,
      placements: [0, 1].map((kernelIndex) => ({
        kernelIndex,
        agentId: "claim-a",
        resources: small,
        incarnation: "claim-a-1",
      })),
      claimStage: true,
    };
    await store.reserveCapacity(request);
    const read = (await store.getSession("claim-1"))!;
    expect(read.session.stage.taskToken).toBeUndefined();
    expect(sessionAfterPlacement(copy, request)).toEqual(read);
    // No longer a target: the claimed session is out of the targets index.
    const targets = await store.targetsByStatus({ statuses: ["PENDING"], limit: 100, targetableOnly: true });
    expect(targets.map((t) => t.session.id)).not.toContain("claim-1");
  });

  test("a reservation places the whole session: one allocation per agent, kernels on several agents", async () => {
    await store.heartbeatAgent({ agentId: "r-a", capacity: { cpu: 4, memoryMiB: 4096 }, nowMs: T0 });
    await store.heartbeatAgent({ agentId: "r-b", capacity: { cpu: 4, memoryMiB: 4096 }, nowMs: T0 });
    await store.createSession(newSession("r-1", { replicas: 3 }));
    const allocations = await store.reserveCapacity({
      sessionId: "r-1",
      expected: { status: "PENDING", version: 0 },
      nowMs: T0 + 1,
      placements: [
        { kernelIndex: 0, agentId: "r-a", resources: small },
        { kernelIndex: 1, agentId: "r-b", resources: small },
        { kernelIndex: 2, agentId: "r-a", resources: small },
      ],
    });
    expect(allocations).toEqual([
      {
        sessionId: "r-1",
        agentId: "r-a",
        resources: { cpu: 2, memoryMiB: 1024 },
        kernelIndexes: [0, 2],
        allocatedAtMs: T0 + 1,
      },
      { sessionId: "r-1", agentId: "r-b", resources: small, kernelIndexes: [1], allocatedAtMs: T0 + 1 },
    ]);
    expect((await store.getAgent("r-a"))?.free).toEqual({ cpu: 2, memoryMiB: 3072 });
    expect((await store.getAgent("r-b"))?.free).toEqual({ cpu: 3, memoryMiB: 3584 });
    const placed = (await store.getSession("r-1"))!;
    expect(placed.kernels.map((k) => k.agentId)).toEqual(["r-a", "r-b", "r-a"]);
    // The session item is only checked, not written: its version is unchanged.
    expect(placed.session.version).toBe(0);
    expect(await store.allocationsOf("r-1")).toEqual(allocations);
    expect(await store.allocationsOnAgent("r-a")).toEqual([allocations[0]]);
  });

  test("when the second agent lacks room nothing is reserved anywhere, and the error names that agent", async () => {
    await store.heartbeatAgent({ agentId: "n-a", capacity: { cpu: 4, memoryMiB: 4096 }, nowMs: T0 });
    await store.heartbeatAgent({ agentId: "n-b", capacity: { cpu: 1, memoryMiB: 4096 }, nowMs: T0 });
    await store.createSession(newSession("n-1", { replicas: 3 }));
    const error = await caught(() =>
      store.reserveCapacity({
        sessionId: "n-1",
        expected: { status: "PENDING", version: 0 },
        nowMs: T0 + 1,
        placements: [
          { kernelIndex: 0, agentId: "n-a", resources: small },
          { kernelIndex: 1, agentId: "n-b", resources: small },
          { kernelIndex: 2, agentId: "n-b", resources: small },
        ],
      }),
    );
    expect(error).toMatchObject({
      name: "CapacityError",
      code: "CAPACITY",
      sessionId: "n-1",
      agentId: "n-b",
      requested: { cpu: 2, memoryMiB: 1024 },
      free: { cpu: 1, memoryMiB: 4096 },
    });
    expect((await store.getAgent("n-a"))?.free).toEqual({ cpu: 4, memoryMiB: 4096 });
    expect(await store.allocationsOf("n-1")).toEqual([]);
    expect((await store.getSession("n-1"))?.kernels.map((k) => k.agentId)).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
  });

  test("a reservation for a session that moved, or for kernels already placed, is a conflict", async () => {
    await store.heartbeatAgent({ agentId: "c-a", capacity: { cpu: 8, memoryMiB: 8192 }, nowMs: T0 });
    await store.createSession(newSession("c-1", { replicas: 1 }));
    const request = {
      sessionId: "c-1",
      expected: { status: "PENDING" as const, version: 0 },
      nowMs: T0 + 1,
      placements: [{ kernelIndex: 0, agentId: "c-a", resources: small }],
    };
    await store.reserveCapacity(request);
    const twice = await caught(() => store.reserveCapacity(request));
    expect(twice).toMatchObject({
      code: "CONFLICT",
      found: { status: "PENDING", version: 0 },
      reason: "the session already holds an allocation on agent c-a",
    });
    await store.releaseCapacity("c-1");
    const placedKernel = await caught(() => store.reserveCapacity(request));
    expect(placedKernel).toMatchObject({
      code: "CONFLICT",
      reason: "kernel 0 is already placed on agent c-a",
    });
    await store.applyWrite({ sessionId: "c-1", expected: request.expected, nowMs: T0 + 2, claimStage: true });
    const moved = await caught(() => store.reserveCapacity(request));
    expect(moved).toMatchObject({
      code: "CONFLICT",
      found: { status: "PENDING", version: 1 },
      reason: undefined,
    });
    expect((await store.getAgent("c-a"))?.free).toEqual({ cpu: 8, memoryMiB: 8192 });
    const noAgent = await caught(() =>
      store.reserveCapacity({
        ...request,
        expected: { status: "PENDING", version: 1 },
        placements: [{ ...request.placements[0]!, agentId: "ghost" }],
      }),
    );
    // Kernel 0 is still placed on c-a: the conflict on the session's own kernel is reported first.
    expect(noAgent).toMatchObject({ code: "CONFLICT" });
    await store.createSession(newSession("c-2", { replicas: 1 }));
    expect(
      await caught(() =>
        store.reserveCapacity({
          ...request,
          sessionId: "c-2",
          placements: [{ ...request.placements[0]!, agentId: "ghost" }],
        }),
      ),
    ).toMatchObject({ code: "NOT_FOUND", entity: "agent", id: "ghost" });
  });

  test("release gives capacity back once; a second release gives nothing", async () => {
    await store.heartbeatAgent({ agentId: "x-a", capacity: { cpu: 4, memoryMiB: 4096 }, nowMs: T0 });
    await store.heartbeatAgent({ agentId: "x-b", capacity: { cpu: 4, memoryMiB: 4096 }, nowMs: T0 });
    await store.createSession(newSession("x-1", { replicas: 2 }));
    await store.reserveCapacity({
      sessionId: "x-1",
      expected: { status: "PENDING", version: 0 },
      nowMs: T0 + 1,
      placements: [
        { kernelIndex: 0, agentId: "x-a", resources: { cpu: 0.1, memoryMiB: 100 } },
        { kernelIndex: 1, agentId: "x-b", resources: { cpu: 0.2, memoryMiB: 200 } },
      ],
    });
    expect((await store.getAgent("x-b"))?.free).toEqual({ cpu: 3.8, memoryMiB: 3896 });
    const released = await store.releaseCapacity("x-1");
    expect(released.map((a) => a.agentId).sort()).toEqual(["x-a", "x-b"]);
    expect(await store.releaseCapacity("x-1")).toEqual([]);
    expect((await store.getAgent("x-a"))?.free).toEqual({ cpu: 4, memoryMiB: 4096 });
    expect((await store.getAgent("x-b"))?.free).toEqual({ cpu: 4, memoryMiB: 4096 });
    expect(await store.allocationsOnAgent("x-a")).toEqual([]);
  });

  test("released from the session's own copy: one request and no read; a copy that disagrees with the store gives back what is stored", async () => {
    const metrics = new RequestCounter();
    const counted = table.store({ metrics });
    await store.heartbeatAgent({ agentId: "k-a", capacity: { cpu: 4, memoryMiB: 4096 }, nowMs: T0 });
    await store.heartbeatAgent({ agentId: "k-b", capacity: { cpu: 4, memoryMiB: 4096 }, nowMs: T0 });
    await store.createSession(newSession("k-1", { replicas: 3, resources: { cpu: 0.1, memoryMiB: 100 } }));
    const placed = (k: number, agentId: string) => ({
      kernelIndex: k,
      agentId,
      resources: { cpu: 0.1, memoryMiB: 100 },
    });
    await store.reserveCapacity({
      sessionId: "k-1",
      expected: { status: "PENDING", version: 0 },
      nowMs: T0 + 1,
      placements: [placed(0, "k-a"), placed(1, "k-b"), placed(2, "k-a")],
    });
    const copy = (await store.getSession("k-1"))!;
    const released = await counted.releaseCapacity("k-1", copy);
    // One allocation per agent, the kernels' resources summed as the reservation summed them.
    expect(released.map((a) => [a.agentId, a.resources, a.kernelIndexes])).toEqual([
      ["k-a", { cpu: 0.2, memoryMiB: 200 }, [0, 2]],
      ["k-b", { cpu: 0.1, memoryMiB: 100 }, [1]],
    ]);
    expect([metrics.operations, metrics.reads.requests]).toEqual([1, 0]);
    expect((await store.getAgent("k-a"))?.free).toEqual({ cpu: 4, memoryMiB: 4096 });
    expect((await store.getAgent("k-b"))?.free).toEqual({ cpu: 4, memoryMiB: 4096 });
    // Again with the same copy: its allocations are gone, so the store reads and finds nothing.
    expect(await counted.releaseCapacity("k-1", copy)).toEqual([]);
    expect((await store.getAgent("k-a"))?.free).toEqual({ cpu: 4, memoryMiB: 4096 });

    // A copy whose kernels say another amount than the store holds does not decide what goes back.
    await store.createSession(newSession("k-2", { replicas: 1, resources: { cpu: 1, memoryMiB: 512 } }));
    await store.reserveCapacity({
      sessionId: "k-2",
      expected: { status: "PENDING", version: 0 },
      nowMs: T0 + 2,
      placements: [{ kernelIndex: 0, agentId: "k-a", resources: { cpu: 1, memoryMiB: 512 } }],
    });
    const stored = (await store.getSession("k-2"))!;
    const wrong = {
      ...stored,
      kernels: stored.kernels.map((k) => ({ ...k, resources: { cpu: 3, memoryMiB: 512 } })),
    };
    const back = await store.releaseCapacity("k-2", wrong);
    expect(back.map((a) => a.resources)).toEqual([{ cpu: 1, memoryMiB: 512 }]);
    expect((await store.getAgent("k-a"))?.free).toEqual({ cpu: 4, memoryMiB: 4096 });
  });

  test("two releases racing give capacity back exactly once", async () => {
    await store.heartbeatAgent({ agentId: "race-a", capacity: { cpu: 4, memoryMiB: 4096 }, nowMs: T0 });
    await store.createSession(newSession("race-1", { replicas: 2 }));
    await store.reserveCapacity({
      sessionId: "race-1",
      expected: { status: "PENDING", version: 0 },
      nowMs: T0 + 1,
      placements: [
        { kernelIndex: 0, agentId: "race-a", resources: small },
        { kernelIndex: 1, agentId: "race-a", resources: small },
      ],
    });
    const [one, two] = await Promise.all([store.releaseCapacity("race-1"), store.releaseCapacity("race-1")]);
    expect(one.length + two.length).toBe(1);
    expect((await store.getAgent("race-a"))?.free).toEqual({ cpu: 4, memoryMiB: 4096 });
  });

  describe("reservations together", () => {
    /** A one-kernel session's reservation on `agentId`, claiming its stage, at the version created. */
    const onAgent = (sessionId: string, agentId: string, resources = small): ReservationRequest => ({
      sessionId,
      expected: { status: "PENDING", version: 0 },
      nowMs: T0 + 3,
      placements: [{ kernelIndex: 0, agentId, resources }],
      claimStage: true,
    });

    test("sessions on one agent: one transaction, the agent's capacity taken once by the sum, each session as its own reservation leaves it", async () => {
      const metrics = new RequestCounter();
      const counted = table.store({ metrics });
      await store.heartbeatAgent({ agentId: "tg-a", capacity: { cpu: 8, memoryMiB: 8192 }, nowMs: T0 });
      const ids = ["tg-1", "tg-2", "tg-3"];
      for (const id of ids) await store.createSession(newSession(id, { replicas: 1 }));
      const copies = await store.getSessions(ids);
      const requests = ids.map((id) => onAgent(id, "tg-a", { cpu: 1.5, memoryMiB: 256 }));
      metrics.reset();

      const results = await counted.reserveCapacityTogether(requests);

      expect(metrics.byOperation.get("TransactWriteItems")).toEqual({ operations: 1, items: 7 });
      expect(metrics.operations).toBe(1);
      expect(results).toEqual(
        ids.map((sessionId) => [
          {
            sessionId,
            agentId: "tg-a",
            resources: { cpu: 1.5, memoryMiB: 256 },
            kernelIndexes: [0],
            allocatedAtMs: T0 + 3,
          },
        ]),
      );
      expect((await store.getAgent("tg-a"))?.free).toEqual({ cpu: 3.5, memoryMiB: 7424 });
      for (const [i, id] of ids.entries()) {
        expect(await store.getSession(id)).toEqual(sessionAfterPlacement(copies[i]!, requests[i]!));
        expect(await store.allocationsOf(id)).toEqual(results[i]);
      }
    });

    test("one refused guard reserves none of them: each comes back undefined, nothing written, for a reservation of its own", async () => {
      await store.heartbeatAgent({ agentId: "tr-a", capacity: { cpu: 4, memoryMiB: 4096 }, nowMs: T0 });
      for (const id of ["tr-1", "tr-2"]) await store.createSession(newSession(id, { replicas: 1 }));
      // tr-2 moves on after the pass read it.
      await store.applyWrite({
        sessionId: "tr-2",
        expected: { status: "PENDING", version: 0 },
        nowMs: T0 + 1,
      });

      expect(await store.reserveCapacityTogether([onAgent("tr-1", "tr-a"), onAgent("tr-2", "tr-a")])).toEqual(
        [undefined, undefined],
      );
      expect((await store.getAgent("tr-a"))?.free).toEqual({ cpu: 4, memoryMiB: 4096 });
      expect((await store.getSession("tr-1"))?.kernels[0]?.agentId).toBeUndefined();
      expect(await store.allocationsOf("tr-1")).toEqual([]);
      // Alone, the one still waiting is reserved, and the moved one says why it is not.
      await store.reserveCapacity(onAgent("tr-1", "tr-a"));
      expect(await caught(() => store.reserveCapacity(onAgent("tr-2", "tr-a")))).toMatchObject({
        code: "CONFLICT",
      });
      expect((await store.getAgent("tr-a"))?.free).toEqual({ cpu: 3, memoryMiB: 3584 });
    });

    test("more than the agent has left reserves none of them", async () => {
      await store.heartbeatAgent({ agentId: "tc-a", capacity: { cpu: 2, memoryMiB: 4096 }, nowMs: T0 });
      for (const id of ["tc-1", "tc-2", "tc-3"]) await store.createSession(newSession(id, { replicas: 1 }));
      const results = await store.reserveCapacityTogether(
        ["tc-1", "tc-2", "tc-3"].map((id) => onAgent(id, "tc-a")),
      );
      expect(results).toEqual([undefined, undefined, undefined]);
      expect((await store.getAgent("tc-a"))?.free).toEqual({ cpu: 2, memoryMiB: 4096 });
    });

    test("more than one transaction holds: cut in order, each part all or none", async () => {
      const metrics = new RequestCounter();
      const counted = table.store({ metrics });
      await store.heartbeatAgent({ agentId: "tm-a", capacity: { cpu: 64, memoryMiB: 65_536 }, nowMs: T0 });
      const ids = Array.from({ length: 60 }, (_, i) => `tm-${String(i).padStart(2, "0")}`);
      for (const id of ids) await store.createSession(newSession(id, { replicas: 1 }));
      // The 60th moves on: only the second part is refused.
      await store.applyWrite({
        sessionId: "tm-59",
        expected: { status: "PENDING", version: 0 },
        nowMs: T0 + 1,
      });
      metrics.reset();

      const results = await counted.reserveCapacityTogether(ids.map((id) => onAgent(id, "tm-a")));

      // Two items per session and one for the agent: 49 sessions fit in 100 items.
      expect(metrics.byOperation.get("TransactWriteItems")).toEqual({ operations: 2, items: 99 + 23 });
      expect(results.slice(0, 49).every((r) => r?.length === 1)).toBe(true);
      expect(results.slice(49)).toEqual(Array.from({ length: 11 }, () => undefined));
      expect((await store.getAgent("tm-a"))?.free).toEqual({ cpu: 64 - 49, memoryMiB: 65_536 - 49 * 512 });
    });

    test("a gang's kernels on two agents share the transaction with the sessions on the same two", async () => {
      for (const agentId of ["tt-a", "tt-b"])
        await store.heartbeatAgent({ agentId, capacity: { cpu: 4, memoryMiB: 4096 }, nowMs: T0 });
      for (const id of ["tt-1", "tt-2"]) await store.createSession(newSession(id, { replicas: 2 }));
      const gang = (sessionId: string): ReservationRequest => ({
        ...onAgent(sessionId, "tt-a"),
        placements: [
          { kernelIndex: 0, agentId: "tt-a", resources: small },
          { kernelIndex: 1, agentId: "tt-b", resources: small },
        ],
      });
      const results = await store.reserveCapacityTogether([gang("tt-1"), gang("tt-2")]);
      expect(results.map((r) => r?.map((a) => a.agentId))).toEqual([
        ["tt-a", "tt-b"],
        ["tt-a", "tt-b"],
      ]);
      expect((await store.getAgent("tt-a"))?.free).toEqual({ cpu: 2, memoryMiB: 3072 });
      expect((await store.getAgent("tt-b"))?.free).toEqual({ cpu: 2, memoryMiB: 3072 });
    });
  });
});
