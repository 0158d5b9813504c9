import fc from "fast-check";
import { describe, expect, test } from "vitest";
import {
  DetailType,
  EventSource,
  EventTooLargeError,
  EventValidationError,
  INBOUND_DETAIL_TYPES,
  MAX_ENTRY_BYTES,
  parseInboundEvent,
  parseInboundEvents,
  toPutEventsEntry,
  type EventDetailInput,
  type InboundEvent,
} from "../../functions/core/events.ts";
import { SPEC_DEFAULTS } from "../../functions/core/spec.ts";

const TIME = "2026-11-02T10:00:00Z";
const AT_MS = 1_793_613_600_000;

/** An EventBridge envelope as a rule target receives it. */
function envelope(detailType: string, source: string, detail: unknown, id = "ev-1"): Record<string, unknown> {
  return {
    version: "0",
    id,
    "detail-type": detailType,
    source,
    account: "123456789012",
    time: TIME,
    region: "local",
    resources: [],
    detail,
  };
}

const VALID = {
  submitted: { sessionId: "train-42", spec: { name: "train", command: ["python", "train.py"] } },
  cancel: { sessionId: "train-42", reason: "no longer needed" },
  kernel: {
    agentId: "agent-1",
    incarnation: "0b7c1e2a-3f4d-4c5e-8a9b-0c1d2e3f4a5b",
    signature: "ab".repeat(32),
    sessionId: "train-42",
    kernelIndex: 0,
    runIndex: 0,
    status: "TERMINATED",
    exitCode: 137,
    signal: "SIGKILL",
    condition: "OOMKilled",
    message: "killed at 64 MiB",
    atMs: AT_MS,
  },
  heartbeat: {
    agentId: "agent-1",
    incarnation: "0b7c1e2a-3f4d-4c5e-8a9b-0c1d2e3f4a5b",
    capacity: { cpu: 8, memoryMiB: 16_384 },
    atMs: AT_MS,
    signature: "ab".repeat(32),
  },
} as const;

function rejection(env: unknown): EventValidationError {
  const result = parseInboundEvent(env);
  if (result.ok) throw new Error(`expected a rejection, parsed ${JSON.stringify(result.event)}`);
  expect(result.error).toBeInstanceOf(EventValidationError);
  expect(result.error.code).toBe("INVALID_EVENT");
  return result.error;
}

function reasons(env: unknown): string[] {
  return rejection(env).issues.map((i) => `${i.path}: ${i.message}`);
}

function parsed(env: unknown): InboundEvent {
  const result = parseInboundEvent(env);
  if (!result.ok) throw result.error;
  return result.event;
}

describe("each inbound detail-type parses its valid example", () => {
  test("Session Submitted: the spec comes back with defaults applied", () => {
    const event = parsed(envelope("Session Submitted", "cairn.client", VALID.submitted));
    expect(event.detailType).toBe(DetailType.SessionSubmitted);
    if (event.detailType !== DetailType.SessionSubmitted) return;
    expect(event).toMatchObject({ id: "ev-1", source: "cairn.client", time: TIME });
    expect(event.detail.sessionId).toBe("train-42");
    expect(event.detail.spec.resources).toEqual(SPEC_DEFAULTS.resources);
    expect(event.detail.spec.timeouts).toEqual(SPEC_DEFAULTS.timeouts);
  });

  test("Session Submitted without a client-chosen id", () => {
    const event = parsed(envelope("Session Submitted", "cairn.client", { spec: VALID.submitted.spec }));
    expect(event.detail).not.toHaveProperty("sessionId");
  });

  test("Session Cancel Requested", () => {
    const event = parsed(envelope("Session Cancel Requested", "cairn.client", VALID.cancel));
    expect(event).toEqual({
      id: "ev-1",
      source: "cairn.client",
      detailType: "Session Cancel Requested",
      time: TIME,
      detail: VALID.cancel,
    });
  });

  test("Kernel Status Changed", () => {
    expect(parsed(envelope("Kernel Status Changed", "cairn.agent", VALID.kernel)).detail).toEqual(
      VALID.kernel,
    );
    const running = { ...VALID.kernel, status: "RUNNING" } as Record<string, unknown>;
    delete running.exitCode;
    delete running.signal;
    delete running.condition;
    expect(parsed(envelope("Kernel Status Changed", "cairn.agent", running)).detail).toEqual(running);
    // The placement the report answers; optional (agents of the previous version send none).
    const placed = { ...VALID.kernel, placement: 2 };
    expect(parsed(envelope("Kernel Status Changed", "cairn.agent", placed)).detail).toEqual(placed);
  });

  test("Agent Heartbeat", () => {
    expect(parsed(envelope("Agent Heartbeat", "cairn.agent", VALID.heartbeat)).detail).toEqual(
      VALID.heartbeat,
    );
  });

  test("an envelope time with an offset and fractional seconds is accepted", () => {
    expect(() =>
      parsed({
        ...envelope("Agent Heartbeat", "cairn.agent", VALID.heartbeat),
        time: "2026-11-02T12:00:00.123+02:00",
      }),
    ).not.toThrow();
  });
});

