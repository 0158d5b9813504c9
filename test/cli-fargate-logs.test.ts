/**
 * `cairn logs` finds a Fargate kernel's output: every Cairn task definition has the same awslogs
 * stream prefix, so awslogs names a task's stream after the task (`cairn/kernel/<task id>`) and
 * the reader finds a run's stream from the run's task ARN (the kernel's, or the run's record's);
 * an agent's run is read under its own name. A task's stream is looked up by its exact name,
 * never by listing every task stream there is.
 */
import { describe, expect, test } from "vitest";
import { kernelLogStreamName, runLogStreamName } from "../agent/log-events.ts";
import type { KernelLogReader, RawLogEvent } from "../bin/cli/kernel-log-reader.ts";
import {
  followTaskLog,
  locateTaskLogs,
  sharedStreamListing,
  type TaskLogEvent,
} from "../bin/cli/task-logs.ts";
import type { TaskRef } from "../bin/cli/job-read.ts";
import { fargatePoolId } from "../functions/core/fargate-pool.ts";
import type { Kernel, RunRecord, SessionWithKernels } from "../functions/core/model.ts";
import type { SessionStatus } from "../functions/core/status.ts";
import { newSession, T0 } from "./store-fixtures.ts";

const POOL = fargatePoolId("batch");
const taskArn = (id: string) => `arn:aws:ecs:us-east-1:123456789012:task/cairn/${id.padEnd(32, "0")}`;
const TASK_0 = taskArn("a0");
const TASK_1 = taskArn("b1");

/** CloudWatch Logs in memory, recording the prefixes DescribeLogStreams was asked for. */
function memoryLogs() {
  const streams = new Map<string, RawLogEvent[]>();
  const listed: string[] = [];
  const reader: KernelLogReader = {
    logGroupName: "/cairn/kernels",
    listStreams(prefix) {
      listed.push(prefix);
      return Promise.resolve(new Set([...streams.keys()].filter((n) => n.startsWith(prefix))));
    },
    forward(streamName, nextToken) {
      const events = streams.get(streamName) ?? [];
      const from = nextToken === undefined ? 0 : Number(nextToken);
      return Promise.resolve({ events: events.slice(from), nextForwardToken: String(events.length) });
    },
    tail: () => Promise.reject(new Error("not used")),
    filter: () => Promise.reject(new Error("not used")),
  };
  /** awslogs writes each line as it is, as the container printed it. */
  const write = (streamName: string, ...texts: string[]) => {
    const events = streams.get(streamName) ?? [];
    for (const text of texts) events.push({ timestamp: T0 + events.length, message: text });
    streams.set(streamName, events);
  };
  return { reader, listed, write };
}

const SID = "fg-logs-1";
const REF: TaskRef = { index: 0, sessionId: SID, kernelIndex: 0 };

function fargateSession(
  status: SessionStatus,
  runIndex: number,
  kernel: Partial<Kernel> = {},
): SessionWithKernels {
  const s = newSession(SID, { replicas: 1, status });
  return { session: { ...s.session, runIndex }, kernels: [{ ...s.kernels[0]!, ...kernel }] };
}

/** Run 0's record: its kernel ran as task TASK_0 on the pool and was preempted. */
const RUN_0: RunRecord = {
  sessionId: SID,
  runIndex: 0,
  name: SID,
  outcome: "PREEMPTED",
  startedAtMs: T0,
  endedAtMs: T0 + 1_000,
  decision: "retry",
  reason: "preempted",
  kernels: [
    {
      index: 0,
      status: "TERMINATED",
      agentId: POOL,
      taskArn: TASK_0,
      outcome: "PREEMPTED",
      startedAtMs: T0,
      finishedAtMs: T0 + 1_000,
    },
  ],
};

const lineTexts = (events: readonly TaskLogEvent[]) =>
  events.map((e) => (e.kind === "line" ? `${e.line.runIndex}: ${e.line.text}` : `note: ${e.text}`));

describe("a run's stream", () => {
  test("an agent's run is its own name; a Fargate run's is its task's, whatever the session", () => {
    expect(runLogStreamName(SID, 2, 3)).toBe(kernelLogStreamName(SID, 2, 3));
    expect(runLogStreamName(SID, 2, 3, TASK_0)).toBe(`cairn/kernel/${"a0".padEnd(32, "0")}`);
    expect(runLogStreamName("another", 0, 0, TASK_0)).toBe(runLogStreamName(SID, 2, 3, TASK_0));
  });

  test("a shared listing lists the agents' run streams by their prefix and looks a task's stream up by its name", async () => {
    const { reader, listed, write } = memoryLogs();
    const listing = sharedStreamListing(reader, "s-1/", () => 0, 0);
    const task = runLogStreamName("s-1", 0, 0, TASK_0);
    expect(await listing.exists(task)).toBe(false);
    write(task, "hi");
    write(runLogStreamName("s-2", 0, 0, TASK_1), "another task");
    expect(await listing.exists(task)).toBe(true);
    write("s-1/0/run-0", "an agent's");
    expect(await listing.exists("s-1/0/run-0")).toBe(true);
    expect(listed).toEqual([task, task, "s-1/"]);
  });

  test("a task's stream is looked up by its name even when the agents' prefix covers it", async () => {
    const { reader, listed, write } = memoryLogs();
    // Sessions cairn1 and cairn2 share the prefix "cairn": listing it would list every task stream.
    const listing = sharedStreamListing(reader, "cairn", () => 0, 0);
    const task = runLogStreamName("cairn1", 0, 0, TASK_0);
    write(task, "hi");
    expect(await listing.exists(task)).toBe(true);
    expect(listed).toEqual([task]);
  });
});

