/**
 * `submit --wait`: polls the session and its history until it ends, reporting every new
 * history record as a progress line. Time and sleeping are passed in, so tests drive it with a
 * simulated clock.
 */
import type { SessionWithKernels } from "../../functions/core/model.ts";
import { TERMINAL_SESSION_STATUSES } from "../../functions/core/status.ts";
import type { SessionReader } from "./cairn-api.ts";
import { WaitTimeoutError } from "./errors.ts";
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
    } else if (!noticed && nowMs() - startMs >= noticeMs) {
      noticed = true;
      progress(
        `session ${sessionId} is not recorded yet after ${Math.round(noticeMs / 1000)} s; ` +
          "is the control plane processing events? (still waiting)",
      );
    }
    const remainingMs = deadlineMs - nowMs();
    if (remainingMs <= 0) {
      throw new WaitTimeoutError(sessionId, options.timeoutSeconds ?? 0, last?.session.status);
    }
    await sleep(Math.min(pollMs, remainingMs));
  }
}
