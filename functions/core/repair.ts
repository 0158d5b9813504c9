/**
 * What the sweep's repair does with a session whose stage was entered a while ago, given what
 * Step Functions says of its lifecycle execution (app/repair.ts reads both and carries this out).
 * Pure: no clock, no AWS.
 *
 * - An execution that still carries the session is left alone: RUNNING, and PENDING_REDRIVE
 *   (RedriveExecution was accepted for a failed, aborted or timed-out execution, which continues
 *   from the state that failed, under the same ARN, with the session's token: ending the session
 *   now would strand the redriven execution instead).
 * - No execution, and the session never entered a stage: the start never happened; it is sent.
 * - Otherwise the session is ended as a cancel would end it — CANCELLED before it started,
 *   TERMINATED after — with the reason.
 */
import { STAGES } from "./handlers.ts";
import type { Session } from "./model.ts";
import { isWaitingStatus, SessionStatus } from "./status.ts";

/** A lifecycle execution as DescribeExecution reports it (AWS's statuses). */
export interface ObservedExecution {
  readonly status: "RUNNING" | "SUCCEEDED" | "FAILED" | "TIMED_OUT" | "ABORTED" | "PENDING_REDRIVE";
  readonly error?: string;
  readonly cause?: string;
}

/** Statuses in which an execution still carries its session. */
export const LIVE_EXECUTION_STATUSES: ReadonlySet<ObservedExecution["status"]> = new Set([
  "RUNNING",
  "PENDING_REDRIVE",
]);

export type RepairDecision =
  | { readonly kind: "leave" }
  | { readonly kind: "start" }
  | {
      readonly kind: "end";
      readonly from: SessionStatus;
      readonly to: typeof SessionStatus.CANCELLED | typeof SessionStatus.TERMINATED;
      readonly reason: string;
    };

/** `execution` undefined: DescribeExecution found none of the session's execution name. */
export function repairDecision(session: Session, execution: ObservedExecution | undefined): RepairDecision {
  if (execution !== undefined && LIVE_EXECUTION_STATUSES.has(execution.status)) return { kind: "leave" };
  if (execution === undefined && neverEntered(session)) return { kind: "start" };
  const from = session.status;
  if (!isWaitingStatus(from)) return { kind: "leave" };
  // As a cancel would: nothing ran yet → CANCELLED; a run was under way → TERMINATED.
  const to =
    STAGES[from].onCancel === SessionStatus.CANCELLED ? SessionStatus.CANCELLED : SessionStatus.TERMINATED;
  return { kind: "end", from, to, reason: strandedReason(session, execution) };
}

/** A session its execution never touched: created, its first PENDING entry (SUBMITTED) never recorded. */
function neverEntered(session: Session): boolean {
  return (
    session.status === SessionStatus.PENDING &&
    session.stage.taskToken === undefined &&
    session.lastHistory === undefined
  );
}

function strandedReason(session: Session, execution: ObservedExecution | undefined): string {
  const name = session.executionName;
  if (execution === undefined) {
    return `its lifecycle execution ${name} does not exist: ended by the sweep's repair`;
  }
  const why = [execution.error, execution.cause].filter((s) => s !== undefined && s !== "").join(": ");
  return (
    `its lifecycle execution ${name} is ${execution.status}${why === "" ? "" : ` (${why.slice(0, 512)})`} ` +
    `while the session was ${session.status}: ended by the sweep's repair`
  );
}
