/**
 * Faults DynamoDB Local never produces (transaction conflicts, throttling, unprocessed keys),
 * injected inside the SDK's middleware stack, below its retry middleware: the client's own
 * retry strategy (StoreRetryStrategy) sees them as it would DynamoDB's, and the request that
 * outlasts them goes on to DynamoDB Local. Everything else runs against DynamoDB Local.
 */
import {
  ConditionalCheckFailedException,
  ProvisionedThroughputExceededException,
  RequestLimitExceeded,
  ThrottlingException,
  TransactionCanceledException,
  TransactionConflictException,
  type BatchGetItemCommandInput,
  type BatchGetItemCommandOutput,
  type DynamoDBClient,
} from "@aws-sdk/client-dynamodb";
import type { RetryErrorInfo } from "@smithy/types";
import { afterAll, afterEach, beforeAll, describe, expect, test, vi } from "vitest";
import { DynamoSessionStore } from "../functions/adapters/dynamo/dynamo-session-store.ts";
import { INLINE_HISTORY_MAX } from "../functions/adapters/dynamo/item-codec.ts";
import type { HistoryRecord } from "../functions/core/model.ts";
import { RequestCounter } from "../functions/adapters/dynamo/metrics.ts";
import {
  backoffDelayMs,
  isConditionFailure,
  isRetryable,
  StoreRetryStrategy,
} from "../functions/adapters/dynamo/retry.ts";
import { caught, freshTable, localClient, newSession, T0, type TestTable } from "./store-fixtures.ts";

const meta = { $metadata: {} };

/**
 * A history record past those the session item holds: written as an item of its own, so the
 * write that carries it is a transaction (one item is a plain conditional write).
 */
function laterRecord(sessionId: string): HistoryRecord {
  return {
    sessionId,
    seq: INLINE_HISTORY_MAX,
    handler: "ScheduleNewSessions",
    result: "SKIPPED",
    fromStatus: "PENDING",
    message: "no capacity",
    count: 1,
    firstAtMs: T0 + 1,
    lastAtMs: T0 + 1,
  };
}

const faults = {
  transactionConflict: () =>
    new TransactionCanceledException({
      ...meta,
      message: "Transaction cancelled [TransactionConflict, None]",
      CancellationReasons: [{ Code: "TransactionConflict" }, { Code: "None" }],
    }),
  conditionAndConflict: () =>
    new TransactionCanceledException({
      ...meta,
      message: "Transaction cancelled [ConditionalCheckFailed, TransactionConflict]",
      CancellationReasons: [{ Code: "ConditionalCheckFailed" }, { Code: "TransactionConflict" }],
    }),
  singleConflict: () => new TransactionConflictException({ ...meta, message: "in a transaction" }),
  provisioned: () => new ProvisionedThroughputExceededException({ ...meta, message: "slow down" }),
  throttling: () => new ThrottlingException({ ...meta, message: "rate exceeded" }),
  requestLimit: () => new RequestLimitExceeded({ ...meta, message: "account limit" }),
};

/** As the SDK hands a failure to the strategy (SdkError types `cause` narrower than Error does). */
const info = (error: Error, errorType: RetryErrorInfo["errorType"] = "CLIENT_ERROR"): RetryErrorInfo => ({
  error: error as RetryErrorInfo["error"],
  errorType,
});

interface Flaky {
  readonly client: DynamoDBClient;
  /** Tries of the named command that reached the wire (the injected faults included). */
  calls(): number;
  /** The delays the strategy gave the SDK to sleep before each retry, in order. */
  delays(): number[];
}

/**
 * A client with the store's retry strategy (4 tries, random 0.5: each delay is half its
 * ceiling) whose first `times` tries of the named command fail with `fault`; then they reach
 * DynamoDB Local.
 */
