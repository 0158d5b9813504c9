/**
 * The job commands without a runtime: parsing, the JSON views and text (fixed clock), reading a
 * job, `submit --wait` of a job on a simulated clock, task logs read and followed from real files
 * laid out as the agents write them, and runCli end to end against in-memory fakes.
 */
import { fakeCliIo, parseLine, simulatedClock, usageErrorOf } from "./support/cli-helpers.ts";
import { CloudWatchLogsClient } from "@aws-sdk/client-cloudwatch-logs";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { LogShipper } from "../agent/log-shipper.ts";
import type { CairnApi, KernelLogsApi, SessionReader } from "../bin/cli/cairn-api.ts";
import { kernelLogReader } from "../bin/cli/commands/logs.ts";
import { JobNotFoundError, JobWaitTimeoutError, LogsUnavailableError } from "../bin/cli/errors.ts";
import { followJob } from "../bin/cli/follow-job.ts";
import { jobSnapshot, readJob, taskOf, taskRefs } from "../bin/cli/job-read.ts";
import { renderJob, renderTask, renderTasks } from "../bin/cli/job-render.ts";
import { jobView, taskDetailView, tasksView } from "../bin/cli/job-views.ts";
import { runCli } from "../bin/cli/main.ts";
import { newSessionId } from "../bin/cli/session-id.ts";
import { cloudWatchLogReader } from "../bin/cli/kernel-log-reader.ts";
import {
  callPacer,
  followTaskLog,
  locateTaskLogs,
  readRunLines,
  sharedSessionReads,
  sharedStreamListing,
  taskLogJson,
  taskLogText,
  type TaskLogEvent,
} from "../bin/cli/task-logs.ts";
import type { KernelLogReader } from "../bin/cli/kernel-log-reader.ts";
import type { PutEventsEntry } from "../functions/core/events.ts";
import { newJob, taskSessionId, taskSpec } from "../functions/core/jobs.ts";
import type {
  HistoryRecord,
  Job,
  Kernel,
  RunRecord,
  Session,
  SessionSpec,
  SessionWithKernels,
} from "../functions/core/model.ts";
import { newSession } from "../functions/core/sessions.ts";
import { SPEC_DEFAULTS } from "../functions/core/spec.ts";
import { parseSpecText } from "../functions/core/spec-text.ts";
import type { SessionStatus } from "../functions/core/status.ts";
import { startLogsServer, type LogsServer } from "../local/logs/index.ts";

// ---------------------------------------------------------------------------------------------
// Fixtures: a job of three independent tasks at literal times.

const T0 = Date.UTC(2026, 10, 21, 12, 0, 0); // 2026-11-21T12:00:00.000Z
const JOB_ID = "train-1";
const SPEC_TEXT = "name: train\nreplicas: 3\ncoscheduled: false\nmaxTaskFailures: 1\ncommand: [/bin/true]\n";
const SPEC: SessionSpec = parseSpecText(SPEC_TEXT);
const JOB: Job = newJob(JOB_ID, SPEC, T0);

function taskSession(
  index: number,
  status: SessionStatus,
  kernel: Partial<Kernel> = {},
  session: Partial<Session> = {},
): SessionWithKernels {
  const fresh = newSession(taskSessionId(JOB_ID, index), taskSpec(SPEC), T0);
  return {
    session: { ...fresh.session, task: { jobId: JOB_ID, index, count: 3 }, status, ...session },
    kernels: [{ ...fresh.kernels[0]!, ...kernel }],
  };
}

const DONE = taskSession(0, "TERMINATED", {
  status: "TERMINATED",
  agentId: "agent-1",
  exitCode: 0,
  outcome: "SUCCEEDED",
  startedAtMs: T0 + 2_000,
  finishedAtMs: T0 + 5_000,
});
const RUNNING = taskSession(1, "RUNNING", { status: "RUNNING", agentId: "agent-2", startedAtMs: T0 + 3_000 });
const RETRY_WAITING = taskSession(
  2,
  "PENDING",
  {},
  {
    runIndex: 1,
    pendingReason: "no agent has 8 cpu free; largest free is 4",
    retry: { failureCount: 1, preemptionCount: 0, totalRetries: 1, ruleRetries: {} },
  },
);
const RUN_OF_TASK_2: RunRecord = {
  sessionId: taskSessionId(JOB_ID, 2),
  runIndex: 0,
  name: taskSessionId(JOB_ID, 2),
  outcome: "FAILED",
  startedAtMs: T0 + 2_500,
  endedAtMs: T0 + 4_000,
  decision: "retry",
  reason: "failure 1 of maxRetriesFailure 2",
  kernels: [
    {
      index: 0,
      agentId: "agent-3",
      status: "TERMINATED",
      outcome: "FAILED",
      exitCode: 3,
      message: "boom",
      startedAtMs: T0 + 2_500,
      finishedAtMs: T0 + 3_900,
    },
  ],
};
const NOW = T0 + 65_000;

interface World {
  jobs: Record<string, Job>;
  sessions: Record<string, SessionWithKernels>;
  runs: Record<string, RunRecord[]>;
  history: Record<string, HistoryRecord[]>;
}

function fakeStore(world: World): SessionReader {
  return {
    getSession: (id) => Promise.resolve(world.sessions[id]),
    getSessions: (ids) =>
      Promise.resolve(ids.flatMap((id) => (world.sessions[id] === undefined ? [] : [world.sessions[id]]))),
    getJob: (id) => Promise.resolve(world.jobs[id]),
    listRuns: (id) => Promise.resolve(world.runs[id] ?? []),
    listHistory: (id, query) =>
      Promise.resolve((world.history[id] ?? []).filter((r) => r.seq >= (query?.fromSeq ?? 0))),
    listRecentSessions: () => Promise.resolve({ items: [] }),
    listSessionsByStatus: () => Promise.resolve({ items: [] }),
  };
}

function trainWorld(): World {
  return {
    jobs: { [JOB_ID]: JOB },
    sessions: Object.fromEntries([DONE, RUNNING, RETRY_WAITING].map((s) => [s.session.id, s])),
    runs: { [taskSessionId(JOB_ID, 2)]: [RUN_OF_TASK_2] },
    history: {},
  };
}

