/**
 * History records merge: an outcome identical to the session's latest record (same handler,
 * result, from/to status and message) bumps that record's count and last-seen time instead of
 * appending, so a session skipped every sweep for an hour keeps one record, not hundreds.
 */
import { MAX_MESSAGE_LENGTH } from "./event-fields.ts";
import type { HistoryDraft, HistoryRecord } from "./model.ts";
import { SessionStatus } from "./status.ts";

export function sameOutcome(a: HistoryRecord | HistoryDraft, b: HistoryRecord | HistoryDraft): boolean {
  return (
    a.sessionId === b.sessionId &&
    a.handler === b.handler &&
    a.result === b.result &&
    a.fromStatus === b.fromStatus &&
    a.toStatus === b.toStatus &&
    a.message === b.message
  );
}

/**
 * Places drafts after `last` (the session's latest record, if any). Returns the records to
 * write: a merged record keeps its `seq`, an appended one takes the next. Drafts are applied in
 * order, so two identical drafts in one batch also merge.
 */
export function placeHistory(
  last: HistoryRecord | undefined,
  drafts: readonly HistoryDraft[],
): HistoryRecord[] {
  const out: HistoryRecord[] = [];
  let head = last;
  for (const draft of drafts) {
    const { atMs, ...rest } = draft;
    let next: HistoryRecord;
    if (head && sameOutcome(head, draft)) {
      next = { ...head, count: head.count + 1, lastAtMs: Math.max(head.lastAtMs, atMs) };
      if (out.length > 0 && out[out.length - 1]?.seq === next.seq) out.pop();
    } else {
      next = { ...rest, seq: head ? head.seq + 1 : 0, count: 1, firstAtMs: atMs, lastAtMs: atMs };
    }
    out.push(next);
    head = next;
  }
  return out;
}

/**
 * A repeat of the latest record seen less than `intervalMs` ago. The coordinator leaves such a
 * SKIPPED record unwritten: a backlog of sessions waiting for capacity would otherwise cost a
 * write per session on every scheduling run. The merged record still shows first/last time.
 */
export function isRecentRepeat(
  last: HistoryRecord | undefined,
  draft: HistoryDraft,
  intervalMs: number,
): boolean {
  return last !== undefined && sameOutcome(last, draft) && draft.atMs - last.lastAtMs < intervalMs;
}

/**
 * The one history record of a task whose job failed validation (its template, the submission
 * filter, its queue: app/admission.ts). HPC Pack: "If the job does not pass validation, the job
 * displays an error message and the job moves to the Failed state." The session is stored ended
 * with this record as its first and only one (Submit FAILED, PENDING → TERMINATED, the reason as
 * its message), so its history says it went from Submitted through Validating to Failed, and why;
 * its lifecycle execution never starts, so nothing follows it.
 */
export function validationFailedRecord(sessionId: string, reason: string, atMs: number): HistoryRecord {
  return {
    sessionId,
    seq: 0,
    handler: "Submit",
    result: "FAILED",
    fromStatus: SessionStatus.PENDING,
    toStatus: SessionStatus.TERMINATED,
    message: reason.slice(0, MAX_MESSAGE_LENGTH),
    count: 1,
    firstAtMs: atMs,
    lastAtMs: atMs,
  };
}

/**
 * What admission checked of a submission that passed (app/admission.ts). HPC Pack's Validating:
 * "the Job Scheduler service confirms permissions, applies default settings for any properties
 * that the job owner did not specify, and validates each property against constraints. Default
 * settings and constraints are defined by the job template … During validation, the job might also
 * pass through a custom submission filter application".
 */
export interface AdmissionChecks {
  /** The job template whose defaults were applied and whose constraints were checked. */
  readonly template: string;
  /**
   * What the submission filter did; absent when none is configured. `asked before`: a redelivered
   * submission whose job was stored at its first delivery, when the filter was asked.
   */
  readonly filter?: "accepted" | "modified" | "asked before" | { readonly failedOpen: string };
}

/**
 * The message of a passing submission's first history record (Submit SUBMITTED, the execution's
 * own first record): what Validating did, so its history shows Submitted → Validating → Queued
 * and why (hpc-view.ts hpcAdmissionSteps). Stored on the session as it is created (`admission`);
 * a session stored ended by a failed validation has validationFailedRecord instead.
 */
export function admissionSummary(checks: AdmissionChecks): string {
  const { filter } = checks;
  const filtered =
    filter === undefined
      ? "no submission filter configured"
      : filter === "accepted"
        ? "the submission filter accepted it"
        : filter === "modified"
          ? "the submission filter modified it, and the modified spec was validated again"
          : filter === "asked before"
            ? "the submission filter was asked when it was first received"
            : `the submission filter did not answer (${filter.failedOpen}) and fails open`;
  const summary =
    `validated: job template ${checks.template} applied (its defaults set, its constraints checked), ` +
    `sizes within the limits, permission by IAM; ${filtered}; queued`;
  return summary.slice(0, MAX_MESSAGE_LENGTH);
}