describe("each inbound detail-type is rejected with the right path", () => {
  test("Session Submitted with a bad spec names the path inside the spec", () => {
    const error = rejection(
      envelope("Session Submitted", "cairn.client", {
        spec: { ...VALID.submitted.spec, resources: { cpu: 0 } },
      }),
    );
    expect(error.eventId).toBe("ev-1");
    expect(error.detailType).toBe("Session Submitted");
    expect(error.message).toBe(
      "rejected event ev-1 (Session Submitted): detail.spec.resources.cpu: must be greater than 0",
    );
  });

  test("Session Submitted: bad id, missing spec, unknown field", () => {
    expect(
      reasons(envelope("Session Submitted", "cairn.client", { sessionId: "Train_42", specs: {} })),
    ).toEqual([
      "detail.sessionId: must be 3 to 63 lowercase letters, digits or '-', starting with a letter or digit",
      "detail.spec: required",
      "detail.specs: unknown field (expected one of sessionId, spec, service)",
    ]);
  });

  test("Session Cancel Requested: missing id and an overlong reason", () => {
    expect(
      reasons(envelope("Session Cancel Requested", "cairn.client", { reason: "x".repeat(4097) })),
    ).toEqual(["detail.sessionId: required", "detail.reason: must be at most 4096 characters"]);
  });

  test.each([
    ["detail.status: must be one of PULLING, PREPARED, RUNNING, TERMINATED, ERROR", { status: "CREATING" }],
    [
      "detail.condition: must be one of OOMKilled, Evicted, Preempted, DeadlineExceeded",
      { condition: "OOM" },
    ],
    ["detail.kernelIndex: must be at least 0", { kernelIndex: -1 }],
    ["detail.kernelIndex: must be at most 63", { kernelIndex: 64 }],
    ["detail.runIndex: must be an integer", { runIndex: 0.5 }],
    ["detail.placement: must be an integer", { placement: 1.5 }],
    ["detail.placement: must be at least 0", { placement: -1 }],
    ['detail.signal: must be a signal name such as "SIGKILL"', { signal: "9" }],
    ["detail.message: must be at most 4096 characters", { message: "m".repeat(4097) }],
    ["detail.atMs: expected a number, got a string", { atMs: TIME }],
    ["detail.agentId: required", { agentId: undefined }],
    [
      "detail.exitCode: only allowed when status is TERMINATED or ERROR",
      { status: "RUNNING", signal: undefined, condition: undefined },
    ],
    [
      "detail.exitCode: only allowed when status is TERMINATED or ERROR",
      { status: "PULLING", signal: undefined, condition: undefined },
    ],
  ])("Kernel Status Changed: %s", (expected, change) => {
    expect(reasons(envelope("Kernel Status Changed", "cairn.agent", { ...VALID.kernel, ...change }))).toEqual(
      [expected],
    );
  });

  test("Agent Heartbeat: capacity must be positive and strict", () => {
    expect(
      reasons(
        envelope("Agent Heartbeat", "cairn.agent", {
          ...VALID.heartbeat,
          capacity: { cpu: 0, memoryMiB: 1, gpu: 1 },
        }),
      ),
    ).toEqual([
      "detail.capacity.cpu: must be greater than 0",
      "detail.capacity.gpu: unknown field (expected one of cpu, memoryMiB)",
    ]);
  });

  // Ids name directories (an agent's work root), log streams and table keys (`SESSION#<id>`,
  // `AGENT#<id>`): no separator, dot-dot or key delimiter gets in.
  test.each(["../../etc", "a/b", "s-1#SESSION", "..", "x\u0000y", "s".repeat(64)])(
    "a session id %j is refused before it names a directory or a key",
    (id) => {
      const expected =
        "detail.sessionId: must be 3 to 63 lowercase letters, digits or '-', starting with a letter or digit";
      expect(
        reasons(envelope("Session Submitted", "cairn.client", { ...VALID.submitted, sessionId: id })),
      ).toEqual([expected]);
      expect(
        reasons(envelope("Kernel Status Changed", "cairn.agent", { ...VALID.kernel, sessionId: id })),
      ).toEqual([expected]);
    },
  );

  test.each(["../agent-1", "agent-1#AGENT", "a/b", ".", "a".repeat(41)])(
    "an agent id %j is refused before it names a queue, a directory or a key",
    (agentId) => {
      expect(reasons(envelope("Agent Heartbeat", "cairn.agent", { ...VALID.heartbeat, agentId }))).toEqual([
        "detail.agentId: must be 1 to 40 letters, digits, '-' or '_', starting with a letter or digit",
      ]);
    },
  );

  test("a detail that is not an object", () => {
    expect(reasons(envelope("Agent Heartbeat", "cairn.agent", "beat"))).toEqual([
      "detail: expected an object, got a string",
    ]);
  });
});

