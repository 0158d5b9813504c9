/**
 * The agent's event outbox (agent/event-outbox.ts) against the embedded EventBridge endpoint:
 * events put while a request is out go together in the next one, in order, within PutEvents'
 * limits; an entry the bus refuses is sent again, then given up and said so; nothing is dropped
 * silently. Server faults, which the embedded bus cannot be made to raise on demand, are
 * scripted around the real client.
 */
import type { PutEventsCommand } from "@aws-sdk/client-eventbridge";
import { EventBridgeClient, type PutEventsRequestEntry } from "@aws-sdk/client-eventbridge";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { EventOutbox } from "../agent/event-outbox.ts";
import { MAX_REQUEST_BYTES } from "../functions/topology/put-events.ts";
import {
  LocalEventBus,
  startEventBridgeServer,
  type EventBridgeEvent,
  type EventBridgeServer,
} from "../local/eventbridge/index.ts";

let bus: LocalEventBus;
let server: EventBridgeServer;
let client: EventBridgeClient;
const delivered: EventBridgeEvent[] = [];

beforeAll(async () => {
  bus = new LocalEventBus({ name: "default" });
  bus.onEvent((event) => delivered.push(event));
  server = await startEventBridgeServer(bus);
  client = new EventBridgeClient({
    endpoint: server.endpoint,
    region: "local",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
});

afterAll(async () => {
  client.destroy();
  await server.close();
  bus.close();
});

const entry = (n: number, detail: string = JSON.stringify({ n })): PutEventsRequestEntry => ({
  Source: "cairn.agent",
  DetailType: "Outbox Test",
  Detail: detail,
  EventBusName: "default",
});

/** The real client, with every request's entries recorded (and, if scripted, a fault first). */
function recording(faults: (Error | undefined)[] = []) {
  const requests: PutEventsRequestEntry[][] = [];
  const events = {
    send: async (command: PutEventsCommand) => {
      requests.push([...(command.input.Entries ?? [])]);
      const fault = faults.shift();
      if (fault) throw fault;
      return client.send(command);
    },
  } as Pick<EventBridgeClient, "send">;
  return { events, requests };
}

const numbers = (request: readonly PutEventsRequestEntry[]) =>
  request.map((e) => (JSON.parse(e.Detail ?? "{}") as { n?: number }).n);

function lines() {
  const log: string[] = [];
  return { log, write: (line: string) => log.push(line) };
}

describe("the agent's event outbox", () => {
  test("events put together go in one request; those put while it is out go in the next, in order", async () => {
    delivered.length = 0;
    const { events, requests } = recording();
    const outbox = new EventOutbox({ events, log: () => {}, lingerMs: 10 });
    const first = [1, 2, 3].map((n) => outbox.send(entry(n)));
    // Put once the first request has left (the linger is over), before it is answered.
    await new Promise((r) => setTimeout(r, 15));
    const second = [4, 5].map((n) => outbox.send(entry(n)));
    expect(await Promise.all([...first, ...second])).toEqual([true, true, true, true, true]);
    expect(requests.map(numbers)).toEqual([
      [1, 2, 3],
      [4, 5],
    ]);
    await bus.idle();
    expect(delivered.map((e) => (e.detail as { n: number }).n)).toEqual([1, 2, 3, 4, 5]);
    expect(outbox.requests).toBe(2);
    expect(outbox.pending).toBe(0);
  });

  test("a backlog goes in requests of at most 10 entries and under 256 KiB", async () => {
    const { events, requests } = recording();
    const outbox = new EventOutbox({ events, log: () => {}, lingerMs: 0 });
    const big = "x".repeat(100 * 1024);
    const sent = await Promise.all([
      ...Array.from({ length: 12 }, (_, i) => outbox.send(entry(i))),
      ...[12, 13, 14].map((n) => outbox.send(entry(n, JSON.stringify({ n, big })))),
    ]);
    expect(sent.every(Boolean)).toBe(true);
    expect(requests.map(numbers)).toEqual([[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [10, 11, 12, 13], [14]]);
  });

  test("an entry the bus refuses is sent again, then given up with the bus's reason; its neighbours go through", async () => {
    const { events, requests } = recording();
    const { log, write } = lines();
    const outbox = new EventOutbox({ events, log: write, lingerMs: 0, attempts: 3, backoffMs: () => 1 });
    const sent = await Promise.all([
      outbox.send(entry(1)),
      outbox.send(entry(2, "not json")),
      outbox.send(entry(3)),
    ]);
    expect(sent).toEqual([true, false, true]);
    // The refused entry went out three times in all, the others once.
    expect(requests.map((r) => r.length)).toEqual([3, 1, 1]);
    expect(log).toHaveLength(3);
    expect(log[0]).toMatch(/^Outbox Test rejected: .*Detail/);
    expect(outbox.pending).toBe(0);
  });

  test("a server fault sends the whole request again after a pause; a client fault gives it up at once", async () => {
    const serverFault = Object.assign(new Error("InternalException"), { $fault: "server" });
    const { events, requests } = recording([serverFault, serverFault]);
    const pauses: number[] = [];
    const outbox = new EventOutbox({
      events,
      log: () => {},
      lingerMs: 0,
      backoffMs: (attempt) => (pauses.push(attempt), 1),
    });
    expect(await Promise.all([outbox.send(entry(1)), outbox.send(entry(2))])).toEqual([true, true]);
    expect(requests.map(numbers)).toEqual([
      [1, 2],
      [1, 2],
      [1, 2],
    ]);
    expect(pauses).toEqual([1, 2]);

    const clientFault = Object.assign(new Error("AccessDeniedException: not allowed"), { $fault: "client" });
    const denied = recording([clientFault]);
    const { log, write } = lines();
    const refused = new EventOutbox({ events: denied.events, log: write, lingerMs: 0 });
    expect(await refused.send(entry(3))).toBe(false);
    expect(denied.requests).toHaveLength(1);
    expect(log).toEqual(["could not send Outbox Test: Error: AccessDeniedException: not allowed"]);
  });

  test("a server fault on every attempt gives the entries up after the last one, and later entries still go", async () => {
    const fault = Object.assign(new Error("ServiceUnavailable"), { $fault: "server" });
    const { events, requests } = recording([fault, fault]);
    const { log, write } = lines();
    const outbox = new EventOutbox({ events, log: write, lingerMs: 0, attempts: 2, backoffMs: () => 1 });
    expect(await outbox.send(entry(1))).toBe(false);
    expect(log).toEqual(["could not send Outbox Test: Error: ServiceUnavailable"]);
    expect(await outbox.send(entry(2))).toBe(true);
    expect(requests.map(numbers)).toEqual([[1], [1], [2]]);
  });

  test("a request left unanswered is abandoned after its timeout and sent again; what queued behind it follows", async () => {
    const requests: PutEventsRequestEntry[][] = [];
    const events = {
      send: (command: PutEventsCommand, options?: { abortSignal?: AbortSignal }) => {
        requests.push([...(command.input.Entries ?? [])]);
        // The first request hangs (a dead connection): only its abort ends it.
        if (requests.length === 1) {
          return new Promise((_, reject) =>
            options?.abortSignal?.addEventListener("abort", () =>
              reject(Object.assign(new Error("Request aborted"), { name: "AbortError" })),
            ),
          );
        }
        return client.send(command);
      },
    } as Pick<EventBridgeClient, "send">;
    const outbox = new EventOutbox({
      events,
      log: () => {},
      lingerMs: 0,
      requestTimeoutMs: 50,
      backoffMs: () => 1,
    });
    const first = outbox.send(entry(1));
    await new Promise((r) => setTimeout(r, 10));
    const second = outbox.send(entry(2));
    expect(await Promise.all([first, second])).toEqual([true, true]);
    expect(requests.map(numbers)).toEqual([[1], [1, 2]]);
  });

  test("an entry no request can carry is refused at once, with its size", async () => {
    const { events, requests } = recording();
    const { log, write } = lines();
    const outbox = new EventOutbox({ events, log: write, lingerMs: 0 });
    expect(await outbox.send(entry(1, JSON.stringify({ big: "y".repeat(MAX_REQUEST_BYTES) })))).toBe(false);
    expect(requests).toEqual([]);
    expect(log[0]).toMatch(
      /^could not send Outbox Test: it is \d+ bytes; a PutEvents request carries less than 262144$/,
    );
  });

  describe("coalescing (Coalesce)", () => {
    /** Entry n under `key`: merged into a queued one, it becomes the sum of both numbers. */
    const summing = (key: string, n: number) => ({
      key,
      merge: (queued: PutEventsRequestEntry) =>
        entry((JSON.parse(queued.Detail ?? "{}") as { n: number }).n + n),
    });

    test("an entry merges into the queued one of its key, in that one's place; both learn it was sent", async () => {
      const { events, requests } = recording();
      const outbox = new EventOutbox({ events, log: () => {}, lingerMs: 10 });
      const sent = [
        outbox.send(entry(1), summing("a", 1)),
        outbox.send(entry(100)),
        outbox.send(entry(2), summing("a", 2)),
        outbox.send(entry(10), summing("b", 10)),
      ];
      expect(await Promise.all(sent)).toEqual([true, true, true, true]);
      expect(requests.map(numbers)).toEqual([[3, 100, 10]]);
      expect(outbox.merged).toBe(1);
    });

    test("never into an entry already sent, nor when the merge declines", async () => {
      const { events, requests } = recording();
      const outbox = new EventOutbox({ events, log: () => {}, lingerMs: 5 });
      const first = outbox.send(entry(1), summing("a", 1));
      // Put once the first request has left, before it is answered.
      await new Promise((r) => setTimeout(r, 10));
      const second = outbox.send(entry(2), summing("a", 2));
      const declined = outbox.send(entry(5), { key: "a", merge: () => undefined });
      expect(await Promise.all([first, second, declined])).toEqual([true, true, true]);
      expect(requests.map(numbers)).toEqual([[1], [2, 5]]);
      expect(outbox.merged).toBe(0);
    });
  });
});
