/**
 * How many sessions are in a status, for the dashboard's counts (issue 13). A port of its own,
 * not a method of SessionRepository: only readers that show totals need it. The answer is read
 * from the status index, not the items, so it may lag a write by the index's propagation; its
 * cost grows with the count (terminal statuses grow without bound), so readers cache it.
 */
import type { SessionStatus } from "../status.ts";

export interface SessionCensus {
  /** Sessions in `status` now. */
  countSessions(status: SessionStatus): Promise<number>;
}
