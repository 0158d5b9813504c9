/**
 * The local EventBridge endpoint through the real `@aws-sdk/client-eventbridge`: PutEvents
 * (routing by bus name and ARN, partial failures, request-level errors), DescribeEventBus,
 * ListRules and TestEventPattern, with AWS error types surfacing as SDK exception names.
 */
import {
  DescribeEventBusCommand,
  EventBridgeClient,
  ListRulesCommand,
  PutEventsCommand,
  TestEventPatternCommand,
} from "@aws-sdk/client-eventbridge";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  LocalEventBus,
  startEventBridgeServer,
  type EventBridgeEvent,
  type EventBridgeServer,
} from "../local/eventbridge/index.ts";

const T0_MS = Date.UTC(2026, 10, 3, 9, 30, 15, 250);

let server: EventBridgeServer;
let client: EventBridgeClient;
const defaultBus = new LocalEventBus({ clock: () => T0_MS, retryBaseDelayMs: 1, retryMaxDelayMs: 2 });
const cairnBus = new LocalEventBus({ name: "cairn", region: "local", clock: () => T0_MS });
const onDefault: EventBridgeEvent[] = [];
const onCairn: EventBridgeEvent[] = [];

beforeAll(async () => {
  defaultBus.putRule({
    name: "everything",
    eventPattern: { source: [{ prefix: "" }] },
    targets: [{ id: "rec", invoke: (e) => Promise.resolve(void onDefault.push(e)) }],
  });
  cairnBus.putRule({
    name: "session-submitted",
    eventPattern: { source: ["cairn.sessions"], "detail-type": ["Session Submitted"] },
    targets: [{ id: "rec", invoke: (e) => Promise.resolve(void onCairn.push(e)) }],
  });
  cairnBus.putRule({
    name: "cancel-requested",
    eventPattern: '{"detail-type":["Cancel Requested"]}',
    targets: [],
  });
  server = await startEventBridgeServer([defaultBus, cairnBus]);
  client = new EventBridgeClient({
    endpoint: server.endpoint,
    region: "local",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
    maxAttempts: 1,
  });
});

afterAll(async () => {
  client.destroy();
  await server.close();
  defaultBus.close();
  cairnBus.close();
});

describe("PutEvents through the SDK", () => {
  test("routes each entry to its bus by name or ARN, default bus when none is given", async () => {
    const out = await client.send(
      new PutEventsCommand({
        Entries: [
          {
            Source: "cairn.sessions",
            DetailType: "Session Submitted",
            Detail: '{"sessionId":"s-1"}',
            EventBusName: "cairn",
          },
          { Source: "cairn.cli", DetailType: "Ping", Detail: "{}" },
          {
            Source: "cairn.sessions",
            DetailType: "Session Submitted",
            Detail: '{"sessionId":"s-2"}',
            EventBusName: cairnBus.arn,
            Time: new Date(Date.UTC(2026, 0, 2, 3, 4, 5)),
            Resources: ["arn:aws:states:local:000000000000:execution:lifecycle:s-2"],
          },
        ],
      }),
    );
    expect(out.FailedEntryCount).toBe(0);
    expect(out.Entries?.map((e) => typeof e.EventId)).toEqual(["string", "string", "string"]);
    await Promise.all([defaultBus.idle(), cairnBus.idle()]);

    expect(onCairn.map((e) => e.detail)).toEqual([{ sessionId: "s-1" }, { sessionId: "s-2" }]);
    expect(onCairn[0]?.id).toBe(out.Entries?.[0]?.EventId);
    expect(onCairn[0]?.time).toBe("2026-11-03T09:30:15Z");
    expect(onCairn[1]).toMatchObject({
      version: "0",
      time: "2026-01-02T03:04:05Z",
      account: "000000000000",
      region: "local",
      resources: ["arn:aws:states:local:000000000000:execution:lifecycle:s-2"],
    });
    expect(onDefault.map((e) => e["detail-type"])).toEqual(["Ping"]);
  });

  test("partial failure: bad entries fail in their slot, the rest are accepted", async () => {
    const before = onCairn.length;
    const out = await client.send(
      new PutEventsCommand({
        Entries: [
          {
            Source: "cairn.sessions",
            DetailType: "Session Submitted",
            Detail: "not json",
            EventBusName: "cairn",
          },
          {
            Source: "cairn.sessions",
            DetailType: "Session Submitted",
            Detail: '{"sessionId":"s-3"}',
            EventBusName: "cairn",
          },
          { Source: "cairn.sessions", DetailType: "Session Submitted", Detail: "{}", EventBusName: "nope" },
          { DetailType: "Session Submitted", Detail: "{}", EventBusName: "cairn" },
        ],
      }),
    );
    expect(out.FailedEntryCount).toBe(3);
    expect(out.Entries).toEqual([
      { ErrorCode: "MalformedDetail", ErrorMessage: "Detail is malformed." },
      { EventId: expect.any(String) as unknown },
      { ErrorCode: "ResourceNotFoundException", ErrorMessage: "Event bus nope does not exist." },
      {
        ErrorCode: "InvalidArgument",
        ErrorMessage: "Parameter Source is not valid. Reason: Source is a required argument.",
      },
    ]);
    await cairnBus.idle();
    expect(onCairn.slice(before).map((e) => e.detail)).toEqual([{ sessionId: "s-3" }]);
  });

  test("more than 10 entries is a ValidationException for the whole call", async () => {
    const entries = Array.from({ length: 11 }, () => ({
      Source: "cairn.cli",
      DetailType: "Ping",
      Detail: "{}",
    }));
    const err = await client.send(new PutEventsCommand({ Entries: entries })).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: "ValidationException", $metadata: { httpStatusCode: 400 } });
    expect((err as Error).message).toContain("Member must have length less than or equal to 10");
  });

  test("more than 256 KiB is a ValidationException for the whole call", async () => {
    const detail = JSON.stringify({ blob: "x".repeat(200 * 1024) });
    const err = await client
      .send(
        new PutEventsCommand({
          Entries: [
            { Source: "cairn.cli", DetailType: "Big", Detail: detail },
            { Source: "cairn.cli", DetailType: "Big", Detail: detail },
          ],
        }),
      )
      .catch((e: unknown) => e);
    expect(err).toMatchObject({
      name: "ValidationException",
      message: "Total size of the entries in the request is over the limit.",
    });
  });
});

