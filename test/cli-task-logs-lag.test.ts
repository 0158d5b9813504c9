/**
 * A task's log follower, and `cairn logs`' wait before it reads a run that just ended, against
 * CloudWatch Logs that lags reads behind puts (the embedded endpoint's `visibilityDelayMs`, the
 * real SDK over HTTP): the run's last lines, shipped before its end was reported but not
 * readable when the end is seen, are still read, because the reader reads on until it has read
 * as many events as the run's agent said its stream holds (`logEventCount`), at most `maxWaitMs`
 * after the end, or, without a count, for `settleMs` after it. One simulated clock drives the
 * endpoint's visibility and the readers' sleeps.
 */
import { CloudWatchLogsClient, PutLogEventsCommand } from "@aws-sdk/client-cloudwatch-logs";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { encodeLogMessage, kernelLogStreamName } from "../agent/log-events.ts";
import { cloudWatchLogReader } from "../bin/cli/kernel-log-reader.ts";
import {
  awaitRunOutput,
  followTaskLog,
  readRunLines,
  sharedStreamListing,
  type TaskLogEvent,
} from "../bin/cli/task-logs.ts";
import { LOG_MAX_WAIT_MS, LOG_SETTLE_MS } from "../bin/cli/commands/logs.ts";
import { newSession } from "../functions/core/sessions.ts";
import { parseSpecText } from "../functions/core/spec-text.ts";
import type { SessionStatus } from "../functions/core/status.ts";
import type { RunRecord, SessionWithKernels } from "../functions/core/model.ts";
import { startLogsServer, type LogsServer } from "../local/logs/index.ts";

const T0 = Date.UTC(2026, 10, 21, 12, 0, 0);
const GROUP = "/cairn/kernels";
/** Twice the CLI's settle time: a reader that stops LOG_SETTLE_MS after the end misses the tail. */
const DELAY_MS = 4_000;
const POLL_MS = 250;

let now = T0;
let server: LogsServer;
let client: CloudWatchLogsClient;

