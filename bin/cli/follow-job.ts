/**
 * `submit --wait` of a job of many tasks: polls the job and its sessions until every session has
 * ended, reporting each new history record (prefixed with its task for independent tasks) and
 * each change of the job's state. Time and sleeping are passed in, as in follow.ts.
 */
import type { SessionWithKernels } from "../../functions/core/model.ts";
import type { JobState } from "../../functions/core/status.ts";
import type { SessionReader } from "./cairn-api.ts";
import { JobWaitTimeoutError } from "./errors.ts";
import { jobSnapshot, type JobSnapshot } from "./job-read.ts";
import { oneLine, renderProgress } from "./render.ts";
import { SubmissionRejectedError, type PollOptions } from "./follow.ts";
import { historyRecordView } from "./views.ts";

export interface FollowJobOptions extends PollOptions {
  readonly store: Pick<SessionReader, "getJob" | "getSessions" | "listHistory">;
  /**
   * Once every session has ended, how long to wait for the control plane to record the job's
   * final state before returning the state derived from the tasks (the same rules). @default 2000
   */
  readonly finalGraceMs?: number;
}

/** Resolves once every session of the job has ended; throws JobWaitTimeoutError when time runs out first. */
export async function followJob(jobId: string, options: FollowJobOptions): Promise<JobSnapshot> {
  const { store, nowMs, sleep, progress } = options;
  const pollMs = options.pollMs ?? 500;
  const noticeMs = options.notRecordedNoticeMs ?? 30_000;
  const graceMs = options.finalGraceMs ?? 2_000;
  const startMs = nowMs();
  const deadlineMs =
    options.timeoutSeconds === undefined ? Number.POSITIVE_INFINITY : startMs + options.timeoutSeconds * 1000;
  const nextSeq = new Map<string, number>();
  const seenVersion = new Map<string, number>();
  let lastState: JobState | undefined;
  let endedAtMs: number | undefined;
  let noticed = false;
  for (;;) {
    const job = await store.getJob(jobId);
    if (job !== undefined) {
      // Sessions first, then their history: a status change and its record commit together.
      const sessions = await store.getSessions(job.sessionIds);
      for (const found of sessions) await reportHistory(found);
      const snapshot = jobSnapshot(job, sessions);
      if (snapshot.state !== lastState) {
        lastState = snapshot.state;
        progress(`job ${snapshot.state}: ${oneLine(snapshot.reason)}`);
      }
      if (snapshot.ended) {
        endedAtMs ??= nowMs();
        if (snapshot.final || nowMs() - endedAtMs >= graceMs) return snapshot;
      }
    } else {
      const refused = await options.rejection?.();
      if (refused !== undefined) throw new SubmissionRejectedError(jobId, refused);
      if (!noticed && nowMs() - startMs >= noticeMs) {
        noticed = true;
        progress(
          `job ${jobId} is not recorded yet after ${Math.round(noticeMs / 1000)} s; ` +
            "is the control plane processing events? (still waiting)",
        );
      }
    }
    const remainingMs = deadlineMs - nowMs();
    if (remainingMs <= 0) throw new JobWaitTimeoutError(jobId, options.timeoutSeconds ?? 0, lastState);
    await sleep(Math.min(pollMs, remainingMs));
  }

  async function reportHistory({ session }: SessionWithKernels): Promise<void> {
    // The session's version moves with every write, history records included.
    if (seenVersion.get(session.id) === session.version) return;
    seenVersion.set(session.id, session.version);
    const prefix = session.task === undefined ? "" : `[task ${session.task.index}] `;
    for (const record of await store.listHistory(session.id, { fromSeq: nextSeq.get(session.id) ?? 0 })) {
      progress(prefix + renderProgress(historyRecordView(record)));
      nextSeq.set(session.id, record.seq + 1);
    }
  }
}
