/**
 * The embedded CloudWatch Logs endpoint, through the real `@aws-sdk/client-cloudwatch-logs` over
 * HTTP: every operation the agent and the CLI use, AWS's limits and validation, rejected events,
 * and GetLogEvents / FilterLogEvents pagination tokens. The store's clock is fixed, so "too old"
 * and "too new" are literal times.
 */
import {
  CloudWatchLogsClient,
  CreateLogGroupCommand,
  CreateLogStreamCommand,
  DeleteLogGroupCommand,
  DeleteLogStreamCommand,
  DescribeLogGroupsCommand,
  DescribeLogStreamsCommand,
  FilterLogEventsCommand,
  GetLogEventsCommand,
  PutLogEventsCommand,
  type InputLogEvent,
} from "@aws-sdk/client-cloudwatch-logs";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { LogsStore, startLogsServer, type LogsServer } from "../local/logs/index.ts";

const T0 = Date.UTC(2026, 10, 21, 12, 0, 0);
const HOUR = 3_600_000;
const GROUP = "/cairn/kernels";

let server: LogsServer;
let client: CloudWatchLogsClient;
let store: LogsStore;

beforeAll(async () => {
  store = new LogsStore({ clock: () => T0 });
  server = await startLogsServer({ store, logGroups: [GROUP], logger: { warn: () => {} } });
  client = new CloudWatchLogsClient({
    endpoint: server.endpoint,
    region: "local",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
    // Errors here are answers to check, not faults to retry.
    maxAttempts: 1,
  });
});

afterAll(async () => {
  client.destroy();
  await server.close();
});

/** The error a call fails with (fails the test if it succeeds). */
async function failure(
  promise: Promise<unknown>,
): Promise<{ name: string; message: string; status?: number }> {
  try {
    await promise;
  } catch (error) {
    const e = error as { name: string; message: string; $metadata?: { httpStatusCode?: number } };
    return { name: e.name, message: e.message, status: e.$metadata?.httpStatusCode };
  }
  throw new Error("the call succeeded");
}

let streams = 0;
async function newStream(prefix = "s"): Promise<string> {
  const name = `${prefix}-${++streams}/0/run-0`;
  await client.send(new CreateLogStreamCommand({ logGroupName: GROUP, logStreamName: name }));
  return name;
}

const put = (logStreamName: string, logEvents: InputLogEvent[]) =>
  client.send(new PutLogEventsCommand({ logGroupName: GROUP, logStreamName, logEvents }));

const events = (n: number, from = T0, text = (i: number) => `line ${i}`): InputLogEvent[] =>
  Array.from({ length: n }, (_, i) => ({ timestamp: from + i, message: text(i) }));

describe("log groups", () => {
  test("create, describe by prefix and pattern with pages, delete; duplicates and unknowns are errors", async () => {
    for (const name of ["/t/a", "/t/b", "/t/c", "/other"]) {
      await client.send(new CreateLogGroupCommand({ logGroupName: name }));
    }
    expect(await failure(client.send(new CreateLogGroupCommand({ logGroupName: "/t/a" })))).toEqual({
      name: "ResourceAlreadyExistsException",
      message: "The specified log group already exists",
      status: 400,
    });
    const first = await client.send(new DescribeLogGroupsCommand({ logGroupNamePrefix: "/t/", limit: 2 }));
    expect(first.logGroups?.map((g) => g.logGroupName)).toEqual(["/t/a", "/t/b"]);
    expect(first.logGroups?.[0]).toMatchObject({
      creationTime: T0,
      arn: "arn:aws:logs:local:000000000000:log-group:/t/a:*",
      logGroupArn: "arn:aws:logs:local:000000000000:log-group:/t/a",
    });
    const second = await client.send(
      new DescribeLogGroupsCommand({ logGroupNamePrefix: "/t/", limit: 2, nextToken: first.nextToken }),
    );
    expect(second.logGroups?.map((g) => g.logGroupName)).toEqual(["/t/c"]);
    expect(second.nextToken).toBeUndefined();
    const pattern = await client.send(new DescribeLogGroupsCommand({ logGroupNamePattern: "OTHER" }));
    expect(pattern.logGroups?.map((g) => g.logGroupName)).toEqual(["/other"]);
    expect(
      await failure(
        client.send(new DescribeLogGroupsCommand({ logGroupNamePrefix: "/t", logGroupNamePattern: "t" })),
      ),
    ).toMatchObject({ name: "InvalidParameterException" });
    await client.send(new DeleteLogGroupCommand({ logGroupName: "/t/b" }));
    expect(await failure(client.send(new DeleteLogGroupCommand({ logGroupName: "/t/b" })))).toEqual({
      name: "ResourceNotFoundException",
      message: "The specified log group does not exist.",
      status: 400,
    });
  });

  test("names are checked against AWS's pattern and length", async () => {
    expect(await failure(client.send(new CreateLogGroupCommand({ logGroupName: "bad name" })))).toEqual({
      name: "InvalidParameterException",
      message:
        "1 validation error detected: Value 'bad name' at 'logGroupName' failed to satisfy constraint: " +
        "Member must satisfy regular expression pattern: [\\.\\-_/#A-Za-z0-9]+",
      status: 400,
    });
    expect(
      (await failure(client.send(new CreateLogGroupCommand({ logGroupName: "x".repeat(513) })))).message,
    ).toMatch(/at 'logGroupName' failed to satisfy constraint: Member must have length between 1 and 512$/);
  });
});

