/**
 * Runs that can never start. Before a pass hands its targets to the
 * handler, the coordinator ends these FAILED instead: a session back in PENDING more often than
 * its run or its execution's history allows, and a session whose preparation failed in a way no
 * retry can clear. Without this a missing executable cycles PREPARING ↔ PENDING forever.
 */
import type { LifecycleHandlerName } from "../handlers.ts";
import { STAGES } from "../handlers.ts";
import type { SessionWithKernels } from "../model.ts";
import { budgetSpentReason } from "../building-loss.ts";
import { isPermanentFailure } from "../retry/permanent-failures.ts";
import { MAX_FREE_RETURNS } from "../retry/history-budget.ts";
import { runRecord } from "../runs.ts";
import { SchedulingResult } from "../scheduling.ts";
import { SPEC_DEFAULTS } from "../spec.ts";
import { AttemptOutcome, isWaitingStatus, KernelStatus, SessionStatus } from "../status.ts";
import type { Decision } from "./decide.ts";

/** Why this session's run can never start, or undefined while it still may. */
export function unrecoverableReason({ session, kernels }: SessionWithKernels): string | undefined {
  if (session.status === SessionStatus.PENDING) {
    const spent = budgetSpentReason(session);
    if (spent !== undefined) return spent;
    const max = session.spec.maxPendingReturns ?? SPEC_DEFAULTS.maxPendingReturns;
    const inRun = session.retry?.pendingReturns ?? 0;
    const free = session.retry?.freeReturns ?? 0;
    const last = session.lastHistory;
    const lastReturn =
      last?.toStatus === SessionStatus.PENDING && last.fromStatus !== SessionStatus.PENDING
        ? `; the last from ${last.fromStatus} (${last.result.toLowerCase()}${last.message !== undefined ? `: ${last.message}` : ""})`
        : "";
    // The execution's bound first: it is what holds whatever the spec says.
    if (free > MAX_FREE_RETURNS) {
      return (
        `returned to PENDING ${free} times without a counted retry, more than the ${MAX_FREE_RETURNS} ` +
        `one lifecycle execution's history holds${lastReturn}`
      );
    }
    if (inRun > max) {
      return `returned to PENDING ${inRun} times in run ${session.runIndex}, more than maxPendingReturns ${max}${lastReturn}`;
    }
    return undefined;
  }
  if (session.status === SessionStatus.PREPARING) {
    const permanent = kernels.filter(
      (k) =>
        k.status === KernelStatus.PREPARING && k.error !== undefined && isPermanentFailure(k.failureCategory),
    );
    if (permanent.length === 0) return undefined;
    return permanent
      .map((k) => `kernel ${k.index}: ${k.error ?? ""} (${k.failureCategory ?? ""}: no retry can clear it)`)
      .join("; ");
  }
  return undefined;
}

/** The decision that ends the run FAILED: the stage's callback completes to its `onFail` status. */
export function failRunDecision(
  s: SessionWithKernels,
  reason: string,
  handler: LifecycleHandlerName,
  nowMs: number,
): Decision {
  const { session } = s;
  const from = session.status;
  const to = isWaitingStatus(from) ? STAGES[from].onFail : undefined;
  // unrecoverableReason judges only stages with an onFail edge; anything else is a bug here.
  if (to === undefined) throw new Error(`a run cannot be ended FAILED from ${from}`);
  return {
    sessionId: session.id,
    // A give-up, as the handler tables see it; the history names it FAILED.
    result: SchedulingResult.GIVE_UP,
    fromStatus: from,
    toStatus: to,
    spendsTry: false,
    history: {
      sessionId: session.id,
      handler,
      result: "FAILED",
      fromStatus: from,
      toStatus: to,
      message: reason,
      atMs: nowMs,
    },
    complete: {
      from,
      to,
      result: "FAILED",
      handler,
      message: reason,
      // A loss while BUILDING that spent the budget ends as that loss; anything else FAILED.
      run: {
        ...runRecord(s, { decision: "finished", reason }, nowMs),
        outcome: session.retry?.budgetSpentBy ?? AttemptOutcome.FAILED,
      },
    },
  };
}

/** Splits a pass's targets: the runs to end FAILED (with their decisions), and the rest. */
export function partitionUnrecoverable(
  targets: readonly SessionWithKernels[],
  handler: LifecycleHandlerName,
  nowMs: number,
): { readonly ending: Decision[]; readonly rest: SessionWithKernels[] } {
  const ending: Decision[] = [];
  const rest: SessionWithKernels[] = [];
  for (const target of targets) {
    const reason = unrecoverableReason(target);
    if (reason === undefined) rest.push(target);
    else ending.push(failRunDecision(target, reason, handler, nowMs));
  }
  return { ending, rest };
}
