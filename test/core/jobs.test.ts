/**
 * Job state derived from task states (Iris's `_compute_job_state`, rule by rule and
 * in its order), task states read off sessions and kernels, the cascades, and how the retry
 * budgets interact with `maxTaskFailures`.
 */
import { describe, expect, test } from "vitest";
import {
  deriveJobState,
  jobCascade,
  jobSessionIds,
  jobTasks,
  maxJobIdLength,
  newJob,
  taskSessionId,
  taskSpec,
  type TaskView,
} from "../../functions/core/jobs.ts";
import type { HistoryRecord, Kernel, Session, SessionWithKernels } from "../../functions/core/model.ts";
import { parseSessionSpec } from "../../functions/core/spec.ts";
import {
  JobState,
  TaskState,
  type AttemptOutcome,
  type KernelStatus,
  type SessionStatus,
} from "../../functions/core/status.ts";

type T = Pick<TaskView, "state" | "finished">;
const done = (state: TaskState): T => ({ state, finished: true });
const live = (state: TaskState): T => ({ state, finished: false });
const S = TaskState;

describe("job state: each of Iris's rules, in order", () => {
  // [name, tasks, maxTaskFailures, expected]
  const rows: [string, T[], number, JobState][] = [
    ["all succeeded → SUCCEEDED", [done(S.SUCCEEDED), done(S.SUCCEEDED)], 0, JobState.SUCCEEDED],
    ["one failed beyond tolerance → FAILED", [done(S.FAILED), done(S.SUCCEEDED)], 0, JobState.FAILED],
    [
      "one succeeded and one failed beyond tolerance is FAILED, not RUNNING",
      [done(S.SUCCEEDED), done(S.FAILED), live(S.RUNNING)],
      0,
      JobState.FAILED,
    ],
    [
      "failures within tolerance while others run → RUNNING",
      [done(S.FAILED), live(S.RUNNING)],
      1,
      JobState.RUNNING,
    ],
    [
      "failures beyond tolerance (2 > 1) → FAILED",
      [done(S.FAILED), done(S.FAILED), live(S.RUNNING)],
      1,
      JobState.FAILED,
    ],
    [
      "any unschedulable → UNSCHEDULABLE",
      [done(S.UNSCHEDULABLE), live(S.RUNNING)],
      0,
      JobState.UNSCHEDULABLE,
    ],
    ["FAILED beats UNSCHEDULABLE", [done(S.UNSCHEDULABLE), done(S.FAILED)], 0, JobState.FAILED],
    ["UNSCHEDULABLE beats KILLED", [done(S.UNSCHEDULABLE), done(S.KILLED)], 0, JobState.UNSCHEDULABLE],
    ["any killed → KILLED", [done(S.KILLED), live(S.RUNNING)], 0, JobState.KILLED],
    [
      "FAILED beats KILLED (the cascade's kills do not hide the cause)",
      [done(S.FAILED), done(S.KILLED)],
      0,
      JobState.FAILED,
    ],
    [
      "all finished, worker failure among them → WORKER_FAILED",
      [done(S.WORKER_FAILED), done(S.SUCCEEDED)],
      0,
      JobState.WORKER_FAILED,
    ],
    [
      "preempted is grouped with worker failure",
      [done(S.PREEMPTED), done(S.SUCCEEDED)],
      0,
      JobState.WORKER_FAILED,
    ],
    [
      "worker failure while others still run → RUNNING (not yet all terminal)",
      [done(S.WORKER_FAILED), live(S.RUNNING)],
      0,
      JobState.RUNNING,
    ],
    ["KILLED beats WORKER_FAILED", [done(S.KILLED), done(S.WORKER_FAILED)], 0, JobState.KILLED],
    [
      "a co-scheduled gang whose task failed: FAILED, the siblings' WORKER_FAILED does not win",
      [done(S.FAILED), done(S.WORKER_FAILED), done(S.WORKER_FAILED), done(S.WORKER_FAILED)],
      0,
      JobState.FAILED,
    ],
    ["any assigned → RUNNING", [live(S.ASSIGNED), live(S.PENDING)], 0, JobState.RUNNING],
    ["any building → RUNNING", [live(S.BUILDING), live(S.PENDING)], 0, JobState.RUNNING],
    ["any running → RUNNING", [live(S.RUNNING), live(S.PENDING)], 0, JobState.RUNNING],
    [
      "a failed run awaiting its retry decision keeps the job RUNNING",
      [live(S.FAILED), live(S.PENDING)],
      0,
      JobState.RUNNING,
    ],
    ["default: nothing placed → PENDING", [live(S.PENDING), live(S.PENDING)], 0, JobState.PENDING],
    [
      'seed: "PENDING: Default (no tasks have started)": a task that succeeded has started, so the job is RUNNING while the rest wait',
      [done(S.SUCCEEDED), live(S.PENDING)],
      0,
      JobState.RUNNING,
    ],
    [
      "all finished with failures within tolerance → SUCCEEDED (Cairn: tolerated)",
      [done(S.FAILED), done(S.SUCCEEDED), done(S.SUCCEEDED)],
      1,
      JobState.SUCCEEDED,
    ],
    ["no tasks → PENDING", [], 0, JobState.PENDING],
  ];
  test.each(rows)("%s", (_name, tasks, maxTaskFailures, expected) => {
    expect(deriveJobState(tasks, maxTaskFailures).state).toBe(expected);
  });

  test("the reason names the counts", () => {
    expect(deriveJobState([done(S.FAILED), done(S.FAILED), live(S.RUNNING)], 1).reason).toBe(
      "2 tasks failed (maxTaskFailures 1)",
    );
    expect(deriveJobState([done(S.UNSCHEDULABLE), done(S.KILLED)], 0).reason).toBe(
      "1 task could not be scheduled in time",
    );
    // In the grammar of the count: one task is not "all 1 tasks".
    expect(deriveJobState([done(S.SUCCEEDED)], 0).reason).toBe("its one task succeeded");
    expect(deriveJobState([done(S.SUCCEEDED), done(S.SUCCEEDED)], 0).reason).toBe("all 2 tasks succeeded");
  });
});

