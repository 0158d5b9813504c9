/**
 * A job's run-time limit (HPC Pack's job and task states): `timeouts.job` seconds for the whole job,
 * beside each task's own `timeouts.running`. HPC Pack: "the HPC Job Scheduler Service can cancel
 * a job if it exceeds its runtime"; the job is then Canceled, and its tasks end by the
 * cancellation rules (hpc-view.ts): Failed if they were running, Canceled if they had not started.
 *
 * The job's run time counts from when its first task started running (the earliest start of any
 * run of any of its tasks, retried runs included), not from submission: time spent queued is not
 * run time. Pure: the coordinator's sweep reads the job, its sessions and their earlier runs'
 * starts, passes the time in, and cancels the job on `exceeded` (app/jobs.ts).
 */
import type { Job, SessionWithKernels } from "./model.ts";
import { TERMINAL_SESSION_STATUSES } from "./status.ts";

export type JobRunTimeVerdict =
  /** No `timeouts.job`. */
  | { readonly kind: "unlimited" }
  /** The job's state is recorded, or every task has ended: nothing left to cancel. */
  | { readonly kind: "ended" }
  /** Every task still live has a cancel request already. */
  | { readonly kind: "cancelling" }
  /** No task has started running yet: the clock has not started. */
  | { readonly kind: "not-started"; readonly limitSeconds: number }
  | { readonly kind: "within"; readonly startedAtMs: number; readonly deadlineMs: number }
  | { readonly kind: "exceeded"; readonly startedAtMs: number; readonly reason: string };

export interface JobRunTimeInput {
  readonly job: Job;
  /** The job's sessions as read (a task not stored yet is simply absent). */
  readonly sessions: readonly SessionWithKernels[];
  /** Starts of the job's tasks' earlier runs (run records), which a retry cleared off the kernels. */
  readonly earlierRunStartsMs?: readonly number[];
  readonly nowMs: number;
}

/** The reason a job cancelled by its limit carries (its tasks' cancel reason and the job's). */
export function jobRunTimeReason(limitSeconds: number): string {
  return `job run-time limit of ${limitSeconds} s (timeouts.job) exceeded`;
}

export function judgeJobRunTime(input: JobRunTimeInput): JobRunTimeVerdict {
  const { job, sessions, nowMs } = input;
  const limitSeconds = job.spec.timeouts.job;
  if (limitSeconds === undefined) return { kind: "unlimited" };
  const live = sessions.filter(({ session }) => !TERMINAL_SESSION_STATUSES.has(session.status));
  const allStored = sessions.length === job.sessionIds.length;
  if (job.final !== undefined || (allStored && live.length === 0)) return { kind: "ended" };
  if (live.length > 0 && live.every(({ session }) => session.cancelRequestedAtMs !== undefined)) {
    return { kind: "cancelling" };
  }
  const starts = [
    ...sessions.flatMap(({ kernels }) =>
      kernels.flatMap((k) => (k.startedAtMs !== undefined ? [k.startedAtMs] : [])),
    ),
    ...(input.earlierRunStartsMs ?? []),
  ];
  if (starts.length === 0) return { kind: "not-started", limitSeconds };
  const startedAtMs = Math.min(...starts);
  const deadlineMs = startedAtMs + limitSeconds * 1000;
  if (nowMs > deadlineMs) return { kind: "exceeded", startedAtMs, reason: jobRunTimeReason(limitSeconds) };
  return { kind: "within", startedAtMs, deadlineMs };
}
