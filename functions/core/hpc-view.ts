/**
 * HPC Pack's job and task states (Microsoft's "Understanding Job and Task States") as a view of
 * what Cairn stores, for users who think in HPC Pack's terms: computed from a session's status,
 * its kernels and its cancel request; nothing is stored for it. One table per level, first
 * matching row wins, shown in docs/hpc-view.md. Configuring, Submitted and Validating are HPC
 * Pack's states before a job is queued:
 * Cairn validates a submission (its job template and the submission filter, app/admission.ts)
 * before it stores its sessions, so a stored session is never Validating: one that passed is
 * queued, what validation checked the message of its first history record (Submit SUBMITTED,
 * history.ts admissionSummary), and one that failed ("the job moves to the Failed state") is
 * stored TERMINATED with no kernel started, which the rows below read as Failed, its history the
 * one record Submit FAILED with the reason (history.ts validationFailedRecord). Either way the
 * steps it went through, Submitted → Validating → Queued or Failed, are read off that record or
 * the session (hpcAdmissionSteps). A job's task whose session is not stored yet is Submitted
 * (core/jobs.ts), and a draft (core/drafts.ts) is Configuring.
 *
 * Cancellation: "The task was canceled by the job owner or a cluster
 * administrator before it started running. If a running task is canceled, the task is marked as
 * Failed." So a cancelled task is Canceled if its kernel never started and Failed if it did, while
 * its Sokovan status reads CANCELLED (cancelled before RUNNING) or TERMINATED (from RUNNING). A job
 * cancelled by its owner or by its run-time limit (job-run-time.ts) ends KILLED: Canceled ("the
 * HPC Job Scheduler Service can cancel a job if it exceeds its runtime").
 */
import type { HistoryRecord, Kernel, Session } from "./model.ts";
import { AttemptOutcome, JobState, KernelStatus, SessionStatus } from "./status.ts";

export const HpcState = {
  Configuring: "Configuring",
  Submitted: "Submitted",
  Validating: "Validating",
  Queued: "Queued",
  Dispatching: "Dispatching",
  Running: "Running",
  Finishing: "Finishing",
  Finished: "Finished",
  Failed: "Failed",
  Canceling: "Canceling",
  Canceled: "Canceled",
} as const;
export type HpcState = (typeof HpcState)[keyof typeof HpcState];
export const HPC_STATES = Object.values(HpcState);

/** What a task's row reads: its session and its kernel. */
interface TaskFacts {
  readonly session: Session;
  readonly kernel: Kernel;
}

export interface HpcRow<F> {
  readonly state: HpcState;
  /** The row in words, for docs/hpc-view.md and for people reading the table. */
  readonly when: string;
  readonly matches: (facts: F) => boolean;
}

const ended = (s: Session) => s.status === SessionStatus.TERMINATED || s.status === SessionStatus.CANCELLED;
const started = (k: Kernel) => k.startedAtMs !== undefined;
/** Exited 0 and was not killed (a run-time limit's KILLED stays Failed whatever the exit code). */
const succeeded = (k: Kernel) =>
  k.status === KernelStatus.TERMINATED &&
  k.exitCode === 0 &&
  (k.outcome === undefined || k.outcome === AttemptOutcome.SUCCEEDED);
const cancelled = (s: Session) => s.cancelRequestedAtMs !== undefined;
/** The kernel was still running when the cancel was asked for (a gang's early finisher was not). */
const endedByCancel = (s: Session, k: Kernel) =>
  s.cancelRequestedAtMs !== undefined &&
  (k.finishedAtMs === undefined || k.finishedAtMs >= s.cancelRequestedAtMs);
const DISPATCHING: ReadonlySet<SessionStatus> = new Set([
  SessionStatus.SCHEDULED,
  SessionStatus.PREPARING,
  SessionStatus.PREPARED,
  SessionStatus.CREATING,
]);

/** A task (one kernel of a session, or an independent task's one kernel). */
export const HPC_TASK_TABLE: readonly HpcRow<TaskFacts>[] = [
  {
    state: HpcState.Canceled,
    when: "cancelled before its kernel started (session CANCELLED, or TERMINATED by a cancel before it ran)",
    matches: ({ session, kernel }) =>
      session.status === SessionStatus.CANCELLED ||
      (ended(session) && cancelled(session) && !started(kernel)),
  },
  {
    state: HpcState.Finished,
    when: "ended and its kernel exited 0 on its own (before any cancel was asked for)",
    matches: ({ session, kernel }) => ended(session) && succeeded(kernel) && !endedByCancel(session, kernel),
  },
  {
    state: HpcState.Failed,
    when: "cancelled while running (by its owner, its job's cancel or run-time limit): HPC Pack marks it Failed",
    matches: ({ session }) => ended(session) && cancelled(session),
  },
  {
    state: HpcState.Failed,
    when: "ended otherwise: a non-zero exit, a failed start, a run-time limit, retries used up",
    matches: ({ session }) => ended(session),
  },
  {
    state: HpcState.Canceling,
    when: "a cancel was asked for and is being carried out",
    matches: ({ session }) => cancelled(session),
  },
  {
    state: HpcState.Queued,
    when: "PENDING: waiting to be placed, also after a preemption or a failed start is retried",
    matches: ({ session }) => session.status === SessionStatus.PENDING,
  },
  {
    state: HpcState.Dispatching,
    when: "SCHEDULED, PREPARING, PREPARED or CREATING: resources allocated, the kernel being started",
    matches: ({ session }) => DISPATCHING.has(session.status),
  },
  {
    state: HpcState.Finishing,
    when: "TERMINATING, or RUNNING with this task's kernel already ended (its gang still runs)",
    matches: ({ session, kernel }) =>
      session.status === SessionStatus.TERMINATING ||
      (session.status === SessionStatus.RUNNING && kernel.finishedAtMs !== undefined),
  },
  {
    state: HpcState.Running,
    when: "RUNNING",
    matches: ({ session }) => session.status === SessionStatus.RUNNING,
  },
];

