/**
 * The in-process event bus: PutEvents semantics (limits, partial failures, envelope), and
 * delivery (asynchronous, retries with back-off, dead letters, drops, event age, concurrency,
 * idle, close). Retry delays are scaled down to a few milliseconds; no test asserts timings.
 */
import { describe, expect, test, vi } from "vitest";
import {
  DEFAULT_RETRY_POLICY,
  entrySizeBytes,
  LocalEventBus,
  MAX_PUT_EVENTS_SIZE_BYTES,
  type EventBridgeEvent,
  type LocalEventBusOptions,
  type LocalTarget,
} from "../local/eventbridge/index.ts";
import { retryDelayMs } from "../local/eventbridge/retry.ts";

const T0_MS = Date.UTC(2026, 10, 3, 12, 0, 0, 789);

function newBus(options: LocalEventBusOptions = {}) {
  const warnings: string[] = [];
  let ids = 0;
  const bus = new LocalEventBus({
    name: "cairn",
    account: "123456789012",
    region: "eu-west-1",
    retryBaseDelayMs: 1,
    retryMaxDelayMs: 4,
    clock: () => T0_MS,
    newEventId: () => `evt-${++ids}`,
    logger: { warn: (m) => warnings.push(m) },
    ...options,
  });
  return { bus, warnings };
}

function recorder(id = "recorder") {
  const events: EventBridgeEvent[] = [];
  const target: LocalTarget = {
    id,
    invoke: (event) => {
      events.push(event);
      return Promise.resolve();
    },
  };
  return { target, events };
}

const entry = (detail: object = { sessionId: "s-1" }, overrides: object = {}) => ({
  Source: "cairn.sessions",
  DetailType: "Session Submitted",
  Detail: JSON.stringify(detail),
  ...overrides,
});

const SUBMITTED = { source: ["cairn.sessions"], "detail-type": ["Session Submitted"] };

class TargetFailure extends Error {
  readonly code = "TargetFailure";
}