async function flakyClient(command: string, times: number, fault: () => Error): Promise<Flaky> {
  const client = localClient({ maxAttempts: 4, random: () => 0.5 });
  const strategy = await client.config.retryStrategy();
  if (!(strategy instanceof StoreRetryStrategy)) throw new Error("the client lost the store's strategy");
  const backoff = vi.spyOn(strategy, "delayBeforeRetryMs");
  let calls = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === command && ++calls <= times) throw fault();
      return next(args);
    },
    { step: "deserialize", name: "injectFaults" },
  );
  return {
    client,
    calls: () => calls,
    delays: () => backoff.mock.results.map((r) => r.value as number),
  };
}

/** A client whose first `times` BatchGetItem responses leave every key unprocessed. */
async function sheddingClient(times: number): Promise<Flaky> {
  const flaky = await flakyClient("BatchGetItemCommand", 0, () => new Error("unused"));
  let shed = 0;
  flaky.client.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      if (context.commandName === "BatchGetItemCommand" && shed++ < times) {
        const input = args.input as BatchGetItemCommandInput;
        const output = result.output as BatchGetItemCommandOutput;
        output.Responses = Object.fromEntries(Object.keys(input.RequestItems ?? {}).map((t) => [t, []]));
        output.UnprocessedKeys = input.RequestItems;
      }
      return result;
    },
    { step: "initialize", name: "shedKeys" },
  );
  return flaky;
}

