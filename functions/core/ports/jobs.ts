/**
 * Jobs and the submissions the control plane refused. A job's sessions are created with it when
 * they fit in one transaction. Errors are StoreError (errors.ts), branched on by `code`.
 */
import type { Job, SessionWithKernels } from "../model.ts";

/**
 * A submission the control plane refused, kept where clients can read it: `submit`
 * waits for its own event's acceptance or rejection, `get` of a rejected id says why.
 */
export interface SubmissionRejection {
  /** The session (or job) id the submission asked for. */
  readonly id: string;
  /** The refused event's id (PutEvents returns it to the sender). */
  readonly eventId: string;
  readonly reason: string;
  readonly atMs: number;
}

export interface JobRepository {
  /** Writes the job unless one with its id exists; returns the stored job either way. */
  createJob(job: Job): Promise<{ readonly created: boolean; readonly job: Job }>;
  /**
   * A submission in one write: the job and every one of its sessions (with their kernels),
   * created together only if none of them exists yet. `created: false` when any does, or when
   * they do not fit in one transaction: nothing was written, and the caller takes the
   * step-by-step path (createJob, createSession), which tells a repeat from a clash.
   */
  createJobWithSessions(
    job: Job,
    sessions: readonly SessionWithKernels[],
  ): Promise<{ readonly created: boolean }>;
  getJob(jobId: string): Promise<Job | undefined>;
  getJobs(jobIds: readonly string[]): Promise<Job[]>;
  /** Adds a child to its parent's children; the parent after the write, undefined if it does not exist. */
  addChildJob(parentId: string, childId: string): Promise<Job | undefined>;
  /** Records the job's final state once: true if this call recorded it. */
  finishJob(jobId: string, final: NonNullable<Job["final"]>): Promise<boolean>;
  /** Every job with a run-time limit (`timeouts.job`) whose final state is not recorded, by id. */
  listJobsWithRunTimeLimit(): Promise<Job[]>;

  /** Records a refused submission for `ttlSeconds`; recording the same event again overwrites it. */
  recordRejection(rejection: SubmissionRejection, ttlSeconds: number): Promise<void>;
  /** The id's unexpired rejections, newest first (at most 100). */
  listRejections(id: string): Promise<SubmissionRejection[]>;
}
