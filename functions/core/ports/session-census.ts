/**
 * How many sessions are in each status, for the dashboard's counts (issue 13). A port of its own,
 * not a method of SessionRepository: only readers that show totals need it, and an answer may
 * lag a write by the index's propagation (it is read from the status index, not the items).
 */
import type { SessionStatus } from "../status.ts";

export interface SessionCensus {
  /** Sessions per status; every status is present (0 when none). */
  countSessionsByStatus(): Promise<Readonly<Record<SessionStatus, number>>>;
}
