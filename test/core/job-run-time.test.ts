/**
 * A job's run-time limit (`timeouts.job`) and HPC Pack's cancellation rules.
 * Given a job, its sessions and the time, the judgment says whether the job is past its limit;
 * a job cancelled for it ends KILLED with the limit as its reason, HPC Canceled, and each of its
 * tasks ends by the seed's rules: Failed if it was running, Canceled if it had not started.
 */
import { describe, expect, test } from "vitest";
import { hpcJobState, hpcTaskState } from "../../functions/core/hpc-view.ts";
import { judgeJobRunTime, jobRunTimeReason } from "../../functions/core/job-run-time.ts";
import { deriveJobState, jobTasks, newJob } from "../../functions/core/jobs.ts";
import type { Job, Kernel, Session, SessionSpec, SessionWithKernels } from "../../functions/core/model.ts";
import type { KernelStatus, SessionStatus } from "../../functions/core/status.ts";
import { kernel, NOW_MS, SPEC, session } from "./fixtures.ts";

/** Independent tasks (t0, t1) with a 60 s job limit. */
const LIMITED: SessionSpec = {
  ...SPEC,
  coscheduled: false,
  timeouts: { ...SPEC.timeouts, running: 60, job: 60 },
};
const JOB = newJob("job-a", LIMITED, NOW_MS - 600_000);

function task(
  index: number,
  status: SessionStatus,
  kernelStatus: KernelStatus,
  kernelOver: Partial<Kernel> = {},
  over: Partial<Session> = {},
): SessionWithKernels {
  const id = `job-a-t${index}`;
  return {
    session: session(id, status, {
      spec: { ...LIMITED, replicas: 1 },
      task: { jobId: "job-a", index, count: 2 },
      ...over,
    }),
    kernels: [kernel(id, 0, kernelStatus, kernelOver)],
  };
}

const startedAgo = (s: number) => ({ startedAtMs: NOW_MS - s * 1000 });
const CANCEL = { cancelRequestedAtMs: NOW_MS - 1_000, cancelReason: jobRunTimeReason(60) };

describe("judging a job's run time", () => {
  // [name, job, sessions, earlier run starts, expected verdict kind]
  const rows: [string, Job, SessionWithKernels[], number[], string][] = [
    [
      "no timeouts.job: unlimited",
      newJob("job-a", { ...LIMITED, timeouts: SPEC.timeouts }, NOW_MS - 600_000),
      [task(0, "RUNNING", "RUNNING", startedAgo(3600))],
      [],
      "unlimited",
    ],
    [
      "nothing started yet: the clock has not started",
      JOB,
      [task(0, "PENDING", "PENDING"), task(1, "PENDING", "PENDING")],
      [],
      "not-started",
    ],
    [
      "the first task started 59 s ago: within",
      JOB,
      [task(0, "RUNNING", "RUNNING", startedAgo(59)), task(1, "PENDING", "PENDING")],
      [],
      "within",
    ],
    [
      "exactly at the limit: within (past it is exceeded)",
      JOB,
      [task(0, "RUNNING", "RUNNING", startedAgo(60)), task(1, "RUNNING", "RUNNING", startedAgo(10))],
      [],
      "within",
    ],
    [
      "the first task started 61 s ago: exceeded, though the other started 10 s ago",
      JOB,
      [task(0, "RUNNING", "RUNNING", startedAgo(61)), task(1, "RUNNING", "RUNNING", startedAgo(10))],
      [],
      "exceeded",
    ],
    [
      "a finished task's start counts: the job has run since then",
      JOB,
      [
        task(0, "TERMINATED", "TERMINATED", { ...startedAgo(90), exitCode: 0 }),
        task(1, "PENDING", "PENDING"),
      ],
      [],
      "exceeded",
    ],
    [
      "a retried run's start (from its run record) counts",
      JOB,
      [task(0, "RUNNING", "RUNNING", startedAgo(5), { runIndex: 1 }), task(1, "PENDING", "PENDING")],
      [NOW_MS - 120_000],
      "exceeded",
    ],
    [
      "every live task is being cancelled already",
      JOB,
      [task(0, "TERMINATING", "RUNNING", startedAgo(120), CANCEL), task(1, "PENDING", "PENDING", {}, CANCEL)],
      [],
      "cancelling",
    ],
    [
      "every task ended",
      JOB,
      [
        task(0, "TERMINATED", "TERMINATED", { ...startedAgo(120), exitCode: 0 }),
        task(1, "TERMINATED", "TERMINATED", { ...startedAgo(100), exitCode: 0 }),
      ],
      [],
      "ended",
    ],
    [
      "the job's state is recorded",
      { ...JOB, final: { state: "KILLED", reason: "x", atMs: NOW_MS - 1 } },
      [task(0, "TERMINATING", "RUNNING", startedAgo(120))],
      [],
      "ended",
    ],
  ];
  test.each(rows)("%s", (_name, job, sessions, earlierRunStartsMs, expected) => {
    expect(judgeJobRunTime({ job, sessions, earlierRunStartsMs, nowMs: NOW_MS }).kind).toBe(expected);
  });

  test("an exceeded job's reason names the limit and the field, verbatim", () => {
    const verdict = judgeJobRunTime({
      job: JOB,
      sessions: [task(0, "RUNNING", "RUNNING", startedAgo(61)), task(1, "PENDING", "PENDING")],
      nowMs: NOW_MS,
    });
    expect(verdict).toEqual({
      kind: "exceeded",
      startedAtMs: NOW_MS - 61_000,
      reason: "job run-time limit of 60 s (timeouts.job) exceeded",
    });
  });

  test("within the limit, the deadline is the first start plus the limit", () => {
    expect(
      judgeJobRunTime({ job: JOB, sessions: [task(0, "RUNNING", "RUNNING", startedAgo(20))], nowMs: NOW_MS }),
    ).toEqual({ kind: "within", startedAtMs: NOW_MS - 20_000, deadlineMs: NOW_MS + 40_000 });
  });

  test("judging reads no clock: the same input gives the same verdict later", () => {
    const input = { job: JOB, sessions: [task(0, "RUNNING", "RUNNING", startedAgo(30))], nowMs: NOW_MS };
    expect(judgeJobRunTime(input)).toEqual(judgeJobRunTime(input));
    expect(judgeJobRunTime({ ...input, nowMs: NOW_MS + 31_000 }).kind).toBe("exceeded");
  });
});

