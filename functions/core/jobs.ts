/**
 * Jobs of many tasks (Iris's task states and Iris's co-scheduling design). A job is what one submission describes:
 * `replicas` tasks that either run as one gang (co-scheduled: the kernels of one session) or
 * independently (one session per task, each with its own lifecycle execution and budgets).
 *
 * There is no job state machine: task states are read off sessions and kernels, and the job's
 * state is derived from the task states with Iris's rules in Iris's order. Pure.
 */
import type { Job, Kernel, Session, SessionSpec, SessionWithKernels } from "./model.ts";
import { SPEC_DEFAULTS } from "./spec.ts";
import type { AttemptOutcome, KernelStatus } from "./status.ts";
import { JobState, SessionStatus, TaskState, type TerminationCondition } from "./status.ts";
import { HpcState, hpcTaskState } from "./hpc-view.ts";

// ---------------------------------------------------------------------------------------------
// Settings and identity.

export interface JobSettings {
  readonly coscheduled: boolean;
  readonly perAgent: number;
  readonly maxTaskFailures: number;
}

export function jobSettings(spec: SessionSpec): JobSettings {
  return {
    coscheduled: spec.coscheduled ?? SPEC_DEFAULTS.coscheduled,
    perAgent: spec.perAgent ?? SPEC_DEFAULTS.perAgent,
    maxTaskFailures: spec.maxTaskFailures ?? SPEC_DEFAULTS.maxTaskFailures,
  };
}

/** Independent tasks run as sessions `<job id>-t<index>`. */
export function taskSessionId(jobId: string, index: number): string {
  return `${jobId}-t${index}`;
}

/** Longest job id whose task session ids still fit the 63-character id limit. */
export function maxJobIdLength(spec: SessionSpec): number {
  if (jobSettings(spec).coscheduled) return 63;
  return 63 - taskSessionId("", spec.replicas - 1).length;
}

export function jobSessionIds(jobId: string, spec: SessionSpec): string[] {
  if (jobSettings(spec).coscheduled) return [jobId];
  return Array.from({ length: spec.replicas }, (_, i) => taskSessionId(jobId, i));
}

/**
 * Why the session stored under a task's id is not that task's, or undefined when it is. A session
 * belongs to the job of its `task` (an independent task) or, without one, to the job named like
 * it. Ids share one namespace, so `x-t0` may be a job of its own as well as task 0 of job `x`:
 * whichever took the id first keeps it, and the other submission is refused, so no session joins a job it was not submitted to.
 */
export function foreignSession(
  jobId: string,
  spec: SessionSpec,
  index: number,
  stored: Session,
): string | undefined {
  const owner = stored.task?.jobId ?? stored.id;
  const ownerIndex = stored.task?.index;
  const coscheduled = jobSettings(spec).coscheduled;
  const mine = coscheduled
    ? stored.task === undefined && stored.id === jobId
    : owner === jobId && ownerIndex === index;
  if (mine) return undefined;
  const whose = ownerIndex === undefined ? `job ${owner}` : `task ${ownerIndex} of job ${owner}`;
  const what = coscheduled ? `job ${jobId}` : `task ${index} of job ${jobId}`;
  return `detail.sessionId: session ${stored.id} already exists as ${whose}; ${what} cannot take it (choose another id)`;
}

/**
 * Whether two specs are the same submission: equal as JSON with keys sorted and absent and
 * undefined fields alike (a spec read back from the table drops undefined fields).
 */
export function sameSpec(a: SessionSpec, b: SessionSpec): boolean {
  return canonicalJson(a) === canonicalJson(b);
}

function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)))
      : v,
  );
}

/** The spec one independent task's session runs: one kernel. */
export function taskSpec(spec: SessionSpec): SessionSpec {
  return jobSettings(spec).coscheduled ? spec : { ...spec, replicas: 1 };
}

export function newJob(id: string, spec: SessionSpec, nowMs: number): Job {
  return {
    id,
    spec,
    sessionIds: jobSessionIds(id, spec),
    ...(spec.parent !== undefined ? { parentId: spec.parent } : {}),
    childIds: [],
    createdAtMs: nowMs,
  };
}

/**
 * The job a session belongs to: an independent task's, or (a co-scheduled job, or a session
 * submitted before jobs existed) the job named like the session.
 */