describe("delivery behind the endpoint", () => {
  test("an event put through the SDK is retried, then dead-lettered when its target keeps failing", async () => {
    const bus = new LocalEventBus({ name: "faulty", retryBaseDelayMs: 1, retryMaxDelayMs: 2 });
    let calls = 0;
    bus.putRule({
      name: "heartbeat",
      eventPattern: { "detail-type": ["Agent Heartbeat"] },
      targets: [
        {
          id: "handler",
          deadLetter: true,
          retryPolicy: { maximumRetryAttempts: 2 },
          invoke: () => Promise.reject(new Error(`store unavailable (${++calls})`)),
        },
      ],
    });
    const own = await startEventBridgeServer(bus);
    const ownClient = new EventBridgeClient({
      endpoint: own.endpoint,
      region: "local",
      credentials: { accessKeyId: "local", secretAccessKey: "local" },
    });
    try {
      const out = await ownClient.send(
        new PutEventsCommand({
          Entries: [
            {
              Source: "cairn.agents",
              DetailType: "Agent Heartbeat",
              Detail: '{"agentId":"a-1"}',
              EventBusName: "faulty",
            },
          ],
        }),
      );
      expect(out.FailedEntryCount).toBe(0);
      await bus.idle();
      expect(calls).toBe(3);
      expect(bus.deadLetters()).toMatchObject([
        {
          ruleName: "heartbeat",
          targetId: "handler",
          event: { id: out.Entries?.[0]?.EventId, detail: { agentId: "a-1" } },
          errorMessage: "store unavailable (3)",
          exhaustedRetryCondition: "MaximumRetryAttempts",
          attempts: 3,
        },
      ]);
    } finally {
      ownClient.destroy();
      await own.close();
      bus.close();
    }
  });
});

