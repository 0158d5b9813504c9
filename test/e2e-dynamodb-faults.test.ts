/**
 * DynamoDB under load, end to end: DynamoDB Local never throttles, never cancels a transaction
 * on a conflict and always answers every key of a BatchGetItem, so the embedded runtime's fault
 * switch (local/dynamodb-faults.ts) answers chosen requests of the functions as DynamoDB would:
 * `ProvisionedThroughputExceededException`, `TransactionCanceledException` with a
 * `TransactionConflict` reason, `UnprocessedKeys`. Sessions run through them and end as they
 * would have; throttling that outlasts the store's retries fails the work, which is tried again.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { sessionResult } from "../functions/core/sessions.ts";
import { QueueName } from "../functions/topology/index.ts";
import { DynamoDbFaultConfigError, parseDynamoDbFaults } from "../local/dynamodb-faults.ts";
import { assertLifecycleInvariants, startTestRuntime, type TestRuntime } from "./support/runtime.ts";

describe("the DynamoDB fault switch", () => {
  test("rules are checked field by field, naming the field and the reason", () => {
    expect(
      parseDynamoDbFaults({
        rules: [
          { fault: "unprocessed-keys", operation: "BatchGetItem", count: 2 },
          { fault: "index-lag", operation: "Query", lagMs: 500 },
        ],
      }).rules,
    ).toHaveLength(2);
    for (const [value, message] of [
      [
        { rules: [{ fault: "slow" }] },
        'dynamoDbFaults.rules[0].fault: must be one of throttle, transaction-conflict, unprocessed-keys, lost-response, index-lag, got "slow"',
      ],
      [
        { rules: [{ fault: "index-lag" }] },
        "dynamoDbFaults.rules[0].lagMs: index-lag needs an integer number of milliseconds from 1 to 60000, got undefined",
      ],
      [
        { rules: [{ fault: "index-lag", lagMs: 0.5 }] },
        "dynamoDbFaults.rules[0].lagMs: index-lag needs an integer number of milliseconds from 1 to 60000, got 0.5",
      ],
      [
        { rules: [{ fault: "index-lag", lagMs: 500, count: 2 }] },
        "dynamoDbFaults.rules[0].count: index-lag holds while its rule is in force; it takes lagMs, not count or skip",
      ],
      [
        { rules: [{ fault: "index-lag", lagMs: 500, operation: "GetItem" }] },
        "dynamoDbFaults.rules[0].operation: index-lag cannot answer GetItem",
      ],
      [
        { rules: [{ fault: "throttle", lagMs: 500 }] },
        "dynamoDbFaults.rules[0].lagMs: only index-lag takes lagMs, not throttle",
      ],
      [
        { rules: [{ fault: "transaction-conflict", operation: "UpdateItem" }] },
        "dynamoDbFaults.rules[0].operation: transaction-conflict cannot answer UpdateItem",
      ],
      [
        { rules: [{ fault: "throttle", count: 0 }] },
        "dynamoDbFaults.rules[0].count: must be an integer ≥ 1, got 0",
      ],
      [{ rules: [{ fault: "throttle", every: 2 }] }, "dynamoDbFaults.rules[0].every: is not a known field"],
      [{ rule: [] }, "dynamoDbFaults.rule: is not a known field"],
    ] as const) {
      expect(() => parseDynamoDbFaults(value)).toThrow(DynamoDbFaultConfigError);
      expect(() => parseDynamoDbFaults(value)).toThrow(message);
    }
  });
});

describe("sessions against a DynamoDB under load (end to end)", () => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startTestRuntime({
      agents: 1,
      dynamoDbFaults: { rules: [] },
      // A batch that fails comes back in seconds, not the stack's 90 s.
      queueVisibilityTimeoutMs: 3_000,
    });
  }, 120_000);
  afterAll(async () => {
    await rt?.stop();
  });

  const spec = { name: "under-load", command: ["/bin/sh", "-c", "echo ran"] };

  test("throttled writes, conflicting transactions and shed keys are ridden out: every session ends succeeded", async () => {
    const faults = rt.runtime.dynamoDbFaults!;
    faults.set({
      rules: [
        { fault: "throttle", operation: "TransactWriteItems", count: 3 },
        { fault: "throttle", operation: "UpdateItem", count: 3 },
        { fault: "transaction-conflict", count: 3 },
        { fault: "unprocessed-keys", count: 3 },
      ],
    });
    const run = Date.now().toString(36);
    const ids = [0, 1, 2, 3].map((i) => `ddb-load-${run}-${i}`);
    await Promise.all(ids.map((sessionId) => rt.submit({ sessionId, spec })));
    const ended = await Promise.all(ids.map((id) => rt.waitForEnd(id, 120_000)));
    for (const s of ended) {
      expect(s.session.status, s.session.id).toBe("TERMINATED");
      expect(sessionResult(s), s.session.id).toBe("succeeded");
    }
    const fired = faults.fired().map((f) => `${f.fault} ${f.operation}`);
    faults.set({ rules: [] });
    expect(fired.filter((f) => f === "throttle TransactWriteItems")).toHaveLength(3);
    expect(fired.filter((f) => f === "throttle UpdateItem")).toHaveLength(3);
    expect(fired.filter((f) => f === "transaction-conflict TransactWriteItems")).toHaveLength(3);
    expect(fired.filter((f) => f === "unprocessed-keys BatchGetItem").length).toBeGreaterThan(0);
    await assertLifecycleInvariants(rt);
  }, 180_000);

  test("writes whose answer is lost after they were done: the SDK sends them again, they meet their own write, and every session ends succeeded", async () => {
    const faults = rt.runtime.dynamoDbFaults!;
    const before = faults.fired().length;
    faults.set({
      rules: [
        { fault: "lost-response", operation: "UpdateItem", count: 6 },
        { fault: "lost-response", operation: "PutItem", count: 3 },
        { fault: "lost-response", operation: "DeleteItem", count: 3 },
        { fault: "lost-response", operation: "TransactWriteItems", count: 6 },
      ],
    });
    const run = Date.now().toString(36);
    const ids = [0, 1, 2].map((i) => `ddb-lost-${run}-${i}`);
    await Promise.all(ids.map((sessionId) => rt.submit({ sessionId, spec })));
    const ended = await Promise.all(ids.map((id) => rt.waitForEnd(id, 120_000)));
    for (const s of ended) {
      expect(s.session.status, s.session.id).toBe("TERMINATED");
      expect(sessionResult(s), s.session.id).toBe("succeeded");
    }
    const fired = faults
      .fired()
      .slice(before)
      .map((f) => `${f.fault} ${f.operation}`);
    faults.set({ rules: [] });
    expect(fired.filter((f) => f === "lost-response UpdateItem")).toHaveLength(6);
    expect(fired.filter((f) => f === "lost-response TransactWriteItems")).toHaveLength(6);
    await assertLifecycleInvariants(rt);
  }, 180_000);

  test("throttling that outlasts the store's retries fails the work, which is tried again: the session still ends succeeded", async () => {
    const faults = rt.runtime.dynamoDbFaults!;
    const before = faults.fired().length;
    const intake = rt.runtime.queues.get(QueueName.CoordinatorQueue)!;
    const redelivered = intake.stats().redelivered;
    // More throttled writes in a row than the store's client tries one request (6).
    faults.set({ rules: [{ fault: "throttle", operation: "TransactWriteItems", count: 8 }] });
    const sessionId = `ddb-outlast-${Date.now().toString(36)}`;
    await rt.submit({ sessionId, spec });
    const ended = await rt.waitForEnd(sessionId, 120_000);
    expect(ended.session.status).toBe("TERMINATED");
    expect(sessionResult(ended)).toBe("succeeded");
    expect(faults.fired().length - before).toBe(8);
    // The submission's write gave up after its tries: its message failed and came back.
    expect(intake.stats().redelivered).toBeGreaterThan(redelivered);
    faults.set({ rules: [] });
    await assertLifecycleInvariants(rt);
  }, 180_000);
});