describe("putEvents", () => {
  test("builds the EventBridge envelope exactly", async () => {
    const { bus } = newBus();
    const { target, events } = recorder();
    bus.putRule({ name: "all", eventPattern: { source: ["cairn.sessions"] }, targets: [target] });

    const out = bus.putEvents([
      entry(
        { sessionId: "s-1", n: 1 },
        { Resources: ["arn:x"], Time: new Date(Date.UTC(2017, 11, 22, 18, 43, 48, 999)) },
      ),
      entry({ sessionId: "s-2" }),
    ]);
    await bus.idle();

    expect(out).toEqual({ FailedEntryCount: 0, Entries: [{ EventId: "evt-1" }, { EventId: "evt-2" }] });
    expect(events[0]).toStrictEqual({
      version: "0",
      id: "evt-1",
      "detail-type": "Session Submitted",
      source: "cairn.sessions",
      account: "123456789012",
      time: "2017-12-22T18:43:48Z",
      region: "eu-west-1",
      resources: ["arn:x"],
      detail: { sessionId: "s-1", n: 1 },
    });
    expect(Object.keys(events[0]!)).toEqual([
      "version",
      "id",
      "detail-type",
      "source",
      "account",
      "time",
      "region",
      "resources",
      "detail",
    ]);
    // Without Time the bus clock stamps the event, at second precision.
    expect(events[1]).toMatchObject({ id: "evt-2", time: "2026-11-03T12:00:00Z", resources: [] });
  });

  test("a bad entry fails in its slot; the good ones beside it are accepted and delivered", async () => {
    const { bus } = newBus();
    const { target, events } = recorder();
    bus.putRule({ name: "all", eventPattern: { source: [{ prefix: "cairn." }] }, targets: [target] });

    const out = bus.putEvents([
      { DetailType: "x", Detail: "{}" },
      entry({ sessionId: "good-1" }),
      entry({}, { DetailType: "" }),
      entry({}, { Detail: undefined }),
      entry({}, { Detail: "{not json" }),
      entry({}, { Detail: "[1, 2]" }),
      entry(
        { sessionId: "good-2" },
        { EventBusName: "arn:aws:events:eu-west-1:123456789012:event-bus/cairn" },
      ),
      entry({}, { EventBusName: "other" }),
      entry({}, { Source: "aws.ec2" }),
      entry({ sessionId: "good-3" }, { EventBusName: "cairn" }),
    ]);

    expect(out.FailedEntryCount).toBe(7);
    expect(out.Entries).toEqual([
      {
        ErrorCode: "InvalidArgument",
        ErrorMessage: "Parameter Source is not valid. Reason: Source is a required argument.",
      },
      { EventId: "evt-1" },
      {
        ErrorCode: "InvalidArgument",
        ErrorMessage: "Parameter DetailType is not valid. Reason: DetailType is a required argument.",
      },
      {
        ErrorCode: "InvalidArgument",
        ErrorMessage: "Parameter Detail is not valid. Reason: Detail is a required argument.",
      },
      { ErrorCode: "MalformedDetail", ErrorMessage: "Detail is malformed." },
      { ErrorCode: "MalformedDetail", ErrorMessage: "Detail is malformed." },
      { EventId: "evt-2" },
      { ErrorCode: "ResourceNotFoundException", ErrorMessage: "Event bus other does not exist." },
      { ErrorCode: "NotAuthorizedForSourceException", ErrorMessage: "Not authorized for the source." },
      { EventId: "evt-3" },
    ]);
    await bus.idle();
    expect(events.map((e) => e.detail)).toEqual([
      { sessionId: "good-1" },
      { sessionId: "good-2" },
      { sessionId: "good-3" },
    ]);
    expect(bus.stats()).toMatchObject({ put: 3, failedEntries: 7, matched: 3, delivered: 3 });
  });

  test("at most 10 entries per call, at least 1, and 256 KiB in all, else the whole call fails", () => {
    const { bus } = newBus();
    const eleven = Array.from({ length: 11 }, () => entry());
    expect(() => bus.putEvents(eleven)).toThrow(expect.objectContaining({ code: "ValidationException" }));
    expect(() => bus.putEvents(eleven)).toThrow(/Member must have length less than or equal to 10/);
    expect(() => bus.putEvents([])).toThrow(expect.objectContaining({ code: "ValidationException" }));

    // Sizes per AWS: Source + DetailType + Detail bytes (+ 14 for Time, + each resource).
    const overhead = "cairn.sessions".length + "Session Submitted".length + '{"p":""}'.length;
    const fill = (bytes: number) => ({ p: "x".repeat(bytes - overhead) });
    const half = MAX_PUT_EVENTS_SIZE_BYTES / 2;
    expect(bus.putEvents([entry(fill(half)), entry(fill(half))]).FailedEntryCount).toBe(0);
    expect(() => bus.putEvents([entry(fill(half)), entry(fill(half + 1))])).toThrow(
      expect.objectContaining({
        code: "ValidationException",
        message: "Total size of the entries in the request is over the limit.",
      }),
    );
    expect(bus.stats().put).toBe(2);
  });

  test("entry size follows the documented formula", () => {
    expect(entrySizeBytes({ Source: "abc", DetailType: "dé", Detail: "{}" })).toBe(3 + 3 + 2);
    expect(
      entrySizeBytes({
        Source: "a",
        DetailType: "b",
        Detail: "{}",
        Time: new Date(),
        Resources: ["r1", "r22"],
      }),
    ).toBe(1 + 1 + 2 + 14 + 2 + 3);
  });

  test("returns before any target runs; delivery happens afterwards", async () => {
    const { bus } = newBus();
    const { target, events } = recorder();
    bus.putRule({ name: "r", eventPattern: SUBMITTED, targets: [target] });
    bus.putEvents([entry()]);
    expect(events).toHaveLength(0);
    await bus.idle();
    expect(events).toHaveLength(1);
  });

  test("only rules whose pattern matches receive the event; every target of a matching rule gets it", async () => {
    const { bus } = newBus();
    const a = recorder("a");
    const b = recorder("b");
    const cancel = recorder("cancel");
    bus.putRule({ name: "submitted", eventPattern: SUBMITTED, targets: [a.target, b.target] });
    bus.putRule({
      name: "cancel",
      eventPattern: { "detail-type": ["Cancel Requested"] },
      targets: [cancel.target],
    });
    bus.putEvents([
      entry(),
      entry({}, { DetailType: "Cancel Requested" }),
      entry({}, { DetailType: "Other" }),
    ]);
    await bus.idle();
    expect(a.events.map((e) => e.id)).toEqual(["evt-1"]);
    expect(b.events.map((e) => e.id)).toEqual(["evt-1"]);
    expect(cancel.events.map((e) => e.id)).toEqual(["evt-2"]);
    expect(bus.stats()).toMatchObject({ put: 3, matched: 2, invocations: 3, delivered: 3 });
  });

  test("onEvent sees every accepted event, and only those; unsubscribing stops it", () => {
    const { bus, warnings } = newBus();
    const seen: string[] = [];
    const off = bus.onEvent((e) => seen.push(e.id));
    bus.onEvent(() => {
      throw new Error("listener bug");
    });
    bus.putEvents([entry(), { Source: "x" }]);
    off();
    bus.putEvents([entry()]);
    expect(seen).toEqual(["evt-1"]);
    expect(warnings.filter((w) => w.includes("listener bug"))).toHaveLength(2);
  });
});

