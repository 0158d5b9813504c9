/**
 * A run's last lines (the dashboard's tail, `cairn dashboard`'s) against CloudWatch Logs that
 * splits pages by time: read backward, GetLogEvents may answer a short or empty page while older
 * events remain, for as long as its backward token moves (the API reference; boto3 and other SDKs'
 * users meet it most when a stream's newest events are older than the first window). The embedded
 * endpoint's `backwardPageWindowMs` pages that way; the readers, over the real SDK and HTTP, read
 * back until they have their lines. A stream's own end, and a missing stream, still end the read.
 */
import {
  CloudWatchLogsClient,
  CreateLogStreamCommand,
  PutLogEventsCommand,
} from "@aws-sdk/client-cloudwatch-logs";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { encodeLogMessage, kernelLogStreamName } from "../agent/log-events.ts";
import { cloudWatchLogReader } from "../bin/cli/kernel-log-reader.ts";
import { awsDashboardDeps } from "../dashboard/aws.ts";
import { parseLogsFaults } from "../local/logs/faults.ts";
import { startLogsServer, type LogsServer } from "../local/logs/index.ts";

const HOUR_MS = 3_600_000;
const GROUP = "/cairn/kernels";
const NOW = Date.UTC(2026, 10, 21, 12, 0, 0);
let now = NOW;
let server: LogsServer;
let client: CloudWatchLogsClient;

beforeAll(async () => {
  server = await startLogsServer({
    clock: () => now,
    // One hour of event time per page read backward.
    backwardPageWindowMs: HOUR_MS,
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

/** A run's stream holding `lines` lines written `hoursAgo` hours ago, a minute apart. */
async function runWithLines(sessionId: string, lines: number, hoursAgo: number): Promise<string> {
  const stream = kernelLogStreamName(sessionId, 0, 0);
  await client.send(new CreateLogStreamCommand({ logGroupName: GROUP, logStreamName: stream }));
  const start = now - hoursAgo * HOUR_MS;
  await client.send(
    new PutLogEventsCommand({
      logGroupName: GROUP,
      logStreamName: stream,
      logEvents: Array.from({ length: lines }, (_, i) => ({
        timestamp: start + i * 60_000,
        message: encodeLogMessage({ stream: "stdout", text: `line ${i}` }),
      })),
    }),
  );
  return stream;
}

describe("the last lines of a run whose output is hours old", () => {
  test("the fault switch is checked as the others: an integer of at least 1", () => {
    expect(parseLogsFaults({ backwardPageWindowMs: 60_000 }, "f")).toEqual({ backwardPageWindowMs: 60_000 });
    expect(() => parseLogsFaults({ backwardPageWindowMs: 0 }, "f")).toThrow(
      "f.backwardPageWindowMs: must be an integer of at least 1 (ms), got 0",
    );
  });

  test("the CLI's reader reads back past the empty pages of the hours without output", async () => {
    // Written five hours ago, over two hours: the newest window holding any is four hours back.
    const stream = await runWithLines("tail-cli", 150, 5);
    const reader = cloudWatchLogReader(client, GROUP, "test");
    const tail = await reader.tail(stream, 20);
    expect(tail?.events).toHaveLength(20);
    expect(tail!.events.at(-1)!.message).toBe(encodeLogMessage({ stream: "stdout", text: "line 149" }));
    expect(tail!.events[0]!.message).toBe(encodeLogMessage({ stream: "stdout", text: "line 130" }));
    // Following from the tail's token starts after the newest line.
    now += 60_000;
    await client.send(
      new PutLogEventsCommand({
        logGroupName: GROUP,
        logStreamName: stream,
        logEvents: [{ timestamp: now, message: encodeLogMessage({ stream: "stdout", text: "line 150" }) }],
      }),
    );
    const next = await reader.forward(stream, tail!.nextForwardToken);
    expect(next.events.map((e) => e.message)).toEqual([
      encodeLogMessage({ stream: "stdout", text: "line 150" }),
    ]);
  });

  test("the dashboard reads back as far, and a stream holding fewer lines than asked gives them all", async () => {
    const stream = await runWithLines("tail-dash", 5, 3);
    expect(stream).toBe(kernelLogStreamName("tail-dash", 0, 0));
    const dashboard = awsDashboardDeps({
      where: "test",
      region: "local",
      credentials: { accessKeyId: "local", secretAccessKey: "local" },
      endpoints: { logs: server.endpoint },
      tableName: "unused",
      eventBusName: "unused",
      kernelLogGroupName: GROUP,
      executions: "local",
    });
    try {
      const tail = await dashboard.deps.logs!.tail("tail-dash", 0, 0, 50);
      expect(tail?.lines.map((l) => l.message)).toEqual(["line 0", "line 1", "line 2", "line 3", "line 4"]);
      expect(await dashboard.deps.logs!.tail("no-such-session", 0, 0, 50)).toBeUndefined();
    } finally {
      dashboard.close();
    }
  });
});
