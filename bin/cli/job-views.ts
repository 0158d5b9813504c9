/**
 * The JSON shapes of `job get`, `tasks` and `task` (`--output json`), in views.ts's style:
 * stable field names, ISO 8601 times, `null` for what is not known. Pure.
 */
import type { TaskView } from "../../functions/core/jobs.ts";
import { countTaskStates, jobSettings } from "../../functions/core/jobs.ts";
import type { Kernel, RunRecord } from "../../functions/core/model.ts";
import { hpcJobState, type HpcState } from "../../functions/core/hpc-view.ts";
import { runName } from "../../functions/core/retry/naming.ts";
import { TaskState } from "../../functions/core/status.ts";
import { taskStateProto } from "../../functions/core/task-state-proto.ts";
import { type JobState, type SessionStatus } from "../../functions/core/status.ts";
import type { JobSnapshot } from "./job-read.ts";
import { iso, runView, type RunKernelView, type RunView } from "./views.ts";

export interface JobView {
  readonly jobId: string;
  readonly name: string;
  readonly state: JobState;
  /** Why the job is in its state (which rule of the job-state derivation decided). */
  readonly reason: string;
  /** HPC Pack's state of the job (functions/core/hpc-view.ts). */
  readonly hpcState: HpcState;
  /** True once the control plane recorded the job's final state; false: derived from the tasks now. */
  readonly final: boolean;
  readonly replicas: number;
  readonly coscheduled: boolean;
  /** Co-scheduled jobs only: at most this many of the gang's tasks on one agent (null otherwise). */
  readonly perAgent: number | null;
  readonly maxTaskFailures: number;
  /** A task not placed within this many seconds is UNSCHEDULABLE (the PENDING stage's timer). */
  readonly schedulingTimeoutSeconds: number;
  readonly queue: string;
  readonly priority: number;
  readonly parent: string | null;
  readonly children: readonly string[];
  /** The job's sessions: the job's id (co-scheduled), or one `<job id>-t<index>` per task. */
  readonly sessions: readonly string[];
  /** How many tasks are in each state; every state is present. */
  readonly taskCounts: Readonly<Record<TaskState, number>>;
  /** Each of those states' value in Iris's TaskState proto enum (task-state-proto.ts). */
  readonly taskStateProto: Readonly<Record<TaskState, number>>;
  readonly createdAt: string;
  /** When the final state was recorded; null before. */
  readonly finishedAt: string | null;
}

export interface TaskRowView {
  readonly index: number;
  readonly state: TaskState;
  /** The state's value in Iris's TaskState proto enum: RUNNING is 3 (task-state-proto.ts). */
  readonly stateProto: number;
  /** HPC Pack's state of the task. */
  readonly hpcState: HpcState;
  /** The task will not run again. */
  readonly finished: boolean;
  readonly sessionId: string;
  readonly kernelIndex: number;
  readonly sessionStatus: SessionStatus;
  /** The task's current run: 0 for the first, + 1 per retry. */
  readonly runIndex: number;
  readonly runName: string;
  readonly agent: string | null;
  readonly exitCode: number | null;
  /** Pending: why it waits. Ended: how it ended (message, cancel reason, scheduling timeout). */
  readonly reason: string | null;
  /** Runs retried after a failure / after a preemption (a gang's tasks share their session's). */
  readonly failureCount: number;
  readonly preemptionCount: number;
  readonly startedAt: string | null;
  readonly finishedAt: string | null;
}

export interface TasksView {
  readonly jobId: string;
  readonly state: JobState;
  readonly reason: string;
  readonly tasks: readonly TaskRowView[];
}

/** One finished run of the task's session, with the task's own part in it. */
export interface TaskRunView extends Omit<RunView, "kernels"> {
  /** The task's kernel in that run; null if the run record lacks it. */
  readonly task: RunKernelView | null;
}

export interface TaskDetailView extends TaskRowView {
  readonly jobId: string;
  readonly jobState: JobState;
  /** The kernel's termination condition (OOMKilled, Evicted, …), if any. */
  readonly condition: string | null;
  /** The latest preparation failure the agent reported, if any. */
  readonly error: string | null;
  readonly runs: readonly TaskRunView[];
}

const TASK_STATE_PROTOS: Readonly<Record<TaskState, number>> = Object.fromEntries(
  Object.values(TaskState).map((state) => [state, taskStateProto(state)]),
) as Record<TaskState, number>;

export function jobView(snapshot: JobSnapshot): JobView {
  const { job } = snapshot;
  const settings = jobSettings(job.spec);
  return {
    jobId: job.id,
    name: job.spec.name,
    state: snapshot.state,
    reason: snapshot.reason,
    hpcState: hpcJobState({
      tasks: snapshot.tasks.map((t) => t.hpcState),
      ...(job.final ? { final: job.final.state } : {}),
      cancelRequested: false,
      taskTimedOut: snapshot.tasks.some((t) => t.state === "KILLED" && t.condition === "DeadlineExceeded"),
    }),
    final: snapshot.final,
    replicas: job.spec.replicas,
    coscheduled: settings.coscheduled,
    perAgent: settings.coscheduled ? settings.perAgent : null,
    maxTaskFailures: settings.maxTaskFailures,
    schedulingTimeoutSeconds: job.spec.schedulingTimeout ?? job.spec.timeouts.pending,
    queue: job.spec.queue,
    priority: job.spec.priority,
    parent: job.parentId ?? null,
    children: [...job.childIds],
    sessions: [...job.sessionIds],
    taskCounts: countTaskStates(snapshot.tasks),
    taskStateProto: TASK_STATE_PROTOS,
    createdAt: iso(job.createdAtMs),
    finishedAt: job.final === undefined ? null : iso(job.final.atMs),
  };
}

export function tasksView(snapshot: JobSnapshot): TasksView {
  return {
    jobId: snapshot.job.id,
    state: snapshot.state,
    reason: snapshot.reason,
    tasks: snapshot.tasks.map(taskRowView),
  };
}

export function taskRowView(task: TaskView): TaskRowView {
  return {
    index: task.index,
    state: task.state,
    stateProto: taskStateProto(task.state),
    hpcState: task.hpcState,
    finished: task.finished,
    sessionId: task.sessionId,
    kernelIndex: task.kernelIndex,
    sessionStatus: task.sessionStatus,
    runIndex: task.runIndex,
    runName: runName(task.sessionId, task.runIndex),
    agent: task.agentId ?? null,
    exitCode: task.exitCode ?? null,
    reason: task.reason ?? null,
    failureCount: task.failureCount,
    preemptionCount: task.preemptionCount,
    startedAt: task.startedAtMs === undefined ? null : iso(task.startedAtMs),
    finishedAt: task.finishedAtMs === undefined ? null : iso(task.finishedAtMs),
  };
}

/** `kernel`: the task's kernel as stored (undefined while its session is being created). */
export function taskDetailView(
  snapshot: JobSnapshot,
  task: TaskView,
  kernel: Kernel | undefined,
  runs: readonly RunRecord[],
): TaskDetailView {
  return {
    ...taskRowView(task),
    jobId: snapshot.job.id,
    jobState: snapshot.state,
    condition: kernel?.condition ?? null,
    error: kernel?.error ?? null,
    runs: runs.map((run) => {
      const { kernels, ...rest } = runView(run);
      return { ...rest, task: kernels.find((k) => k.index === task.kernelIndex) ?? null };
    }),
  };
}