// ---------------------------------------------------------------------------------------------

describe("parsing the job commands", () => {
  const parse = parseLine;
  const usageError = usageErrorOf;

  test("job get, tasks, task and logs", () => {
    expect(parse("job get train-1 -o json")).toEqual({
      kind: "job get",
      jobId: "train-1",
      output: "json",
      target: {},
    });
    expect(parse("tasks train-1")).toEqual({ kind: "tasks", jobId: "train-1", output: "text", target: {} });
    expect(parse("task train-1 2")).toEqual({
      kind: "task",
      jobId: "train-1",
      index: 2,
      output: "text",
      target: {},
    });
    expect(parse("logs train-1")).toEqual({
      kind: "logs",
      jobId: "train-1",
      follow: false,
      output: "text",
      target: {},
    });
    expect(parse("logs --follow train-1 --task 0 -o json")).toEqual({
      kind: "logs",
      jobId: "train-1",
      task: 0,
      follow: true,
      output: "json",
      target: {},
    });
    expect(parse("--runtime-file rt.json job get train-1")).toMatchObject({
      target: { runtimeFile: "rt.json" },
    });
  });

  test("submit --wait --stream-logs", () => {
    expect(parse("submit job.yaml --wait --stream-logs")).toMatchObject({ wait: true, streamLogs: true });
    expect(parse("submit job.yaml --wait")).toMatchObject({ streamLogs: false });
  });

  test.each([
    ["job", "missing what to do with job (expected one of get, create, edit, submit, delete)"],
    ["job list", 'unknown job command "list" (expected one of get, create, edit, submit, delete)'],
    ["job get", "missing JOB_ID"],
    [
      "tasks Train",
      `JOB_ID "Train" is not a job id: 3 to 63 lowercase letters, digits or '-', starting with a letter or digit`,
    ],
    ["task train-1", "missing JOB_ID INDEX"],
    ["task train-1 x", 'INDEX must be a task index, a whole number from 0 to 63, got "x"'],
    ["task train-1 64", 'INDEX must be a task index, a whole number from 0 to 63, got "64"'],
    ["task train-1 1.5", 'INDEX must be a task index, a whole number from 0 to 63, got "1.5"'],
    ["logs train-1 --task", "option --task needs a value (--task INDEX)"],
    ["logs train-1 --task=-1", '--task must be a task index, a whole number from 0 to 63, got "-1"'],
    ["logs train-1 --follow=yes", "option --follow takes no value"],
    ["logs train-1 -o yaml", '--output must be text or json, got "yaml"'],
    ["submit job.yaml --stream-logs", "--stream-logs only applies with --wait"],
    [
      "submit job.yaml --wait --stream-logs -o json",
      "--stream-logs prints the tasks' output on stdout, which -o json keeps for one JSON document; " +
        "leave one of them out (`cairn logs JOB_ID -o json` gives the output as JSON Lines)",
    ],
  ])("%j is an error: %s", (line, message) => {
    expect(usageError(line).message).toBe(message);
  });

  test("generated ids leave room for the task sessions' -t<index>", () => {
    const name = "a".repeat(80);
    expect(newSessionId(name, () => 0)).toHaveLength(63);
    const id = newSessionId(name, () => 0, 59);
    expect(id).toHaveLength(59);
    expect(taskSessionId(id, 63)).toHaveLength(63);
  });
});