describe("delivery", () => {
  test("a failing target is retried with back-off until it succeeds", async () => {
    const { bus } = newBus();
    const attempts: EventBridgeEvent<{ sessionId: string; touched?: boolean }>[] = [];
    bus.putRule({
      name: "r",
      eventPattern: SUBMITTED,
      targets: [
        {
          id: "flaky",
          invoke: (event) => {
            const e = event as EventBridgeEvent<{ sessionId: string; touched?: boolean }>;
            attempts.push(structuredClone(e));
            (e.detail as { touched?: boolean }).touched = true;
            return attempts.length < 3 ? Promise.reject(new TargetFailure("not yet")) : Promise.resolve();
          },
        },
      ],
    });
    bus.putEvents([entry()]);
    await bus.idle();
    expect(attempts.map((e) => e.id)).toEqual(["evt-1", "evt-1", "evt-1"]);
    // Each attempt gets its own copy: the first attempt's mutation is not seen by the next.
    expect(attempts.every((e) => e.detail.touched === undefined)).toBe(true);
    expect(bus.stats()).toMatchObject({
      invocations: 3,
      failedAttempts: 2,
      retried: 2,
      delivered: 1,
      deadLettered: 0,
    });
    expect(bus.deadLetters()).toEqual([]);
  });

  test("when retries are exhausted the event goes to the target's dead letters", async () => {
    const { bus, warnings } = newBus();
    let calls = 0;
    bus.putRule({
      name: "kernel-status",
      eventPattern: SUBMITTED,
      targets: [
        {
          id: "handler",
          retryPolicy: { maximumRetryAttempts: 2 },
          deadLetter: true,
          invoke: () => {
            calls++;
            return Promise.reject(new TargetFailure(`attempt ${calls} failed`));
          },
        },
      ],
    });
    bus.putEvents([entry({ sessionId: "s-9" })]);
    await bus.idle();
    expect(calls).toBe(3);
    const deadLetters = bus.deadLetters();
    expect(deadLetters.map((dl) => dl.event)).toMatchObject([{ id: "evt-1", detail: { sessionId: "s-9" } }]);
    expect(deadLetters.map(({ event: _event, ...rest }) => rest)).toEqual([
      {
        ruleName: "kernel-status",
        ruleArn: "arn:aws:events:eu-west-1:123456789012:rule/cairn/kernel-status",
        targetId: "handler",
        errorCode: "TargetFailure",
        errorMessage: "attempt 3 failed",
        exhaustedRetryCondition: "MaximumRetryAttempts",
        attempts: 3,
        retryAttempts: 2,
        deadLetteredAtMs: T0_MS,
      },
    ]);
    expect(bus.stats()).toMatchObject({ retried: 2, deadLettered: 1, dropped: 0 });
    expect(warnings).toEqual([]);
  });

  test("without a dead letter the exhausted event is dropped with a warning", async () => {
    const { bus, warnings } = newBus();
    bus.putRule({
      name: "r",
      eventPattern: SUBMITTED,
      targets: [
        {
          id: "t",
          retryPolicy: { maximumRetryAttempts: 0 },
          invoke: () => Promise.reject(new Error("down")),
        },
      ],
    });
    bus.putEvents([entry()]);
    await bus.idle();
    expect(bus.deadLetters()).toEqual([]);
    expect(bus.stats()).toMatchObject({ invocations: 1, retried: 0, dropped: 1 });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(
      "dropped event evt-1 for rule r target t after 1 attempt(s) (MaximumRetryAttempts)",
    );
    expect(warnings[0]).toContain("Error: down");
  });

  test("an event older than maximumEventAgeSeconds is not retried", async () => {
    let nowMs = T0_MS;
    const { bus } = newBus({ clock: () => nowMs });
    bus.putRule({
      name: "r",
      eventPattern: SUBMITTED,
      targets: [
        {
          id: "slow",
          deadLetter: true,
          retryPolicy: { maximumEventAgeSeconds: 60 },
          invoke: () => {
            nowMs += 61_000; // the invocation took longer than the event may live
            return Promise.reject(new Error("timeout"));
          },
        },
      ],
    });
    bus.putEvents([entry()]);
    await bus.idle();
    expect(bus.deadLetters()).toMatchObject([
      { exhaustedRetryCondition: "MaximumEventAgeInSeconds", attempts: 1 },
    ]);
  });

  test("an error marked nonRetryable skips the retries", async () => {
    const { bus } = newBus();
    const gone = Object.assign(new Error("target no longer exists"), {
      name: "ResourceNotFoundException",
      nonRetryable: true,
    });
    bus.putRule({
      name: "r",
      eventPattern: SUBMITTED,
      targets: [{ id: "t", deadLetter: true, invoke: () => Promise.reject(gone) }],
    });
    bus.putEvents([entry()]);
    await bus.idle();
    expect(bus.deadLetters()).toMatchObject([
      { exhaustedRetryCondition: "NonRetryableError", attempts: 1, errorCode: "ResourceNotFoundException" },
    ]);
  });

  test("a target that throws synchronously is treated as a failed attempt", async () => {
    const { bus } = newBus();
    bus.putRule({
      name: "r",
      eventPattern: SUBMITTED,
      targets: [
        {
          id: "t",
          deadLetter: true,
          retryPolicy: { maximumRetryAttempts: 1 },
          invoke: () => {
            throw new TypeError("bug");
          },
        },
      ],
    });
    bus.putEvents([entry()]);
    await bus.idle();
    expect(bus.deadLetters()).toMatchObject([{ errorCode: "TypeError", errorMessage: "bug", attempts: 2 }]);
  });

  test("no more than maxConcurrency invocations run at once", async () => {
    const { bus } = newBus({ maxConcurrency: 3 });
    let running = 0;
    let maxRunning = 0;
    const releases: (() => void)[] = [];
    bus.putRule({
      name: "r",
      eventPattern: SUBMITTED,
      targets: [
        {
          id: "t",
          invoke: () => {
            running++;
            maxRunning = Math.max(maxRunning, running);
            return new Promise<void>((resolve) =>
              releases.push(() => {
                running--;
                resolve();
              }),
            );
          },
        },
      ],
    });
    bus.putEvents(Array.from({ length: 10 }, (_, i) => entry({ i })));
    await vi.waitFor(() => expect(releases).toHaveLength(3));
    expect(bus.stats()).toMatchObject({ inFlight: 3, queued: 7 });
    while (bus.stats().delivered < 10) {
      releases.splice(0).forEach((release) => release());
      await new Promise((r) => setImmediate(r));
    }
    await bus.idle();
    expect(maxRunning).toBe(3);
    expect(bus.stats()).toMatchObject({ delivered: 10, inFlight: 0, queued: 0 });
  });

  test("idle() waits for scheduled retries, and resolves at once when nothing is pending", async () => {
    const { bus } = newBus({ retryBaseDelayMs: 200, retryMaxDelayMs: 200 });
    await bus.idle();
    let fail = true;
    let delivered = false;
    bus.putRule({
      name: "r",
      eventPattern: SUBMITTED,
      targets: [
        {
          id: "t",
          invoke: () => {
            if (fail) {
              fail = false;
              return Promise.reject(new Error("once"));
            }
            delivered = true;
            return Promise.resolve();
          },
        },
      ],
    });
    bus.putEvents([entry()]);
    const idle = bus.idle();
    await vi.waitFor(() => expect(bus.stats().scheduled).toBe(1), { interval: 1 });
    expect(delivered).toBe(false);
    await idle;
    expect(delivered).toBe(true);
    expect(bus.stats()).toMatchObject({ scheduled: 0, inFlight: 0, queued: 0 });
  });

  test("duplicateDeliveryRate simulates at-least-once delivery", async () => {
    const { bus } = newBus({ duplicateDeliveryRate: 1 });
    const { target, events } = recorder();
    bus.putRule({ name: "r", eventPattern: SUBMITTED, targets: [target] });
    bus.putEvents([entry(), entry()]);
    await bus.idle();
    expect(events.map((e) => e.id).sort()).toEqual(["evt-1", "evt-1", "evt-2", "evt-2"]);
    expect(bus.stats()).toMatchObject({ duplicated: 2, delivered: 4 });
  });

  test("close() cancels pending retries and refuses new events", async () => {
    const { bus } = newBus({ retryBaseDelayMs: 60_000, retryMaxDelayMs: 60_000 });
    bus.putRule({
      name: "r",
      eventPattern: SUBMITTED,
      targets: [{ id: "t", invoke: () => Promise.reject(new Error("down")) }],
    });
    bus.putEvents([entry()]);
    await vi.waitFor(() => expect(bus.stats().scheduled).toBe(1));
    bus.close();
    await bus.idle();
    expect(bus.stats()).toMatchObject({ scheduled: 0, abandoned: 1, dropped: 0 });
    expect(() => bus.putEvents([entry()])).toThrow(expect.objectContaining({ code: "BusClosed" }));
  });
});