describe("other operations", () => {
  test("DescribeEventBus by name, by ARN, default, and unknown", async () => {
    const byName = await client.send(new DescribeEventBusCommand({ Name: "cairn" }));
    expect(byName).toMatchObject({ Name: "cairn", Arn: "arn:aws:events:local:000000000000:event-bus/cairn" });
    const byArn = await client.send(new DescribeEventBusCommand({ Name: cairnBus.arn }));
    expect(byArn.Name).toBe("cairn");
    const byDefault = await client.send(new DescribeEventBusCommand({}));
    expect(byDefault.Name).toBe("default");
    const err = await client.send(new DescribeEventBusCommand({ Name: "nope" })).catch((e: unknown) => e);
    expect(err).toMatchObject({
      name: "ResourceNotFoundException",
      message: "Event bus nope does not exist.",
    });
  });

  test("ListRules returns names and patterns, filtered by prefix, paginated", async () => {
    const all = await client.send(new ListRulesCommand({ EventBusName: "cairn" }));
    expect(all.Rules).toEqual([
      {
        Name: "cancel-requested",
        Arn: "arn:aws:events:local:000000000000:rule/cairn/cancel-requested",
        EventPattern: '{"detail-type":["Cancel Requested"]}',
        State: "ENABLED",
        EventBusName: "cairn",
      },
      {
        Name: "session-submitted",
        Arn: "arn:aws:events:local:000000000000:rule/cairn/session-submitted",
        EventPattern: '{"source":["cairn.sessions"],"detail-type":["Session Submitted"]}',
        State: "ENABLED",
        EventBusName: "cairn",
      },
    ]);
    const prefixed = await client.send(
      new ListRulesCommand({ EventBusName: "cairn", NamePrefix: "session" }),
    );
    expect(prefixed.Rules?.map((r) => r.Name)).toEqual(["session-submitted"]);
    const page1 = await client.send(new ListRulesCommand({ EventBusName: "cairn", Limit: 1 }));
    expect(page1.Rules?.map((r) => r.Name)).toEqual(["cancel-requested"]);
    const page2 = await client.send(
      new ListRulesCommand({ EventBusName: "cairn", Limit: 1, NextToken: page1.NextToken }),
    );
    expect(page2.Rules?.map((r) => r.Name)).toEqual(["session-submitted"]);
    expect(page2.NextToken).toBeUndefined();
    const onDefaultBus = await client.send(new ListRulesCommand({}));
    expect(onDefaultBus.Rules?.map((r) => [r.Name, r.Arn])).toEqual([
      ["everything", "arn:aws:events:local:000000000000:rule/everything"],
    ]);
  });

  test("TestEventPattern matches, does not match, and rejects invalid patterns and events", async () => {
    const event = JSON.stringify({
      id: "1",
      account: "000000000000",
      source: "cairn.kernels",
      time: "2026-11-03T09:30:15Z",
      region: "local",
      resources: [],
      "detail-type": "Kernel Status Changed",
      detail: { status: "RUNNING", exitCode: 0 },
    });
    const yes = await client.send(
      new TestEventPatternCommand({
        EventPattern: JSON.stringify({
          source: ["cairn.kernels"],
          detail: { status: [{ "anything-but": "PENDING" }] },
        }),
        Event: event,
      }),
    );
    expect(yes.Result).toBe(true);
    const no = await client.send(
      new TestEventPatternCommand({
        EventPattern: '{"detail":{"exitCode":[{"numeric":[">",0]}]}}',
        Event: event,
      }),
    );
    expect(no.Result).toBe(false);
    const invalid = await client
      .send(new TestEventPatternCommand({ EventPattern: '{"source":"cairn.kernels"}', Event: event }))
      .catch((e: unknown) => e);
    expect(invalid).toMatchObject({
      name: "InvalidEventPatternException",
      message: 'Event pattern is not valid. Reason: at "source": "source" must be an object or an array',
    });
    const badEvent = await client
      .send(new TestEventPatternCommand({ EventPattern: '{"source":["x"]}', Event: '{"source":"x"}' }))
      .catch((e: unknown) => e);
    expect(badEvent).toMatchObject({ name: "ValidationException" });
    expect((badEvent as Error).message).toContain(
      "missing: [id, account, time, region, resources, detail-type]",
    );
  });

  test("an unsupported operation or a malformed body is a 400 with an AWS error type", async () => {
    const unknown = await fetch(server.endpoint, {
      method: "POST",
      headers: { "content-type": "application/x-amz-json-1.1", "x-amz-target": "AWSEvents.DeleteEventBus" },
      body: "{}",
    });
    expect(unknown.status).toBe(400);
    expect(unknown.headers.get("x-amzn-errortype")).toBe("UnknownOperationException");
    expect(await unknown.json()).toMatchObject({ __type: "UnknownOperationException" });

    const malformed = await fetch(server.endpoint, {
      method: "POST",
      headers: { "content-type": "application/x-amz-json-1.1", "x-amz-target": "AWSEvents.PutEvents" },
      body: "{",
    });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toEqual({
      __type: "SerializationException",
      message: "request body is not valid JSON",
    });
  });
});
