/**
 * Faults DynamoDB Local never produces (transaction conflicts, throttling), injected by a client
 * whose `send` fails a given number of times and then hands the request to the real client.
 * Everything else runs against DynamoDB Local.
 */
import {
  ProvisionedThroughputExceededException,
  RequestLimitExceeded,
  ThrottlingException,
  TransactionCanceledException,
  type DynamoDBClient,
} from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { DynamoSessionStore } from "../functions/adapters/dynamo/dynamo-session-store.ts";
import { RequestCounter } from "../functions/adapters/dynamo/metrics.ts";
import { backoffDelayMs, isRetryable } from "../functions/adapters/dynamo/retry.ts";
import { caught, freshTable, newSession, T0, type TestTable } from "./store-fixtures.ts";

const meta = { $metadata: {} };

const faults = {
  transactionConflict: () =>
    new TransactionCanceledException({
      ...meta,
      message: "Transaction cancelled [TransactionConflict, None]",
      CancellationReasons: [{ Code: "TransactionConflict" }, { Code: "None" }],
    }),
  provisioned: () => new ProvisionedThroughputExceededException({ ...meta, message: "slow down" }),
  throttling: () => new ThrottlingException({ ...meta, message: "rate exceeded" }),
  requestLimit: () => new RequestLimitExceeded({ ...meta, message: "account limit" }),
};

/** A client that fails the first `times` requests of the named command, then delegates. */
function flakyClient(
  real: DynamoDBClient,
  command: string,
  times: number,
  fault: () => Error,
): { client: DynamoDBClient; calls: () => number } {
  let calls = 0;
  const client = new Proxy(real, {
    get(target, property, receiver) {
      if (property !== "send") return Reflect.get(target, property, receiver) as unknown;
      return async (cmd: { constructor: { name: string } }) => {
        if (cmd.constructor.name === command) {
          calls++;
          if (calls <= times) throw fault();
        }
        return (target.send as (c: unknown) => Promise<unknown>)(cmd);
      };
    },
  });
  return { client, calls: () => calls };
}

