/**
 * The agent's log shipper against the embedded CloudWatch Logs over HTTP (real SDK client), fed by
 * a real LocalAgent running real kernels where output is involved, and by a plain log source
 * where the test needs lines no kernel can write (times a day apart, a 600 KB line). The server's
 * fault hook sees every request (batch sizes) and injects throttling and 5xx answers.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  CloudWatchLogsClient,
  CreateLogGroupCommand,
  DeleteLogStreamCommand,
  GetLogEventsCommand,
  PutLogEventsCommand,
} from "@aws-sdk/client-cloudwatch-logs";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { LocalAgent, type KernelLaunch, type KernelReport, type LogLine } from "../agent/index.ts";
import {
  decodeLogMessage,
  EVENT_OVERHEAD_BYTES,
  kernelLogStreamName,
  LinePartJoiner,
  LOCAL_KERNEL_LOG_GROUP,
} from "../agent/log-events.ts";
import {
  isRetryableAwsError,
  LogShipper,
  type LogShipperOptions,
  type LogSource,
} from "../agent/log-shipper.ts";
import type { PutEventsRequestEntry } from "@aws-sdk/client-eventbridge";
import { KernelStatusChangedDetailSchema } from "../functions/core/agent-events.ts";
import { DetailType } from "../functions/core/events.ts";
import { signatureMatches } from "../functions/topology/agent-signature.ts";
import { fakeHost, SIGNING_KEY } from "./support/agent-host.ts";
import { until } from "./support/until.ts";
import {
  LogsStore,
  ServiceUnavailableError,
  startLogsServer,
  ThrottlingError,
  type LocalLogsError,
  type LogsServer,
} from "../local/logs/index.ts";

const GROUP = LOCAL_KERNEL_LOG_GROUP;
const NODE = process.execPath;
const workRoot = mkdtempSync(join(tmpdir(), "cairn-shipper-test-"));

/** The server's clock: line times in the tests are near it, so none is too old or too new. */
let serverNowMs = Date.now();
let server: LogsServer;
let client: CloudWatchLogsClient;
/** Every PutLogEvents the server received: stream, event count, bytes as AWS counts them, time span. */
const puts: { stream: string; events: number; bytes: number; spanMs: number }[] = [];
/** Set by a test: the fault to answer with, per operation call. */
let fault: ((operation: string) => LocalLogsError | undefined) | undefined;

beforeAll(async () => {
  server = await startLogsServer({
    store: new LogsStore({ clock: () => serverNowMs }),
    logGroups: [GROUP],
    logger: { warn: () => {} },
    fault: (operation, input) => {
      const injected = fault?.(operation);
      if (injected === undefined && operation === "PutLogEvents") {
        const events = input.logEvents as { timestamp: number; message: string }[];
        puts.push({
          stream: input.logStreamName as string,
          events: events.length,
          bytes: events.reduce((sum, e) => sum + Buffer.byteLength(e.message) + EVENT_OVERHEAD_BYTES, 0),
          spanMs: events.at(-1)!.timestamp - events[0]!.timestamp,
        });
      }
      return injected;
    },
  });
  client = new CloudWatchLogsClient({
    endpoint: server.endpoint,
    region: "local",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
    // The shipper's own retries are under test, not the SDK's.
    maxAttempts: 1,
  });
});

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  fault = undefined;
  puts.length = 0;
  serverNowMs = Date.now();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

afterAll(async () => {
  client.destroy();
  await server.close();
  rmSync(workRoot, { recursive: true, force: true });
});

function newShipper(options: Partial<LogShipperOptions> = {}) {
  const warnings: string[] = [];
  const shipper = new LogShipper({
    client,
    logGroupName: GROUP,
    clock: Date.now,
    warn: (message) => warnings.push(message),
    // Tests flush explicitly; the timer must not send behind their back.
    flushIntervalMs: 60_000,
    retryBaseMs: 5,
    retryMaxMs: 20,
    ...options,
  });
  cleanups.push(() => shipper.close());
  return { shipper, warnings };
}

/** A log source the test drives by hand (what LocalAgent.onLog offers). */
function manualSource(): LogSource & { emit(line: LogLine): void } {
  const listeners = new Set<(line: LogLine) => void>();
  return {
    onLog: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    emit: (line) => listeners.forEach((l) => l(line)),
  };
}

let sessions = 0;
const nextSession = () => `ship-${++sessions}-${process.pid}`;

