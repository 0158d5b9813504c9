/**
 * The list page's counts per status, cached and shared by every request: counting reads the
 * status index, whose cost grows with the count, and terminal statuses grow without bound. So a
 * live status is counted again at most every 2 s and an ended one every 30 s, one count in
 * flight per status, each count stopped at `atMost` (shown as "100000+"), and a page waits only
 * briefly for a count it does not have yet (it shows "…" and the live refresh fills it in).
 */
import type { CensusCount, SessionCensus } from "../functions/core/ports/session-census.ts";
import { SESSION_STATUSES, TERMINAL_SESSION_STATUSES, type SessionStatus } from "../functions/core/status.ts";

export interface CountsOptions {
  /** @default 2000 */
  readonly liveTtlMs?: number;
  /** @default 30000 */
  readonly endedTtlMs?: number;
  /**
   * Count at most about this many sessions of a status: on AWS a count reads about 120 bytes of
   * index per session, so 100,000 is some 12 MB, ~1,500 read units, every 30 s for an ended status.
   * @default 100000
   */
  readonly atMost?: number;
  /** @default Date.now */
  readonly clock?: () => number;
}

interface Entry {
  value?: CensusCount;
  atMs: number;
  pending?: Promise<void>;
  error?: string;
}

export interface CountsSnapshot {
  /** Undefined: not counted yet. */
  readonly counts: Readonly<Record<SessionStatus, CensusCount | undefined>>;
  /** Why a count failed, by status (the previous value, if any, is still shown). */
  readonly errors: Readonly<Partial<Record<SessionStatus, string>>>;
}

export class StatusCounts {
  private readonly census: SessionCensus;
  private readonly liveTtlMs: number;
  private readonly endedTtlMs: number;
  private readonly clock: () => number;
  private readonly atMost: number;
  private readonly entries = new Map<SessionStatus, Entry>();

  constructor(census: SessionCensus, options: CountsOptions = {}) {
    this.census = census;
    this.liveTtlMs = options.liveTtlMs ?? 2000;
    this.endedTtlMs = options.endedTtlMs ?? 30_000;
    this.clock = options.clock ?? Date.now;
    this.atMost = options.atMost ?? 100_000;
  }

  /** The counts there are, refreshing stale ones; waits at most `waitMs` for those never counted. */
  async snapshot(waitMs: number): Promise<CountsSnapshot> {
    const now = this.clock();
    const missing: Promise<void>[] = [];
    for (const status of SESSION_STATUSES) {
      const entry = this.entries.get(status);
      const ttl = TERMINAL_SESSION_STATUSES.has(status) ? this.endedTtlMs : this.liveTtlMs;
      const pending =
        entry === undefined || now - entry.atMs >= ttl ? this.refresh(status, entry) : entry.pending;
      if (entry?.value === undefined && pending !== undefined) missing.push(pending);
    }
    if (missing.length > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all(missing),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, waitMs);
          timer.unref();
        }),
      ]);
      clearTimeout(timer);
    }
    const counts = {} as Record<SessionStatus, CensusCount | undefined>;
    const errors: Partial<Record<SessionStatus, string>> = {};
    for (const status of SESSION_STATUSES) {
      const entry = this.entries.get(status);
      counts[status] = entry?.value;
      if (entry?.error !== undefined) errors[status] = entry.error;
    }
    return { counts, errors };
  }

  private refresh(status: SessionStatus, entry: Entry | undefined): Promise<void> {
    if (entry?.pending !== undefined) return entry.pending;
    const next: Entry = entry ?? { atMs: 0 };
    this.entries.set(status, next);
    next.pending = this.census
      .countSessions(status, this.atMost)
      .then(
        (value) => {
          next.value = value;
          next.atMs = this.clock();
          delete next.error;
        },
        (error: unknown) => {
          next.error = error instanceof Error ? error.message : String(error);
          // Try again at the next page, not in a tight loop.
          next.atMs = this.clock();
        },
      )
      .finally(() => {
        delete next.pending;
      });
    return next.pending;
  }
}