describe("log streams", () => {
  test("the agent's stream name is valid; ':' and '*' are not; duplicates and deletes", async () => {
    const name = "train-1-t0/0/run-0";
    await client.send(new CreateLogStreamCommand({ logGroupName: GROUP, logStreamName: name }));
    expect(
      await failure(client.send(new CreateLogStreamCommand({ logGroupName: GROUP, logStreamName: name }))),
    ).toEqual({
      name: "ResourceAlreadyExistsException",
      message: "The specified log stream already exists",
      status: 400,
    });
    for (const bad of ["a:b", "a*"]) {
      expect(
        (await failure(client.send(new CreateLogStreamCommand({ logGroupName: GROUP, logStreamName: bad }))))
          .message,
      ).toBe(
        `1 validation error detected: Value '${bad}' at 'logStreamName' failed to satisfy constraint: ` +
          "Member must satisfy regular expression pattern: [^:*]*",
      );
    }
    expect(
      await failure(client.send(new CreateLogStreamCommand({ logGroupName: "/nope", logStreamName: "x" }))),
    ).toMatchObject({
      name: "ResourceNotFoundException",
      message: "The specified log group does not exist.",
    });
    await client.send(new DeleteLogStreamCommand({ logGroupName: GROUP, logStreamName: name }));
    expect(
      await failure(client.send(new DeleteLogStreamCommand({ logGroupName: GROUP, logStreamName: name }))),
    ).toMatchObject({
      name: "ResourceNotFoundException",
      message: "The specified log stream does not exist.",
    });
  });

  test("describe: by name with prefix and pages (both directions), by last event time, event times", async () => {
    const group = "/describe";
    await client.send(new CreateLogGroupCommand({ logGroupName: group }));
    for (const name of ["job-t0/0/run-0", "job-t0/0/run-1", "job-t1/0/run-0", "other/0/run-0"]) {
      await client.send(new CreateLogStreamCommand({ logGroupName: group, logStreamName: name }));
    }
    await client.send(
      new PutLogEventsCommand({
        logGroupName: group,
        logStreamName: "job-t1/0/run-0",
        logEvents: [
          { timestamp: T0 - 5_000, message: "a" },
          { timestamp: T0 - 1_000, message: "b" },
        ],
      }),
    );
    const page1 = await client.send(
      new DescribeLogStreamsCommand({ logGroupName: group, logStreamNamePrefix: "job-", limit: 2 }),
    );
    expect(page1.logStreams?.map((s) => s.logStreamName)).toEqual(["job-t0/0/run-0", "job-t0/0/run-1"]);
    const page2 = await client.send(
      new DescribeLogStreamsCommand({
        logGroupName: group,
        logStreamNamePrefix: "job-",
        limit: 2,
        nextToken: page1.nextToken,
      }),
    );
    expect(page2.logStreams).toEqual([
      {
        logStreamName: "job-t1/0/run-0",
        creationTime: T0,
        firstEventTimestamp: T0 - 5_000,
        lastEventTimestamp: T0 - 1_000,
        lastIngestionTime: T0,
        uploadSequenceToken: expect.stringMatching(/^\d{56}$/) as string,
        arn: `arn:aws:logs:local:000000000000:log-group:${group}:log-stream:job-t1/0/run-0`,
        storedBytes: 0,
      },
    ]);
    expect(page2.nextToken).toBeUndefined();
    const descending = await client.send(
      new DescribeLogStreamsCommand({ logGroupIdentifier: group, descending: true, limit: 1 }),
    );
    expect(descending.logStreams?.[0]?.logStreamName).toBe("other/0/run-0");
    const byTime = await client.send(
      new DescribeLogStreamsCommand({
        logGroupName: group,
        orderBy: "LastEventTime",
        descending: true,
        limit: 1,
      }),
    );
    expect(byTime.logStreams?.[0]?.logStreamName).toBe("job-t1/0/run-0");
    expect(
      await failure(
        client.send(
          new DescribeLogStreamsCommand({
            logGroupName: group,
            orderBy: "LastEventTime",
            logStreamNamePrefix: "j",
          }),
        ),
      ),
    ).toEqual({
      name: "InvalidParameterException",
      message: "Cannot order by LastEventTime with a logStreamNamePrefix.",
      status: 400,
    });
    expect(
      (await failure(client.send(new DescribeLogStreamsCommand({ logGroupName: group, limit: 51 })))).message,
    ).toMatch(/at 'limit' failed to satisfy constraint: Member must have value less than or equal to 50$/);
    expect(
      (
        await failure(
          client.send(new DescribeLogStreamsCommand({ logGroupName: group, logGroupIdentifier: group })),
        )
      ).name,
    ).toBe("InvalidParameterException");
    // A group ARN identifies the group too.
    const byArn = await client.send(
      new DescribeLogStreamsCommand({
        logGroupIdentifier: `arn:aws:logs:local:000000000000:log-group:${group}`,
        logStreamNamePrefix: "other",
      }),
    );
    expect(byArn.logStreams?.map((s) => s.logStreamName)).toEqual(["other/0/run-0"]);
  });
});