describe("cascades", () => {
  test.each([
    [JobState.PENDING, false, false],
    [JobState.RUNNING, false, false],
    [JobState.SUCCEEDED, false, false],
    [JobState.FAILED, true, true],
    [JobState.UNSCHEDULABLE, true, true],
    [JobState.KILLED, true, true],
    [JobState.WORKER_FAILED, true, true],
  ])("%s: kill remaining %s, cancel children %s", (state, killRemaining, cancelChildren) => {
    expect(jobCascade(state)).toEqual({ killRemaining, cancelChildren });
  });
});

// ---------------------------------------------------------------------------------------------
// Task states read off sessions.

const NOW = 1_700_000_000_000;

function session(
  id: string,
  status: SessionStatus,
  extra: Partial<Session> = {},
  spec = parseSessionSpec({ name: "j", command: ["true"] }),
): Session {
  return {
    id,
    spec,
    status,
    version: 1,
    createdAtMs: NOW,
    updatedAtMs: NOW,
    executionName: id,
    stage: { enteredAtMs: NOW, expiresAtMs: NOW + 1000 },
    tries: 0,
    runIndex: 0,
    ...extra,
  };
}

function kernel(sessionId: string, index: number, status: KernelStatus, extra: Partial<Kernel> = {}): Kernel {
  return {
    sessionId,
    index,
    status,
    resources: { cpu: 1, memoryMiB: 64 },
    statusChangedAtMs: NOW,
    ...extra,
  };
}

function history(from: SessionStatus, to: SessionStatus, result: HistoryRecord["result"]): HistoryRecord {
  return {
    sessionId: "x",
    seq: 3,
    handler: "Lifecycle",
    result,
    fromStatus: from,
    toStatus: to,
    message: "PENDING expired",
    count: 1,
    firstAtMs: NOW,
    lastAtMs: NOW,
  };
}

function independentJob(replicas: number, maxTaskFailures = 0) {
  const spec = parseSessionSpec({
    name: "j",
    command: ["true"],
    replicas,
    coscheduled: false,
    maxTaskFailures,
  });
  return newJob("job-a", spec, NOW);
}

function one(
  jobId: string,
  index: number,
  status: SessionStatus,
  k: Partial<Kernel> & { status: KernelStatus },
  extra: Partial<Session> = {},
): SessionWithKernels {
  const id = taskSessionId(jobId, index);
  return {
    session: session(id, status, { task: { jobId, index, count: 3 }, ...extra }),
    kernels: [kernel(id, 0, k.status, k)],
  };
}

