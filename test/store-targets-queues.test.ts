/**
 * The targets of one scheduling queue, read per queue (TargetQuery.queues): a queue's waiting
 * sessions are found behind other queues' sessions that sort ahead of them, in queue order,
 * within a bound on the sessions read; and the read costs no more requests than the plain one
 * where no other queue's sessions are passed over. Against DynamoDB Local.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { RequestCounter } from "../functions/adapters/dynamo/metrics.ts";
import type { SessionWithKernels } from "../functions/core/model.ts";
import type { TargetQuery } from "../functions/core/ports/sessions.ts";
import { caught, freshTable, newSession, T0, type TestTable } from "./store-fixtures.ts";

function inQueue(id: string, queue: string, priority: number, at: number): SessionWithKernels {
  const s = newSession(id, { priority, createdAtMs: T0 + at, replicas: 1 });
  return { ...s, session: { ...s.session, spec: { ...s.session.spec, queue } } };
}

const ids = (sessions: readonly SessionWithKernels[]) => sessions.map((s) => s.session.id);

describe("targets read per scheduling queue", () => {
  let table: TestTable;
  // Twelve of alpha, higher priority, ahead of three of beta; then one of gamma.
  const alpha = Array.from({ length: 12 }, (_, i) => `a-${String(i).padStart(2, "0")}`);
  const beta = ["b-0", "b-1", "b-2"];
  beforeAll(async () => {
    table = await freshTable("cairn-store-targets-queues");
    const store = table.store();
    for (const [i, id] of alpha.entries()) await store.createSession(inQueue(id, "alpha", 50, i));
    for (const [i, id] of beta.entries()) await store.createSession(inQueue(id, "beta", 10, 100 + i));
    await store.createSession(inQueue("g-0", "gamma", 5, 200));
  });
  afterAll(() => table.drop());

  const pending = { statuses: ["PENDING"], targetableOnly: true } as const;

  test("a queue's sessions are found behind another queue's that sort ahead, in queue order, `limit` of each", async () => {
    const store = table.store();
    // The plain read of four sees alpha's only.
    expect(ids(await store.targetsByStatus({ ...pending, limit: 4 }))).toEqual(alpha.slice(0, 4));
    expect(
      ids(await store.targetsByStatus({ ...pending, limit: 4, queues: ["beta"], scanLimit: 100 })),
    ).toEqual(beta);
    expect(
      ids(
        await store.targetsByStatus({
          ...pending,
          limit: 2,
          queues: ["alpha", "beta", "gamma"],
          scanLimit: 100,
        }),
      ),
    ).toEqual(["a-00", "a-01", "b-0", "b-1", "g-0"]);
    expect(await store.targetsByStatus({ ...pending, limit: 2, queues: ["delta"], scanLimit: 100 })).toEqual(
      [],
    );
  });

  test("the read stops after `scanLimit` sessions: a queue further behind waits for the backlog to shrink", async () => {
    const store = table.store();
    expect(
      ids(await store.targetsByStatus({ ...pending, limit: 4, queues: ["beta"], scanLimit: 13 })),
    ).toEqual(["b-0"]);
    expect(await store.targetsByStatus({ ...pending, limit: 4, queues: ["beta"], scanLimit: 12 })).toEqual(
      [],
    );
  });

  test("bad per-queue reads are refused, naming the field", async () => {
    const store = table.store();
    const refused = (query: TargetQuery) => caught(() => store.targetsByStatus(query));
    expect(await refused({ ...pending, limit: 4, queues: [] })).toMatchObject({ field: "queues" });
    expect(await refused({ ...pending, limit: 4, queues: [""] })).toMatchObject({ field: "queues[0]" });
    expect(await refused({ ...pending, limit: 4, scanLimit: 10 })).toMatchObject({ field: "scanLimit" });
    expect(await refused({ ...pending, limit: 4, queues: ["beta"], scanLimit: 0 })).toMatchObject({
      field: "scanLimit",
    });
  });

  test("one queue's read, nothing passed over, sends the requests the plain read sends", async () => {
    const count = async (query: TargetQuery) => {
      const metrics = new RequestCounter();
      const found = await table.store({ metrics }).targetsByStatus(query);
      return { found: ids(found), requests: metrics.reads.requests, items: metrics.reads.items };
    };
    // The whole backlog, under the limit.
    const plain = await count({ ...pending, limit: 50 });
    const mine = await count({ ...pending, limit: 50, queues: ["alpha", "beta", "gamma"], scanLimit: 250 });
    expect(mine).toEqual(plain);
    // A queue's first batch that is the index's first batch.
    expect(await count({ ...pending, limit: 5, queues: ["alpha"], scanLimit: 25 })).toEqual(
      await count({ ...pending, limit: 5 }),
    );
  });
});
