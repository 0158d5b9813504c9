/**
 * One session's state in each of the three vocabularies Cairn shows: Sokovan's session status
 * (what is stored) with how an ended session ended, Iris's job state (the session read as an Iris
 * job whose tasks are its kernels, core/jobs.ts) and HPC Pack's job state (core/hpc-view.ts).
 * A view shows one of them at a time, named, so that `TERMINATED`, `KILLED` and `Failed` for one
 * cancelled running task never stand side by side unexplained.
 */
import { hpcSessionState, type HpcState } from "./hpc-view.ts";
import { deriveJobState, jobIdOf, jobSettings, taskView } from "./jobs.ts";
import type { SessionWithKernels } from "./model.ts";
import { sessionResult, type SessionResult } from "./sessions.ts";
import type { JobState, SessionStatus } from "./status.ts";

export interface SessionStates {
  readonly status: SessionStatus;
  /** How the session ended; undefined while it runs. */
  readonly result: SessionResult | undefined;
  readonly iris: JobState;
  readonly hpc: HpcState;
}

/** Iris's job state of the session: its kernels are the job's tasks. */
export function irisSessionState(found: SessionWithKernels): JobState {
  const { session, kernels } = found;
  const jobId = jobIdOf(session);
  const tasks = kernels.map((kernel) => taskView(jobId, kernel.index, session, kernel));
  // A gang tolerates its spec's task failures; an independent task's session is one task.
  const settings = jobSettings(session.spec);
  return deriveJobState(tasks, settings.coscheduled ? settings.maxTaskFailures : 0).state;
}

export function sessionStates(found: SessionWithKernels): SessionStates {
  return {
    status: found.session.status,
    result: sessionResult(found),
    iris: irisSessionState(found),
    hpc: hpcSessionState(found.session, found.kernels),
  };
}