describe("task states from sessions", () => {
  const rows: [string, SessionWithKernels, TaskState, boolean][] = [
    ["PENDING session → PENDING", one("job-a", 0, "PENDING", { status: "PENDING" }), S.PENDING, false],
    [
      "SCHEDULED → ASSIGNED",
      one("job-a", 0, "SCHEDULED", { status: "SCHEDULED", agentId: "a" }),
      S.ASSIGNED,
      false,
    ],
    [
      "PREPARING → BUILDING",
      one("job-a", 0, "PREPARING", { status: "PREPARING", agentId: "a" }),
      S.BUILDING,
      false,
    ],
    [
      "CREATING → BUILDING",
      one("job-a", 0, "CREATING", { status: "CREATING", agentId: "a" }),
      S.BUILDING,
      false,
    ],
    ["RUNNING → RUNNING", one("job-a", 0, "RUNNING", { status: "RUNNING", agentId: "a" }), S.RUNNING, false],
    [
      "ended run not yet judged → its outcome, not finished",
      one("job-a", 0, "TERMINATING", { status: "TERMINATED", outcome: "FAILED", exitCode: 1 }),
      S.FAILED,
      false,
    ],
    [
      "TERMINATED with exit 0 → SUCCEEDED",
      one("job-a", 0, "TERMINATED", { status: "TERMINATED", outcome: "SUCCEEDED", exitCode: 0 }),
      S.SUCCEEDED,
      true,
    ],
    [
      "TERMINATED failed (budget spent) → FAILED, finished",
      one("job-a", 0, "TERMINATED", { status: "TERMINATED", outcome: "FAILED", exitCode: 1 }),
      S.FAILED,
      true,
    ],
    [
      "TERMINATED as a stopped gang sibling → WORKER_FAILED",
      one("job-a", 0, "TERMINATED", { status: "TERMINATED", outcome: "WORKER_FAILED" }),
      S.WORKER_FAILED,
      true,
    ],
    [
      "TERMINATED without a report (agent lost) → WORKER_FAILED",
      one("job-a", 0, "TERMINATED", { status: "TERMINATED" }),
      S.WORKER_FAILED,
      true,
    ],
    [
      "CANCELLED by request → KILLED",
      one(
        "job-a",
        0,
        "CANCELLED",
        { status: "CANCELLED" },
        { cancelRequestedAtMs: NOW, cancelReason: "job failed" },
      ),
      S.KILLED,
      true,
    ],
    [
      "CANCELLED because PENDING expired (scheduling timeout) → UNSCHEDULABLE",
      one(
        "job-a",
        0,
        "CANCELLED",
        { status: "CANCELLED" },
        { lastHistory: history("PENDING", "CANCELLED", "EXPIRED") },
      ),
      S.UNSCHEDULABLE,
      true,
    ],
    [
      "a cancel that raced the scheduling timeout is KILLED",
      one(
        "job-a",
        0,
        "CANCELLED",
        { status: "CANCELLED" },
        { cancelRequestedAtMs: NOW, lastHistory: history("PENDING", "CANCELLED", "EXPIRED") },
      ),
      S.KILLED,
      true,
    ],
  ];
  test.each(rows)("%s", (_name, s, state, finished) => {
    const [task] = jobTasks(independentJob(1), [s]);
    expect(task).toMatchObject({ state, finished, index: 0, sessionId: "job-a-t0" });
  });

  test("a pending task carries the reason it waits; a killed one why it was killed", () => {
    const tasks = jobTasks(independentJob(2), [
      one(
        "job-a",
        0,
        "PENDING",
        { status: "PENDING" },
        { pendingReason: "no agent has 8 cpu free; largest free is 4" },
      ),
      one(
        "job-a",
        1,
        "CANCELLED",
        { status: "CANCELLED" },
        { cancelRequestedAtMs: NOW, cancelReason: "job job-a FAILED" },
      ),
    ]);
    expect(tasks.map((t) => t.reason)).toEqual([
      "no agent has 8 cpu free; largest free is 4",
      "job job-a FAILED",
    ]);
  });

  test("an ended task without a message says its condition or exit code", () => {
    const tasks = jobTasks(independentJob(2), [
      one("job-a", 0, "TERMINATED", {
        status: "TERMINATED",
        outcome: "FAILED",
        exitCode: 137,
        condition: "OOMKilled",
      }),
      one("job-a", 1, "TERMINATED", { status: "TERMINATED", outcome: "FAILED", exitCode: 3 }),
    ]);
    expect(tasks.map((t) => [t.reason, t.condition])).toEqual([
      ["OOMKilled", "OOMKilled"],
      ["exit code 3", undefined],
    ]);
  });

  test("a task whose session is not created yet is PENDING", () => {
    const tasks = jobTasks(independentJob(3), [
      one("job-a", 0, "RUNNING", { status: "RUNNING", agentId: "a" }),
    ]);
    expect(tasks.map((t) => t.state)).toEqual([S.RUNNING, S.PENDING, S.PENDING]);
  });

  test("a co-scheduled job's tasks are its session's kernels", () => {
    const spec = parseSessionSpec({ name: "g", command: ["true"], replicas: 3 });
    const job = newJob("gang-a", spec, NOW);
    const outcomes: [KernelStatus, AttemptOutcome][] = [
      ["TERMINATED", "WORKER_FAILED"],
      ["TERMINATED", "FAILED"],
      ["CANCELLED", "KILLED"],
    ];
    const s: SessionWithKernels = {
      session: session("gang-a", "TERMINATED", {}, spec),
      kernels: outcomes.map(([status, outcome], i) => kernel("gang-a", i, status, { outcome })),
    };
    const tasks = jobTasks(job, [s]);
    expect(tasks.map((t) => [t.index, t.state, t.sessionId, t.kernelIndex])).toEqual([
      [0, S.WORKER_FAILED, "gang-a", 0],
      [1, S.FAILED, "gang-a", 1],
      [2, S.KILLED, "gang-a", 2],
    ]);
    expect(deriveJobState(tasks, 0).state).toBe(JobState.FAILED);
  });
});

