/**
 * The embedded runtime's queue (local/queue.ts) behaves as SQS feeding a Lambda: a standard
 * queue runs up to `maxConcurrency` batches at once; a failed message (reported failed, or its
 * invocation failed) is delivered again only once its visibility timeout has passed; a message
 * still running when its timeout passes is delivered again meanwhile; one failed too often is
 * dead-lettered. A FIFO queue delivers nothing more of a group while one of its messages is in
 * flight, other groups meanwhile, and drops a body sent again within five minutes. The fault
 * switch fails a batch as a failed invocation would. And the coordinator's handler reports,
 * from a FIFO queue, every record from the first failed one on.
 */
import { describe, expect, test } from "vitest";
import { batchItemFailures } from "../functions/handlers/coordinator.ts";
import { LocalQueue, type LocalQueueOptions, type SqsRecord } from "../local/queue.ts";
import { parseQueueFaults } from "../local/queue-faults.ts";

interface Delivery {
  readonly body: string;
  readonly group: string | undefined;
  readonly receive: number;
  readonly atMs: number;
}

/** A consumer that records each delivery and how many batches ran at once, failing as `fail` says. */
function recorder(fail: (body: string, receive: number) => boolean = () => false, workMs = 20) {
  const deliveries: Delivery[] = [];
  const batches: string[][] = [];
  let running = 0;
  let mostAtOnce = 0;
  const consumer = async (event: { Records: SqsRecord[] }) => {
    running++;
    mostAtOnce = Math.max(mostAtOnce, running);
    const atMs = Date.now();
    batches.push(event.Records.map((r) => r.body));
    for (const r of event.Records) {
      deliveries.push({
        body: r.body,
        group: r.attributes.MessageGroupId,
        receive: Number(r.attributes.ApproximateReceiveCount),
        atMs,
      });
    }
    await new Promise((resolve) => setTimeout(resolve, workMs));
    running--;
    // As the coordinator's handler answers (from a FIFO queue: the first failure and all after).
    const failed = event.Records.filter((r) => fail(r.body, Number(r.attributes.ApproximateReceiveCount)));
    return { batchItemFailures: batchItemFailures(event.Records, new Set(failed.map((r) => r.messageId))) };
  };
  const of = (body: string) => deliveries.filter((d) => d.body === body);
  return { consumer, deliveries, batches, of, mostAtOnce: () => mostAtOnce };
}

const VISIBILITY_MS = 300;
const options = { batchSize: 2, batchingWindowMs: 0, maxConcurrency: 2, visibilityTimeoutMs: VISIBILITY_MS };

function queueOf(
  r: ReturnType<typeof recorder>,
  extra: Partial<LocalQueueOptions> & { name: string },
): LocalQueue {
  return new LocalQueue({ consumer: r.consumer, ...options, ...extra });
}