describe("job views and text (time passed in)", () => {
  const snapshot = jobSnapshot(JOB, [DONE, RUNNING, RETRY_WAITING]);

  test("job: every field, the state derived from the tasks while none is recorded", () => {
    expect(jobView(snapshot)).toEqual({
      jobId: "train-1",
      name: "train",
      state: "RUNNING",
      reason: "1 of 3 tasks placed or running",
      hpcState: "Running",
      final: false,
      replicas: 3,
      coscheduled: false,
      perAgent: null,
      maxTaskFailures: 1,
      schedulingTimeoutSeconds: 3600,
      queue: "default",
      priority: 0,
      parent: null,
      children: [],
      sessions: ["train-1-t0", "train-1-t1", "train-1-t2"],
      taskCounts: {
        PENDING: 1,
        ASSIGNED: 0,
        BUILDING: 0,
        RUNNING: 1,
        SUCCEEDED: 1,
        FAILED: 0,
        KILLED: 0,
        WORKER_FAILED: 0,
        UNSCHEDULABLE: 0,
        PREEMPTED: 0,
      },
      // Iris's TaskState proto values, from its table.
      taskStateProto: {
        PENDING: 1,
        ASSIGNED: 9,
        BUILDING: 2,
        RUNNING: 3,
        SUCCEEDED: 4,
        FAILED: 5,
        KILLED: 6,
        WORKER_FAILED: 7,
        UNSCHEDULABLE: 8,
        PREEMPTED: 10,
      },
      createdAt: "2026-11-21T12:00:00.000Z",
      finishedAt: null,
    });
  });

  test("a recorded final state wins over the derived one, with its time", () => {
    const final = { state: "KILLED", reason: "cancelled by a user", atMs: T0 + 9_000 } as const;
    const view = jobView(jobSnapshot({ ...JOB, final, parentId: "pre-1", childIds: ["post-1"] }, [DONE]));
    expect(view).toMatchObject({
      state: "KILLED",
      reason: "cancelled by a user",
      final: true,
      parent: "pre-1",
      children: ["post-1"],
      finishedAt: "2026-11-21T12:00:09.000Z",
    });
  });

  test("job get as text", () => {
    expect(renderJob(jobView(snapshot), NOW)).toBe(
      [
        "job train-1 (train)",
        "  state      RUNNING (Iris's job state): 1 of 3 tasks placed or running",
        "  hpc        Running (HPC Pack's state)",
        "  tasks      3 tasks: 1 PENDING, 1 RUNNING, 1 SUCCEEDED",
        "  kind       3 independent tasks, maxTaskFailures 1",
        "  placement  within 1h00m, or the task is UNSCHEDULABLE",
        "  queue      default, priority 0",
        "  created    2026-11-21T12:00:00.000Z (1m05s ago)",
        "  sessions   train-1-t0, train-1-t1, train-1-t2",
        "  tasks: `cairn tasks train-1`, output: `cairn logs train-1`",
      ].join("\n"),
    );
    const gang = newJob("gang-1", { ...SPEC, coscheduled: true, perAgent: 2, replicas: 4 }, T0);
    expect(renderJob(jobView(jobSnapshot(gang, [])), NOW)).toContain(
      "  kind       one gang of 4 (co-scheduled), at most 2 per agent, maxTaskFailures 1\n",
    );
  });

  test("tasks as a table: why the pending one waits, runs and retries", () => {
    const view = tasksView(snapshot);
    expect(view.tasks[2]).toEqual({
      index: 2,
      state: "PENDING",
      stateProto: 1,
      hpcState: "Queued",
      finished: false,
      sessionId: "train-1-t2",
      kernelIndex: 0,
      sessionStatus: "PENDING",
      runIndex: 1,
      runName: "train-1-t2.1",
      agent: null,
      exitCode: null,
      reason: "no agent has 8 cpu free; largest free is 4",
      failureCount: 1,
      preemptionCount: 0,
      startedAt: null,
      finishedAt: null,
    });
    expect(view.tasks.map((t) => [t.state, t.stateProto])).toEqual([
      ["SUCCEEDED", 4],
      ["RUNNING", 3],
      ["PENDING", 1],
    ]);
    expect(renderTasks(view, NOW)).toBe(
      [
        "job train-1: RUNNING (1 of 3 tasks placed or running)",
        "TASK  STATE (IRIS)  HPC PACK  AGENT    EXIT  RUN  RETRIES    RAN     REASON",
        "0     SUCCEEDED     Finished  agent-1  0     0    -          3.0s    -",
        "1     RUNNING       Running   agent-2  -     0    -          1m02s…  -",
        "2     PENDING       Queued    -        -     1    1 failure  -       no agent has 8 cpu free; largest free is 4",
      ].join("\n"),
    );
  });

  test("one task in detail, with its part in each finished run", () => {
    const task = taskOf(snapshot, 2);
    const view = taskDetailView(snapshot, task, RETRY_WAITING.kernels[0], [RUN_OF_TASK_2]);
    expect(view).toMatchObject({ state: "PENDING", stateProto: 1 });
    expect(view.runs).toEqual([
      {
        runIndex: 0,
        name: "train-1-t2",
        outcome: "FAILED",
        decision: "retry",
        reason: "failure 1 of maxRetriesFailure 2",
        delayMs: null,
        avoidAgentId: null,
        startedAt: "2026-11-21T12:00:02.500Z",
        endedAt: "2026-11-21T12:00:04.000Z",
        task: {
          index: 0,
          status: "TERMINATED",
          agent: "agent-3",
          outcome: "FAILED",
          exitCode: 3,
          condition: null,
          failureCategory: null,
          message: "boom",
          startedAt: "2026-11-21T12:00:02.500Z",
          finishedAt: "2026-11-21T12:00:03.900Z",
        },
      },
    ]);
    expect(view).toMatchObject({ jobId: "train-1", jobState: "RUNNING", condition: null, error: null });
    expect(renderTask(view, NOW)).toBe(
      [
        "task 2 of job train-1 (job RUNNING)",
        "  state    PENDING (Iris's task state)",
        "  hpc      Queued (HPC Pack's state)",
        "  session  train-1-t2 (PENDING: Sokovan's session status)",
        "  run      train-1-t2.1 (run 1)",
        "  agent    -",
        "  retries  1 failure",
        "  waiting  no agent has 8 cpu free; largest free is 4",
        "  runs:",
        "    RUN  NAME        OUTCOME  AGENT    EXIT  DECISION  ENDED                     MESSAGE  REASON",
        "    0    train-1-t2  FAILED   agent-3  3     retry     2026-11-21T12:00:04.000Z  boom     failure 1 of maxRetriesFailure 2",
      ].join("\n"),
    );
  });
});

describe("readJob", () => {
  test("the job and its sessions; a missing session is a PENDING task being submitted (HPC Submitted)", async () => {
    const world = trainWorld();
    delete world.sessions["train-1-t2"];
    const snapshot = await readJob(fakeStore(world), JOB_ID);
    expect(snapshot.tasks.map((t) => [t.index, t.state, t.reason, t.hpcState])).toEqual([
      [0, "SUCCEEDED", undefined, "Finished"],
      [1, "RUNNING", undefined, "Running"],
      // HPC Pack: "Submitted — The job or task has been submitted and is awaiting validation".
      [2, "PENDING", "being submitted", "Submitted"],
    ]);
    expect(snapshot.ended).toBe(false);
  });

  test("a session from before jobs is the job of its kernels", async () => {
    const old = newSession("old-1", { ...SPEC_DEFAULTS, name: "old", command: ["/bin/true"] }, T0);
    const snapshot = await readJob(fakeStore({ ...trainWorld(), sessions: { "old-1": old } }), "old-1");
    expect(snapshot.job).toEqual({
      id: "old-1",
      spec: old.session.spec,
      sessionIds: ["old-1"],
      childIds: [],
      createdAtMs: T0,
    });
    expect(snapshot.tasks).toHaveLength(1);
  });

  test("not found: unknown ids, a task's session id (pointing at its job), an index past the last task", async () => {
    const store = fakeStore(trainWorld());
    await expect(readJob(store, "nope-1")).rejects.toThrow(new JobNotFoundError("nope-1"));
    await expect(readJob(store, "train-1-t1")).rejects.toThrow(
      "job train-1-t1 not found: train-1-t1 is task 1 of job train-1 (see `cairn task train-1 1`)",
    );
    expect(() => taskOf(jobSnapshot(JOB, []), 3)).toThrow(
      "job train-1 task 3 not found: job train-1 has 3 tasks (0 to 2)",
    );
  });

  test("task refs from the spec alone: a gang's kernels, or one session per task", () => {
    expect(taskRefs("g-1", { ...SPEC, coscheduled: true, replicas: 2 })).toEqual([
      { index: 0, sessionId: "g-1", kernelIndex: 0 },
      { index: 1, sessionId: "g-1", kernelIndex: 1 },
    ]);
    expect(taskRefs("i-1", { ...SPEC, replicas: 2 })).toEqual([
      { index: 0, sessionId: "i-1-t0", kernelIndex: 0 },
      { index: 1, sessionId: "i-1-t1", kernelIndex: 0 },
    ]);
  });
});