describe("budget interplay (Iris: only FAILED counts toward maxTaskFailures)", () => {
  const job = independentJob(3, 1);
  const retrying = (index: number, preemptions: number, failures: number) =>
    one(
      "job-a",
      index,
      "PENDING",
      { status: "PENDING" },
      {
        runIndex: preemptions + failures,
        retry: {
          failureCount: failures,
          preemptionCount: preemptions,
          totalRetries: preemptions + failures,
          ruleRetries: {},
        },
      },
    );

  test("a task retried under its failure budget is not a failure of the job", () => {
    const tasks = jobTasks(job, [
      retrying(0, 0, 2),
      one("job-a", 1, "RUNNING", { status: "RUNNING", agentId: "a" }),
      one("job-a", 2, "RUNNING", { status: "RUNNING", agentId: "a" }),
    ]);
    expect(tasks[0]).toMatchObject({ state: S.PENDING, failureCount: 2, finished: false });
    expect(deriveJobState(tasks, 1).state).toBe(JobState.RUNNING);
  });

  test("preemptions never count toward maxTaskFailures, however many", () => {
    const tasks = jobTasks(job, [
      retrying(0, 50, 0),
      retrying(1, 99, 0),
      one("job-a", 2, "RUNNING", { status: "RUNNING", agentId: "a" }),
    ]);
    expect(deriveJobState(tasks, 0).state).toBe(JobState.RUNNING);
  });

  test("a preemption budget spent ends the task PREEMPTED: the job WORKER_FAILED once all are finished", () => {
    const tasks = jobTasks(job, [
      one("job-a", 0, "TERMINATED", { status: "TERMINATED", outcome: "PREEMPTED" }),
      one("job-a", 1, "TERMINATED", { status: "TERMINATED", outcome: "SUCCEEDED", exitCode: 0 }),
      one("job-a", 2, "TERMINATED", { status: "TERMINATED", outcome: "SUCCEEDED", exitCode: 0 }),
    ]);
    expect(deriveJobState(tasks, 1).state).toBe(JobState.WORKER_FAILED);
  });

  test("one failure tolerated, the second fails the job", () => {
    const first = jobTasks(job, [
      one("job-a", 0, "TERMINATED", { status: "TERMINATED", outcome: "FAILED", exitCode: 1 }),
      one("job-a", 1, "RUNNING", { status: "RUNNING", agentId: "a" }),
      one("job-a", 2, "RUNNING", { status: "RUNNING", agentId: "a" }),
    ]);
    expect(deriveJobState(first, 1).state).toBe(JobState.RUNNING);
    const second = jobTasks(job, [
      one("job-a", 0, "TERMINATED", { status: "TERMINATED", outcome: "FAILED", exitCode: 1 }),
      one("job-a", 1, "TERMINATED", { status: "TERMINATED", outcome: "FAILED", exitCode: 1 }),
      one("job-a", 2, "RUNNING", { status: "RUNNING", agentId: "a" }),
    ]);
    expect(deriveJobState(second, 1)).toEqual({
      state: JobState.FAILED,
      reason: "2 tasks failed (maxTaskFailures 1)",
    });
  });
});