describe("the embedded runtime's queue", () => {
  test("a standard queue runs up to maxConcurrency batches at once", async () => {
    const r = recorder();
    const queue = queueOf(r, { name: "standard" });
    for (const body of ["a", "b", "c", "d", "e", "f"]) queue.send(body);
    await queue.idle();
    expect(r.mostAtOnce()).toBe(2);
    expect(r.deliveries.every((d) => d.group === undefined)).toBe(true);
    await queue.close();
  });

  test("given a failed message, then it is delivered again only after its visibility timeout, the others meanwhile", async () => {
    const r = recorder((body, receive) => body === "b" && receive === 1);
    const queue = queueOf(r, { name: "standard-retry", batchSize: 1, maxConcurrency: 1 });
    for (const body of ["a", "b", "c", "d"]) queue.send(body);
    await queue.idle();
    const [first, second] = r.of("b");
    expect(second!.receive).toBe(2);
    // Not a back-off of a few milliseconds: the visibility timeout, counted from the receive.
    expect(second!.atMs - first!.atMs).toBeGreaterThanOrEqual(VISIBILITY_MS);
    // "c" and "d" did not wait for it.
    expect(r.of("d")[0]!.atMs).toBeLessThan(second!.atMs);
    expect(queue.stats()).toMatchObject({ sent: 4, redelivered: 1, deadLettered: 0 });
    await queue.close();
  });

  test("given a batch whose invocation failed, then its every message comes back after the visibility timeout", async () => {
    const r = recorder();
    const consumer = async (event: { Records: SqsRecord[] }) => {
      if (event.Records.some((x) => x.attributes.ApproximateReceiveCount === "1")) throw new Error("crashed");
      return r.consumer(event);
    };
    const errors: unknown[] = [];
    const queue = new LocalQueue({ name: "crash", ...options, consumer, onError: (e) => errors.push(e) });
    const sentAtMs = Date.now();
    queue.send("a");
    queue.send("b");
    await queue.idle();
    // Each was first delivered alone (sent one by one, no batching window), and failed.
    expect(errors).toHaveLength(2);
    expect(r.deliveries.map((d) => [d.body, d.receive])).toEqual([
      ["a", 2],
      ["b", 2],
    ]);
    for (const d of r.deliveries) expect(d.atMs - sentAtMs).toBeGreaterThanOrEqual(VISIBILITY_MS);
    await queue.close();
  });

  test("given a partial batch response naming a message the batch does not hold, or an empty id, then the whole batch failed, as Lambda reads it", async () => {
    for (const bad of [{ itemIdentifier: "not-a-message-of-this-batch" }, { itemIdentifier: "" }, {}]) {
      const receives = new Map<string, number[]>();
      const consumer = (event: { Records: SqsRecord[] }) => {
        for (const r of event.Records) {
          receives.set(r.body, [
            ...(receives.get(r.body) ?? []),
            Number(r.attributes.ApproximateReceiveCount),
          ]);
        }
        // The first delivery's answer is malformed; the second's is complete success.
        const first = event.Records.some((r) => r.attributes.ApproximateReceiveCount === "1");
        return Promise.resolve({ batchItemFailures: first ? [bad as { itemIdentifier: string }] : [] });
      };
      const queue = new LocalQueue({ name: "malformed", ...options, consumer });
      queue.send("a");
      queue.send("b");
      await queue.idle();
      expect(Object.fromEntries(receives)).toEqual({ a: [1, 2], b: [1, 2] });
      await queue.close();
    }
  });

  test("given no answer, or no list of failures, then the batch succeeded: nothing comes back", async () => {
    for (const answer of [undefined, {}, { batchItemFailures: null }]) {
      let batches = 0;
      const consumer = () => {
        batches++;
        return Promise.resolve(answer as unknown as { batchItemFailures: { itemIdentifier: string }[] });
      };
      const queue = new LocalQueue({ name: "empty-answer", ...options, consumer });
      queue.send("a");
      await queue.idle();
      expect(batches).toBe(1);
      expect(queue.stats()).toMatchObject({ redelivered: 0 });
      await queue.close();
    }
  });

  test("given a standard queue in shuffled order, then messages waiting together go in any order, each once", async () => {
    const r = recorder(() => false, 2);
    const queue = queueOf(r, { name: "shuffled", batchSize: 1, maxConcurrency: 1, order: "shuffled" });
    // The first goes at once; the other 19 wait together, and are taken in a random order.
    const bodies = Array.from({ length: 20 }, (_, i) => `m${i}`);
    for (const body of bodies) queue.send(body);
    await queue.idle();
    const delivered = r.deliveries.map((d) => d.body);
    expect([...delivered].sort()).toEqual([...bodies].sort());
    expect(delivered).not.toEqual(bodies);
    await queue.close();
  });

  test("given a retention, then a message failed past it is deleted when it would next be delivered, not dead-lettered", async () => {
    const r = recorder(() => true, 1);
    const queue = queueOf(r, {
      name: "retention",
      visibilityTimeoutMs: 100,
      retentionMs: 400,
      maxReceives: 100,
    });
    queue.send("stale");
    await queue.idle();
    // Delivered again every 100 ms while younger than its retention, then deleted.
    const receives = r.of("stale").map((d) => d.receive);
    expect(receives.length).toBeGreaterThanOrEqual(2);
    expect(receives).toEqual(receives.map((_, i) => i + 1));
    expect(queue.stats()).toMatchObject({ expired: 1, deadLettered: 0 });
    expect(queue.deadLetters()).toEqual([]);
    await queue.close();
  });

  test("given a message still running when its visibility timeout passes, then it is delivered again meanwhile", async () => {
    const r = recorder(() => false, VISIBILITY_MS * 2);
    const queue = queueOf(r, { name: "slow", batchSize: 1 });
    queue.send("slow");
    await queue.idle();
    const [first, second] = r.of("slow");
    expect(second?.receive).toBe(2);
    expect(second!.atMs).toBeGreaterThan(first!.atMs);
    // One message, two deliveries running at once: the second came while the first still ran.
    expect(r.mostAtOnce()).toBe(2);
    await queue.close();
  });

  test("given a message that always fails, then it is dead-lettered after maxReceives, not dropped", async () => {
    const r = recorder((body) => body === "poison");
    const errors: unknown[] = [];
    const queue = queueOf(r, {
      name: "poison",
      visibilityTimeoutMs: 50,
      maxReceives: 3,
      onError: (e) => errors.push(e),
    });
    queue.send("poison");
    queue.send("fine");
    await queue.idle();
    expect(r.of("poison").map((d) => d.receive)).toEqual([1, 2, 3]);
    expect(queue.deadLetters()).toEqual([{ body: "poison", receives: 3 }]);
    expect(queue.stats()).toMatchObject({ deadLettered: 1 });
    expect(String(errors.at(-1))).toContain("dead-lettered after 3 receives");
    await queue.close();
  });

  test("a FIFO queue delivers its groups side by side, each group one batch at a time and in order", async () => {
    const r = recorder();
    const queue = queueOf(r, { name: "fifo", fifoGroup: "default", maxConcurrency: 3 });
    for (const n of [1, 2, 3, 4]) for (const g of ["x", "y", "z"]) queue.send(`${g}${n}`, { groupId: g });
    queue.send("plain");
    await queue.idle();
    expect(r.mostAtOnce()).toBe(3);
    for (const g of ["x", "y", "z"]) {
      expect(r.deliveries.filter((d) => d.group === g).map((d) => d.body)).toEqual(
        [1, 2, 3, 4].map((n) => `${g}${n}`),
      );
    }
    // A message without a group of its own is in the queue's.
    expect(r.of("plain")[0]!.group).toBe("default");
    await queue.close();
  });

  test("given a FIFO message that failed, then its group waits for it until its visibility timeout, while other groups go on", async () => {
    const r = recorder((body, receive) => body === "x2" && receive === 1);
    const queue = queueOf(r, { name: "fifo-retry", fifoGroup: "default", batchSize: 1, maxConcurrency: 2 });
    for (const n of [1, 2, 3]) for (const g of ["x", "y"]) queue.send(`${g}${n}`, { groupId: g });
    await queue.idle();
    const [failedAt, againAt] = r.of("x2").map((d) => d.atMs);
    expect(againAt! - failedAt!).toBeGreaterThanOrEqual(VISIBILITY_MS);
    // Nothing after x2 in its group went before x2 came back; the other group finished meanwhile.
    expect(r.deliveries.filter((d) => d.group === "x").map((d) => d.body)).toEqual(["x1", "x2", "x2", "x3"]);
    expect(r.of("x3")[0]!.atMs).toBeGreaterThanOrEqual(againAt!);
    expect(r.of("y3")[0]!.atMs).toBeLessThan(againAt!);
    await queue.close();
  });

  test("a FIFO queue drops a body sent again within five minutes", async () => {
    const r = recorder();
    const queue = queueOf(r, { name: "fifo-dedup", fifoGroup: "g" });
    queue.send("same");
    queue.send("other");
    queue.send("same");
    await queue.idle();
    expect(r.deliveries.map((d) => d.body)).toEqual(["same", "other"]);
    expect(queue.stats().sent).toBe(2);
    await queue.close();
  });

  test("a standard queue refuses a message group", () => {
    const queue = queueOf(recorder(), { name: "standard-group" });
    expect(() => queue.send("a", { groupId: "g" })).toThrow("MessageGroupId is for FIFO queues only");
  });

  test("given the fault switch, then the batch holding the named message fails once and comes back after its visibility timeout", async () => {
    const r = recorder();
    const queue = queueOf(r, {
      name: "faulty",
      batchSize: 1,
      faults: [{ bodyContains: "target", times: 1 }],
    });
    const sentAtMs = Date.now();
    queue.send("other");
    queue.send("the target");
    await queue.idle();
    expect(r.of("the target")).toHaveLength(1);
    expect(r.of("the target")[0]!.receive).toBe(2);
    expect(r.of("the target")[0]!.atMs - sentAtMs).toBeGreaterThanOrEqual(VISIBILITY_MS);
    expect(r.of("other")[0]!.receive).toBe(1);
    expect(queue.stats()).toMatchObject({ faulted: 1, deadLettered: 0 });
    await queue.close();
  });

  test("a fault switch naming no queue, or with a bad field, is refused with the field and the reason", () => {
    expect(() => parseQueueFaults({ Nope: [] }, "CAIRN_QUEUE_FAULTS")).toThrow(
      "CAIRN_QUEUE_FAULTS.Nope: is not a queue",
    );
    expect(() => parseQueueFaults({ PlacementQueue: [{ times: 0 }] }, "CAIRN_QUEUE_FAULTS")).toThrow(
      "CAIRN_QUEUE_FAULTS.PlacementQueue[0].times: must be an integer of 1 or more, got 0",
    );
    expect(() => parseQueueFaults({ PlacementQueue: [{ when: "x" }] }, "CAIRN_QUEUE_FAULTS")).toThrow(
      "CAIRN_QUEUE_FAULTS.PlacementQueue[0].when: is not a fault field",
    );
    expect(parseQueueFaults({ PlacementQueue: [{ bodyContains: "s-1" }] }, "f")).toEqual({
      PlacementQueue: [{ bodyContains: "s-1" }],
    });
  });
});

describe("the coordinator's batch item failures", () => {
  const records = (group?: string) =>
    ["m1", "m2", "m3", "m4"].map((messageId) => ({
      messageId,
      body: "{}",
      ...(group !== undefined ? { attributes: { MessageGroupId: group } } : {}),
    }));

  test("from a standard queue, only the records that failed", () => {
    expect(batchItemFailures(records(), new Set(["m2", "m4"]))).toEqual([
      { itemIdentifier: "m2" },
      { itemIdentifier: "m4" },
    ]);
    expect(batchItemFailures(records(), new Set())).toEqual([]);
  });

  test("from a FIFO queue, every record from the first failed one on, so the group's order holds", () => {
    expect(batchItemFailures(records("g"), new Set(["m2"]))).toEqual([
      { itemIdentifier: "m2" },
      { itemIdentifier: "m3" },
      { itemIdentifier: "m4" },
    ]);
    expect(batchItemFailures(records("g"), new Set())).toEqual([]);
  });
});