// ---------------------------------------------------------------------------------------------

function record(sessionId: string, seq: number, fields: Partial<HistoryRecord>): HistoryRecord {
  return {
    sessionId,
    seq,
    handler: "ScheduleNewSessions",
    result: "SUCCESS",
    fromStatus: "PENDING",
    count: 1,
    firstAtMs: T0,
    lastAtMs: T0,
    ...fields,
  };
}

describe("followJob (submit --wait of a job)", () => {
  /** One scripted world per poll: the job appears, its tasks run, then end. */
  function scripted(steps: readonly World[]) {
    let poll = -1;
    const world = () => steps[Math.min(poll, steps.length - 1)]!;
    const store: Pick<SessionReader, "getJob" | "getSessions" | "listHistory"> = {
      getJob: (id) => {
        poll++;
        return fakeStore(world()).getJob(id);
      },
      getSessions: (ids) => fakeStore(world()).getSessions(ids),
      listHistory: (id, query) => fakeStore(world()).listHistory(id, query),
    };
    return store;
  }
  const t = (i: number) => taskSessionId(JOB_ID, i);
  const placed = (i: number) =>
    record(t(i), 1, { toStatus: "SCHEDULED", message: `placed on agent-${i + 1}` });
  const submitted = (i: number) => record(t(i), 0, { handler: "Submit", result: "SUBMITTED" });
  const ended = (i: number, exitCode: number): SessionWithKernels =>
    taskSession(i, "TERMINATED", {
      status: "TERMINATED",
      agentId: `agent-${i + 1}`,
      exitCode,
      outcome: exitCode === 0 ? "SUCCEEDED" : "FAILED",
    });
  const world = (
    sessions: SessionWithKernels[],
    history: Record<string, HistoryRecord[]>,
    final?: Job["final"],
  ) => ({
    jobs: { [JOB_ID]: { ...JOB, ...(final === undefined ? {} : { final }) } },
    sessions: Object.fromEntries(sessions.map((s) => [s.session.id, s])),
    runs: {},
    history,
  });

  test("task-prefixed history, each job state once, and the recorded final state", async () => {
    const clock = simulatedClock(T0);
    const pending = [0, 1, 2].map((i) => taskSession(i, "PENDING"));
    const running = [0, 1, 2].map((i) =>
      taskSession(i, "SCHEDULED", { status: "SCHEDULED", agentId: `agent-${i + 1}` }, { version: 1 }),
    );
    const history = Object.fromEntries([0, 1, 2].map((i) => [t(i), [submitted(i), placed(i)]]));
    const firstOnly = Object.fromEntries([0, 1, 2].map((i) => [t(i), [submitted(i)]]));
    const done = [ended(0, 0), ended(1, 0), ended(2, 3)].map((s) => ({
      ...s,
      session: { ...s.session, version: 2 },
    }));
    const final = {
      state: "SUCCEEDED",
      reason: "2 of 3 tasks succeeded; 1 failed within maxTaskFailures 1",
      atMs: T0,
    } as const;
    const store = scripted([
      { jobs: {}, sessions: {}, runs: {}, history: {} },
      world(pending, firstOnly),
      world(running, history),
      world(done, history),
      world(done, history, final),
    ]);
    const lines: string[] = [];
    const result = await followJob(JOB_ID, { store, ...clock, progress: (l) => lines.push(l) });
    expect(result).toMatchObject({ state: "SUCCEEDED", final: true, ended: true });
    expect(lines).toEqual([
      "[task 0] PENDING: submitted",
      "[task 1] PENDING: submitted",
      "[task 2] PENDING: submitted",
      "job PENDING: no task has been placed yet",
      "[task 0] PENDING → SCHEDULED (placed on agent-1)",
      "[task 1] PENDING → SCHEDULED (placed on agent-2)",
      "[task 2] PENDING → SCHEDULED (placed on agent-3)",
      "job RUNNING: 3 of 3 tasks placed or running",
      "job SUCCEEDED: 2 of 3 tasks succeeded; 1 failed within maxTaskFailures 1",
    ]);
    expect(clock.sleeps).toEqual([500, 500, 500, 500]);
  });

  test("all sessions ended but no final state recorded: the derived one after the grace period", async () => {
    const clock = simulatedClock(T0);
    const store = scripted([world([ended(0, 0), ended(1, 1), ended(2, 1)], {})]);
    const result = await followJob(JOB_ID, { store, ...clock, progress: () => {}, finalGraceMs: 1_000 });
    expect(result).toMatchObject({
      state: "FAILED",
      final: false,
      reason: "2 tasks failed (maxTaskFailures 1)",
    });
    expect(clock.sleeps).toEqual([500, 500]);
  });

  test("times out with the last job state seen", async () => {
    const clock = simulatedClock(T0);
    const store = scripted([world([RUNNING], {})]);
    const error = await followJob(JOB_ID, { store, ...clock, progress: () => {}, timeoutSeconds: 1.2 }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(JobWaitTimeoutError);
    expect((error as Error).message).toBe(
      "timed out after 1.2 s waiting for job train-1 (last state RUNNING); it keeps going: " +
        "follow it with `cairn job get train-1`, or stop it with `cairn cancel train-1`",
    );
    expect(clock.sleeps).toEqual([500, 500, 200]);
  });
});

// ---------------------------------------------------------------------------------------------
// Task logs: written by the agent's own shipper to the embedded CloudWatch Logs, read by the CLI
// through the real SDK client over HTTP.

let logsServer: LogsServer;
let logsClient: CloudWatchLogsClient;
let groups = 0;

beforeAll(async () => {
  // Its clock: the fixtures' times are minutes old, well within what PutLogEvents accepts.
  logsServer = await startLogsServer({ clock: () => NOW, logger: { warn: () => {} } });
  logsClient = new CloudWatchLogsClient({
    endpoint: logsServer.endpoint,
    region: "local",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
});

afterAll(async () => {
  logsClient.destroy();
  await logsServer.close();
});

/** A log group of its own per test, a reader over it, and the agent's shipper writing to it. */
function logWorld(name: string) {
  const group = `/cli-test/${name}-${++groups}`;
  logsServer.store.createLogGroup(group);
  const reader = cloudWatchLogReader(logsClient, group, "the local runtime");
  const shipper = new LogShipper({
    client: logsClient,
    logGroupName: group,
    clock: () => NOW,
    warn: (message) => {
      throw new Error(`the shipper warned: ${message}`);
    },
    flushIntervalMs: 60_000,
  });
  return {
    reader,
    access: { readable: true, reader } as KernelLogsApi,
    /** Ships lines `[atMs offset, text, stream]` of a task session's run, as the agent does. */
    write: async (sessionId: string, run: number, ...lines: [number, string, ("stdout" | "stderr")?][]) => {
      for (const [offsetMs, text, stream] of lines) {
        shipper.add({
          sessionId,
          kernelIndex: 0,
          runIndex: run,
          stream: stream ?? "stdout",
          text,
          atMs: T0 + offsetMs,
        });
      }
      await shipper.flush(sessionId, 0, run);
    },
  };
}

const ref = (index: number) => ({ index, sessionId: taskSessionId(JOB_ID, index), kernelIndex: 0 });

/** Task 1 placed on agent-2 and preparing: its process has not started. */
const PLACED = taskSession(1, "PREPARING", { status: "PREPARING", agentId: "agent-2" });

describe("reading task logs", () => {
  test("the current run; a retry waiting to run shows the previous run's, with a note; started but silent; not started", async () => {
    const { reader, write } = logWorld("read");
    await write("train-1-t0", 0, [1_000, "epoch 1"], [2_000, "warn", "stderr"]);
    await write("train-1-t2", 0, [1_500, "about to fail"]);
    const deps = { store: fakeStore(trainWorld()), logs: reader };
    const [done, silent, retry] = await locateTaskLogs(JOB_ID, [ref(0), ref(1), ref(2)], deps);
    expect(done).toEqual({
      started: true,
      runIndex: 0,
      streamName: "train-1-t0/0/run-0",
      exists: true,
      endedAtMs: T0 + 5_000,
    });
    // Running since T0+3s, nothing written yet: started, no stream.
    expect(silent).toEqual({ started: true, runIndex: 0, streamName: "train-1-t1/0/run-0", exists: false });
    expect(retry).toEqual({
      started: true,
      runIndex: 0,
      streamName: "train-1-t2/0/run-0",
      exists: true,
      endedAtMs: T0 + 3_900,
      note: "run 1 has not started (PENDING: no agent has 8 cpu free; largest free is 4); showing run 0",
    });
    const placed = { ...trainWorld(), sessions: { [PLACED.session.id]: PLACED } };
    expect(await locateTaskLogs(JOB_ID, [ref(1)], { store: fakeStore(placed), logs: reader })).toEqual([
      { started: false, finished: false, why: "BUILDING" },
    ]);
    const events: TaskLogEvent[] = [];
    await readRunLines(
      [{ task: 0, sessionId: "train-1-t0", kernelIndex: 0, runIndex: 0, streamName: "train-1-t0/0/run-0" }],
      reader,
      (e) => events.push(e),
    );
    expect(events.map((e) => e.kind === "line" && [e.line.stream, e.line.text, e.line.atMs - T0])).toEqual([
      ["stdout", "epoch 1", 1_000],
      ["stderr", "warn", 2_000],
    ]);
  });

  test("a task that never ran says why; no log group is a clear error, exit 4", async () => {
    const { reader } = logWorld("never");
    const killed = taskSession(1, "CANCELLED", {}, { cancelRequestedAtMs: T0, cancelReason: "not needed" });
    const world = { ...trainWorld(), sessions: { [killed.session.id]: killed } };
    expect(await locateTaskLogs(JOB_ID, [ref(1)], { store: fakeStore(world), logs: reader })).toEqual([
      { started: false, finished: true, why: "KILLED: not needed" },
    ]);
    expect(() =>
      kernelLogReader({ readable: false, why: "stack Cairn lacks the output KernelLogGroupName" }),
    ).toThrow(new LogsUnavailableError("stack Cairn lacks the output KernelLogGroupName"));
    expect(new LogsUnavailableError("x").exitCode).toBe(4);
    const nowhere = cloudWatchLogReader(logsClient, "/no/such/group", "stack Cairn");
    await expect(
      locateTaskLogs(JOB_ID, [ref(0)], { store: fakeStore(trainWorld()), logs: nowhere }),
    ).rejects.toThrow(
      new LogsUnavailableError(
        "stack Cairn: log group /no/such/group: The specified log group does not exist. " +
          "(the agents ship the kernels' output there; is the stack or runtime fully set up?)",
      ),
    );
  });

  test("several tasks merge by time (FilterLogEvents), each task's own order kept, split lines joined; text and JSON Lines", async () => {
    const { reader, write } = logWorld("merge");
    const long = "ü".repeat(200_000);
    await write("train-1-t0", 0, [10, "a"], [30, "c"], [30, "d"], [40, long]);
    await write("train-1-t1", 0, [20, "b"], [30, "e", "stderr"]);
    const events: TaskLogEvent[] = [];
    const run = (task: number) => ({
      task,
      sessionId: `train-1-t${task}`,
      kernelIndex: 0,
      runIndex: 0,
      streamName: `train-1-t${task}/0/run-0`,
    });
    await readRunLines([run(0), run(1)], reader, (e) => events.push(e));
    expect(events.map((e) => (e.kind === "line" ? `${e.task}:${e.line.text.slice(0, 8)}` : e.text))).toEqual([
      "0:a",
      "1:b",
      "0:c",
      "0:d",
      "1:e",
      `0:${"ü".repeat(8)}`,
    ]);
    const joined = events.at(-1);
    expect(joined?.kind === "line" && joined.line.text).toBe(long);
    const first = events[0]!;
    if (first.kind !== "line") throw new Error("unreachable");
    expect(taskLogText(first, true)).toBe("[task 0] a");
    expect(taskLogText(first, false)).toBe("a");
    expect(JSON.parse(taskLogJson(first))).toEqual({
      task: 0,
      sessionId: "train-1-t0",
      kernelIndex: 0,
      runIndex: 0,
      stream: "stdout",
      text: "a",
      at: "2026-11-21T12:00:00.010Z",
    });
  });

  test("followers polling together share one store read", async () => {
    let reads = 0;
    let nowMs = T0;
    const source = sharedSessionReads(
      {
        getSessions: (ids) => {
          reads++;
          return fakeStore(trainWorld()).getSessions(ids);
        },
      },
      ["train-1-t0", "train-1-t1"],
      () => nowMs,
      100,
    );
    await Promise.all([source.get("train-1-t0"), source.get("train-1-t1")]);
    expect((await source.get("train-1-t1"))?.session.status).toBe("RUNNING");
    expect(reads).toBe(1);
    nowMs += 100;
    await source.get("train-1-t0");
    expect(reads).toBe(2);
  });

  test("reads are paced: at most N a second, all callers together", async () => {
    const clock = simulatedClock(T0);
    const pace = callPacer(clock, 10);
    await Promise.all([pace(), pace(), pace()]);
    await pace();
    expect(clock.sleeps).toEqual([100, 100, 100]);
  });
});

describe("following a task's logs", () => {
  /** The task's session as the store shows it at each step; `sleep` advances the script. */
  function followWorld(steps: readonly (() => SessionWithKernels | Promise<SessionWithKernels>)[]) {
    let current: SessionWithKernels | undefined;
    let at = 0;
    const sleeps: number[] = [];
    return {
      sessions: {
        get: async () => {
          if (current === undefined) current = await steps[at++]!();
          return current;
        },
      },
      sleep: async (ms: number) => {
        sleeps.push(ms);
        const step = steps[at++];
        if (step !== undefined) current = await step();
      },
      sleeps,
    };
  }
  const placed = (runIndex: number, agentId: string, status: SessionStatus = "RUNNING") =>
    taskSession(
      1,
      status,
      { status: status === "TERMINATED" ? "TERMINATED" : "RUNNING", agentId },
      { runIndex },
    );
  const followDeps = (
    reader: KernelLogReader,
    world: ReturnType<typeof followWorld>,
    announceWaiting: boolean,
  ) => ({
    sessions: world.sessions,
    store: fakeStore(trainWorld()),
    logs: reader,
    streams: sharedStreamListing(reader, "train-1-t1/0/run-", () => 0, 0),
    pace: () => Promise.resolve(),
    sleep: world.sleep,
    nowMs: () => 0,
    pollMs: 250,
    settleMs: 0,
    maxWaitMs: 0,
    announceWaiting,
  });

  test("waits to start, streams as lines are shipped, follows the retry's run, ends once drained", async () => {
    const { reader, write } = logWorld("follow");
    const sid = "train-1-t1";
    const world = followWorld([
      () => taskSession(1, "PENDING", {}, { pendingReason: "waiting for capacity" }),
      () => placed(0, "agent-1"),
      async () => (await write(sid, 0, [1, "one"]), placed(0, "agent-1")),
      // The run writes its last lines (one longer than an event) and fails; the session is requeued for run 1.
      async () => (
        await write(sid, 0, [2, "two"], [3, "x".repeat(300_000)]),
        taskSession(1, "PENDING", {}, { runIndex: 1 })
      ),
      () => placed(1, "agent-2"),
      async () => (await write(sid, 1, [4, "three"]), placed(1, "agent-2", "TERMINATED")),
    ]);
    const events: TaskLogEvent[] = [];
    const ran = await followTaskLog(JOB_ID, ref(1), followDeps(reader, world, true), (e) => events.push(e));
    expect(ran).toBe(true);
    expect(
      events.map((e) =>
        e.kind === "line"
          ? `${e.line.runIndex}: ${e.line.text.slice(0, 5)} (${e.line.text.length})`
          : `note: ${e.text}`,
      ),
    ).toEqual([
      "note: waiting to start (PENDING: waiting for capacity)",
      "0: one (3)",
      "0: two (3)",
      "0: xxxxx (300000)",
      "note: run 1 started on agent-2",
      "1: three (5)",
    ]);
    expect(world.sleeps.every((ms) => ms === 250)).toBe(true);
  });

  test("a run that ends without writing: a note; a task that ends without running: a note, and false", async () => {
    const { reader } = logWorld("follow-never");
    const silent = followWorld([() => placed(0, "agent-1"), () => placed(0, "agent-1", "TERMINATED")]);
    const notes: TaskLogEvent[] = [];
    expect(await followTaskLog(JOB_ID, ref(1), followDeps(reader, silent, false), (e) => notes.push(e))).toBe(
      true,
    );
    expect(notes).toEqual([{ kind: "note", task: 1, text: "run 0 on agent-1: no output" }]);

    const world = followWorld([
      () => taskSession(1, "PENDING"),
      () => taskSession(1, "CANCELLED", {}, { cancelRequestedAtMs: T0, cancelReason: "job train-1 FAILED" }),
    ]);
    const events: TaskLogEvent[] = [];
    const ran = await followTaskLog(JOB_ID, ref(1), followDeps(reader, world, false), (e) => events.push(e));
    expect(ran).toBe(false);
    expect(events).toEqual([{ kind: "note", task: 1, text: "never ran (KILLED: job train-1 FAILED)" }]);
  });
});

// ---------------------------------------------------------------------------------------------
// runCli against in-memory fakes.

const RUNTIME_FILE = {
  region: "local",
  tableName: "cairn",
  eventBusName: "cairn",
  stateMachineArn: "arn:aws:states:local:000000000000:stateMachine:SessionLifecycle",
  endpoints: { dynamoDb: "http://127.0.0.1:8000", eventBridge: "http://127.0.0.1:8002" },
  pid: 1,
};

function cli(world: World, logs: KernelLogsApi, files: Record<string, string> = {}) {
  const puts: PutEventsEntry[] = [];
  const api: CairnApi = {
    store: fakeStore(world),
    admin: {} as CairnApi["admin"],
    // Not read by these commands (`cairn dashboard`'s).
    agents: {} as CairnApi["agents"],
    census: {} as CairnApi["census"],
    eventBusName: "cairn",
    logs,
    put: (entry) => {
      puts.push(entry);
      return Promise.resolve();
    },
    close: () => {},
  };
  const clock = simulatedClock(NOW);
  const { io, out, err } = fakeCliIo(
    { "/work/.cairn/runtime.json": JSON.stringify(RUNTIME_FILE), ...files },
    {
      nowMs: clock.nowMs,
      sleep: clock.sleep,
      openApi: () => Promise.resolve(api),
      stackOutputs: () => Promise.resolve({ TableName: "t", EventBusName: "b", StateMachineArn: "arn:sm" }),
    },
  );
  return { io, out, err, puts, sleeps: clock.sleeps };
}

const NO_LOGS: KernelLogsApi = {
  readable: false,
  why: "stack Cairn lacks the output KernelLogGroupName: deploy it again (`cdk deploy`) to read logs",
};

describe("runCli: jobs", () => {
  test("job get, tasks and task print the views; unknown ids are exit 3", async () => {
    const c = cli(trainWorld(), NO_LOGS);
    expect(await runCli(["job", "get", JOB_ID, "-o", "json"], c.io)).toBe(0);
    expect(JSON.parse(c.out.join(""))).toMatchObject({ jobId: JOB_ID, state: "RUNNING" });
    const t = cli(trainWorld(), NO_LOGS);
    expect(await runCli(["tasks", JOB_ID], t.io)).toBe(0);
    expect(t.out[0]).toMatch(/^job train-1: RUNNING/);
    const one = cli(trainWorld(), NO_LOGS);
    expect(await runCli(["task", JOB_ID, "2", "-o", "json"], one.io)).toBe(0);
    expect(JSON.parse(one.out.join(""))).toMatchObject({ index: 2, runs: [{ runIndex: 0 }] });
    for (const args of [
      ["job", "get", "nope-1"],
      ["tasks", "nope-1"],
      ["task", JOB_ID, "5"],
    ]) {
      const missing = cli(trainWorld(), NO_LOGS);
      expect(await runCli(args, missing.io)).toBe(3);
      expect(missing.err[0]).toMatch(/^cairn: job .* not found/);
    }
  });

  test("get of a job of independent tasks points at the job commands; cancel of it cancels the job", async () => {
    const get = cli(trainWorld(), NO_LOGS);
    expect(await runCli(["get", JOB_ID], get.io)).toBe(3);
    expect(get.err).toEqual([
      "cairn: session train-1 not found: it is a job of 3 independent tasks (sessions train-1-t0 … train-1-t2); " +
        "see `cairn job get train-1` and `cairn tasks train-1`",
    ]);
    const cancel = cli(trainWorld(), NO_LOGS);
    expect(await runCli(["cancel", JOB_ID, "--reason", "enough"], cancel.io)).toBe(0);
    expect(cancel.puts.map((p) => [p.DetailType, JSON.parse(p.Detail) as unknown])).toEqual([
      ["Session Cancel Requested", { sessionId: JOB_ID, reason: "enough" }],
    ]);
    expect(cancel.out).toEqual([
      "cancel requested for job train-1 (2 of 3 tasks not ended; it was RUNNING); follow it with `cairn job get train-1`",
    ]);
  });

  test("logs: every task's stream, prefixed and merged by time; a task not started is noted; none started is exit 3", async () => {
    const { access, write } = logWorld("cli");
    await write("train-1-t0", 0, [1_000, "t0 first"], [3_000, "t0 second"]);
    await write("train-1-t2", 0, [2_000, "t2 failing", "stderr"]);
    const world = { ...trainWorld(), sessions: { ...trainWorld().sessions, [PLACED.session.id]: PLACED } };
    const c = cli(world, access);
    expect(await runCli(["logs", JOB_ID], c.io)).toBe(0);
    expect(c.out).toEqual(["[task 0] t0 first", "[task 0] t0 second"]);
    expect(c.err).toEqual([
      "cairn: task 1: has not started yet (BUILDING)",
      "cairn: task 2: run 1 has not started (PENDING: no agent has 8 cpu free; largest free is 4); showing run 0",
      "[task 2] t2 failing",
    ]);
    const one = cli(world, access);
    expect(await runCli(["logs", JOB_ID, "--task", "0", "-o", "json"], one.io)).toBe(0);
    expect(one.out.map((l) => (JSON.parse(l) as { text: string }).text)).toEqual(["t0 first", "t0 second"]);
    const none = cli(world, access);
    expect(await runCli(["logs", JOB_ID, "--task", "1"], none.io)).toBe(3);
    expect(none.err).toEqual(["cairn: task 1 of job train-1 has not started yet (BUILDING): no logs"]);
    // Running but silent: nothing to print, and no error.
    const silent = cli(trainWorld(), access);
    expect(await runCli(["logs", JOB_ID, "--task", "1"], silent.io)).toBe(0);
    expect([...silent.out, ...silent.err]).toEqual([]);
  });

  test("logs of a run whose agent said how many events it put: read until that many, waited for at most 30 s after its end, then a note", async () => {
    const { access, write } = logWorld("cli-count");
    await write("train-1-t0", 0, [1_000, "t0 first"], [3_000, "t0 second"]);
    /** The world with task 0's run ended at `finishedAtMs`, its agent having said `logEventCount`. */
    const ended = (logEventCount: number, finishedAtMs: number): World => {
      const done = taskSession(0, "TERMINATED", { ...DONE.kernels[0], logEventCount, finishedAtMs });
      return { ...trainWorld(), sessions: { ...trainWorld().sessions, [done.session.id]: done } };
    };
    const note =
      "cairn: task 0: run 0: 1 of its 3 log events were not readable yet (CloudWatch Logs shows events a " +
      "while after they are written); `cairn logs` later shows them";
    const total = (sleeps: readonly number[]) => sleeps.reduce((a, b) => a + b, 0);
    /** Sleeps that are only the pacing of CloudWatch Logs reads (10 a second), no wait. */
    const paced = (sleeps: readonly number[]) => sleeps.every((ms) => ms === 100);
    // All there: no wait, no note.
    const all = cli(ended(2, NOW - 1_000), access);
    expect(await runCli(["logs", JOB_ID, "--task", "0"], all.io)).toBe(0);
    expect([all.out, all.err, paced(all.sleeps)]).toEqual([["t0 first", "t0 second"], [], true]);
    // One missing, the run ended a second ago: waited for until 30 s after the end, then said.
    const recent = cli(ended(3, NOW - 1_000), access);
    expect(await runCli(["logs", JOB_ID, "--task", "0"], recent.io)).toBe(0);
    expect(recent.out).toEqual(["t0 first", "t0 second"]);
    expect(recent.err).toEqual([note]);
    expect(total(recent.sleeps)).toBeGreaterThanOrEqual(29_000);
    expect(total(recent.sleeps)).toBeLessThan(30_000);
    // One missing, the run ended a minute ago: not waited for, said.
    const old = cli(ended(3, NOW - 60_000), access);
    expect(await runCli(["logs", JOB_ID, "--task", "0"], old.io)).toBe(0);
    expect([old.out, old.err, paced(old.sleeps)]).toEqual([["t0 first", "t0 second"], [note], true]);
  });

  test("logs --follow: streams until the task has ended; right after submit it looks for the job a while", async () => {
    const { access, write } = logWorld("cli-follow");
    await write("train-1-t0", 0, [1_000, "done already"]);
    const c = cli(trainWorld(), access);
    expect(await runCli(["logs", JOB_ID, "--task", "0", "--follow"], c.io)).toBe(0);
    expect(c.out).toEqual(["done already"]);
    const fresh = cli({ jobs: {}, sessions: {}, runs: {}, history: {} }, access);
    expect(await runCli(["logs", "fresh-1", "--follow"], fresh.io)).toBe(3);
    expect(fresh.err).toEqual(["cairn: job fresh-1 not found"]);
    expect(fresh.sleeps.reduce((a, b) => a + b, 0)).toBe(10_000);
    // Without --follow there is nothing to wait for.
    const now = cli({ jobs: {}, sessions: {}, runs: {}, history: {} }, access);
    expect(await runCli(["logs", "fresh-1"], now.io)).toBe(3);
    expect(now.sleeps).toEqual([]);
  });

  test("logs where no kernel log group is known: exit 4 saying why, before reading anything", async () => {
    const c = cli({ jobs: {}, sessions: {}, runs: {}, history: {} }, NO_LOGS);
    expect(await runCli(["logs", "anything-1", "--follow"], c.io)).toBe(4);
    expect(c.err).toEqual([
      "cairn: stack Cairn lacks the output KernelLogGroupName: deploy it again (`cdk deploy`) to read logs",
    ]);
  });

  test("submit --wait of independent tasks waits for the job and exits 1 when it failed", async () => {
    const failed = {
      ...trainWorld(),
      jobs: {
        [JOB_ID]: {
          ...JOB,
          final: { state: "FAILED", reason: "2 tasks failed (maxTaskFailures 1)", atMs: T0 },
        },
      },
      sessions: Object.fromEntries(
        [0, 1, 2].map((i) => {
          const s = taskSession(i, "TERMINATED", {
            status: "TERMINATED",
            agentId: "agent-1",
            exitCode: i === 0 ? 0 : 1,
            outcome: i === 0 ? "SUCCEEDED" : "FAILED",
          });
          return [s.session.id, s];
        }),
      ),
    } as World;
    const c = cli(failed, NO_LOGS, { "/work/job.yaml": SPEC_TEXT });
    expect(await runCli(["submit", "job.yaml", "--id", JOB_ID, "--wait", "-o", "json"], c.io)).toBe(1);
    // The job was already stored with this spec (the fake's): nothing was sent again.
    expect(c.err[0]).toBe("job train-1 already exists with this spec (FAILED); not sent again");
    expect(c.err).toContain("job FAILED: 2 tasks failed (maxTaskFailures 1)");
    expect(JSON.parse(c.out.join(""))).toMatchObject({ jobId: JOB_ID, state: "FAILED", final: true });
  });

  test("submit refuses what cannot work before sending anything", async () => {
    const spec = "name: wide\nreplicas: 12\ncoscheduled: false\ncommand: [/bin/true]\n";
    const long = `w-${"x".repeat(58)}`;
    const c = cli({ jobs: {}, sessions: {}, runs: {}, history: {} }, NO_LOGS, { "/work/job.yaml": spec });
    expect(await runCli(["submit", "job.yaml", "--id", long], c.io)).toBe(2);
    expect(c.err[0]).toBe(
      `cairn: --id "${long}" is too long for 12 independent tasks: at most 59 characters, so that their sessions (<id>-t<index>) are valid ids`,
    );
    const stream = cli({ jobs: {}, sessions: {}, runs: {}, history: {} }, NO_LOGS, {
      "/work/job.yaml": spec,
    });
    expect(await runCli(["submit", "job.yaml", "--wait", "--stream-logs"], stream.io)).toBe(4);
    expect(stream.err).toEqual([
      "cairn: stack Cairn lacks the output KernelLogGroupName: deploy it again (`cdk deploy`) to read logs",
    ]);
    expect([...c.puts, ...stream.puts]).toEqual([]);
  });
});
