/**
 * A task's log follower against CloudWatch Logs that lags reads behind puts (the embedded
 * endpoint's `visibilityDelayMs`, the real SDK over HTTP): the run's last lines, shipped before
 * its end was reported but not readable when the follower sees the end, are still read, because
 * the follower reads on for `settleMs` after the end. One simulated clock drives the endpoint's
 * visibility and the follower's sleeps.
 */
import { CloudWatchLogsClient, PutLogEventsCommand } from "@aws-sdk/client-cloudwatch-logs";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { encodeLogMessage, kernelLogStreamName } from "../agent/log-events.ts";
import { cloudWatchLogReader } from "../bin/cli/kernel-log-reader.ts";
import { followTaskLog, sharedStreamListing, type TaskLogEvent } from "../bin/cli/task-logs.ts";
import { newSession } from "../functions/core/sessions.ts";
import { parseSpecText } from "../functions/core/spec-text.ts";
import type { SessionStatus } from "../functions/core/status.ts";
import type { SessionWithKernels } from "../functions/core/model.ts";
import { startLogsServer, type LogsServer } from "../local/logs/index.ts";

const T0 = Date.UTC(2026, 10, 21, 12, 0, 0);
const GROUP = "/cairn/kernels";
const DELAY_MS = 1_500;
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

function session(sid: string, status: SessionStatus): SessionWithKernels {
  const fresh = newSession(sid, parseSpecText("name: lag\ncommand: [/bin/true]\n"), T0);
  return {
    session: { ...fresh.session, status },
    kernels: [
      {
        ...fresh.kernels[0]!,
        status: status === "TERMINATED" ? "TERMINATED" : "RUNNING",
        agentId: "agent-1",
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

/** Follows a run that writes "early", then "last" just before its end is seen; returns the lines. */
async function follow(settleMs: number): Promise<string[]> {
  // A session of its own for each follow.
  const sid = `lag-${settleMs}`;
  const stream = kernelLogStreamName(sid, 0, 0);
  server.store.createLogStream(GROUP, stream);
  const reader = cloudWatchLogReader(client, GROUP, "the test endpoint");
  let current = session(sid, "RUNNING");
  let polls = 0;
  const events: TaskLogEvent[] = [];
  const sleep = async (ms: number) => {
    now += ms;
    polls++;
    if (polls === 1) await put(stream, "early");
    // The agent ships the run's last lines, then reports its end: seen at the next look.
    if (polls === 8) {
      await put(stream, "last");
      current = session(sid, "TERMINATED");
    }
  };
  const ran = await followTaskLog(
    "lag",
    { index: 0, sessionId: sid, kernelIndex: 0 },
    {
      sessions: { get: () => Promise.resolve(current) },
      store: { listRuns: () => Promise.resolve([]) },
      logs: reader,
      streams: sharedStreamListing(reader, `${sid}/0/run-`, () => now, 0),
      pace: () => Promise.resolve(),
      sleep,
      nowMs: () => now,
      pollMs: POLL_MS,
      settleMs,
      announceWaiting: false,
    },
    (e) => events.push(e),
  );
  expect(ran).toBe(true);
  return events.map((e) => (e.kind === "line" ? e.line.text : `note: ${e.text}`));
}

describe("following a run while CloudWatch Logs lags", () => {
  test("reading on for settleMs after the run's end gets its last lines", async () => {
    expect(await follow(DELAY_MS)).toEqual(["early", "last"]);
  });

  test("stopping at the first read after the end loses them (what settleMs is for)", async () => {
    expect(await follow(0)).toEqual(["early"]);
  });
});
