/**
 * The event publisher against the embedded EventBridge, through the real SDK:
 * PutEvents takes at most 10 entries and less than 256 KiB of them per request, counted as AWS
 * counts them (UTF-8 bytes of Source, DetailType, Detail). The embedded endpoint rejects an
 * oversized request as AWS does, so a publisher that only groups by 10 fails here as it would
 * there — forever, since the same request is rebuilt on every retry.
 */
import { EventBridgeClient, PutEventsCommand } from "@aws-sdk/client-eventbridge";
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "vitest";
import {
  entrySizeBytes,
  EventPublisher,
  MAX_REQUEST_BYTES,
  packRequests,
  PublishError,
  type OutboundEntry,
} from "../functions/adapters/eventbridge/publisher.ts";
import {
  LocalEventBus,
  startEventBridgeServer,
  type EventBridgeEvent,
  type EventBridgeServer,
} from "../local/eventbridge/index.ts";

const BUS = "cairn-publisher";
const SOURCE = "cairn.control-plane";
const DETAIL_TYPE = "Session Status Changed";

let server: EventBridgeServer;
let client: EventBridgeClient;
let requests = 0;
const bus = new LocalEventBus({ name: BUS, region: "local" });
const delivered: EventBridgeEvent[] = [];

beforeAll(async () => {
  bus.putRule({
    name: "everything",
    eventPattern: { source: [SOURCE] },
    targets: [{ id: "rec", invoke: (e) => Promise.resolve(void delivered.push(e)) }],
  });
  server = await startEventBridgeServer(bus);
  client = new EventBridgeClient({
    endpoint: server.endpoint,
    region: "local",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
    maxAttempts: 1,
  });
  // Counts the PutEvents requests that reach the endpoint.
  client.middlewareStack.add(
    (next) => (args) => {
      requests++;
      return next(args);
    },
    { step: "finalizeRequest", name: "countRequests" },
  );
});

afterAll(async () => {
  client.destroy();
  await server.close();
  bus.close();
});

beforeEach(() => {
  delivered.length = 0;
  requests = 0;
});

/** An entry whose Detail carries `text` (so its size is about the text's UTF-8 length). */
function entry(n: number, text: string): OutboundEntry {
  return { Source: SOURCE, DetailType: DETAIL_TYPE, Detail: JSON.stringify({ n, text }), EventBusName: BUS };
}

const totalBytes = (entries: readonly OutboundEntry[]) =>
  entries.reduce((sum, e) => sum + entrySizeBytes(e), 0);

describe("the embedded EventBridge enforces the request limit as AWS does", () => {
  test("10 entries of 30 KB in one request: the whole call fails", async () => {
    const entries = Array.from({ length: 10 }, (_, n) => entry(n, "x".repeat(30_000)));
    expect(totalBytes(entries)).toBeGreaterThan(MAX_REQUEST_BYTES);
    await expect(client.send(new PutEventsCommand({ Entries: entries }))).rejects.toMatchObject({
      name: "ValidationException",
      message: "Total size of the entries in the request is over the limit.",
    });
  });
});

describe("the publisher splits by bytes as well as by 10", () => {
  test("given 10 entries of 30 KB, when published, then all arrive, in two requests", async () => {
    const entries = Array.from({ length: 10 }, (_, n) => entry(n, "x".repeat(30_000)));
    const publisher = new EventPublisher(client);
    await publisher.publish(entries);
    await bus.idle();
    expect(delivered.map((e) => (e.detail as { n: number }).n)).toEqual([...Array(10).keys()]);
    expect(publisher.published).toBe(10);
    expect(requests).toBe(2);
  });

  test("given a cycle of tasks with 200 KB commands, when published, then each goes alone and all arrive", async () => {
    // What 64 independent tasks with a 200 KB command looked like: two never fit one request.
    const entries = Array.from({ length: 12 }, (_, n) => entry(n, "c".repeat(200_000)));
    const publisher = new EventPublisher(client);
    await publisher.publish(entries);
    await bus.idle();
    expect(delivered).toHaveLength(12);
    expect(requests).toBe(12);
  });

  test("bytes, not characters: multibyte details that are small in characters are still split", async () => {
    // 9,000 '€' are 9,000 characters but 27,000 UTF-8 bytes: 10 of them are 270 KB.
    const entries = Array.from({ length: 10 }, (_, n) => entry(n, "€".repeat(9_000)));
    expect(entries.reduce((sum, e) => sum + e.Detail.length, 0)).toBeLessThan(MAX_REQUEST_BYTES / 2);
    expect(totalBytes(entries)).toBeGreaterThan(MAX_REQUEST_BYTES);
    await new EventPublisher(client).publish(entries);
    await bus.idle();
    expect(delivered).toHaveLength(10);
    expect(requests).toBe(2);
  });

  test("small entries still go 10 to a request", async () => {
    const entries = Array.from({ length: 25 }, (_, n) => entry(n, "ok"));
    await new EventPublisher(client).publish(entries);
    await bus.idle();
    expect(delivered).toHaveLength(25);
    expect(requests).toBe(3);
  });

  test("requests are as full as the limit allows and stay under it", () => {
    const sizes = [100_000, 100_000, 62_000, 1, 200_000, 62_143, 10];
    const entries = sizes.map((size, n) => entry(n, "y".repeat(size)));
    const packed = packRequests(entries);
    for (const request of packed)
      expect(totalBytes(request as OutboundEntry[])).toBeLessThan(MAX_REQUEST_BYTES);
    expect(packed.flat()).toEqual(entries);
    expect(packed.map((r) => r.length)).toEqual([2, 2, 1, 2]);
  });

  test("an entry no request can carry is refused before anything is sent, and not as retryable", async () => {
    const entries = [entry(0, "small"), entry(1, "z".repeat(MAX_REQUEST_BYTES))];
    const error = await new EventPublisher(client).publish(entries).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PublishError);
    expect(error).toMatchObject({ code: "PUBLISH", retryable: false });
    expect((error as Error).message).toMatch(
      new RegExp(
        `^a ${DETAIL_TYPE} event is \\d+ bytes; the entries of a PutEvents request must total less than ${MAX_REQUEST_BYTES}$`,
      ),
    );
    expect(requests).toBe(0);
  });
});