describe("PutLogEvents", () => {
  test("at the limits: 10,000 events, 1,048,576 bytes with 26 per event, 1 MiB events", async () => {
    const s = await newStream();
    expect((await put(s, events(10_000))).rejectedLogEventsInfo).toBeUndefined();
    expect(store.eventsOf(GROUP, s)).toHaveLength(10_000);
    // Exactly the batch limit: 4 events of (262,144 - 26) bytes each.
    const quarter = "q".repeat(262_144 - 26);
    await put(
      s,
      events(4, T0 + 20_000, () => quarter),
    );
    // One event at the largest size, overhead included.
    await put(s, [{ timestamp: T0 + 30_000, message: "m".repeat(1_048_576 - 26) }]);
  });

  test("over the limits: too many events, too many bytes, too large an event", async () => {
    const s = await newStream();
    expect((await failure(put(s, events(10_001)))).message).toMatch(
      /at 'logEvents' failed to satisfy constraint: Member must have length less than or equal to 10000$/,
    );
    const quarter = "q".repeat(262_144 - 26);
    expect(
      await failure(put(s, [...events(4, T0, () => quarter), { timestamp: T0 + 5, message: "x" }])),
    ).toEqual({
      name: "InvalidParameterException",
      message: "Upload too large: 1048603 bytes exceeds limit of 1048576",
      status: 400,
    });
    expect(await failure(put(s, [{ timestamp: T0, message: "m".repeat(1_048_576 - 25) }]))).toEqual({
      name: "InvalidParameterException",
      message: "Log event too large: 1048577 bytes exceeds limit of 1048576",
      status: 400,
    });
    expect((await failure(put(s, []))).message).toMatch(
      /at 'logEvents' failed to satisfy constraint: Member must have length greater than or equal to 1$/,
    );
    expect((await failure(put(s, [{ timestamp: T0, message: "" }]))).message).toMatch(
      /at 'logEvents.1.member.message' failed to satisfy constraint/,
    );
    expect(store.eventsOf(GROUP, s)).toEqual([]);
  });

  test("order and span: out of order is refused; accepted events may span 24 h, not more", async () => {
    const s = await newStream();
    expect(
      await failure(
        put(s, [
          { timestamp: T0, message: "b" },
          { timestamp: T0 - 1, message: "a" },
        ]),
      ),
    ).toEqual({
      name: "InvalidParameterException",
      message: "Log events in a single PutLogEvents request must be in chronological order.",
      status: 400,
    });
    await put(s, [
      { timestamp: T0 - 23 * HOUR, message: "a" },
      { timestamp: T0 + HOUR, message: "b" },
    ]);
    expect(
      await failure(
        put(s, [
          { timestamp: T0 - 23 * HOUR, message: "a" },
          { timestamp: T0 + HOUR + 1, message: "b" },
        ]),
      ),
    ).toEqual({
      name: "InvalidParameterException",
      message: "The batch of log events in a single PutLogEvents request cannot span more than 24 hours.",
      status: 400,
    });
  });

  test("too old (over 14 days) and too new (over 2 hours ahead) are rejected, the rest stored", async () => {
    const s = await newStream();
    const out = await put(s, [
      { timestamp: T0 - 14 * 24 * HOUR - 1, message: "too old 1" },
      { timestamp: T0 - 14 * 24 * HOUR - 1, message: "too old 2" },
      { timestamp: T0 - HOUR, message: "oldest kept" },
      { timestamp: T0 + 2 * HOUR, message: "newest kept" },
      { timestamp: T0 + 2 * HOUR + 1, message: "too new" },
    ]);
    expect(out.rejectedLogEventsInfo).toEqual({ tooOldLogEventEndIndex: 2, tooNewLogEventStartIndex: 4 });
    expect(store.eventsOf(GROUP, s).map((e) => e.message)).toEqual(["oldest kept", "newest kept"]);
    // Exactly 14 days old is still accepted.
    expect(
      (await put(s, [{ timestamp: T0 - 14 * 24 * HOUR, message: "edge" }])).rejectedLogEventsInfo,
    ).toBeUndefined();
  });

  test("missing group or stream", async () => {
    expect(
      await failure(
        client.send(
          new PutLogEventsCommand({ logGroupName: GROUP, logStreamName: "nope", logEvents: events(1) }),
        ),
      ),
    ).toEqual({
      name: "ResourceNotFoundException",
      message: "The specified log stream does not exist.",
      status: 400,
    });
  });
});