export function jobIdOf(session: Session): string {
  return session.task?.jobId ?? session.id;
}

// ---------------------------------------------------------------------------------------------
// Task states.

export interface TaskView {
  readonly jobId: string;
  readonly index: number;
  readonly state: TaskState;
  /**
   * Iris's `is_finished()`: the task will not run again. A task whose run failed but whose
   * session has not been judged yet (or is being retried) is not finished.
   */
  readonly finished: boolean;
  readonly sessionId: string;
  readonly kernelIndex: number;
  readonly sessionStatus: SessionStatus;
  readonly runIndex: number;
  readonly agentId?: string;
  readonly exitCode?: number;
  /** Why the kernel ended beyond its exit code (OOMKilled, DeadlineExceeded, Preempted, …). */
  readonly condition?: TerminationCondition;
  /** Why it waits (pending) or how it ended. */
  readonly reason?: string;
  readonly startedAtMs?: number;
  readonly finishedAtMs?: number;
  /** Runs retried under each budget so far (the session's; shared by a gang's tasks). */
  readonly failureCount: number;
  readonly preemptionCount: number;
  /** HPC Pack's state of the task (hpc-view.ts). */
  readonly hpcState: HpcState;
  /**
   * The task has started: it is placed or beyond now, or it was before (a run of it has ended, or
   * it went back to PENDING from a stage it had been placed in). Derived from what the session
   * keeps across runs (its run index and retry counters), so a retried task stays started.
   */
  readonly started: boolean;
}

const OUTCOME_TASK_STATE: Readonly<Record<AttemptOutcome, TaskState>> = {
  SUCCEEDED: TaskState.SUCCEEDED,
  FAILED: TaskState.FAILED,
  KILLED: TaskState.KILLED,
  WORKER_FAILED: TaskState.WORKER_FAILED,
  UNSCHEDULABLE: TaskState.UNSCHEDULABLE,
  PREEMPTED: TaskState.PREEMPTED,
};

/** Where a kernel of a live session stands (ASSIGNED: placed; BUILDING: preparing or starting). */
const LIVE_KERNEL_TASK_STATE: Readonly<Record<KernelStatus, TaskState>> = {
  PENDING: TaskState.PENDING,
  SCHEDULED: TaskState.ASSIGNED,
  PREPARING: TaskState.BUILDING,
  PULLING: TaskState.BUILDING,
  PREPARED: TaskState.BUILDING,
  CREATING: TaskState.BUILDING,
  RUNNING: TaskState.RUNNING,
  TERMINATING: TaskState.RUNNING,
  // Ended kernels of a live session are read from their outcome; these are the fallbacks.
  TERMINATED: TaskState.FAILED,
  CANCELLED: TaskState.KILLED,
  ERROR: TaskState.FAILED,
};

/**
 * A session that ended in PENDING without being placed, because its scheduling timeout expired
 * (or scheduling gave up), never ran: its tasks are UNSCHEDULABLE, not KILLED.
 */
function endedUnscheduled(session: Session): boolean {
  const last = session.lastHistory;
  return (
    session.status === SessionStatus.CANCELLED &&
    session.cancelRequestedAtMs === undefined &&
    last?.fromStatus === SessionStatus.PENDING &&
    (last.result === "EXPIRED" || last.result === "GIVE_UP")
  );
}

function taskStateOf(session: Session, kernel: Kernel): { state: TaskState; finished: boolean } {
  if (session.status === SessionStatus.CANCELLED) {
    return { state: endedUnscheduled(session) ? TaskState.UNSCHEDULABLE : TaskState.KILLED, finished: true };
  }
  if (session.status === SessionStatus.TERMINATED) {
    if (kernel.outcome !== undefined) return { state: OUTCOME_TASK_STATE[kernel.outcome], finished: true };
    // Ended without a report (its agent was lost, or the stage gave up on it).
    return {
      state: session.cancelRequestedAtMs !== undefined ? TaskState.KILLED : TaskState.WORKER_FAILED,
      finished: true,
    };
  }
  if (session.status === SessionStatus.PENDING) return { state: TaskState.PENDING, finished: false };
  if (kernel.outcome !== undefined) return { state: OUTCOME_TASK_STATE[kernel.outcome], finished: false };
  return { state: LIVE_KERNEL_TASK_STATE[kernel.status], finished: false };
}