describe("HPC Pack's cancellation rules, Sokovan status beside HPC state", () => {
  const ENDED_BY_CANCEL = { finishedAtMs: NOW_MS - 500 };
  // [name, session status, session fields, kernel status, kernel fields, HPC state]
  const rows: [string, SessionStatus, Partial<Session>, KernelStatus, Partial<Kernel>, string][] = [
    ["cancelled while queued", "CANCELLED", CANCEL, "CANCELLED", {}, "Canceled"],
    ["cancelled while dispatching", "CANCELLED", CANCEL, "CANCELLED", { agentId: "a1" }, "Canceled"],
    [
      "cancelled while running, killed by the signal",
      "TERMINATED",
      CANCEL,
      "TERMINATED",
      { ...startedAgo(30), ...ENDED_BY_CANCEL, exitCode: 143, outcome: "KILLED" },
      "Failed",
    ],
    [
      "cancelled while running, exited 0 on the signal: still Failed",
      "TERMINATED",
      CANCEL,
      "TERMINATED",
      { ...startedAgo(30), ...ENDED_BY_CANCEL, exitCode: 0, outcome: "KILLED" },
      "Failed",
    ],
    [
      "a gang's task that finished before the cancel stays Finished",
      "TERMINATED",
      CANCEL,
      "TERMINATED",
      { ...startedAgo(30), finishedAtMs: NOW_MS - 5_000, exitCode: 0, outcome: "SUCCEEDED" },
      "Finished",
    ],
    [
      "a gang's task that failed before the cancel is Failed",
      "TERMINATED",
      CANCEL,
      "TERMINATED",
      { ...startedAgo(30), finishedAtMs: NOW_MS - 5_000, exitCode: 1, outcome: "FAILED" },
      "Failed",
    ],
    [
      "a gang's task that never started, its session cancelled while running",
      "TERMINATED",
      CANCEL,
      "CANCELLED",
      {},
      "Canceled",
    ],
    ["being cancelled while running", "TERMINATING", CANCEL, "RUNNING", startedAgo(30), "Canceling"],
  ];
  test.each(rows)("%s: %s → %s", (_name, status, over, kernelStatus, kernelOver, expected) => {
    expect(hpcTaskState(session("s1", status, over), kernel("s1", 0, kernelStatus, kernelOver))).toBe(
      expected,
    );
  });
});

describe("a job cancelled by its run-time limit", () => {
  // Task 0 was running when the limit passed; task 1 was still queued.
  const sessions = [
    task(
      0,
      "TERMINATED",
      "TERMINATED",
      { ...startedAgo(61), finishedAtMs: NOW_MS, exitCode: 143, outcome: "KILLED" },
      CANCEL,
    ),
    task(1, "CANCELLED", "CANCELLED", {}, CANCEL),
  ];

  test("its tasks: the running one Failed, the queued one Canceled, both KILLED with the limit as reason", () => {
    const tasks = jobTasks(JOB, sessions);
    expect(tasks.map((t) => [t.sessionStatus, t.state, t.hpcState, t.reason])).toEqual([
      ["TERMINATED", "KILLED", "Failed", "job run-time limit of 60 s (timeouts.job) exceeded"],
      ["CANCELLED", "KILLED", "Canceled", "job run-time limit of 60 s (timeouts.job) exceeded"],
    ]);
  });

  test("the job: KILLED with the limit in its reason, HPC Canceled", () => {
    const tasks = jobTasks(JOB, sessions);
    const verdict = deriveJobState(tasks, 0);
    expect(verdict).toEqual({
      state: "KILLED",
      reason: "2 tasks killed: job run-time limit of 60 s (timeouts.job) exceeded",
    });
    expect(
      hpcJobState({ tasks: tasks.map((t) => t.hpcState), final: verdict.state, cancelRequested: true }),
    ).toBe("Canceled");
  });

  test("killed tasks with different reasons give the count alone", () => {
    const mixed = [
      sessions[0]!,
      task(1, "CANCELLED", "CANCELLED", {}, { ...CANCEL, cancelReason: "not needed" }),
    ];
    expect(deriveJobState(jobTasks(JOB, mixed), 0).reason).toBe("2 tasks killed");
  });
});
