/**
 * How many sessions are in a status, for the dashboard's counts. A port of its own,
 * not a method of SessionRepository: only readers that show totals need it. The answer is read
 * from the status index, not the items, so it may lag a write by the index's propagation. Its
 * cost grows with the count (ended sessions are never deleted), so a reader caps it and caches it.
 */
import type { SessionStatus } from "../status.ts";

export interface CensusCount {
  /** Sessions counted: all of them when `exact`, else a lower bound (the count stopped at `atMost`). */
  readonly count: number;
  readonly exact: boolean;
}

export interface SessionCensus {
  /** Sessions in `status` now, counting at most about `atMost` of them (default: all). */
  countSessions(status: SessionStatus, atMost?: number): Promise<CensusCount>;
}