describe("retries of faults DynamoDB Local cannot produce", () => {
  let table: TestTable;
  beforeAll(async () => {
    table = await freshTable("cairn-store-faults");
  });
  afterAll(() => table.drop());

  function storeWith(client: DynamoDBClient, delays: number[], metrics?: RequestCounter): DynamoSessionStore {
    return new DynamoSessionStore({
      client,
      tableName: table.tableName,
      maxAttempts: 4,
      sleep: (ms) => {
        delays.push(ms);
        return Promise.resolve();
      },
      random: () => 0.5,
      ...(metrics ? { metrics } : {}),
    });
  }

  test("a transaction conflict is retried with growing backoff and then the write commits", async () => {
    await table.store().createSession(newSession("f-1"));
    const flaky = flakyClient(table.client, "TransactWriteItemsCommand", 2, faults.transactionConflict);
    const delays: number[] = [];
    const metrics = new RequestCounter();
    const store = storeWith(flaky.client, delays, metrics);
    const applied = await store.applyWrite({
      sessionId: "f-1",
      expected: { status: "PENDING", version: 0 },
      nowMs: T0 + 1,
      tries: "increment",
      // Two items, so a transaction (one item is a plain conditional write).
      kernels: [{ index: 0, expectedVersion: 0 }],
    });
    expect(applied.version).toBe(1);
    expect(flaky.calls()).toBe(3);
    expect(delays).toEqual([12, 25]); // half of 25 ms, then half of 50 ms (random = 0.5)
    expect(metrics).toMatchObject({ operations: 3, failedOperations: 2 });
    expect((await table.store().getSession("f-1"))?.session.tries).toBe(1);
  });

  test("a one-item write is a conditional UpdateItem, retried on throttling like a transaction", async () => {
    await table.store().createSession(newSession("f-one"));
    const flaky = flakyClient(table.client, "UpdateItemCommand", 2, faults.throttling);
    const delays: number[] = [];
    const metrics = new RequestCounter();
    const store = storeWith(flaky.client, delays, metrics);
    await store.applyWrite({
      sessionId: "f-one",
      expected: { status: "PENDING", version: 0 },
      nowMs: T0 + 1,
      tries: "increment",
    });
    expect(flaky.calls()).toBe(3);
    expect(delays).toEqual([12, 25]);
    expect(metrics.byOperation.get("UpdateItem")).toMatchObject({ operations: 3 });
    expect(metrics.byOperation.has("TransactWriteItems")).toBe(false);
    // Its guard still holds: a second write at the old version conflicts.
    const stale = await caught(() =>
      table.store().applyWrite({
        sessionId: "f-one",
        expected: { status: "PENDING", version: 0 },
        nowMs: T0 + 2,
        tries: "increment",
      }),
    );
    expect(stale).toMatchObject({ code: "CONFLICT", found: { status: "PENDING", version: 1 } });
  });

  test.each([
    ["ProvisionedThroughputExceededException", faults.provisioned],
    ["ThrottlingException", faults.throttling],
    ["RequestLimitExceeded", faults.requestLimit],
  ])("%s on reads is retried", async (_name, fault) => {
    await table.store().createSession(newSession(`f-read-${_name}`));
    const flaky = flakyClient(table.client, "QueryCommand", 3, fault);
    const delays: number[] = [];
    const got = await storeWith(flaky.client, delays).getSession(`f-read-${_name}`);
    expect(got?.session.id).toBe(`f-read-${_name}`);
    expect(delays).toHaveLength(3);
  });

  test("throttling that outlasts the attempts surfaces StoreUnavailableError and writes nothing", async () => {
    await table.store().createSession(newSession("f-2"));
    const flaky = flakyClient(table.client, "TransactWriteItemsCommand", 100, faults.throttling);
    const delays: number[] = [];
    const error = await caught(() =>
      storeWith(flaky.client, delays).applyWrite({
        sessionId: "f-2",
        expected: { status: "PENDING", version: 0 },
        nowMs: T0 + 1,
        tries: "increment",
        kernels: [{ index: 0, expectedVersion: 0 }],
      }),
    );
    expect(error).toMatchObject({
      name: "StoreUnavailableError",
      code: "STORE_UNAVAILABLE",
      operation: "applyWrite",
      attempts: 4,
    });
    expect((error.cause as Error).name).toBe("ThrottlingException");
    expect(flaky.calls()).toBe(4);
    expect(delays).toEqual([12, 25, 50]);
    expect((await table.store().getSession("f-2"))?.session.version).toBe(0);
  });

  test("conflicts during a reservation are retried; capacity is taken once", async () => {
    const plain = table.store();
    await plain.heartbeatAgent({ agentId: "f-agent", capacity: { cpu: 2, memoryMiB: 2048 }, nowMs: T0 });
    await plain.createSession(newSession("f-3", { replicas: 1 }));
    const flaky = flakyClient(table.client, "TransactWriteItemsCommand", 1, faults.transactionConflict);
    await storeWith(flaky.client, []).reserveCapacity({
      sessionId: "f-3",
      expected: { status: "PENDING", version: 0 },
      nowMs: T0 + 1,
      placements: [{ kernelIndex: 0, agentId: "f-agent", resources: { cpu: 1, memoryMiB: 512 } }],
    });
    expect((await plain.getAgent("f-agent"))?.free).toEqual({ cpu: 1, memoryMiB: 1536 });
  });

  test("a condition failure is an answer, not a fault: never retried", async () => {
    await table.store().createSession(newSession("f-4"));
    const delays: number[] = [];
    const error = await caught(() =>
      storeWith(table.client, delays).applyWrite({
        sessionId: "f-4",
        expected: { status: "RUNNING", version: 0 },
        nowMs: T0 + 1,
        tries: "increment",
      }),
    );
    expect(error).toMatchObject({ code: "CONFLICT" });
    expect(delays).toEqual([]);
  });

  test("what counts as retryable, and the backoff ceiling", () => {
    expect(isRetryable(faults.transactionConflict())).toBe(true);
    const mixed = new TransactionCanceledException({
      ...meta,
      message: "cancelled",
      CancellationReasons: [{ Code: "ConditionalCheckFailed" }, { Code: "TransactionConflict" }],
    });
    expect(isRetryable(mixed)).toBe(false);
    expect(isRetryable(Object.assign(new Error("bad"), { name: "ValidationException" }))).toBe(false);
    const options = { baseDelayMs: 25, maxDelayMs: 1_000, random: () => 0.999999 };
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((a) => backoffDelayMs(a, options))).toEqual([
      24, 49, 99, 199, 399, 799, 999, 999,
    ]);
  });
});
