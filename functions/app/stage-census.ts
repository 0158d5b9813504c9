/**
 * The sweep's census of waiting sessions: how many wait in each stage, and how many are still
 * in a stage well past its expiry. A stage's own timer (the callback state's timeout) moves a
 * session on when it expires, so one still there `graceMs` later means the lifecycle execution
 * could not record its next state (a failed or stopped execution, EnterStage failing): an
 * operator must look. The count feeds the "sessions stuck beyond their stage timeout" alarm.
 */
import type { SessionRepository } from "../core/ports/sessions.ts";
import { WAITING_SESSION_STATUSES, type WaitingSessionStatus } from "../core/status.ts";
import { AppError } from "./errors.ts";

export interface StageCensus {
  readonly byStatus: Readonly<Record<WaitingSessionStatus, number>>;
  /** Waiting sessions whose stage expired more than `graceMs` ago. */
  readonly stuck: number;
  /** A status had more than `maxPerStatus` sessions: its count is a lower bound. */
  readonly truncated: boolean;
}

export interface CensusOptions {
  /**
   * How long past its expiry a session may still be in the stage. The expiry path retries
   * EnterStage for about a minute (ASL Retry: 6 attempts, backoff 2 from 1 s), so five minutes
   * is well clear of a slow but healthy transition. @default 300000
   */
  readonly graceMs?: number;
  /** Most sessions read per status, to bound a sweep's cost. @default 5000 */
  readonly maxPerStatus?: number;
  /** Page size of the listing. @default 500 */
  readonly pageSize?: number;
}

export class CensusError extends AppError {
  override readonly name = "CensusError";
  readonly code = "CENSUS";
}

export const DEFAULT_STUCK_GRACE_MS = 5 * 60_000;

export async function stageCensus(
  store: Pick<SessionRepository, "listSessionsByStatus">,
  nowMs: number,
  options: CensusOptions = {},
): Promise<StageCensus> {
  const graceMs = positive("graceMs", options.graceMs ?? DEFAULT_STUCK_GRACE_MS, true);
  const maxPerStatus = positive("maxPerStatus", options.maxPerStatus ?? 5000);
  const pageSize = positive("pageSize", Math.min(options.pageSize ?? 500, maxPerStatus));
  const byStatus = {} as Record<WaitingSessionStatus, number>;
  let stuck = 0;
  let truncated = false;
  for (const status of WAITING_SESSION_STATUSES) {
    let counted = 0;
    let cursor: string | undefined;
    do {
      const page = await store.listSessionsByStatus(status, {
        limit: Math.min(pageSize, maxPerStatus - counted),
        ...(cursor !== undefined ? { cursor } : {}),
      });
      for (const session of page.items) {
        counted++;
        if (session.stage.expiresAtMs + graceMs < nowMs) stuck++;
      }
      cursor = page.cursor;
    } while (cursor !== undefined && counted < maxPerStatus);
    if (cursor !== undefined) truncated = true;
    byStatus[status] = counted;
  }
  return { byStatus, stuck, truncated };
}

function positive(field: string, value: number, allowZero = false): number {
  if (!Number.isInteger(value) || value < (allowZero ? 0 : 1)) {
    throw new CensusError(
      `${field}: must be a ${allowZero ? "non-negative" : "positive"} integer, got ${value}`,
    );
  }
  return value;
}