export function taskView(jobId: string, index: number, session: Session, kernel: Kernel): TaskView {
  const { state, finished } = taskStateOf(session, kernel);
  const reason =
    state === TaskState.PENDING
      ? session.pendingReason
      : state === TaskState.UNSCHEDULABLE
        ? (session.lastHistory?.message ?? "not placed before the scheduling timeout")
        : state === TaskState.KILLED && session.cancelReason !== undefined
          ? session.cancelReason
          : (kernel.message ?? kernel.condition ?? exitDescription(kernel.exitCode));
  return {
    jobId,
    index,
    state,
    finished,
    sessionId: session.id,
    kernelIndex: kernel.index,
    sessionStatus: session.status,
    runIndex: session.runIndex,
    ...(kernel.agentId !== undefined && state !== TaskState.PENDING ? { agentId: kernel.agentId } : {}),
    ...(kernel.exitCode !== undefined ? { exitCode: kernel.exitCode } : {}),
    ...(kernel.condition !== undefined ? { condition: kernel.condition } : {}),
    ...(reason !== undefined ? { reason } : {}),
    ...(kernel.startedAtMs !== undefined ? { startedAtMs: kernel.startedAtMs } : {}),
    ...(kernel.finishedAtMs !== undefined ? { finishedAtMs: kernel.finishedAtMs } : {}),
    hpcState: hpcTaskState(session, kernel),
    started: state !== TaskState.PENDING || hasStartedBefore(session),
    failureCount: session.retry?.failureCount ?? 0,
    preemptionCount: session.retry?.preemptionCount ?? 0,
  };
}

/**
 * Whether an earlier placement of the task is on record: a run of it has ended (the run index
 * moved on), or a budget or a return to PENDING from a placed stage was counted.
 */
function hasStartedBefore(session: Session): boolean {
  const retry = session.retry;
  return (
    session.runIndex > 0 ||
    (retry !== undefined &&
      (retry.failureCount > 0 || retry.preemptionCount > 0 || (retry.freeReturns ?? 0) > 0))
  );
}

function exitDescription(exitCode: number | undefined): string | undefined {
  return exitCode === undefined || exitCode === 0 ? undefined : `exit code ${exitCode}`;
}

/**
 * The job's tasks in index order. `sessions` are the job's sessions as read; a task whose session
 * is missing (not yet created) is PENDING.
 */