describe('a job that has started stays RUNNING (Iris: "PENDING: Default (no tasks have started)")', () => {
  const job = independentJob(1, 0);
  const waiting = (extra: Partial<Session>) =>
    jobTasks(job, [one("job-a", 0, "PENDING", { status: "PENDING" }, extra)]);

  test("a task never placed: the job is PENDING", () => {
    const tasks = waiting({});
    expect(tasks[0]?.started).toBe(false);
    expect(deriveJobState(tasks, 0)).toEqual({
      state: JobState.PENDING,
      reason: "no task has been placed yet",
    });
  });

  test("its only task requeued after a failure (a retry under the failure budget): still RUNNING", () => {
    const tasks = waiting({
      runIndex: 1,
      retry: { failureCount: 1, preemptionCount: 0, totalRetries: 1, ruleRetries: {} },
    });
    expect(tasks[0]).toMatchObject({ state: S.PENDING, started: true, finished: false });
    expect(deriveJobState(tasks, 0)).toEqual({
      state: JobState.RUNNING,
      reason: "1 of 1 task started; none placed now (waiting to run again)",
    });
  });

  test("every task back in PENDING after a preemption: still RUNNING", () => {
    const gang = newJob("gang-a", parseSessionSpec({ name: "g", command: ["true"], replicas: 2 }), NOW);
    const preempted: SessionWithKernels = {
      session: session("gang-a", "PENDING", {
        runIndex: 1,
        retry: { failureCount: 0, preemptionCount: 1, totalRetries: 1, ruleRetries: {} },
      }),
      kernels: [kernel("gang-a", 0, "PENDING"), kernel("gang-a", 1, "PENDING")],
    };
    const tasks = jobTasks(gang, [preempted]);
    expect(tasks.map((t) => [t.state, t.started])).toEqual([
      [S.PENDING, true],
      [S.PENDING, true],
    ]);
    expect(deriveJobState(tasks, 0).state).toBe(JobState.RUNNING);
  });

  test("a task sent back from ASSIGNED at no cost (a free return) had started: still RUNNING", () => {
    const tasks = waiting({
      retry: { failureCount: 0, preemptionCount: 0, totalRetries: 0, ruleRetries: {}, freeReturns: 1 },
    });
    expect(deriveJobState(tasks, 0).state).toBe(JobState.RUNNING);
  });

  test("a terminal rule still wins over having started", () => {
    const tasks = jobTasks(independentJob(2, 0), [
      one("job-a", 0, "TERMINATED", { status: "TERMINATED", outcome: "FAILED", exitCode: 1 }),
      one("job-a", 1, "PENDING", { status: "PENDING" }, { runIndex: 2 }),
    ]);
    expect(deriveJobState(tasks, 0).state).toBe(JobState.FAILED);
  });
});

describe("job identity", () => {
  test("a co-scheduled job is one session named like the job; independent tasks are <id>-t<i>", () => {
    const gang = parseSessionSpec({ name: "g", command: ["true"], replicas: 4 });
    expect(jobSessionIds("job-a", gang)).toEqual(["job-a"]);
    expect(taskSpec(gang).replicas).toBe(4);
    const independent = parseSessionSpec({ name: "g", command: ["true"], replicas: 12, coscheduled: false });
    expect(jobSessionIds("job-a", independent)).toEqual(Array.from({ length: 12 }, (_, i) => `job-a-t${i}`));
    expect(taskSpec(independent).replicas).toBe(1);
    expect(maxJobIdLength(independent)).toBe(63 - "-t11".length);
  });

  test("spec validation of the job fields", () => {
    const base = { name: "g", command: ["true"] };
    expect(() => parseSessionSpec({ ...base, replicas: 2, coscheduled: false, perAgent: 2 })).toThrow(
      "perAgent: only applies to a co-scheduled job (coscheduled: true)",
    );
    expect(() => parseSessionSpec({ ...base, replicas: 2, maxTaskFailures: 2 })).toThrow(
      "maxTaskFailures: must be less than replicas (2): otherwise the job could never fail",
    );
    expect(() => parseSessionSpec({ ...base, schedulingTimeout: 5, timeouts: { pending: 10 } })).toThrow(
      "schedulingTimeout: conflicts with timeouts.pending (10): set one of them",
    );
    expect(() => parseSessionSpec({ ...base, parent: "Bad_Id" })).toThrow(
      "parent: must be 3 to 63 lowercase",
    );
    expect(parseSessionSpec({ ...base, schedulingTimeout: 5 }).timeouts.pending).toBe(5);
  });
});