describe("GetLogEvents", () => {
  test("from the head, page by page: the forward token comes back unchanged at the end, then moves on new events", async () => {
    const s = await newStream();
    await put(s, events(5));
    const read = (nextToken?: string) =>
      client.send(
        new GetLogEventsCommand({
          logGroupName: GROUP,
          logStreamName: s,
          startFromHead: true,
          limit: 2,
          nextToken,
        }),
      );
    const p1 = await read();
    expect(p1.events?.map((e) => e.message)).toEqual(["line 0", "line 1"]);
    expect(p1.events?.[0]).toEqual({ timestamp: T0, message: "line 0", ingestionTime: T0 });
    const p2 = await read(p1.nextForwardToken);
    const p3 = await read(p2.nextForwardToken);
    expect([...(p2.events ?? []), ...(p3.events ?? [])].map((e) => e.message)).toEqual([
      "line 2",
      "line 3",
      "line 4",
    ]);
    const end = await read(p3.nextForwardToken);
    expect(end.events).toEqual([]);
    expect(end.nextForwardToken).toBe(p3.nextForwardToken);
    await put(
      s,
      events(1, T0 + 10, () => "late"),
    );
    const more = await read(end.nextForwardToken);
    expect(more.events?.map((e) => e.message)).toEqual(["late"]);
    // Backward from the first page's backward token: nothing before the head, token unchanged.
    const back = await client.send(
      new GetLogEventsCommand({ logGroupName: GROUP, logStreamName: s, nextToken: p1.nextBackwardToken }),
    );
    expect(back.events).toEqual([]);
    expect(back.nextBackwardToken).toBe(p1.nextBackwardToken);
  });

  test("from the tail by default, backward with nextBackwardToken; a tail read of an empty stream follows new events", async () => {
    const s = await newStream();
    await put(s, events(5));
    const tail = await client.send(
      new GetLogEventsCommand({ logGroupName: GROUP, logStreamName: s, limit: 2 }),
    );
    expect(tail.events?.map((e) => e.message)).toEqual(["line 3", "line 4"]);
    const before = await client.send(
      new GetLogEventsCommand({
        logGroupName: GROUP,
        logStreamName: s,
        limit: 2,
        nextToken: tail.nextBackwardToken,
      }),
    );
    expect(before.events?.map((e) => e.message)).toEqual(["line 1", "line 2"]);
    const forward = await client.send(
      new GetLogEventsCommand({
        logGroupName: GROUP,
        logStreamName: s,
        startFromHead: true,
        nextToken: before.nextForwardToken,
      }),
    );
    expect(forward.events?.map((e) => e.message)).toEqual(["line 3", "line 4"]);

    const empty = await newStream();
    const none = await client.send(new GetLogEventsCommand({ logGroupName: GROUP, logStreamName: empty }));
    expect(none.events).toEqual([]);
    await put(
      empty,
      events(1, T0, () => "first"),
    );
    const after = await client.send(
      new GetLogEventsCommand({
        logGroupName: GROUP,
        logStreamName: empty,
        startFromHead: true,
        nextToken: none.nextForwardToken,
      }),
    );
    expect(after.events?.map((e) => e.message)).toEqual(["first"]);
  });

  test("time range (start inclusive, end exclusive), events kept in time order across batches, the 1 MB page", async () => {
    const s = await newStream();
    await put(s, [
      { timestamp: T0 + 10, message: "c" },
      { timestamp: T0 + 20, message: "d" },
    ]);
    // A later batch with earlier times is placed by time.
    await put(s, [
      { timestamp: T0, message: "a" },
      { timestamp: T0 + 10, message: "b-after-c" },
    ]);
    const all = await client.send(
      new GetLogEventsCommand({ logGroupName: GROUP, logStreamName: s, startFromHead: true }),
    );
    expect(all.events?.map((e) => e.message)).toEqual(["a", "c", "b-after-c", "d"]);
    const ranged = await client.send(
      new GetLogEventsCommand({
        logGroupName: GROUP,
        logStreamName: s,
        startFromHead: true,
        startTime: T0 + 10,
        endTime: T0 + 20,
      }),
    );
    expect(ranged.events?.map((e) => e.message)).toEqual(["c", "b-after-c"]);

    const big = await newStream();
    const chunk = "z".repeat(262_144 - 26);
    for (let i = 0; i < 3; i++)
      await put(
        big,
        events(4, T0 + i * 10, () => chunk),
      );
    const page = await client.send(
      new GetLogEventsCommand({ logGroupName: GROUP, logStreamName: big, startFromHead: true }),
    );
    expect(page.events).toHaveLength(4);
  });

  test("validation: limit range, bad tokens, a forward token needs startFromHead, startTime after endTime", async () => {
    const s = await newStream();
    await put(s, events(2));
    const base = { logGroupName: GROUP, logStreamName: s };
    expect((await failure(client.send(new GetLogEventsCommand({ ...base, limit: 0 })))).message).toMatch(
      /at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1$/,
    );
    expect((await failure(client.send(new GetLogEventsCommand({ ...base, limit: 10_001 })))).message).toMatch(
      /Member must have value less than or equal to 10000$/,
    );
    expect(await failure(client.send(new GetLogEventsCommand({ ...base, nextToken: "garbage" })))).toEqual({
      name: "InvalidParameterException",
      message: "The specified nextToken is invalid.",
      status: 400,
    });
    const first = await client.send(new GetLogEventsCommand({ ...base, startFromHead: true, limit: 1 }));
    expect(
      (await failure(client.send(new GetLogEventsCommand({ ...base, nextToken: first.nextForwardToken }))))
        .message,
    ).toBe("startFromHead must be true when nextToken is a nextForwardToken");
    expect(
      (await failure(client.send(new GetLogEventsCommand({ ...base, startTime: T0 + 1, endTime: T0 })))).name,
    ).toBe("InvalidParameterException");
    expect(
      await failure(client.send(new GetLogEventsCommand({ logGroupName: GROUP, logStreamName: "missing" }))),
    ).toMatchObject({ name: "ResourceNotFoundException" });
  });
});

