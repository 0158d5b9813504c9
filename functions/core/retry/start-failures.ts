/**
 * Runs that could not start because of the cluster. HPC Pack's job and task states: "If a job or task fails
 * to start because of a cluster failure, the job or task is automatically retried a specified
 * number of times before it is marked as Failed."
 *
 * Could not start: the run's first failed kernel ended ERROR before its command ran — the agent
 * could not spawn it, had no capacity left for it, was shutting down, or its Fargate task failed
 * to start (ECS `TaskFailedToStart`: image pull, network). That is the cluster's failure, not the
 * user's: it is told apart from a non-zero exit (TERMINATED with an exit code, the user's), and
 * retried on its own count, `retry.maxRetriesStart` (default 3, as HPC Pack's task retry count),
 * spending neither the failure budget nor a policy's rule; once the count is used up the run
 * ends FAILED (HPC Pack's Failed). A failure no retry can clear (retry/permanent-failures.ts: the
 * executable is missing) is not retried at all. A preparation error (before PREPARED) is not a
 * start failure here: the stage is retried and returns to PENDING under maxPendingReturns.
 *
 * Each such retry is a new run that no budget counts, so it is one of the session's free returns
 * (bounded by MAX_FREE_RETURNS with every other), which is why the count is at most that.
 */
import { KernelStatus } from "../status.ts";
import type { RunKernel } from "./match.ts";
import { isPermanentFailure } from "./permanent-failures.ts";

/** HPC Pack's default number of automatic retries of a task that failed to start. */
export const DEFAULT_MAX_RETRIES_START = 3;

/** The kernel could not start because of the cluster (and no retry is known to be useless). */
export function couldNotStart(kernel: RunKernel): boolean {
  return kernel.status === KernelStatus.ERROR && !isPermanentFailure(kernel.failureCategory);
}

export interface StartRetryJudgement {
  readonly retry: boolean;
  /** This run's start failure counted: the session's start retries after it. */
  readonly startRetries: number;
  readonly limit: number;
  readonly reason: string;
}

/** HPC Pack's rule for a run whose first failed kernel could not start. */
export function judgeStartFailure(
  kernel: RunKernel,
  startRetriesBefore: number,
  maxRetriesStart: number | undefined,
): StartRetryJudgement {
  const limit = maxRetriesStart ?? DEFAULT_MAX_RETRIES_START;
  const n = startRetriesBefore + 1;
  const what = `kernel ${kernel.index} could not start${kernel.message !== undefined ? ` (${kernel.message})` : ""}`;
  return n <= limit
    ? {
        retry: true,
        startRetries: n,
        limit,
        reason: `${what}: start retry ${n} of ${limit} (maxRetriesStart)`,
      }
    : {
        retry: false,
        startRetries: n,
        limit,
        reason: `${what}: ${n} start failures, more than maxRetriesStart ${limit}: not retried`,
      };
}
