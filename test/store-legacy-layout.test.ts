/**
 * Sessions written before their item held their kernels and first history records (and gangs
 * of more than INLINE_KERNELS_MAX kernels, which keep them as items): every read and write of the
 * store still works on them, against DynamoDB Local. A write first tries the one-item form, finds
 * the item without its kernels, and is sent the old way.
 */
import { BatchWriteItemCommand, GetItemCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { historyItem, kernelItem, sessionItem } from "../functions/adapters/dynamo/item-codec.ts";
import { kernelSk, sessionPk } from "../functions/adapters/dynamo/keys.ts";
import { RequestCounter } from "../functions/adapters/dynamo/metrics.ts";
import { KernelItemSessions } from "../functions/adapters/dynamo/session-form.ts";
import { placeHistory } from "../functions/core/history.ts";
import type { HistoryDraft, SessionWithKernels } from "../functions/core/model.ts";
import {
  agentRegistration,
  caught,
  freshTable,
  newSession,
  skip,
  T0,
  type TestTable,
} from "./store-fixtures.ts";

describe("a session whose kernels are items of their own", () => {
  let table: TestTable;
  beforeAll(async () => {
    table = await freshTable("cairn-store-legacy");
  });
  afterAll(() => table.drop());

  /** Writes the session as the store wrote it before: the session item, one item per kernel, one per record. */
  async function writeOldWay(input: SessionWithKernels, drafts: readonly HistoryDraft[] = []): Promise<void> {
    const records = placeHistory(undefined, drafts);
    const last = records.at(-1);
    const session = { ...input.session, ...(last ? { lastHistory: last } : {}) };
    const items = [
      sessionItem(session, 4),
      ...input.kernels.map((k) => kernelItem(k)),
      ...records.map((r) => historyItem(r, Math.ceil(T0 / 1000) + 86_400)),
    ];
    await table.client.send(
      new BatchWriteItemCommand({
        RequestItems: { [table.tableName]: items.map((Item) => ({ PutRequest: { Item } })) },
      }),
    );
  }

  const rawItem = async (id: string, sk: string) =>
    (
      await table.client.send(
        new GetItemCommand({ TableName: table.tableName, Key: { pk: { S: sessionPk(id) }, sk: { S: sk } } }),
      )
    ).Item;

  test("reads: one session, several, and its history", async () => {
    const store = table.store({ clock: () => T0 });
    const old = newSession("old-read", { replicas: 2 });
    await writeOldWay(old, [skip("old-read", T0, "no capacity")]);
    await store.createSession(newSession("new-read", { replicas: 1 }));
    expect(await store.getSession("old-read")).toEqual({
      session: { ...old.session, lastHistory: expect.objectContaining({ seq: 0 }) as unknown },
      kernels: old.kernels,
    });
    const both = await store.getSessions(["new-read", "old-read"]);
    expect(both.map((s) => [s.session.id, s.kernels.length])).toEqual([
      ["new-read", 1],
      ["old-read", 2],
    ]);
    expect((await store.listHistory("old-read")).map((r) => r.message)).toEqual(["no capacity"]);
  });

  test("a write goes the old way after one try, the session's later writes at once, and it stays readable", async () => {
    const metrics = new RequestCounter();
    // A store that has not read the session yet (as a stage entry, which writes from its copy).
    const store = table.store({ metrics, clock: () => T0 });
    const old = newSession("old-write", { replicas: 2 });
    await writeOldWay(old, [skip("old-write", T0, "no capacity")]);
    const { session } = (await table.store().getSession("old-write"))!;
    await store.applyWrite({
      sessionId: "old-write",
      expected: { status: "PENDING", version: 0 },
      nowMs: T0 + 10,
      status: "SCHEDULED",
      stage: { enteredAtMs: T0 + 10, expiresAtMs: T0 + 600_000, taskToken: "t-2" },
      kernels: [{ index: 1, status: "SCHEDULED", expectedVersion: 0 }],
      history: placeHistory(session.lastHistory, [
        { ...skip("old-write", T0 + 10, ""), result: "SUCCESS", toStatus: "SCHEDULED", message: undefined },
      ]),
    });
    // One UpdateItem refused (the item holds no kernels), then the old transaction.
    expect(metrics.failedOperations).toBe(1);
    expect(metrics.byOperation.get("TransactWriteItems")).toEqual({ operations: 1, items: 3 });
    // The store remembers the session's form: its next write goes the old way at once.
    await store.patchKernels(
      "old-write",
      { status: "SCHEDULED", version: 1 },
      [{ index: 0, status: "SCHEDULED", expectedVersion: 0 }],
      T0 + 11,
    );
    expect(metrics.failedOperations).toBe(1);
    const after = (await store.getSession("old-write"))!;
    expect(after.session).toMatchObject({ status: "SCHEDULED", version: 1 });
    expect(after.kernels.map((k) => [k.status, k.version])).toEqual([
      ["SCHEDULED", 1],
      ["SCHEDULED", 1],
    ]);
    expect(await rawItem("old-write", "SESSION")).not.toHaveProperty("kernels");
    expect((await rawItem("old-write", kernelSk(1)))?.["status"]).toEqual({ S: "SCHEDULED" });
    expect((await store.listHistory("old-write")).map((r) => [r.seq, r.result])).toEqual([
      [0, "SKIPPED"],
      [1, "SUCCESS"],
    ]);
  });

  test("reports, a stale kernel and a missing one; a store that read the session never tries the one-item form", async () => {
    const metrics = new RequestCounter();
    const store = table.store({ metrics });
    await writeOldWay(newSession("old-report", { replicas: 2 }));
    await store.getSession("old-report");
    const expected = { status: "PENDING", version: 0 } as const;
    // A transaction returns no item: the session as written is the caller's to read.
    const written = await store.patchKernels(
      "old-report",
      expected,
      [{ index: 0, status: "PULLING", expectedVersion: 0 }],
      T0 + 1,
    );
    expect(written).toBeUndefined();
    expect((await store.getSession("old-report"))!.kernels[0]).toMatchObject({
      status: "PULLING",
      version: 1,
    });
    expect(
      await caught(() =>
        store.patchKernels(
          "old-report",
          expected,
          [{ index: 0, status: "RUNNING", expectedVersion: 0 }],
          T0 + 2,
        ),
      ),
    ).toMatchObject({ code: "CONFLICT", reason: "kernel 0 changed since it was read", current: undefined });
    expect(
      await caught(() =>
        store.patchKernels(
          "old-report",
          expected,
          [{ index: 5, status: "RUNNING", expectedVersion: 0 }],
          T0 + 2,
        ),
      ),
    ).toMatchObject({ code: "NOT_FOUND", entity: "kernel" });
    // The two refusals above, and no one-item try before any of the three writes.
    expect(metrics.failedOperations).toBe(2);
  });

  test("a reservation places the kernels' items", async () => {
    const store = table.store();
    await store.registerAgent(agentRegistration("old-agent"));
    await writeOldWay(newSession("old-place", { replicas: 2 }));
    const placements = [0, 1].map((kernelIndex) => ({
      kernelIndex,
      agentId: "old-agent",
      incarnation: "old-agent-1",
      resources: { cpu: 1, memoryMiB: 512 },
    }));
    const allocations = await store.reserveCapacity({
      sessionId: "old-place",
      expected: { status: "PENDING", version: 0 },
      nowMs: T0 + 5,
      placements,
      claimStage: true,
    });
    expect(allocations).toHaveLength(1);
    const placed = (await store.getSession("old-place"))!;
    expect(placed.session.stage).not.toHaveProperty("taskToken");
    expect(placed.kernels.map((k) => k.agentId)).toEqual(["old-agent", "old-agent"]);
    expect(
      await caught(() =>
        store.reserveCapacity({
          sessionId: "old-place",
          expected: { status: "PENDING", version: 1 },
          nowMs: T0 + 6,
          placements: placements.slice(0, 1),
        }),
      ),
    ).toMatchObject({
      code: "CONFLICT",
      reason: "the session already holds an allocation on agent old-agent",
    });
  });

  test("reservations together: a session read as keeping its kernels as items is left out, for a reservation of its own", async () => {
    const metrics = new RequestCounter();
    const store = table.store({ metrics });
    await store.registerAgent(agentRegistration("together-agent"));
    const ids = ["tog-1", "tog-2", "tog-old", "tog-3", "tog-4"];
    for (const id of ids) {
      if (id === "tog-old") await writeOldWay(newSession(id, { replicas: 1 }));
      else await store.createSession(newSession(id, { replicas: 1 }));
    }
    await store.getSessions(ids);
    metrics.reset();
    const results = await store.reserveCapacityTogether(
      ids.map((sessionId) => ({
        sessionId,
        expected: { status: "PENDING", version: 0 },
        nowMs: T0 + 5,
        placements: [{ kernelIndex: 0, agentId: "together-agent", resources: { cpu: 1, memoryMiB: 512 } }],
      })),
    );
    expect(results.map((r) => r?.length)).toEqual([1, 1, undefined, 1, 1]);
    expect(metrics.byOperation.get("TransactWriteItems")).toEqual({ operations: 2, items: 10 });
    expect(metrics.operations).toBe(2);
    expect(await rawItem("tog-old", kernelSk(0))).not.toHaveProperty("agentId");
  });

  test("a write asking for the session back keeps its kernel guards: the old form's transaction cannot return it", async () => {
    const store = table.store();
    await writeOldWay(newSession("old-guard", { replicas: 2 }));
    await store.getSession("old-guard");
    const at = { status: "PENDING" as const, version: 0 };
    await store.patchKernels("old-guard", at, [{ index: 1, expectedVersion: 0, message: "report" }], T0 + 1);
    const entry = {
      sessionId: "old-guard",
      expected: at,
      nowMs: T0 + 2,
      kernelGuards: [{ index: 1, version: 0 }],
    };
    expect(await caught(() => store.applyWrite(entry, { returnSession: true }))).toMatchObject({
      code: "CONFLICT",
    });
    expect(
      await store.applyWrite({ ...entry, kernelGuards: [{ index: 1, version: 1 }] }, { returnSession: true }),
    ).toEqual({
      sessionId: "old-guard",
      version: 1,
    });
  });

  test("a gang of more kernels than a session item holds keeps them as items, written in one transaction", async () => {
    const metrics = new RequestCounter();
    const store = table.store({ metrics });
    const gang = newSession("big-gang", { replicas: 12 });
    await store.createSession(gang);
    expect(await rawItem("big-gang", "SESSION")).not.toHaveProperty("kernels");
    await store.applyWrite({
      sessionId: "big-gang",
      expected: { status: "PENDING", version: 0 },
      nowMs: T0 + 1,
      kernels: [{ index: 11, status: "SCHEDULED" }],
    });
    // A kernel past the item's reach: no one-item try.
    expect(metrics.failedOperations).toBe(0);
    expect((await store.getSession("big-gang"))!.kernels[11]).toMatchObject({ status: "SCHEDULED" });
  });
});

test("the sessions known to keep their kernels as items are bounded, the oldest forgotten first", () => {
  const known = new KernelItemSessions(2);
  for (const id of ["a", "b", "a", "c"]) known.add(id);
  expect(["a", "b", "c"].map((id) => known.has(id))).toEqual([false, true, true]);
});