export function jobTasks(job: Job, sessions: readonly SessionWithKernels[]): TaskView[] {
  const byId = new Map(sessions.map((s) => [s.session.id, s]));
  const count = job.spec.replicas;
  const out: TaskView[] = [];
  for (let index = 0; index < count; index++) {
    const coscheduled = jobSettings(job.spec).coscheduled;
    const s = byId.get(coscheduled ? job.id : taskSessionId(job.id, index));
    const kernel = s?.kernels[coscheduled ? index : 0];
    if (!s || !kernel) {
      out.push({
        jobId: job.id,
        index,
        state: TaskState.PENDING,
        finished: false,
        sessionId: coscheduled ? job.id : taskSessionId(job.id, index),
        kernelIndex: coscheduled ? index : 0,
        sessionStatus: SessionStatus.PENDING,
        runIndex: 0,
        reason: "being submitted",
        failureCount: 0,
        preemptionCount: 0,
        // Accepted, its session not stored yet: HPC Pack's "submitted, awaiting validation".
        hpcState: HpcState.Submitted,
        started: false,
      });
      continue;
    }
    out.push(taskView(job.id, index, s.session, kernel));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Job state.

export interface JobStateVerdict {
  readonly state: JobState;
  readonly reason: string;
}

type TaskCounts = Readonly<Record<TaskState, number>>;

/**
 * Iris's `_compute_job_state`, rule by rule; earlier rules win. Only finished tasks count for
 * the terminal rules (a FAILED task being retried is not a failure of the job). Two points the
 * Iris leaves open, resolved here:
 * - every task finished, with failures within `maxTaskFailures` and no other failure state: the
 *   job SUCCEEDED (the failures were tolerated);
 * - a task that ended a run but is not finished (its session is being judged, or is retried)
 *   keeps the job RUNNING.
 * And Iris's last rule, "PENDING: Default (no tasks have started)", is read as it says: once
 * any task has started (TaskView.started; a task that is not PENDING has), the job is RUNNING
 * until a terminal rule applies, also while every task waits in PENDING to run again after a
 * failure or a preemption.
 */
export function deriveJobState(
  tasks: readonly (Pick<TaskView, "state" | "finished" | "reason"> & Partial<Pick<TaskView, "started">>)[],
  maxTaskFailures: number,
): JobStateVerdict {
  const finished = countTaskStates(tasks.filter((t) => t.finished));
  const total = tasks.length;
  const allFinished = tasks.every((t) => t.finished);
  if (total > 0 && finished.SUCCEEDED === total) {
    return {
      state: JobState.SUCCEEDED,
      reason: total === 1 ? "its one task succeeded" : `all ${total} tasks succeeded`,
    };
  }
  if (finished.FAILED > maxTaskFailures) {
    return {
      state: JobState.FAILED,
      reason: `${finished.FAILED} ${plural(finished.FAILED, "task")} failed (maxTaskFailures ${maxTaskFailures})`,
    };
  }
  if (finished.UNSCHEDULABLE > 0) {
    return {
      state: JobState.UNSCHEDULABLE,
      reason: `${finished.UNSCHEDULABLE} ${plural(finished.UNSCHEDULABLE, "task")} could not be scheduled in time`,
    };
  }
  if (finished.KILLED > 0) {
    // One reason shared by every killed task (a cancel of the job, its run-time limit) is the job's.
    const why = new Set(tasks.filter((t) => t.finished && t.state === TaskState.KILLED).map((t) => t.reason));
    const [shared] = why;
    const suffix = why.size === 1 && shared !== undefined ? `: ${shared}` : "";
    return {
      state: JobState.KILLED,
      reason: `${finished.KILLED} ${plural(finished.KILLED, "task")} killed${suffix}`,
    };
  }
  const lost = finished.WORKER_FAILED + finished.PREEMPTED;
  if (allFinished && lost > 0) {
    return {
      state: JobState.WORKER_FAILED,
      reason: `${lost} ${plural(lost, "task")} ended by worker failure or preemption with their budget spent`,
    };
  }
  if (total > 0 && allFinished) {
    return {
      state: JobState.SUCCEEDED,
      reason: `${finished.SUCCEEDED} of ${total} tasks succeeded; ${finished.FAILED} failed within maxTaskFailures ${maxTaskFailures}`,
    };
  }
  // Iris: any task ASSIGNED, BUILDING or RUNNING. A run that ended but is not judged yet counts too.
  const active = tasks.filter((t) => !t.finished && t.state !== TaskState.PENDING);
  if (active.length > 0) {
    return { state: JobState.RUNNING, reason: `${active.length} of ${total} tasks placed or running` };
  }
  const started = tasks.filter((t) => t.started === true || t.state !== TaskState.PENDING);
  if (started.length > 0) {
    return {
      state: JobState.RUNNING,
      reason: `${started.length} of ${total} ${plural(total, "task")} started; none placed now (waiting to run again)`,
    };
  }
  return { state: JobState.PENDING, reason: "no task has been placed yet" };
}

/** How many tasks are in each state (every state present, zero when none). */
export function countTaskStates(tasks: readonly Pick<TaskView, "state">[]): TaskCounts {
  const counts = Object.fromEntries(Object.values(TaskState).map((s) => [s, 0])) as Record<TaskState, number>;
  for (const t of tasks) counts[t.state]++;
  return counts;
}

function plural(n: number, word: string): string {
  return n === 1 ? word : `${word}s`;
}

// ---------------------------------------------------------------------------------------------
// Cascades.

export interface JobCascade {
  /** Cancel every task that is not finished (Iris: `_mark_remaining_tasks_killed`). */
  readonly killRemaining: boolean;
  /** Cancel the child jobs, recursively (Iris: `_cancel_child_jobs`, every terminal state but SUCCEEDED). */
  readonly cancelChildren: boolean;
}

export function jobCascade(state: JobState): JobCascade {
  switch (state) {
    case JobState.PENDING:
    case JobState.RUNNING:
      return { killRemaining: false, cancelChildren: false };
    case JobState.SUCCEEDED:
      return { killRemaining: false, cancelChildren: false };
    case JobState.FAILED:
    case JobState.UNSCHEDULABLE:
    case JobState.KILLED:
    case JobState.WORKER_FAILED:
      return { killRemaining: true, cancelChildren: true };
  }
}