describe("envelopes", () => {
  test("a source that does not match the detail-type is a rejection with a reason", () => {
    expect(rejection(envelope("Kernel Status Changed", "cairn.client", VALID.kernel)).message).toBe(
      'rejected event ev-1 (Kernel Status Changed): source: must be "cairn.agent" for detail-type "Kernel Status Changed", got "cairn.client"',
    );
  });

  test("an unknown detail-type names the ones accepted", () => {
    expect(reasons(envelope("Session Exploded", "cairn.client", {}))).toEqual([
      'detail-type: unknown detail-type "Session Exploded" (expected one of Session Submitted, Session Cancel Requested, Kernel Status Changed, Agent Heartbeat, Agent Registration Requested, Deployment Created, Deployment Scaled, Deployment Destroy Requested, Route Health Reported, Job Draft Saved, Job Draft Submitted, Job Draft Deleted)',
    ]);
  });

  test("an outbound detail-type arriving inbound is refused as such", () => {
    expect(reasons(envelope("Session Status Changed", "cairn.control-plane", {}))).toEqual([
      'detail-type: "Session Status Changed" is emitted by cairn.control-plane, not accepted as inbound',
    ]);
  });

  test("missing envelope fields are each named; the id is kept when present", () => {
    const error = rejection({ id: "ev-9" });
    expect(error.eventId).toBe("ev-9");
    expect(error.detailType).toBeUndefined();
    expect(error.message).toBe(
      "rejected event ev-9 (<no detail-type>): time: required; detail-type: required; source: required; detail: required",
    );
  });

  test("a bad id and time are reported alongside detail problems", () => {
    expect(
      reasons({
        ...envelope("Agent Heartbeat", "cairn.agent", { ...VALID.heartbeat, atMs: -1 }),
        id: "",
        time: "yesterday",
      }),
    ).toEqual([
      "id: must not be empty",
      "time: must be an ISO 8601 timestamp",
      "detail.atMs: must be at least 0",
    ]);
  });

  test("something that is not an envelope at all", () => {
    for (const input of [null, undefined, "event", 42, []]) {
      const error = rejection(input);
      expect(error.eventId).toBeUndefined();
      expect(error.issues[0]?.path).toBe("(root)");
    }
    expect(rejection(null).message).toBe(
      "rejected event <no id> (<no detail-type>): (root): expected an object, got null",
    );
  });

  test("any input is a result, never a throw", () => {
    const anyEnvelope = fc.oneof(
      fc.anything(),
      fc.record({
        id: fc.oneof(fc.string(), fc.integer()),
        "detail-type": fc.oneof(fc.constantFrom(...Object.values(DetailType)), fc.string()),
        source: fc.oneof(fc.constantFrom(...Object.values(EventSource)), fc.string()),
        time: fc.oneof(fc.constant(TIME), fc.string()),
        detail: fc.oneof(fc.jsonValue(), fc.constantFrom(...Object.values(VALID))),
      }),
    );
    fc.assert(
      fc.property(anyEnvelope, (input) => {
        const result = parseInboundEvent(input);
        if (!result.ok) expect(result.error.issues.length).toBeGreaterThan(0);
      }),
      { numRuns: 300 },
    );
  });
});