describe("rules", () => {
  test("putRule validates names, targets, patterns and retry policies", () => {
    const { bus } = newBus();
    const t = recorder().target;
    expect(() => bus.putRule({ name: "bad name", eventPattern: SUBMITTED, targets: [] })).toThrow(
      expect.objectContaining({ code: "ValidationException" }),
    );
    expect(() => bus.putRule({ name: "r", eventPattern: { source: "x" }, targets: [] })).toThrow(
      expect.objectContaining({ code: "InvalidEventPatternException" }),
    );
    const six = Array.from({ length: 6 }, (_, i) => ({ ...t, id: `t${i}` }));
    expect(() => bus.putRule({ name: "r", eventPattern: SUBMITTED, targets: six })).toThrow(
      expect.objectContaining({
        code: "LimitExceededException",
        message: 'rule "r" has 6 targets; a rule can have at most 5',
      }),
    );
    expect(() => bus.putRule({ name: "r", eventPattern: SUBMITTED, targets: [t, t] })).toThrow(
      'rule "r" target "recorder": target ids must be unique within the rule',
    );
    expect(() =>
      bus.putRule({
        name: "r",
        eventPattern: SUBMITTED,
        targets: [{ ...t, retryPolicy: { maximumRetryAttempts: 186 } }],
      }),
    ).toThrow(
      'rule "r" target "recorder": retryPolicy.maximumRetryAttempts must be an integer between 0 and 185, got 186',
    );
    expect(() =>
      bus.putRule({
        name: "r",
        eventPattern: SUBMITTED,
        targets: [{ ...t, retryPolicy: { maximumEventAgeSeconds: 59 } }],
      }),
    ).toThrow(
      'rule "r" target "recorder": retryPolicy.maximumEventAgeSeconds must be an integer between 60 and 86400, got 59',
    );
    expect(bus.listRules()).toEqual([]);
  });

  test("putRule replaces a rule of the same name; removeRule stops routing to it", async () => {
    const { bus } = newBus();
    const first = recorder("first");
    const second = recorder("second");
    bus.putRule({ name: "r", eventPattern: SUBMITTED, targets: [first.target] });
    const described = bus.putRule({
      name: "r",
      eventPattern: '{"source":["cairn.sessions"]}',
      description: "all session events",
      targets: [second.target],
    });
    expect(described).toEqual({
      name: "r",
      arn: "arn:aws:events:eu-west-1:123456789012:rule/cairn/r",
      eventBusName: "cairn",
      eventPattern: '{"source":["cairn.sessions"]}',
      state: "ENABLED",
      description: "all session events",
      targetIds: ["second"],
    });
    bus.putEvents([entry()]);
    await bus.idle();
    expect(bus.removeRule("r")).toBe(true);
    expect(bus.removeRule("r")).toBe(false);
    bus.putEvents([entry()]);
    await bus.idle();
    expect(first.events).toHaveLength(0);
    expect(second.events.map((e) => e.id)).toEqual(["evt-1"]);
  });

  test("default retry policy and back-off are AWS's: 185 retries, 24 h, exponential with jitter", () => {
    expect(DEFAULT_RETRY_POLICY).toEqual({ maximumRetryAttempts: 185, maximumEventAgeSeconds: 86_400 });
    const backoff = { baseDelayMs: 1000, maxDelayMs: 300_000 };
    expect(retryDelayMs(1, backoff, () => 0)).toBe(500);
    expect(retryDelayMs(1, backoff, () => 0.999)).toBeCloseTo(999.5);
    expect(retryDelayMs(4, backoff, () => 0)).toBe(4000);
    expect(retryDelayMs(185, backoff, () => 0.5)).toBe(225_000);
  });
});