describe("cairn logs of a Fargate session", () => {
  test("a finished session's run is read from its task's stream", async () => {
    const { reader, listed, write } = memoryLogs();
    write(runLogStreamName(SID, 0, 0, TASK_0), "hello from the task");
    const done = fargateSession("TERMINATED", 0, {
      status: "TERMINATED",
      agentId: POOL,
      taskArn: TASK_0,
      startedAtMs: T0,
    });
    const store = { getSession: () => Promise.resolve(done), listRuns: () => Promise.resolve([]) };
    expect(await locateTaskLogs(SID, [REF], { store, logs: reader })).toEqual([
      { started: true, runIndex: 0, streamName: runLogStreamName(SID, 0, 0, TASK_0), exists: true },
    ]);
    // Only the task's own stream was asked for: no agent run streams to list.
    expect(listed).toEqual([runLogStreamName(SID, 0, 0, TASK_0)]);
  });

  test("a retried session waiting for its next run shows the earlier run's task's output", async () => {
    const { reader, write } = memoryLogs();
    write(runLogStreamName(SID, 0, 0, TASK_0), "run 0 wrote this");
    const waiting = fargateSession("PENDING", 1);
    const store = { getSession: () => Promise.resolve(waiting), listRuns: () => Promise.resolve([RUN_0]) };
    const [read] = await locateTaskLogs(SID, [REF], { store, logs: reader });
    expect(read).toMatchObject({
      started: true,
      runIndex: 0,
      streamName: runLogStreamName(SID, 0, 0, TASK_0),
      exists: true,
      note: expect.stringMatching(/^run 1 has not started \(PENDING.*\); showing run 0$/) as unknown,
    });
  });

  test("--follow reads the earlier run, then the next run's task once it has one, to its end", async () => {
    const { reader, write } = memoryLogs();
    write(runLogStreamName(SID, 0, 0, TASK_0), "run 0 wrote this");
    const steps: (() => SessionWithKernels)[] = [
      () => fargateSession("PENDING", 1),
      // Placed on the pool: no task yet, so no stream to look for.
      () => fargateSession("CREATING", 1, { status: "PENDING", agentId: POOL }),
      () =>
        fargateSession("RUNNING", 1, { status: "RUNNING", agentId: POOL, taskArn: TASK_1, startedAtMs: T0 }),
      () => (
        write(runLogStreamName(SID, 0, 1, TASK_1), "run 1 wrote this", "and this"),
        fargateSession("TERMINATED", 1, { status: "TERMINATED", agentId: POOL, taskArn: TASK_1 })
      ),
    ];
    let current = steps[0]!();
    let at = 1;
    const events: TaskLogEvent[] = [];
    const ran = await followTaskLog(
      SID,
      REF,
      {
        sessions: { get: () => Promise.resolve(current) },
        store: { listRuns: () => Promise.resolve([RUN_0]) },
        logs: reader,
        streams: sharedStreamListing(reader, `${SID}/0/run-`, () => 0, 0),
        pace: () => Promise.resolve(),
        sleep: () => {
          const step = steps[at++];
          if (step !== undefined) current = step();
          return Promise.resolve();
        },
        nowMs: () => 0,
        pollMs: 250,
        settleMs: 0,
        maxWaitMs: 0,
        announceWaiting: true,
      },
      (e) => events.push(e),
    );
    expect(ran).toBe(true);
    expect(lineTexts(events)).toEqual([
      `note: run 1 has not started; run 0 (on ${POOL}) wrote:`,
      "0: run 0 wrote this",
      `note: run 1 started on ${POOL}`,
      "1: run 1 wrote this",
      "1: and this",
    ]);
  });

  test("a run that ended before the follower saw its task is read from the run's record", async () => {
    const { reader, write } = memoryLogs();
    write(runLogStreamName(SID, 0, 0, TASK_0), "quick");
    const steps: (() => SessionWithKernels)[] = [
      () => fargateSession("CREATING", 0, { status: "PENDING", agentId: POOL }),
      // The task ran and the run was retried between two looks.
      () => fargateSession("PENDING", 1),
    ];
    let current = steps[0]!();
    let at = 1;
    const controller = new AbortController();
    const events: TaskLogEvent[] = [];
    const ran = await followTaskLog(
      SID,
      REF,
      {
        sessions: { get: () => Promise.resolve(current) },
        store: { listRuns: () => Promise.resolve([RUN_0]) },
        logs: reader,
        streams: sharedStreamListing(reader, `${SID}/0/run-`, () => 0, 0),
        pace: () => Promise.resolve(),
        sleep: () => {
          const step = steps[at++];
          if (step !== undefined) current = step();
          // Stop once run 0 was read: run 1 is never placed here.
          else controller.abort();
          return Promise.resolve();
        },
        nowMs: () => 0,
        pollMs: 250,
        settleMs: 0,
        maxWaitMs: 0,
        announceWaiting: false,
        signal: controller.signal,
      },
      (e) => events.push(e),
    );
    expect(ran).toBe(true);
    expect(lineTexts(events)).toEqual(["0: quick"]);
  });
});