describe("a batch of mixed envelopes", () => {
  test("good ones parse, each bad one yields its own reason, in order", () => {
    const batch = [
      envelope("Session Submitted", "cairn.client", VALID.submitted, "good-1"),
      envelope("Session Submitted", "cairn.client", { spec: { name: "x" } }, "bad-1"),
      envelope("Agent Heartbeat", "cairn.agent", VALID.heartbeat, "good-2"),
      envelope("Kernel Status Changed", "cairn.client", VALID.kernel, "bad-2"),
      "not an envelope",
      envelope("Session Cancel Requested", "cairn.client", VALID.cancel, "good-3"),
      envelope("Agent Heartbeat", "cairn.agent", { ...VALID.heartbeat, extra: 1 }, "bad-3"),
    ];
    const { events, rejections } = parseInboundEvents(batch);
    expect(events.map((e) => [e.id, e.detailType])).toEqual([
      ["good-1", "Session Submitted"],
      ["good-2", "Agent Heartbeat"],
      ["good-3", "Session Cancel Requested"],
    ]);
    expect(rejections.map((e) => e.message)).toEqual([
      "rejected event bad-1 (Session Submitted): detail.spec.command: required",
      'rejected event bad-2 (Kernel Status Changed): source: must be "cairn.agent" for detail-type "Kernel Status Changed", got "cairn.client"',
      "rejected event <no id> (<no detail-type>): (root): expected an object, got a string",
      "rejected event bad-3 (Agent Heartbeat): detail.extra: unknown field (expected one of agentId, incarnation, capacity, draining, running, runs, atMs, signature)",
    ]);
  });
});

describe("outbound entries", () => {
  const statusChanged: EventDetailInput<"Session Status Changed"> = {
    sessionId: "train-42",
    executionName: "train-42",
    from: "PENDING",
    to: "SCHEDULED",
    result: "SUCCESS",
    handler: "ScheduleNewSessions",
    atMs: AT_MS,
  };
  test("Session Status Changed becomes a plain PutEvents entry from the control plane", () => {
    expect(toPutEventsEntry("cairn-bus", "Session Status Changed", statusChanged)).toEqual({
      Source: "cairn.control-plane",
      DetailType: "Session Status Changed",
      Detail: JSON.stringify(statusChanged),
      EventBusName: "cairn-bus",
    });
  });

  test("an invalid outbound detail throws, naming each problem", () => {
    expect(() =>
      toPutEventsEntry("cairn-bus", "Session Status Changed", {
        ...statusChanged,
        handler: "Nobody" as "Cancel",
      }),
    ).toThrow(
      "rejected event <no id> (Session Status Changed): detail.handler: must be one of ScheduleNewSessions, PrepareSessions, StartSessions, TerminateSessions, PromoteToPrepared, PromoteToRunning, PromoteToTerminated, DetectTermination, Lifecycle, Cancel, Submit",
    );
  });

  test("an empty bus name or an unknown detail-type is refused", () => {
    expect(() => toPutEventsEntry("", "Session Status Changed", statusChanged)).toThrow(
      "EventBusName: must not be empty",
    );
    expect(() => toPutEventsEntry("bus", "Nope" as "Agent Heartbeat", VALID.heartbeat)).toThrow(
      'detail-type: unknown detail-type "Nope"',
    );
  });

  test("an entry over EventBridge's 256 KiB limit is refused before it is sent", () => {
    const big = {
      ...VALID.submitted,
      spec: {
        ...VALID.submitted.spec,
        env: Object.fromEntries(Array.from({ length: 70 }, (_, i) => [`V${i}`, "x".repeat(4000)])),
      },
    };
    const error = (() => {
      try {
        toPutEventsEntry("bus", "Session Submitted", big);
      } catch (e) {
        return e as EventTooLargeError;
      }
      throw new Error("expected EventTooLargeError");
    })();
    expect(error).toBeInstanceOf(EventTooLargeError);
    expect(error.code).toBe("EVENT_TOO_LARGE");
    expect(error.sizeBytes).toBeGreaterThan(MAX_ENTRY_BYTES);
    expect(error.message).toBe(
      `Session Submitted event is ${error.sizeBytes} bytes; EventBridge accepts at most 262144 per entry`,
    );
  });

  test("producers of inbound events build entries that the control plane accepts", () => {
    for (const [type, detail] of [
      ["Session Submitted", VALID.submitted],
      ["Session Cancel Requested", VALID.cancel],
      ["Kernel Status Changed", VALID.kernel],
      ["Agent Heartbeat", VALID.heartbeat],
    ] as const) {
      expect(INBOUND_DETAIL_TYPES).toContain(type);
      const entry = toPutEventsEntry("bus", type, detail);
      const event = parsed(envelope(entry.DetailType, entry.Source, JSON.parse(entry.Detail)));
      expect(event.detailType).toBe(type);
    }
  });

  test("a submission is sent as written: defaults are the receiver's to apply", () => {
    const entry = toPutEventsEntry("bus", "Session Submitted", VALID.submitted);
    expect(JSON.parse(entry.Detail)).toEqual(VALID.submitted);
  });
});