function line(sessionId: string, text: string, atMs: number, stream: LogLine["stream"] = "stdout"): LogLine {
  return { sessionId, kernelIndex: 0, runIndex: 0, stream, text, atMs };
}

/** Every event of a run's stream, from the head, through the SDK. */
async function readStream(sessionId: string, kernelIndex = 0, runIndex = 0) {
  const out: { timestamp: number; message: string }[] = [];
  let nextToken: string | undefined;
  for (;;) {
    const page = await client.send(
      new GetLogEventsCommand({
        logGroupName: GROUP,
        logStreamName: kernelLogStreamName(sessionId, kernelIndex, runIndex),
        startFromHead: true,
        nextToken,
      }),
    );
    for (const e of page.events ?? []) out.push({ timestamp: e.timestamp!, message: e.message! });
    if (page.nextForwardToken === nextToken) return out;
    nextToken = page.nextForwardToken;
  }
}

/** The stream's lines as a reader sees them: split parts joined. */
async function readLines(sessionId: string) {
  const name = kernelLogStreamName(sessionId, 0, 0);
  const joiner = new LinePartJoiner();
  const lines = (await readStream(sessionId)).flatMap((e) =>
    joiner.push(name, e.timestamp, decodeLogMessage(e.message)),
  );
  const rest = joiner.end(name);
  return rest === undefined ? lines : [...lines, rest];
}

