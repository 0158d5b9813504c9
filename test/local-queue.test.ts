/**
 * The embedded runtime's queue (local/queue.ts) behaves as SQS feeding a Lambda: a standard queue
 * runs up to `maxConcurrency` batches at once; a FIFO queue of one message group runs one batch
 * at a time, in order, holds the group while a failed message waits to be redelivered, and drops
 * a body sent again within five minutes (content-based deduplication). And the coordinator's
 * handler reports, from a FIFO queue, every record from the first failed one on.
 */
import { describe, expect, test } from "vitest";
import { batchItemFailures } from "../functions/handlers/coordinator.ts";
import { LocalQueue, type SqsRecord } from "../local/queue.ts";

/** A consumer that records each batch and how many ran at once, failing the bodies in `fail`. */
function recorder(fail: (body: string, receive: number) => boolean = () => false) {
  const batches: string[][] = [];
  const groups: (string | undefined)[] = [];
  let running = 0;
  let mostAtOnce = 0;
  const consumer = async (event: { Records: SqsRecord[] }) => {
    running++;
    mostAtOnce = Math.max(mostAtOnce, running);
    batches.push(event.Records.map((r) => r.body));
    groups.push(...event.Records.map((r) => r.attributes.MessageGroupId));
    await new Promise((resolve) => setTimeout(resolve, 20));
    running--;
    // As the coordinator's handler answers (from a FIFO queue: the first failure and all after).
    const failed = event.Records.filter((r) => fail(r.body, Number(r.attributes.ApproximateReceiveCount)));
    return { batchItemFailures: batchItemFailures(event.Records, new Set(failed.map((r) => r.messageId))) };
  };
  return { consumer, batches, groups, mostAtOnce: () => mostAtOnce };
}

const options = { batchSize: 2, batchingWindowMs: 0, maxConcurrency: 2, redeliveryBaseMs: 20 };

describe("the embedded runtime's queue", () => {
  test("a standard queue runs up to maxConcurrency batches at once", async () => {
    const r = recorder();
    const queue = new LocalQueue({ name: "standard", consumer: r.consumer, ...options });
    for (const body of ["a", "b", "c", "d", "e", "f"]) queue.send(body);
    await queue.idle();
    expect(r.mostAtOnce()).toBe(2);
    expect(r.groups.every((g) => g === undefined)).toBe(true);
    await queue.close();
  });

  test("a FIFO queue of one group runs one batch at a time, in order, its records naming the group", async () => {
    const r = recorder();
    const queue = new LocalQueue({ name: "fifo", consumer: r.consumer, ...options, fifoGroup: "g" });
    for (const body of ["a", "b", "c", "d", "e", "f"]) queue.send(body);
    await queue.idle();
    expect(r.mostAtOnce()).toBe(1);
    expect(r.batches.flat()).toEqual(["a", "b", "c", "d", "e", "f"]);
    expect(new Set(r.groups)).toEqual(new Set(["g"]));
    await queue.close();
  });

  test("a FIFO message that failed is delivered again before anything behind it; the group waits", async () => {
    const r = recorder((body, receive) => body === "b" && receive === 1);
    const queue = new LocalQueue({ name: "fifo-retry", consumer: r.consumer, ...options, fifoGroup: "g" });
    for (const body of ["a", "b", "c", "d"]) queue.send(body);
    await queue.idle();
    // "a" goes at once; "b" fails, and "c" after it in its batch goes back with it.
    expect(r.batches).toEqual([["a"], ["b", "c"], ["b", "c"], ["d"]]);
    expect(queue.stats()).toMatchObject({ sent: 4, redelivered: 2, deadLettered: 0 });
    await queue.close();
  });

  test("a FIFO queue drops a body sent again within five minutes", async () => {
    const r = recorder();
    const queue = new LocalQueue({ name: "fifo-dedup", consumer: r.consumer, ...options, fifoGroup: "g" });
    queue.send("same");
    queue.send("other");
    queue.send("same");
    await queue.idle();
    expect(r.batches.flat()).toEqual(["same", "other"]);
    expect(queue.stats().sent).toBe(2);
    await queue.close();
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