describe("FilterLogEvents", () => {
  test("several streams interleaved by time, paged with nextToken; by names or by prefix", async () => {
    const a = await newStream("filter-a");
    const b = await newStream("filter-b");
    await put(a, [
      { timestamp: T0 + 1, message: "a1" },
      { timestamp: T0 + 3, message: "a3" },
      { timestamp: T0 + 5, message: "a5" },
    ]);
    await put(b, [
      { timestamp: T0 + 2, message: "b2" },
      { timestamp: T0 + 4, message: "b4" },
    ]);
    const seen: string[] = [];
    let nextToken: string | undefined;
    let pages = 0;
    do {
      const page = await client.send(
        new FilterLogEventsCommand({ logGroupName: GROUP, logStreamNames: [a, b], limit: 2, nextToken }),
      );
      pages++;
      for (const e of page.events ?? []) seen.push(`${e.logStreamName === a ? "A" : "B"}:${e.message}`);
      nextToken = page.nextToken;
    } while (nextToken !== undefined);
    expect(seen).toEqual(["A:a1", "B:b2", "A:a3", "B:b4", "A:a5"]);
    expect(pages).toBe(3);
    const one = await client.send(new FilterLogEventsCommand({ logGroupName: GROUP, logStreamNames: [b] }));
    expect(one.events?.[0]).toEqual({
      logStreamName: b,
      timestamp: T0 + 2,
      message: "b2",
      ingestionTime: T0,
      eventId: expect.any(String) as string,
    });
    const prefixed = await client.send(
      new FilterLogEventsCommand({ logGroupName: GROUP, logStreamNamePrefix: "filter-b", startTime: T0 + 3 }),
    );
    expect(prefixed.events?.map((e) => e.message)).toEqual(["b4"]);
    const ranged = await client.send(
      new FilterLogEventsCommand({
        logGroupName: GROUP,
        logStreamNames: [a, b],
        startTime: T0 + 2,
        endTime: T0 + 4,
      }),
    );
    expect(ranged.events?.map((e) => e.message)).toEqual(["b2", "a3"]);
  });

  test("filter patterns: terms, phrases, any-of, exclusions; structured patterns are refused clearly", async () => {
    const s = await newStream("pattern");
    await put(s, [
      { timestamp: T0, message: '{"stream":"stderr","text":"ERROR disk full"}' },
      { timestamp: T0 + 1, message: '{"stream":"stdout","text":"epoch 1 done"}' },
      { timestamp: T0 + 2, message: '{"stream":"stderr","text":"WARN retrying"}' },
      { timestamp: T0 + 3, message: '{"stream":"stderr","text":"ERROR exiting"}' },
    ]);
    const match = async (filterPattern: string) =>
      (
        await client.send(
          new FilterLogEventsCommand({ logGroupName: GROUP, logStreamNames: [s], filterPattern }),
        )
      ).events?.map((e) => (e.timestamp ?? 0) - T0);
    expect(await match("ERROR")).toEqual([0, 3]);
    expect(await match("ERROR disk")).toEqual([0]);
    expect(await match('"epoch 1"')).toEqual([1]);
    expect(await match("?WARN ?disk")).toEqual([0, 2]);
    expect(await match("ERROR -exiting")).toEqual([0]);
    expect(await match("error")).toEqual([]);
    for (const [pattern, message] of [
      [
        '{ $.stream = "stderr" }',
        /filterPattern: JSON patterns are not supported by the embedded CloudWatch Logs/,
      ],
      ["[level, text]", /space-delimited patterns are not supported/],
      ['stream:"x"', /^Invalid character\(s\) in term 'stream:"x"'/],
    ] as const) {
      const error = await failure(
        client.send(
          new FilterLogEventsCommand({ logGroupName: GROUP, logStreamNames: [s], filterPattern: pattern }),
        ),
      );
      expect(error.name).toBe("InvalidParameterException");
      expect(error.message).toMatch(message);
    }
  });

  test("validation: names and prefix together, over 100 names, a missing stream", async () => {
    expect(
      await failure(
        client.send(
          new FilterLogEventsCommand({
            logGroupName: GROUP,
            logStreamNames: ["a"],
            logStreamNamePrefix: "a",
          }),
        ),
      ),
    ).toEqual({
      name: "InvalidParameterException",
      message: "logStreamNames and logStreamNamePrefix are mutually exclusive parameters.",
      status: 400,
    });
    const names = Array.from({ length: 101 }, (_, i) => `n${i}`);
    expect(
      (await failure(client.send(new FilterLogEventsCommand({ logGroupName: GROUP, logStreamNames: names }))))
        .message,
    ).toMatch(/at 'logStreamNames' failed to satisfy constraint: Member must have length between 1 and 100$/);
    expect(
      await failure(
        client.send(new FilterLogEventsCommand({ logGroupName: GROUP, logStreamNames: ["missing"] })),
      ),
    ).toMatchObject({
      name: "ResourceNotFoundException",
      message: "The specified log stream does not exist.",
    });
  });
});

