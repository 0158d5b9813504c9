/** A session's history as one line per record, for the tests that pin histories. */
import type { HistoryRecord } from "../../functions/core/model.ts";

/** `<handler> <result> <from>-><to>` per record (`=` when the status did not change). */
export function historyLines(history: readonly HistoryRecord[]): string[] {
  return history.map((h) => `${h.handler} ${h.result} ${h.fromStatus}->${h.toStatus ?? "="}`);
}

/** A one-kernel run's history from its submission until it runs, in those lines. */
export const HISTORY_TO_RUNNING = [
  "Submit SUBMITTED PENDING->PENDING",
  "ScheduleNewSessions SUCCESS PENDING->SCHEDULED",
  "PrepareSessions SUCCESS SCHEDULED->PREPARING",
  "PromoteToPrepared SUCCESS PREPARING->PREPARED",
  "StartSessions SUCCESS PREPARED->CREATING",
  "PromoteToRunning SUCCESS CREATING->RUNNING",
] as const;
