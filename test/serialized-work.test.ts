/**
 * Work serialized per key by a lease in the table (functions/app/serialized.ts, against DynamoDB
 * Local): one holder at a time per key, keys side by side; a run that finds the lease held hands
 * its work to the holder, which runs once more over everything before it lets go; a holder that
 * died lets go when its time runs out; a failed run lets go at once.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { DynamoRequests } from "../functions/adapters/dynamo/dynamo-requests.ts";
import { LeaseItems } from "../functions/adapters/dynamo/lease-items.ts";
import type { Logger } from "../functions/app/logger.ts";
import { serialized, type SerializedDeps } from "../functions/app/serialized.ts";
import { freshTable, T0, type TestTable } from "./store-fixtures.ts";

let table: TestTable;
let leases: LeaseItems;
const warnings: string[] = [];
const log: Logger = { info: () => {}, warn: (m) => warnings.push(m), error: () => {} };
const nowMs = T0;
const deps = (): SerializedDeps => ({ leases, clock: { nowMs: () => nowMs }, log, leaseMs: 60_000 });
let n = 0;
const key = (label: string) => `${label}#${n++}`;

beforeAll(async () => {
  table = await freshTable("serialized");
  leases = new LeaseItems(new DynamoRequests(table.client, table.tableName, undefined));
}, 60_000);

afterAll(async () => {
  await table?.drop();
});

/** A promise and the function that resolves it. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

describe("the lease items", () => {
  test("given a held lease, then another holder is refused, may ask it to go again, and the holder is told so once", async () => {
    const k = key("items");
    expect(await leases.acquireLease(k, "a", T0, T0 + 60_000)).toBe(true);
    expect(await leases.acquireLease(k, "b", T0 + 1, T0 + 60_001)).toBe(false);
    expect(await leases.requestAgain(k, T0 + 2)).toBe(true);
    expect(await leases.releaseLease(k, "b")).toBe("lost");
    expect(await leases.releaseLease(k, "a")).toBe("again");
    expect(await leases.releaseLease(k, "a")).toBe("released");
    // No holder: nobody to ask; the asker takes the lease instead.
    expect(await leases.requestAgain(k, T0 + 3)).toBe(false);
    expect(await leases.acquireLease(k, "b", T0 + 4, T0 + 60_004)).toBe(true);
  });

  test("given a holder whose time ran out, then another takes the lease, and a request to go again left for the dead one is kept", async () => {
    const k = key("expired");
    expect(await leases.acquireLease(k, "dead", T0, T0 + 1_000)).toBe(true);
    expect(await leases.requestAgain(k, T0 + 500)).toBe(true);
    // Past its time the holder counts for nothing: no one to ask, and the lease is free.
    expect(await leases.requestAgain(k, T0 + 1_001)).toBe(false);
    expect(await leases.acquireLease(k, "next", T0 + 1_001, T0 + 61_001)).toBe(true);
    expect(await leases.releaseLease(k, "dead")).toBe("lost");
    expect(await leases.releaseLease(k, "next")).toBe("again");
    expect(await leases.releaseLease(k, "next")).toBe("released");
  });

  test("a bad key is refused naming the field", async () => {
    await expect(leases.acquireLease("", "a", T0, T0 + 1)).rejects.toThrow("lease key");
  });
});

describe("serialized work", () => {
  test("given a run holding a key, then a second run hands its work over, and the holder runs once more over everything", async () => {
    const k = key("queue");
    const inside = gate();
    const release = gate();
    const rounds: boolean[] = [];
    const first = serialized(deps(), k, async (whole) => {
      rounds.push(whole);
      if (rounds.length === 1) {
        inside.open();
        await release.opened;
      }
    });
    await inside.opened;
    let secondRan = false;
    const second = await serialized(deps(), k, () => {
      secondRan = true;
      return Promise.resolve();
    });
    expect(second).toBe("handed-over");
    expect(secondRan).toBe(false);
    release.open();
    expect(await first).toBe("ran");
    expect(rounds).toEqual([false, true]);
    // Let go: the next run takes it.
    expect(await serialized(deps(), k, () => Promise.resolve())).toBe("ran");
  });

  test("runs for different keys go side by side", async () => {
    const [a, b] = [key("a"), key("b")];
    const bothInside = { a: gate(), b: gate() };
    const runA = serialized(deps(), a, async () => {
      bothInside.a.open();
      await bothInside.b.opened;
    });
    const runB = serialized(deps(), b, async () => {
      bothInside.b.open();
      await bothInside.a.opened;
    });
    expect(await Promise.all([runA, runB])).toEqual(["ran", "ran"]);
  });

  test("given a run that fails, then it lets go at once and the failure is thrown", async () => {
    const k = key("failing");
    await expect(
      serialized(deps(), k, () => Promise.reject(new Error("throttled beyond the retries"))),
    ).rejects.toThrow("throttled beyond the retries");
    expect(await leases.acquireLease(k, "next", nowMs, nowMs + 60_000)).toBe(true);
  });
});
