/**
 * A job as the CLI shows it: the job item, its sessions, its tasks and its state, read from the
 * store and derived with the core's own rules (core/jobs.ts), so the CLI and the coordinator
 * cannot disagree about what a task or a job is.
 */
import {
  deriveJobState,
  jobSettings,
  jobTasks,
  taskSessionId,
  type TaskView,
} from "../../functions/core/jobs.ts";
import type { Job, SessionSpec, SessionWithKernels } from "../../functions/core/model.ts";
import { TERMINAL_SESSION_STATUSES, type JobState } from "../../functions/core/status.ts";
import type { SessionReader } from "./cairn-api.ts";
import { JobNotFoundError } from "./errors.ts";

export interface JobSnapshot {
  readonly job: Job;
  /** The job's sessions that exist, in the job's order. */
  readonly sessions: readonly SessionWithKernels[];
  readonly tasks: readonly TaskView[];
  /** The recorded final state when there is one (`final`), else the state derived now. */
  readonly state: JobState;
  readonly reason: string;
  readonly final: boolean;
  /** Every session of the job exists and has ended: nothing will change any more. */
  readonly ended: boolean;
}

export function jobSnapshot(job: Job, sessions: readonly SessionWithKernels[]): JobSnapshot {
  const tasks = jobTasks(job, sessions);
  const verdict = job.final ?? deriveJobState(tasks, jobSettings(job.spec).maxTaskFailures);
  return {
    job,
    sessions,
    tasks,
    state: verdict.state,
    reason: verdict.reason,
    final: job.final !== undefined,
    ended:
      sessions.length === job.sessionIds.length &&
      sessions.every(({ session }) => TERMINAL_SESSION_STATUSES.has(session.status)),
  };
}

/** The job and its sessions as stored now; JobNotFoundError (exit 3) when there is none. */
export async function readJob(
  store: Pick<SessionReader, "getJob" | "getSession" | "getSessions">,
  jobId: string,
): Promise<JobSnapshot> {
  const job = await findJob(store, jobId);
  return jobSnapshot(job, await store.getSessions(job.sessionIds));
}

async function findJob(store: Pick<SessionReader, "getJob" | "getSession">, jobId: string): Promise<Job> {
  const job = await store.getJob(jobId);
  if (job !== undefined) return job;
  const found = await store.getSession(jobId);
  if (found === undefined) throw new JobNotFoundError(jobId);
  const { session } = found;
  if (session.task !== undefined) {
    const { jobId: owner, index } = session.task;
    throw new JobNotFoundError(
      jobId,
      `${jobId} is task ${index} of job ${owner} (see \`cairn task ${owner} ${index}\`)`,
    );
  }
  // A session submitted before jobs existed is the job of its own kernels (core/jobs.ts jobIdOf).
  return {
    id: session.id,
    spec: session.spec,
    sessionIds: [session.id],
    childIds: [],
    createdAtMs: session.createdAtMs,
  };
}

/** Where one task runs: its session and the kernel in it. */
export interface TaskRef {
  readonly index: number;
  readonly sessionId: string;
  readonly kernelIndex: number;
}

/** Every task of a job submitted under `jobId` with `spec`: known before the job is stored. */
export function taskRefs(jobId: string, spec: SessionSpec): TaskRef[] {
  const { coscheduled } = jobSettings(spec);
  return Array.from({ length: spec.replicas }, (_, index) =>
    coscheduled
      ? { index, sessionId: jobId, kernelIndex: index }
      : { index, sessionId: taskSessionId(jobId, index), kernelIndex: 0 },
  );
}

/** One session whose kernel is the job's only task: the job and the session are the same thing. */
export function isSingleSessionJob(spec: SessionSpec): boolean {
  return jobSettings(spec).coscheduled && spec.replicas === 1;
}

/** The task, or JobNotFoundError naming the job's task range. */
export function taskOf(snapshot: JobSnapshot, index: number): TaskView {
  const task = snapshot.tasks[index];
  if (task === undefined) {
    const count = snapshot.tasks.length;
    throw new JobNotFoundError(
      `${snapshot.job.id} task ${index}`,
      `job ${snapshot.job.id} has ${count} ${count === 1 ? "task (index 0)" : `tasks (0 to ${count - 1})`}`,
    );
  }
  return task;
}