describe("the store's memory bound", () => {
  test("past maxStoredBytes the least recently written streams go first", () => {
    let nowMs = T0;
    const small = new LogsStore({ clock: () => nowMs, maxStoredBytes: 100 });
    small.createLogGroup("g");
    for (const s of ["old", "new"]) small.createLogStream("g", s);
    small.putLogEvents("g", "old", [{ timestamp: T0, message: "o".repeat(60) }]);
    nowMs += 1;
    small.putLogEvents("g", "new", [{ timestamp: T0, message: "n".repeat(60) }]);
    expect(() => small.eventsOf("g", "old")).toThrow("The specified log stream does not exist.");
    expect(small.eventsOf("g", "new")).toHaveLength(1);
    // Alone over the bound, a stream loses its oldest events.
    small.putLogEvents("g", "new", [{ timestamp: T0 + 1, message: "m".repeat(60) }]);
    expect(small.eventsOf("g", "new").map((e) => e.message[0])).toEqual(["m"]);
    expect(small.storedBytes()).toBe(60);
  });
});

describe("with auth (the runtime's agents sign their calls)", () => {
  test("a known signature passes and authorize sees the group and stream ARNs; unknown keys and denials are refused", async () => {
    const seen: string[][] = [];
    const guarded = await startLogsServer({
      logGroups: [GROUP],
      logger: { warn: () => {} },
      auth: {
        credentials: [{ accessKeyId: "agent-key", secretAccessKey: "agent-secret", principal: "agent" }],
        authorize: (_principal, request) => {
          seen.push([request.action, ...request.resources]);
          return request.operation === "DeleteLogGroup" ? "agents may not delete log groups" : undefined;
        },
      },
    });
    const as = (accessKeyId: string, secretAccessKey: string) =>
      new CloudWatchLogsClient({
        endpoint: guarded.endpoint,
        region: "local",
        credentials: { accessKeyId, secretAccessKey },
        maxAttempts: 1,
      });
    const agent = as("agent-key", "agent-secret");
    const stranger = as("other-key", "other-secret");
    try {
      await agent.send(new CreateLogStreamCommand({ logGroupName: GROUP, logStreamName: "s/0/run-0" }));
      expect(seen).toEqual([
        [
          "logs:CreateLogStream",
          `arn:aws:logs:local:000000000000:log-group:${GROUP}`,
          `arn:aws:logs:local:000000000000:log-group:${GROUP}:log-stream:s/0/run-0`,
        ],
      ]);
      expect((await failure(agent.send(new DeleteLogGroupCommand({ logGroupName: GROUP })))).name).toBe(
        "AccessDeniedException",
      );
      expect((await failure(stranger.send(new DescribeLogGroupsCommand({})))).name).toBe(
        "UnrecognizedClientException",
      );
    } finally {
      agent.destroy();
      stranger.destroy();
      await guarded.close();
    }
  });
});