describe("rules use the whole pattern language", () => {
  test("a rule on a dotted key and an anything-but prefix list routes what AWS would route", async () => {
    const { bus } = newBus();
    const { target, events } = recorder();
    bus.putRule({
      name: "not-internal",
      eventPattern: {
        ...SUBMITTED,
        "detail.spec.queue": [{ "anything-but": { prefix: ["internal-", "test-"] } }],
      },
      targets: [target],
    });

    bus.putEvents([
      entry({ sessionId: "s-1", spec: { queue: "gpu" } }),
      entry({ sessionId: "s-2", spec: { queue: "internal-batch" } }),
      entry({ sessionId: "s-3", "spec.queue": "cpu" }),
      entry({ sessionId: "s-4", "spec.queue": "test-x" }),
    ]);
    await bus.idle();

    expect(events.map((e) => (e.detail as { sessionId: string }).sessionId)).toEqual(["s-1", "s-3"]);
    // Delivered as sent: the dotted key is not rewritten.
    expect(events[1]!.detail).toEqual({ sessionId: "s-3", "spec.queue": "cpu" });
  });

  test("PutRule refuses a pattern whose wildcards are too complex, naming the field", () => {
    const { bus } = newBus();
    const { target } = recorder();
    const wildcards = ["a", "b", "c", "d"].map((name) => ({ wildcard: `*:stack/${name}/*` }));
    expect(() =>
      bus.putRule({ name: "stacks", eventPattern: { detail: { stackId: wildcards } }, targets: [target] }),
    ).toThrow(
      'Event pattern is not valid. Reason: at "detail.stackId": Rule is too complex - try using fewer wildcard characters or fewer repeating character sequences after a wildcard character',
    );
    expect(() =>
      bus.putRule({
        name: "stacks",
        eventPattern: { detail: { stackId: wildcards.slice(0, 3) } },
        targets: [target],
      }),
    ).not.toThrow();
  });
});
