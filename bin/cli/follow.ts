/**
 * `submit --wait`: polls the session and its history until it ends, reporting every new
 * history record as a progress line. Time and sleeping are passed in, so tests drive it with a
 * simulated clock.
 */
import { sameSpec } from "../../functions/core/jobs.ts";
import type { SessionSpec, SessionWithKernels } from "../../functions/core/model.ts";
import { TERMINAL_SESSION_STATUSES } from "../../functions/core/status.ts";
import type { SessionReader } from "./cairn-api.ts";
import { CliError, WaitTimeoutError } from "./errors.ts";
import { ExitCode } from "./exit-codes.ts";
import { renderProgress } from "./render.ts";
import { historyRecordView } from "./views.ts";

/** How a follower polls and reports; shared with follow-job.ts. */
export interface PollOptions {
  readonly nowMs: () => number;
  readonly sleep: (ms: number) => Promise<void>;
  /** Receives one line per new history record (and a note if it is slow to appear). */
  readonly progress: (line: string) => void;
  /** Undefined: wait as long as it takes. */
  readonly timeoutSeconds?: number;
  /** @default 500 */
  readonly pollMs?: number;
  /** After this long without the session (or job) being recorded, say so once. @default 30000 */
  readonly notRecordedNoticeMs?: number;
  /**
   * While nothing is recorded under the id: why the control plane refused the submission, if it
   * did (the follower then throws SubmissionRejectedError).
   */
  readonly rejection?: () => Promise<string | undefined>;
}

/** The control plane refused the submission: nothing was created under its id. */
export class SubmissionRejectedError extends CliError {
  override readonly name = "SubmissionRejectedError";
  readonly code = "REJECTED";
  readonly exitCode = ExitCode.Usage;
  readonly sessionId: string;
  readonly reason: string;
  constructor(sessionId: string, reason: string) {
    super(`submission ${sessionId} was rejected: ${reason}`);
    this.sessionId = sessionId;
    this.reason = reason;
  }
}

export type SubmissionVerdict =
  | { readonly kind: "accepted" }
  | { readonly kind: "rejected"; readonly reason: string }
  | { readonly kind: "pending"; readonly waitedMs: number };

export interface VerdictOptions {
  readonly store: Pick<SessionReader, "getJob" | "listRejections">;
  readonly sleep: (ms: number) => Promise<void>;
  /** @default 500 */
  readonly pollMs?: number;
  /** Polls before the submission is called pending. @default 10 (5 s) */
  readonly polls?: number;
}

/** Why the control plane refused the event `eventId` submitting `id`, if it has. */
export async function rejectionOf(
  store: Pick<SessionReader, "listRejections">,
  id: string,
  eventId: string,
): Promise<string | undefined> {
  return (await store.listRejections?.(id))?.find((r) => r.eventId === eventId)?.reason;
}

/**
 * Waits (a few seconds) for the control plane's verdict on a submission: accepted once its job
 * is recorded with this spec, rejected once the rejection of this very event is (a job under the
 * id with another spec is someone else's: the wait goes on for this event's verdict). Bounded by
 * a number of polls, not a clock, so it ends whatever time does.
 */
export async function awaitVerdict(
  id: string,
  eventId: string,
  spec: SessionSpec,
  options: VerdictOptions,
): Promise<SubmissionVerdict> {
  const { store, sleep } = options;
  const pollMs = options.pollMs ?? 500;
  const polls = options.polls ?? 10;
  for (let poll = 0; ; poll++) {
    // The rejection first: a different spec under a taken id is refused while the id exists.
    const reason = await rejectionOf(store, id, eventId);
    if (reason !== undefined) return { kind: "rejected", reason };
    const job = await store.getJob(id);
    // The queue's priority is added to the spec's when the job is recorded.
    // A job template's defaults and the submission filter may change the spec: the
    // name is what they leave (a different submission under a taken id is refused, above).
    if (
      job !== undefined &&
      (sameSpec({ ...job.spec, priority: 0 }, { ...spec, priority: 0 }) || job.spec.name === spec.name)
    ) {
      return { kind: "accepted" };
    }
    if (poll >= polls) return { kind: "pending", waitedMs: polls * pollMs };
    await sleep(pollMs);
  }
}

export interface FollowOptions extends PollOptions {
  readonly store: Pick<SessionReader, "getSession" | "listHistory">;
}

/** Resolves with the ended session; throws WaitTimeoutError when the timeout passes first. */
export async function followSession(sessionId: string, options: FollowOptions): Promise<SessionWithKernels> {
  const { store, nowMs, sleep, progress } = options;
  const pollMs = options.pollMs ?? 500;
  const noticeMs = options.notRecordedNoticeMs ?? 30_000;
  const startMs = nowMs();
  const deadlineMs =
    options.timeoutSeconds === undefined ? Number.POSITIVE_INFINITY : startMs + options.timeoutSeconds * 1000;
  let nextSeq = 0;
  let last: SessionWithKernels | undefined;
  let noticed = false;
  for (;;) {
    // Session first, then history: a status change and its record commit together, so the
    // history read after a terminal status includes the final record.
    const found = await store.getSession(sessionId);
    if (found !== undefined) {
      last = found;
      for (const record of await store.listHistory(sessionId, { fromSeq: nextSeq })) {
        progress(renderProgress(historyRecordView(record)));
        nextSeq = record.seq + 1;
      }
      if (TERMINAL_SESSION_STATUSES.has(found.session.status)) return found;
    } else {
      const refused = await options.rejection?.();
      if (refused !== undefined) throw new SubmissionRejectedError(sessionId, refused);
      if (!noticed && nowMs() - startMs >= noticeMs) {
        noticed = true;
        progress(
          `session ${sessionId} is not recorded yet after ${Math.round(noticeMs / 1000)} s; ` +
            "is the control plane processing events? (still waiting)",
        );
      }
    }
    const remainingMs = deadlineMs - nowMs();
    if (remainingMs <= 0) {
      throw new WaitTimeoutError(sessionId, options.timeoutSeconds ?? 0, last?.session.status);
    }
    await sleep(Math.min(pollMs, remainingMs));
  }
}