describe("retries of faults DynamoDB Local cannot produce", () => {
  let table: TestTable;
  const clients: DynamoDBClient[] = [];
  beforeAll(async () => {
    table = await freshTable("cairn-store-faults");
  });
  afterEach(() => {
    for (const client of clients.splice(0)) client.destroy();
  });
  afterAll(() => table.drop());

  async function flaky(command: string, times: number, fault: () => Error): Promise<Flaky> {
    const f = await flakyClient(command, times, fault);
    clients.push(f.client);
    return f;
  }

  function storeWith(client: DynamoDBClient, metrics?: RequestCounter): DynamoSessionStore {
    return new DynamoSessionStore({ client, tableName: table.tableName, ...(metrics ? { metrics } : {}) });
  }

  test("a transaction conflict is retried by the SDK with growing backoff and then the write commits", async () => {
    await table.store().createSession(newSession("f-1"));
    const f = await flaky("TransactWriteItemsCommand", 2, faults.transactionConflict);
    const metrics = new RequestCounter();
    const applied = await storeWith(f.client, metrics).applyWrite({
      sessionId: "f-1",
      expected: { status: "PENDING", version: 0 },
      nowMs: T0 + 1,
      tries: "increment",
      history: [laterRecord("f-1")],
    });
    expect(applied.version).toBe(1);
    expect(f.calls()).toBe(3);
    expect(f.delays()).toEqual([12, 25]); // half of 25 ms, then half of 50 ms (random = 0.5)
    // Every try is counted as a request sent, the two the SDK retried as failed.
    expect(metrics).toMatchObject({ operations: 3, failedOperations: 2 });
    expect((await table.store().getSession("f-1"))?.session.tries).toBe(1);
  });

  test.each([
    ["ThrottlingException", faults.throttling],
    ["TransactionConflictException", faults.singleConflict],
  ])("a one-item write is a conditional UpdateItem, retried on %s", async (name, fault) => {
    const id = `f-one-${name}`;
    await table.store().createSession(newSession(id));
    const f = await flaky("UpdateItemCommand", 2, fault);
    const metrics = new RequestCounter();
    await storeWith(f.client, metrics).applyWrite({
      sessionId: id,
      expected: { status: "PENDING", version: 0 },
      nowMs: T0 + 1,
      tries: "increment",
    });
    expect(f.calls()).toBe(3);
    expect(f.delays()).toEqual([12, 25]);
    expect(metrics.byOperation.get("UpdateItem")).toMatchObject({ operations: 3 });
    expect(metrics.byOperation.has("TransactWriteItems")).toBe(false);
    // Its guard still holds: a second write at the old version conflicts.
    const stale = await caught(() =>
      table.store().applyWrite({
        sessionId: id,
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
  ])("%s on reads is retried", async (name, fault) => {
    await table.store().createSession(newSession(`f-read-${name}`));
    const f = await flaky("GetItemCommand", 3, fault);
    const got = await storeWith(f.client).getSession(`f-read-${name}`);
    expect(got?.session.id).toBe(`f-read-${name}`);
    expect(f.calls()).toBe(4);
    expect(f.delays()).toEqual([12, 25, 50]);
  });

  test("throttling that outlasts the attempts surfaces StoreUnavailableError and writes nothing", async () => {
    await table.store().createSession(newSession("f-2"));
    const f = await flaky("TransactWriteItemsCommand", 100, faults.throttling);
    const error = await caught(() =>
      storeWith(f.client).applyWrite({
        sessionId: "f-2",
        expected: { status: "PENDING", version: 0 },
        nowMs: T0 + 1,
        tries: "increment",
        history: [laterRecord("f-2")],
      }),
    );
    expect(error).toMatchObject({
      name: "StoreUnavailableError",
      code: "STORE_UNAVAILABLE",
      operation: "applyWrite",
      attempts: 4,
    });
    const cause = error.cause as ThrottlingException;
    expect(cause.name).toBe("ThrottlingException");
    // The SDK's own record of its tries: one limit, nothing retried on top of it.
    expect(cause.$metadata).toMatchObject({ attempts: 4, totalRetryDelay: 12 + 25 + 50 });
    expect(f.calls()).toBe(4);
    expect(f.delays()).toEqual([12, 25, 50]);
    expect((await table.store().getSession("f-2"))?.session.version).toBe(0);
  });

  test("conflicts during a reservation are retried; capacity is taken once", async () => {
    const plain = table.store();
    await plain.heartbeatAgent({ agentId: "f-agent", capacity: { cpu: 2, memoryMiB: 2048 }, nowMs: T0 });
    await plain.createSession(newSession("f-3", { replicas: 1 }));
    const f = await flaky("TransactWriteItemsCommand", 1, faults.transactionConflict);
    await storeWith(f.client).reserveCapacity({
      sessionId: "f-3",
      expected: { status: "PENDING", version: 0 },
      nowMs: T0 + 1,
      placements: [{ kernelIndex: 0, agentId: "f-agent", resources: { cpu: 1, memoryMiB: 512 } }],
    });
    expect(f.calls()).toBe(2);
    expect((await plain.getAgent("f-agent"))?.free).toEqual({ cpu: 1, memoryMiB: 1536 });
  });

  test("a condition failure is an answer, not a fault: never retried", async () => {
    await table.store().createSession(newSession("f-4"));
    const f = await flaky("UpdateItemCommand", 0, () => new Error("unused"));
    const error = await caught(() =>
      storeWith(f.client).applyWrite({
        sessionId: "f-4",
        expected: { status: "RUNNING", version: 0 },
        nowMs: T0 + 1,
        tries: "increment",
      }),
    );
    expect(error).toMatchObject({ code: "CONFLICT" });
    expect(f.calls()).toBe(1);
    expect(f.delays()).toEqual([]);
  });

  test("a transaction cancelled by a condition and a conflict together is not retried", async () => {
    await table.store().createSession(newSession("f-5"));
    const f = await flaky("TransactWriteItemsCommand", 100, faults.conditionAndConflict);
    const error = await caught(() =>
      storeWith(f.client).applyWrite({
        sessionId: "f-5",
        expected: { status: "PENDING", version: 0 },
        nowMs: T0 + 1,
        tries: "increment",
        history: [laterRecord("f-5")],
      }),
    );
    expect(error.name).not.toBe("StoreUnavailableError");
    expect(f.calls()).toBe(1);
    expect(f.delays()).toEqual([]);
  });

  test("unprocessed keys are asked again under the client's strategy, then surface StoreUnavailableError", async () => {
    await table.store().createSession(newSession("f-6a", { replicas: 1 }));
    await table.store().createSession(newSession("f-6b", { replicas: 1 }));
    const twice = await sheddingClient(2);
    clients.push(twice.client);
    const got = await storeWith(twice.client).getSessions(["f-6a", "f-6b"]);
    expect(got.map((s) => s.session.id).sort()).toEqual(["f-6a", "f-6b"]);
    // Sessions (their items hold their kernels), shed twice then read.
    expect(twice.calls()).toBe(3);
    expect(twice.delays()).toEqual([12, 25]);

    const always = await sheddingClient(100);
    clients.push(always.client);
    const error = await caught(() => storeWith(always.client).getSessions(["f-6a", "f-6b"]));
    expect(error).toMatchObject({ name: "StoreUnavailableError", operation: "getSessions", attempts: 4 });
    expect((error.cause as Error).name).toBe("ProvisionedThroughputExceededException");
    expect(always.calls()).toBe(4);
    expect(always.delays()).toEqual([12, 25, 50]);
  });

  test("what counts as retryable: the error's name and its cancellation reason codes", () => {
    expect(isRetryable(faults.transactionConflict())).toBe(true);
    expect(isRetryable(faults.singleConflict())).toBe(true);
    expect(isRetryable(faults.conditionAndConflict())).toBe(false);
    expect(isConditionFailure(faults.conditionAndConflict())).toBe(true);
    const validationAndConflict = new TransactionCanceledException({
      ...meta,
      message: "TransactionConflict everywhere, says the message",
      CancellationReasons: [{ Code: "ValidationError" }, { Code: "TransactionConflict" }],
    });
    expect(isRetryable(validationAndConflict)).toBe(false);
    const throttled = new TransactionCanceledException({
      ...meta,
      message: "cancelled",
      CancellationReasons: [{ Code: "None" }, { Code: "ThrottlingError" }],
    });
    expect(isRetryable(throttled)).toBe(true);
    // The message is never read.
    const named = Object.assign(new Error("ThrottlingException TransactionConflict"), {
      name: "ValidationException",
    });
    expect(isRetryable(named)).toBe(false);
    const ccf = new ConditionalCheckFailedException({ ...meta, message: "The conditional request failed" });
    expect(isRetryable(ccf)).toBe(false);
    expect(isConditionFailure(ccf)).toBe(true);
  });

  test("the strategy: DynamoDB's classes for the SDK, its attempt limit, the backoff ceiling", async () => {
    const strategy = new StoreRetryStrategy({ maxAttempts: 3, random: () => 0 });
    // The SDK calls a conflict a client error; the strategy retries it up to its limit.
    let token = await strategy.acquireInitialRetryToken("");
    token = await strategy.refreshRetryTokenForRetry(token, info(faults.transactionConflict()));
    token = await strategy.refreshRetryTokenForRetry(token, info(faults.singleConflict()));
    expect(token.getRetryCount()).toBe(2);
    await expect(
      strategy.refreshRetryTokenForRetry(token, info(faults.throttling(), "THROTTLING")),
    ).rejects.toThrow();
    // A condition failure is refused on the first try, whatever the SDK called it.
    const fresh = await strategy.acquireInitialRetryToken("");
    await expect(
      strategy.refreshRetryTokenForRetry(fresh, info(faults.conditionAndConflict(), "TRANSIENT")),
    ).rejects.toThrow();
    expect(strategy.classify(info(faults.conditionAndConflict(), "THROTTLING")).errorType).toBe(
      "CLIENT_ERROR",
    );
    // The SDK's own transient faults (a reset connection) keep its classification.
    const reset = Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
    expect(strategy.classify(info(reset, "TRANSIENT")).errorType).toBe("TRANSIENT");
    expect(strategy.classify(info(faults.transactionConflict())).errorType).toBe("THROTTLING");

    const options = { baseDelayMs: 25, maxDelayMs: 1_000, random: () => 0.999999 };
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((a) => backoffDelayMs(a, options))).toEqual([
      24, 49, 99, 199, 399, 799, 999, 999,
    ]);
    const ceiling = new StoreRetryStrategy({ random: () => 0.999999 });
    expect([1, 2, 6, 7].map((a) => ceiling.delayBeforeRetryMs(a))).toEqual([24, 49, 799, 999]);
  });
});
