/**
 * The embedded CloudWatch Logs' visibility lag (local/logs/faults.ts): with `visibilityDelayMs`,
 * events PutLogEvents accepted are not readable by GetLogEvents or FilterLogEvents until the lag
 * has passed, as CloudWatch Logs' eventual consistency allows; a forward token at the readable
 * end comes back unchanged (AWS: "If you have reached the end of the stream, it returns the same
 * token you passed in") and moves on once the events show. The store's clock is the test's.
 */
import { describe, expect, test } from "vitest";
import { LogsStore, parseLogsFaults, logsFaultsFromEnv } from "../local/logs/index.ts";

const T0 = Date.UTC(2026, 10, 21, 12, 0, 0);
const GROUP = "/cairn/kernels";
const DELAY_MS = 1_500;

function lagged(): { store: LogsStore; advance: (ms: number) => void } {
  let now = T0;
  const store = new LogsStore({ clock: () => now, visibilityDelayMs: DELAY_MS });
  store.createLogGroup(GROUP);
  store.createLogStream(GROUP, "s/0/run-0");
  store.createLogStream(GROUP, "s/1/run-0");
  return { store, advance: (ms) => (now += ms) };
}

const forward = (store: LogsStore, streamName: string, nextToken?: string) =>
  store.getLogEvents({
    groupName: GROUP,
    streamName,
    limit: 10_000,
    startFromHead: true,
    ...(nextToken === undefined ? {} : { nextToken }),
  });

describe("visibility delay", () => {
  test("a put event is unreadable before the delay and readable after; the forward token stays put until then", () => {
    const { store, advance } = lagged();
    store.putLogEvents(GROUP, "s/0/run-0", [{ timestamp: T0, message: "first" }]);
    const early = forward(store, "s/0/run-0");
    expect(early.events).toEqual([]);
    // Nothing readable yet: the same token again, however often it is asked.
    const again = forward(store, "s/0/run-0", early.nextForwardToken);
    expect(again.events).toEqual([]);
    expect(again.nextForwardToken).toBe(early.nextForwardToken);

    advance(DELAY_MS - 1);
    expect(forward(store, "s/0/run-0", early.nextForwardToken).events).toEqual([]);
    advance(1);
    const shown = forward(store, "s/0/run-0", early.nextForwardToken);
    expect(shown.events.map((e) => e.message)).toEqual(["first"]);
    expect(shown.events[0]!.ingestionTime).toBe(T0);
    expect(shown.nextForwardToken).not.toBe(early.nextForwardToken);

    // A later put: invisible at first (same token back), then read from where the token was.
    store.putLogEvents(GROUP, "s/0/run-0", [{ timestamp: T0 + DELAY_MS, message: "second" }]);
    const waiting = forward(store, "s/0/run-0", shown.nextForwardToken);
    expect(waiting.events).toEqual([]);
    expect(waiting.nextForwardToken).toBe(shown.nextForwardToken);
    advance(DELAY_MS);
    const next = forward(store, "s/0/run-0", waiting.nextForwardToken);
    expect(next.events.map((e) => e.message)).toEqual(["second"]);
    // Stored all along: only reads lag.
    expect(store.eventsOf(GROUP, "s/0/run-0").map((e) => e.message)).toEqual(["first", "second"]);
  });

  test("a stream reads up to its first unreadable event: the token never passes an event not yet shown", () => {
    const { store, advance } = lagged();
    store.putLogEvents(GROUP, "s/0/run-0", [{ timestamp: T0 + 100, message: "late-stamped" }]);
    advance(DELAY_MS);
    // Put later but stamped earlier: it sorts first, so nothing after it is shown until it is.
    store.putLogEvents(GROUP, "s/0/run-0", [{ timestamp: T0, message: "early-stamped" }]);
    const page = forward(store, "s/0/run-0");
    expect(page.events).toEqual([]);
    advance(DELAY_MS);
    const all = forward(store, "s/0/run-0", page.nextForwardToken);
    expect(all.events.map((e) => e.message)).toEqual(["early-stamped", "late-stamped"]);
  });

  test("backward from the tail and FilterLogEvents see only readable events", () => {
    const { store, advance } = lagged();
    store.putLogEvents(GROUP, "s/0/run-0", [{ timestamp: T0, message: "a0" }]);
    store.putLogEvents(GROUP, "s/1/run-0", [{ timestamp: T0 + 1, message: "b0" }]);
    advance(DELAY_MS);
    store.putLogEvents(GROUP, "s/0/run-0", [{ timestamp: T0 + 2, message: "a1" }]);
    const tail = store.getLogEvents({
      groupName: GROUP,
      streamName: "s/0/run-0",
      limit: 10,
      startFromHead: false,
    });
    expect(tail.events.map((e) => e.message)).toEqual(["a0"]);
    const filtered = store.filterLogEvents({ groupName: GROUP, streamPrefix: "s/", limit: 10_000 });
    expect(filtered.events.map((e) => e.message)).toEqual(["a0", "b0"]);
    expect(filtered.nextToken).toBeUndefined();
    advance(DELAY_MS);
    expect(
      store
        .filterLogEvents({ groupName: GROUP, streamPrefix: "s/", limit: 10_000 })
        .events.map((e) => e.message),
    ).toEqual(["a0", "b0", "a1"]);
  });

  test("without the switch a put event is readable at once", () => {
    const store = new LogsStore({ clock: () => T0 });
    store.createLogGroup(GROUP);
    store.createLogStream(GROUP, "s/0/run-0");
    store.putLogEvents(GROUP, "s/0/run-0", [{ timestamp: T0, message: "now" }]);
    expect(forward(store, "s/0/run-0").events.map((e) => e.message)).toEqual(["now"]);
  });
});

describe("CAIRN_LOGS_FAULTS", () => {
  test("parsed from the environment; a bad switch names its field", () => {
    expect(logsFaultsFromEnv({})).toBeUndefined();
    expect(logsFaultsFromEnv({ CAIRN_LOGS_FAULTS: '{"visibilityDelayMs":1500}' })).toEqual({
      visibilityDelayMs: 1500,
    });
    expect(() => logsFaultsFromEnv({ CAIRN_LOGS_FAULTS: "{" })).toThrow("CAIRN_LOGS_FAULTS: is not JSON");
    expect(() => parseLogsFaults([], "CAIRN_LOGS_FAULTS")).toThrow("CAIRN_LOGS_FAULTS: must be an object");
    expect(() => parseLogsFaults({ delay: 5 }, "CAIRN_LOGS_FAULTS")).toThrow(
      "CAIRN_LOGS_FAULTS.delay: is not a fault field (visibilityDelayMs, backwardPageWindowMs)",
    );
    expect(() => parseLogsFaults({ visibilityDelayMs: -1 }, "CAIRN_LOGS_FAULTS")).toThrow(
      "CAIRN_LOGS_FAULTS.visibilityDelayMs: must be an integer from 0 to 60000 (ms), got -1",
    );
  });
});