/** A real agent whose kernels' lines are also recorded in the order the agent heard them. */
function newAgent() {
  const reports: KernelReport[] = [];
  const heard: LogLine[] = [];
  const agent = new LocalAgent({
    id: "agent-ship",
    capacity: { cpu: 4, memoryMiB: 4096 },
    workRoot,
    warn: () => {},
    onReport: (r) => reports.push(r),
  });
  agent.onLog((l) => heard.push(l));
  cleanups.push(() => agent.shutdown({ graceMs: 0 }));
  const run = async (script: string): Promise<KernelLaunch> => {
    const launch: KernelLaunch = {
      sessionId: nextSession(),
      kernelIndex: 0,
      numKernels: 1,
      runIndex: 0,
      command: [NODE, "-e", script],
      env: {},
      cpu: 1,
      memoryMiB: 256,
    };
    await agent.prepare(launch);
    await agent.start(launch);
    const deadline = Date.now() + 20_000;
    while (!reports.some((r) => r.sessionId === launch.sessionId && r.status === "TERMINATED")) {
      if (Date.now() > deadline) throw new Error(`kernel did not end: ${JSON.stringify(reports)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    return launch;
  };
  return { agent, heard, run };
}

describe("a real kernel's output", () => {
  test("both streams end up in the run's stream, in the order the agent heard them, at their own times", async () => {
    const { agent, heard, run } = newAgent();
    const { shipper } = newShipper();
    shipper.attach(agent);
    const launch = await run(`
      for (let i = 0; i < 30; i++) {
        process.stdout.write("out " + i + "\\n");
        if (i % 3 === 0) process.stderr.write("err " + i + "\\n");
      }
      process.stdout.write("no newline at the end");`);
    await shipper.flush(launch.sessionId, 0, 0);
    const expected = heard.filter((l) => l.sessionId === launch.sessionId);
    expect(expected).toHaveLength(41);
    const shipped = await readStream(launch.sessionId);
    expect(shipped.map((e) => ({ ...JSON.parse(e.message), timestamp: e.timestamp }) as unknown)).toEqual(
      expected.map((l) => ({ stream: l.stream, text: l.text, timestamp: l.atMs })),
    );
    expect(
      shipped.filter((e) => e.message.includes('"stderr"')).map((e) => decodeLogMessage(e.message).text),
    ).toEqual(Array.from({ length: 10 }, (_, i) => `err ${i * 3}`));
    expect(shipper.stats()).toMatchObject({
      eventsSent: 41,
      streamsCreated: 1,
      linesDropped: 0,
      bufferedEvents: 0,
      bufferedBytes: 0,
    });
  });

  test("a line over the largest event size is split into parts that join back to the line", async () => {
    const { agent, heard, run } = newAgent();
    const { shipper } = newShipper({ maxEventBytes: 4096 });
    shipper.attach(agent);
    // Multi-byte and escaped characters, so parts are cut by their bytes as sent.
    const launch = await run(`process.stdout.write("é\\"\\t".repeat(3000) + "\\nshort\\n");`);
    await shipper.flush(launch.sessionId, 0, 0);
    const long = heard.find((l) => l.sessionId === launch.sessionId)!.text;
    expect(long).toBe('é"\t'.repeat(3000));
    const events = await readStream(launch.sessionId);
    expect(events.length).toBeGreaterThan(3);
    for (const e of events)
      expect(Buffer.byteLength(e.message) + EVENT_OVERHEAD_BYTES).toBeLessThanOrEqual(4096);
    const parts = events.slice(0, -1).map((e) => decodeLogMessage(e.message));
    expect(parts.map((p) => [p.part, p.parts])).toEqual(parts.map((_, i) => [i + 1, parts.length]));
    expect((await readLines(launch.sessionId)).map((l) => l.text)).toEqual([long, "short"]);
    expect(shipper.stats().linesSplit).toBe(1);
  });
});

describe("batches within PutLogEvents' limits", () => {
  test("over 10,000 events: batches of at most 10,000", async () => {
    const source = manualSource();
    const { shipper } = newShipper();
    shipper.attach(source);
    const sid = nextSession();
    for (let i = 0; i < 25_000; i++) source.emit(line(sid, `l${i}`, serverNowMs));
    await shipper.flush(sid, 0, 0);
    expect(puts.map((p) => p.events)).toEqual([10_000, 10_000, 5_000]);
    const shipped = await readStream(sid);
    expect(shipped).toHaveLength(25_000);
    expect(decodeLogMessage(shipped[24_999]!.message).text).toBe("l24999");
  });

  test("over 1,048,576 bytes (26 per event counted): batches at most that; a 600 KB line in 256 KiB parts", async () => {
    const source = manualSource();
    const { shipper } = newShipper();
    shipper.attach(source);
    const sid = nextSession();
    const big = "x".repeat(100_000);
    for (let i = 0; i < 25; i++) source.emit(line(sid, big, serverNowMs + i));
    const huge = "h".repeat(600_000);
    source.emit(line(sid, huge, serverNowMs + 30));
    await shipper.flush(sid, 0, 0);
    expect(puts.length).toBeGreaterThanOrEqual(3);
    for (const p of puts) expect(p.bytes).toBeLessThanOrEqual(1_048_576);
    // Full batches: no batch was cut short while the next event would have fitted.
    expect(puts[0]!.bytes + 100_000 + 46).toBeGreaterThan(1_048_576);
    const lines = await readLines(sid);
    expect(lines.map((l) => l.text.length)).toEqual([...Array<number>(25).fill(100_000), 600_000]);
    expect(lines.at(-1)!.text).toBe(huge);
    const events = await readStream(sid);
    expect(events.length).toBe(25 + 3);
    for (const e of events) expect(Buffer.byteLength(e.message) + 26).toBeLessThanOrEqual(262_144);
  });

  test("a day and more of buffered output: no batch spans 24 hours", async () => {
    const source = manualSource();
    const { shipper } = newShipper();
    shipper.attach(source);
    const sid = nextSession();
    const hour = 3_600_000;
    const start = serverNowMs - 30 * hour;
    for (let h = 0; h <= 30; h++) source.emit(line(sid, `hour ${h}`, start + h * hour));
    await shipper.flush(sid, 0, 0);
    expect(puts.length).toBe(2);
    for (const p of puts) expect(p.spanMs).toBeLessThan(24 * hour);
    expect((await readLines(sid)).map((l) => l.text)).toEqual(
      Array.from({ length: 31 }, (_, h) => `hour ${h}`),
    );
  });

  test("a clock stepped back: the stream's times never go backwards, so no batch is out of order", async () => {
    const source = manualSource();
    const { shipper } = newShipper();
    shipper.attach(source);
    const sid = nextSession();
    source.emit(line(sid, "before", serverNowMs));
    source.emit(line(sid, "after the step back", serverNowMs - 5_000));
    await shipper.flush(sid, 0, 0);
    expect((await readStream(sid)).map((e) => e.timestamp)).toEqual([serverNowMs, serverNowMs]);
  });
});

describe("faults", () => {
  test("throttling and 5xx answers are retried with backoff: nothing lost, one warning", async () => {
    const source = manualSource();
    const { shipper, warnings } = newShipper();
    shipper.attach(source);
    let failures = 0;
    fault = (operation) => {
      if (operation !== "PutLogEvents" || failures >= 4) return undefined;
      failures++;
      return failures % 2 === 1 ? new ThrottlingError() : new ServiceUnavailableError();
    };
    const sid = nextSession();
    for (let i = 0; i < 50; i++) source.emit(line(sid, `line ${i}`, serverNowMs + i));
    await shipper.flush(sid, 0, 0);
    expect(failures).toBe(4);
    expect((await readLines(sid)).map((l) => l.text)).toEqual(
      Array.from({ length: 50 }, (_, i) => `line ${i}`),
    );
    expect(shipper.stats()).toMatchObject({ retries: 4, eventsSent: 50, linesDropped: 0 });
    expect(warnings).toEqual([
      `sending ${kernelLogStreamName(sid, 0, 0)} to log group ${GROUP} failed; retrying with backoff`,
    ]);
  });

  test("retryability is read from the error's data: throttling, 5xx and refused connections, not bad requests", async () => {
    const errorOf = async (promise: Promise<unknown>) => {
      try {
        await promise;
      } catch (error) {
        return error;
      }
      throw new Error("the call succeeded");
    };
    const put = () =>
      client.send(
        new PutLogEventsCommand({
          logGroupName: GROUP,
          logStreamName: "no-such-stream",
          logEvents: [{ timestamp: serverNowMs, message: "x" }],
        }),
      );
    fault = () => new ThrottlingError();
    expect(isRetryableAwsError(await errorOf(put()))).toBe(true);
    fault = () => new ServiceUnavailableError();
    expect(isRetryableAwsError(await errorOf(put()))).toBe(true);
    fault = undefined;
    expect(isRetryableAwsError(await errorOf(put()))).toBe(false); // ResourceNotFoundException
    const closed = await startLogsServer({ logger: { warn: () => {} } });
    await closed.close();
    const nowhere = new CloudWatchLogsClient({
      endpoint: closed.endpoint,
      region: "local",
      credentials: { accessKeyId: "local", secretAccessKey: "local" },
      maxAttempts: 1,
    });
    expect(
      isRetryableAwsError(await errorOf(nowhere.send(new CreateLogGroupCommand({ logGroupName: "x" })))),
    ).toBe(true);
    nowhere.destroy();
  });

  test("an error that cannot succeed (no such log group) drops the batch, counted, and says so naming the group", async () => {
    const source = manualSource();
    const { shipper, warnings } = newShipper({ logGroupName: "/no/such/group" });
    shipper.attach(source);
    const sid = nextSession();
    source.emit(line(sid, "lost", serverNowMs));
    source.emit(line(sid, "lost too", serverNowMs));
    await shipper.flush(sid, 0, 0);
    expect(shipper.stats()).toMatchObject({ eventsSent: 0, linesDropped: 2, retries: 0 });
    expect(warnings).toEqual([
      `dropped 2 events of ${kernelLogStreamName(sid, 0, 0)} (log group /no/such/group): CloudWatch Logs refused them`,
    ]);
  });

  test("events CloudWatch Logs rejects as too old are counted and said", async () => {
    const source = manualSource();
    const { shipper, warnings } = newShipper();
    shipper.attach(source);
    const sid = nextSession();
    source.emit(line(sid, "from two weeks and more ago", serverNowMs - 15 * 24 * 3_600_000));
    source.emit(line(sid, "now", serverNowMs));
    await shipper.flush(sid, 0, 0);
    // Over 24 hours apart: two batches (the shipper cannot know which events AWS will reject).
    expect(puts.map((p) => p.events)).toEqual([1, 1]);
    expect(shipper.stats()).toMatchObject({ eventsSent: 1, eventsRejected: 1 });
    expect(warnings).toEqual([
      `CloudWatch Logs rejected 1 of 1 events of ${kernelLogStreamName(sid, 0, 0)} as too old, too new or expired ` +
        '({"tooOldLogEventEndIndex":1}); is this host\'s clock right?',
    ]);
    expect((await readLines(sid)).map((l) => l.text)).toEqual(["now"]);
  });

  test("a stream deleted while the run writes is created again", async () => {
    const source = manualSource();
    const { shipper } = newShipper();
    shipper.attach(source);
    const sid = nextSession();
    source.emit(line(sid, "first", serverNowMs));
    await shipper.flushAll();
    await client.send(
      new DeleteLogStreamCommand({ logGroupName: GROUP, logStreamName: kernelLogStreamName(sid, 0, 0) }),
    );
    source.emit(line(sid, "second", serverNowMs + 1));
    await shipper.flush(sid, 0, 0);
    expect((await readLines(sid)).map((l) => l.text)).toEqual(["second"]);
    expect(shipper.stats().streamsCreated).toBe(2);
  });
});

describe("bounded memory and shutdown", () => {
  test("past the buffer cap new lines are dropped, counted, and one marker in their stream says how many", async () => {
    const source = manualSource();
    const { shipper, warnings } = newShipper({ maxBufferedBytes: 2_000 });
    shipper.attach(source);
    const sid = nextSession();
    const text = (i: number) => `line ${String(i).padStart(3, "0")} ${"-".repeat(60)}`;
    for (let i = 0; i < 100; i++) source.emit(line(sid, text(i), serverNowMs + i));
    const kept = shipper.stats().bufferedEvents;
    expect(kept).toBeGreaterThan(10);
    expect(kept).toBeLessThan(100);
    expect(shipper.stats().bufferedBytes).toBeLessThanOrEqual(2_000);
    expect(shipper.stats().linesDropped).toBe(100 - kept);
    expect(warnings).toHaveLength(1);
    await shipper.flush(sid, 0, 0);
    source.emit(line(sid, "after the flush", serverNowMs + 200));
    await shipper.flush(sid, 0, 0);
    const lines = await readLines(sid);
    const marker = `[cairn agent] ${100 - kept} lines (${(100 - kept) * text(0).length} bytes) of output dropped here: the agent's log buffer (2000 bytes) was full`;
    expect(lines.map((l) => l.text)).toEqual([
      ...Array.from({ length: kept }, (_, i) => text(i)),
      marker,
      "after the flush",
    ]);
    expect(lines.find((l) => l.text === marker)).toMatchObject({ stream: "stderr", atMs: serverNowMs + 99 });
    const raw = (await readStream(sid)).map((e) => JSON.parse(e.message) as { dropped?: unknown });
    expect(raw.filter((m) => m.dropped !== undefined)).toEqual([
      expect.objectContaining({ dropped: { lines: 100 - kept, bytes: (100 - kept) * text(0).length } }),
    ]);
  });

  test("close drains every stream, then refuses (and counts) later lines", async () => {
    const source = manualSource();
    const { shipper, warnings } = newShipper();
    shipper.attach(source);
    const sids = [nextSession(), nextSession(), nextSession()];
    for (const sid of sids)
      for (let i = 0; i < 10; i++) source.emit(line(sid, `${sid} ${i}`, serverNowMs + i));
    await shipper.close();
    for (const sid of sids) {
      expect((await readLines(sid)).map((l) => l.text)).toEqual(
        Array.from({ length: 10 }, (_, i) => `${sid} ${i}`),
      );
    }
    expect(shipper.stats()).toMatchObject({ eventsSent: 30, bufferedEvents: 0 });
    shipper.add(line(sids[0]!, "too late", serverNowMs));
    // Detached from the source too: this one is not even heard.
    source.emit(line(sids[0]!, "not heard", serverNowMs));
    expect(shipper.stats().linesDropped).toBe(1);
    expect(warnings).toEqual(["kernel output arrived after the log shipper was closed; dropped (counted)"]);
  });

  test("close gives up on a fault that outlasts its deadline: what is left is dropped, counted and said", async () => {
    const source = manualSource();
    let nowMs = 0;
    const { shipper, warnings } = newShipper({
      closeTimeoutMs: 1_000,
      clock: () => nowMs,
      // Each backoff moves the shipper's clock on: the deadline comes without real waiting.
      sleep: (ms) => {
        nowMs += Math.max(ms, 100);
        return Promise.resolve();
      },
    });
    shipper.attach(source);
    fault = (operation) => (operation === "PutLogEvents" ? new ThrottlingError() : undefined);
    const sid = nextSession();
    for (let i = 0; i < 5; i++) source.emit(line(sid, `stuck ${i}`, serverNowMs));
    await shipper.close();
    expect(shipper.stats()).toMatchObject({ eventsSent: 0, linesDropped: 5, bufferedEvents: 0 });
    expect(shipper.stats().retries).toBeGreaterThan(0);
    expect(warnings.at(-1)).toBe(
      `dropped 5 events of ${kernelLogStreamName(sid, 0, 0)} (log group ${GROUP}): still failing when the shipper closed`,
    );
  });
});

describe("the count of a run's events, said with its end", () => {
  test("flush returns how many events CloudWatch Logs accepted in the run's stream: split parts count one each", async () => {
    const source = manualSource();
    const { shipper } = newShipper({ maxEventBytes: 4096 });
    shipper.attach(source);
    const sid = nextSession();
    const other = nextSession();
    source.emit(line(sid, "short", serverNowMs));
    source.emit(line(sid, "y".repeat(10_000), serverNowMs));
    source.emit(line(other, "another run's", serverNowMs));
    const count = await shipper.flush(sid, 0, 0);
    const events = await readStream(sid);
    expect(events.length).toBeGreaterThan(3);
    expect(count).toBe(events.length);
    // Each run's stream its own count.
    expect(await shipper.flush(other, 0, 0)).toBe(1);
    expect(shipper.stats().eventsSent).toBe(events.length + 1);
  });

  test("the dropped-lines marker counts one; events CloudWatch Logs rejected do not count", async () => {
    const source = manualSource();
    const { shipper } = newShipper({ maxBufferedBytes: 2_000 });
    shipper.attach(source);
    const sid = nextSession();
    for (let i = 0; i < 100; i++) source.emit(line(sid, `line ${i} ${"-".repeat(60)}`, serverNowMs + i));
    const kept = shipper.stats().bufferedEvents;
    const count = await shipper.flush(sid, 0, 0);
    expect(count).toBe(kept + 1);
    expect(await readStream(sid)).toHaveLength(count);

    const rejected = nextSession();
    source.emit(line(rejected, "from two weeks and more ago", serverNowMs - 15 * 24 * 3_600_000));
    source.emit(line(rejected, "now", serverNowMs));
    expect(await shipper.flush(rejected, 0, 0)).toBe(1);
    expect(await readStream(rejected)).toHaveLength(1);
  });

  test("a run that wrote nothing counts 0; a run placed again on this agent counts on in its stream", async () => {
    const source = manualSource();
    const { shipper } = newShipper();
    shipper.attach(source);
    const sid = nextSession();
    expect(await shipper.flush(sid, 0, 0)).toBe(0);
    source.emit(line(sid, "first placement", serverNowMs));
    expect(await shipper.flush(sid, 0, 0)).toBe(1);
    source.emit(line(sid, "second placement", serverNowMs + 1));
    source.emit(line(sid, "its last line", serverNowMs + 2));
    expect(await shipper.flush(sid, 0, 0)).toBe(3);
    expect(await readStream(sid)).toHaveLength(3);
  });
});

describe("the agent's report of a run's end", () => {
  const reportsIn = (put: readonly PutEventsRequestEntry[]) =>
    put
      .filter((e) => e.DetailType === DetailType.KernelStatusChanged)
      .map((e) => KernelStatusChangedDetailSchema.parse(JSON.parse(e.Detail!)));
  const command = (sessionId: string, action: "prepare" | "start") => ({
    action,
    sessionId,
    kernelIndex: 0,
    numKernels: 1,
    runIndex: 0,
    command: [NODE, "-e", 'for (let i = 0; i < 7; i++) console.log("line " + i); console.error("oops")'],
    env: {},
    cpu: 1,
    memoryMiB: 256,
  });

  async function runOnHost(withLogs: boolean) {
    const sid = nextSession();
    const fake = fakeHost(`host-${sid}`, workRoot, {
      ...(withLogs ? { kernelLogs: { client, logGroupName: GROUP } } : {}),
    });
    cleanups.push(() => fake.host.drain());
    await fake.start();
    fake.command(command(sid, "prepare"));
    await until("prepared", () => reportsIn(fake.put).find((r) => r.status === "PREPARED"), 10_000);
    fake.command(command(sid, "start"));
    const ended = await until(
      "the run's end reported",
      () => reportsIn(fake.put).find((r) => r.status === "TERMINATED"),
      20_000,
    );
    return { sid, ended, reports: reportsIn(fake.put) };
  }

  test("carries how many events the run's stream holds, signed with the rest of the report", async () => {
    const { sid, ended, reports } = await runOnHost(true);
    expect(ended.exitCode).toBe(0);
    expect(ended.logEventCount).toBe(8);
    // All of them there (the embedded CloudWatch Logs shows them at once), flushed before the report.
    expect(await readStream(sid)).toHaveLength(8);
    expect(signatureMatches(SIGNING_KEY, DetailType.KernelStatusChanged, ended)).toBe(true);
    // Changing the count breaks the signature: a forged count is refused like any altered report.
    expect(
      signatureMatches(SIGNING_KEY, DetailType.KernelStatusChanged, { ...ended, logEventCount: 9 }),
    ).toBe(false);
    // Only the end says it.
    expect(reports.filter((r) => r.logEventCount !== undefined)).toEqual([ended]);
  });

  test("an agent that ships no output says no count", async () => {
    const { ended } = await runOnHost(false);
    expect(ended.exitCode).toBe(0);
    expect(ended).not.toHaveProperty("logEventCount");
  });
});