beforeAll(async () => {
  server = await startLogsServer({
    clock: () => now,
    visibilityDelayMs: DELAY_MS,
    logGroups: [GROUP],
    logger: { warn: () => {} },
  });
  client = new CloudWatchLogsClient({
    endpoint: server.endpoint,
    region: "local",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
});

afterAll(async () => {
  client.destroy();
  await server?.close();
});

function session(sid: string, status: SessionStatus, logEventCount?: number): SessionWithKernels {
  const fresh = newSession(sid, parseSpecText("name: lag\ncommand: [/bin/true]\n"), T0);
  return {
    session: { ...fresh.session, status },
    kernels: [
      {
        ...fresh.kernels[0]!,
        status: status === "TERMINATED" ? "TERMINATED" : "RUNNING",
        agentId: "agent-1",
        ...(logEventCount !== undefined ? { logEventCount } : {}),
      },
    ],
  };
}

async function put(streamName: string, ...texts: string[]): Promise<void> {
  await client.send(
    new PutLogEventsCommand({
      logGroupName: GROUP,
      logStreamName: streamName,
      logEvents: texts.map((text) => ({
        timestamp: now,
        message: encodeLogMessage({ stream: "stdout", text }),
      })),
    }),
  );
}

interface FollowCase {
  /** Names the session (each follow has its own). */
  readonly name: string;
  readonly settleMs: number;
  readonly maxWaitMs?: number;
  /** The count the run's end reports (on the kernel, or on the run's record with `movesOn`). */
  readonly count?: number;
  /** The session moves on to its next run (cancelled before it starts) instead of ending. */
  readonly movesOn?: boolean;
}

/**
 * Follows a run that writes "early", then "last" just before its end is seen; returns what the
 * follower handed on, and how long (simulated) after the end it stopped.
 */
async function follow(c: FollowCase): Promise<{ readonly seen: string[]; readonly readForMs: number }> {
  const sid = `lag-${c.name}`;
  const stream = kernelLogStreamName(sid, 0, 0);
  server.store.createLogStream(GROUP, stream);
  const reader = cloudWatchLogReader(client, GROUP, "the test endpoint");
  let current = session(sid, "RUNNING");
  let runs: RunRecord[] = [];
  let endedAtMs = Number.NaN;
  let polls = 0;
  const events: TaskLogEvent[] = [];
  const sleep = async (ms: number) => {
    now += ms;
    polls++;
    if (polls === 1) await put(stream, "early");
    // The agent ships the run's last lines, then reports its end: seen at the next look, when
    // "early" has long been readable.
    if (polls === 2 + DELAY_MS / POLL_MS) {
      await put(stream, "last");
      endedAtMs = now;
      const ended = session(sid, "TERMINATED", c.count);
      if (c.movesOn) {
        const next = session(sid, "CANCELLED");
        current = {
          session: { ...next.session, runIndex: 1 },
          kernels: [{ ...next.kernels[0]!, status: "CANCELLED", agentId: undefined }],
        };
        runs = [
          {
            sessionId: sid,
            runIndex: 0,
            name: sid,
            outcome: "FAILED",
            endedAtMs: now,
            decision: "retry",
            reason: "retried",
            kernels: [{ ...ended.kernels[0]!, status: "TERMINATED" }],
          },
        ];
      } else {
        current = ended;
      }
    }
  };
  const ran = await followTaskLog(
    "lag",
    { index: 0, sessionId: sid, kernelIndex: 0 },
    {
      sessions: { get: () => Promise.resolve(current) },
      store: { listRuns: () => Promise.resolve(runs) },
      logs: reader,
      streams: sharedStreamListing(reader, `${sid}/0/run-`, () => now, 0),
      pace: () => Promise.resolve(),
      sleep,
      nowMs: () => now,
      pollMs: POLL_MS,
      settleMs: c.settleMs,
      maxWaitMs: c.maxWaitMs ?? LOG_MAX_WAIT_MS,
      announceWaiting: false,
    },
    (e) => events.push(e),
  );
  expect(ran).toBe(true);
  return {
    seen: events.map((e) => (e.kind === "line" ? e.line.text : `note: ${e.text}`)),
    readForMs: now - endedAtMs,
  };
}

describe("following a run while CloudWatch Logs lags", () => {
  test("without a count: reading on for settleMs after the run's end gets its last lines", async () => {
    expect((await follow({ name: "settle-long", settleMs: DELAY_MS })).seen).toEqual(["early", "last"]);
  });

  test("without a count: stopping at the first read after the end loses them (what settleMs is for)", async () => {
    expect((await follow({ name: "settle-0", settleMs: 0 })).seen).toEqual(["early"]);
  });

  test("without a count, a lag longer than the CLI's settle time loses the run's tail", async () => {
    expect((await follow({ name: "settle-cli", settleMs: LOG_SETTLE_MS })).seen).toEqual(["early"]);
  });

  test("with the run's count, every line is read, and reading stops once that many were read", async () => {
    const { seen, readForMs } = await follow({ name: "count", settleMs: LOG_SETTLE_MS, count: 2 });
    expect(seen).toEqual(["early", "last"]);
    // The lag, not the bound, decided when it stopped.
    expect(readForMs).toBeGreaterThanOrEqual(DELAY_MS - POLL_MS);
    expect(readForMs).toBeLessThan(LOG_MAX_WAIT_MS);
  });

  test("the count of a run the session has moved on from is read from the run's record", async () => {
    const { seen } = await follow({ name: "record", settleMs: LOG_SETTLE_MS, count: 2, movesOn: true });
    expect(seen).toEqual(["early", "last"]);
  });

  test("a count not reached within maxWaitMs: reading stops then, with a note of what was not read", async () => {
    // 3 events said, 2 put: one never becomes readable.
    const { seen, readForMs } = await follow({
      name: "bound",
      settleMs: LOG_SETTLE_MS,
      maxWaitMs: 10_000,
      count: 3,
    });
    expect(seen).toEqual([
      "early",
      "last",
      "note: run 0: 1 of its 3 log events were not readable yet (CloudWatch Logs shows events a while after they are written); `cairn logs` later shows them",
    ]);
    expect(readForMs).toBeGreaterThanOrEqual(10_000);
  });

  test("a run that wrote nothing and says so (count 0) ends at once, with no wait", async () => {
    const sid = "lag-silent";
    const events: TaskLogEvent[] = [];
    const reader = cloudWatchLogReader(client, GROUP, "the test endpoint");
    const start = now;
    await followTaskLog(
      "lag",
      { index: 0, sessionId: sid, kernelIndex: 0 },
      {
        sessions: { get: () => Promise.resolve(session(sid, "TERMINATED", 0)) },
        store: { listRuns: () => Promise.resolve([]) },
        logs: reader,
        streams: sharedStreamListing(reader, `${sid}/0/run-`, () => now, 0),
        pace: () => Promise.resolve(),
        sleep: (ms) => Promise.resolve(void (now += ms)),
        nowMs: () => now,
        pollMs: POLL_MS,
        settleMs: LOG_SETTLE_MS,
        maxWaitMs: LOG_MAX_WAIT_MS,
        announceWaiting: false,
      },
      (e) => events.push(e),
    );
    expect(events).toEqual([{ kind: "note", task: 0, text: "run 0 on agent-1: no output" }]);
    expect(now).toBe(start);
  });
});

/**
 * `cairn logs` of a run that ended just now: awaitRunOutput, then one read of the stream.
 * The run put "a" and "b" at `endedAtMs`, which CloudWatch Logs shows DELAY_MS later.
 */
async function readJustEnded(
  name: string,
  count: number | undefined,
  maxWaitMs = LOG_MAX_WAIT_MS,
): Promise<{ readonly lines: string[]; readonly read: number; readonly waitedMs: number }> {
  const streamName = kernelLogStreamName(`read-${name}`, 0, 0);
  server.store.createLogStream(GROUP, streamName);
  await put(streamName, "a", "b");
  const endedAtMs = now;
  const reader = cloudWatchLogReader(client, GROUP, "the test endpoint");
  const exists = await awaitRunOutput(
    {
      streamName,
      // Not in the listing taken before the wait.
      exists: false,
      endedAtMs,
      ...(count !== undefined ? { logEventCount: count } : {}),
    },
    {
      logs: reader,
      pace: () => Promise.resolve(),
      sleep: (ms) => Promise.resolve(void (now += ms)),
      nowMs: () => now,
      pollMs: POLL_MS,
      settleMs: LOG_SETTLE_MS,
      maxWaitMs,
    },
  );
  const waitedMs = now - endedAtMs;
  const lines: string[] = [];
  const run = { task: 0, sessionId: `read-${name}`, kernelIndex: 0, runIndex: 0, streamName };
  const read = exists
    ? await readRunLines([run], reader, (e) => void (e.kind === "line" && lines.push(e.line.text)))
    : new Map<string, number>();
  return { lines, read: read.get(streamName) ?? 0, waitedMs };
}

describe("cairn logs of a run that ended moments ago, while CloudWatch Logs lags", () => {
  test("with the run's count: waits until its stream shows that many events, then reads them all", async () => {
    const { lines, read, waitedMs } = await readJustEnded("count", 2);
    expect(lines).toEqual(["a", "b"]);
    expect(read).toBe(2);
    expect(waitedMs).toBeGreaterThanOrEqual(DELAY_MS);
    expect(waitedMs).toBeLessThan(LOG_MAX_WAIT_MS);
  });

  test("without a count: waits the settle time only, and a longer lag loses lines", async () => {
    const { lines, waitedMs } = await readJustEnded("settle", undefined);
    expect(waitedMs).toBe(LOG_SETTLE_MS);
    expect(lines).toEqual([]);
  });

  test("a count not reached: waits maxWaitMs at most, then reads what there is", async () => {
    const { lines, read, waitedMs } = await readJustEnded("bound", 3, 6_000);
    expect(lines).toEqual(["a", "b"]);
    expect(read).toBe(2);
    expect(waitedMs).toBe(6_000);
  });
});