/** A task's HPC Pack state. */
export function hpcTaskState(session: Session, kernel: Kernel): HpcState {
  const row = HPC_TASK_TABLE.find((r) => r.matches({ session, kernel }));
  if (!row) throw new Error(`no HPC state for session ${session.id} in ${session.status}`);
  return row.state;
}

/** What a job's row reads: its tasks' states, whether it has ended (and how), and a cancel. */
export interface JobFacts {
  /** A draft (core/drafts.ts): stored, never submitted. */
  readonly draft?: boolean;
  readonly tasks: readonly HpcState[];
  readonly final?: JobState;
  readonly cancelRequested: boolean;
  /** A task's own run-time limit (`timeouts.running`) killed it (KILLED, DeadlineExceeded). */
  readonly taskTimedOut?: boolean;
}

export const HPC_JOB_TABLE: readonly HpcRow<JobFacts>[] = [
  {
    state: HpcState.Configuring,
    when: "a draft: stored with `cairn job create`, not submitted (no sessions)",
    matches: ({ draft }) => draft === true,
  },
  {
    state: HpcState.Finished,
    when: "the job ended SUCCEEDED",
    matches: ({ final }) => final === JobState.SUCCEEDED,
  },
  {
    state: HpcState.Failed,
    when: "the job ended KILLED by a task's own run-time limit: that task is Failed, and so is the job",
    matches: ({ final, taskTimedOut }) => final === JobState.KILLED && taskTimedOut === true,
  },
  {
    state: HpcState.Canceled,
    when: "the job ended KILLED (cancelled by its owner, or by Cairn: a job run-time limit)",
    matches: ({ final }) => final === JobState.KILLED,
  },
  {
    state: HpcState.Failed,
    when: "the job ended otherwise (FAILED, WORKER_FAILED, UNSCHEDULABLE)",
    matches: ({ final }) => final !== undefined,
  },
  {
    state: HpcState.Canceling,
    when: "a cancel was asked for and is being carried out",
    matches: ({ cancelRequested, tasks }) => cancelRequested || tasks.includes(HpcState.Canceling),
  },
  {
    state: HpcState.Running,
    when: "any task is Dispatching, Running or Finishing",
    matches: ({ tasks }) =>
      tasks.some((t) => t === HpcState.Dispatching || t === HpcState.Running || t === HpcState.Finishing),
  },
  {
    state: HpcState.Finishing,
    when: "no task waits or runs, and the job's end is being judged",
    matches: ({ tasks }) =>
      tasks.length > 0 &&
      tasks.every((t) => t === HpcState.Finished || t === HpcState.Failed || t === HpcState.Canceled),
  },
  {
    state: HpcState.Queued,
    when: "otherwise: tasks waiting to be placed",
    matches: () => true,
  },
];

/** A job's HPC Pack state from its tasks' and its final state. */
export function hpcJobState(facts: JobFacts): HpcState {
  return HPC_JOB_TABLE.find((r) => r.matches(facts))!.state;
}

/**
 * A session's HPC Pack state (`cairn get`): its one task's, or a gang's as a job of its kernels.
 * Ended, it is Finished when every task finished, Canceled when none ever started after a cancel,
 * and Failed otherwise.
 */
export function hpcSessionState(session: Session, kernels: readonly Kernel[]): HpcState {
  const [only, ...more] = kernels;
  if (only !== undefined && more.length === 0) return hpcTaskState(session, only);
  const tasks = kernels.map((k) => hpcTaskState(session, k));
  if (ended(session)) {
    if (tasks.length > 0 && tasks.every((t) => t === HpcState.Finished)) return HpcState.Finished;
    if (tasks.every((t) => t === HpcState.Canceled)) return HpcState.Canceled;
    return HpcState.Failed;
  }
  return hpcJobState({ tasks, cancelRequested: cancelled(session) });
}

/**
 * The HPC Pack states a submission went through before Cairn stored it, read off a history
 * record: the first record of a session that passed validation (Submit SUBMITTED) reads
 * Submitted → Validating → Queued; the one record of a session that failed it (Submit FAILED)
 * reads Submitted → Validating → Failed ("If the job passes validation, it moves to the Queued
 * state. If the job does not pass validation, the job displays an error message and the job moves
 * to the Failed state."). Any other record: undefined.
 */
export function hpcAdmissionSteps(
  record: Pick<HistoryRecord, "handler" | "result"> | undefined,
): readonly HpcState[] | undefined {
  if (record?.handler !== "Submit") return undefined;
  if (record.result === "SUBMITTED") return [HpcState.Submitted, HpcState.Validating, HpcState.Queued];
  if (record.result === "FAILED") return [HpcState.Submitted, HpcState.Validating, HpcState.Failed];
  return undefined;
}

/**
 * The same steps for a session, without reading its history: one created with what validation
 * checked passed it; one whose latest record is its Submit record went through it as that record
 * says. Undefined for a session created before validation was recorded.
 */
export function hpcSessionAdmissionSteps(session: Session): readonly HpcState[] | undefined {
  if (session.admission !== undefined) return hpcAdmissionSteps({ handler: "Submit", result: "SUBMITTED" });
  return hpcAdmissionSteps(session.lastHistory);
}
