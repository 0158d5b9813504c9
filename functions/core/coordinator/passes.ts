/**
 * Every pass's judgment, pure: which targets end at once (a run that can never start), what a
 * handler's result or a promotion decides, and how each decision is carried out — what is
 * written, which stage callback is completed with which transition, and, for a run leaving
 * TERMINATING, whether it is retried. Also what a cancel request does to a waiting stage.
 */
import { claimOf, decisionWrite, type SessionWrite } from "../effects.ts";
import {
  LIFECYCLE_HANDLERS,
  selectsTarget,
  STAGES,
  type LifecycleHandlerName,
  type LifecycleHandlerSpec,
  type PromotionHandlerSpec,
} from "../handlers.ts";
import { isRecentRepeat } from "../history.ts";
import {
  stageKey,
  type RunRecord,
  type SessionWithKernels,
  type StageRecord,
  type StageTransition,
} from "../model.ts";
import { sessionsToPromote } from "../promotion.ts";
import { SchedulingResult, type HandlerResult } from "../scheduling.ts";
import { sessionAfterWrite } from "../session-after-write.ts";
import { isWaitingStatus } from "../status.ts";
import { judge, judgePromotions, type Decision, type JudgedTarget } from "./decide.ts";
import { judgeFinishedRun, runNeedsRetryCatalog, type RetryCatalogView } from "./finished-run.ts";
import { partitionUnrecoverable } from "./unrecoverable.ts";

/**
 * A finished run's record up to this size travels with the transition of a stage the run had
 * claimed already (the next entry writes it); a larger one is written to the table first.
 */
export const MAX_CARRIED_RUN_CHARS = 8_192;
/** A transition's message in a callback payload (the history keeps what it carries). */
const MAX_TRANSITION_MESSAGE_CHARS = 4_096;

export interface PassTargetsInput {
  readonly kind: "pass-targets";
  readonly handler: LifecycleHandlerName;
  readonly targets: readonly SessionWithKernels[];
  readonly nowMs: number;
}

/** Targets whose run can never start end FAILED now; the rest go to the handler. */
export interface PassTargetsEffects {
  readonly ending: readonly Decision[];
  readonly rest: readonly SessionWithKernels[];
}

export function stepPassTargets(input: PassTargetsInput): PassTargetsEffects {
  // Only the sessions the handler selects: its target session and kernel statuses.
  const spec = LIFECYCLE_HANDLERS[input.handler];
  const selected = input.targets.filter((t) => selectsTarget(spec, t));
  return partitionUnrecoverable(selected, input.handler, input.nowMs);
}

export interface PassResultInput {
  readonly kind: "pass-result";
  readonly pass:
    | { readonly kind: "lifecycle"; readonly spec: LifecycleHandlerSpec; readonly result: HandlerResult }
    | { readonly kind: "promotion"; readonly spec: PromotionHandlerSpec };
  /** The targets as the pass read them. */
  readonly targets: readonly SessionWithKernels[];
  readonly nowMs: number;
  /** Repeated identical SKIPPED records closer together than this are not rewritten. */
  readonly skipRecordIntervalMs: number;
}

export interface PassResultEffects {
  /** Every decision the pass made (what it reports). */
  readonly decisions: readonly Decision[];
  /** Those worth carrying out: a skip repeating the session's latest record is not rewritten. */
  readonly toCarryOut: readonly Decision[];
}

export function stepPassResult(input: PassResultInput): PassResultEffects {
  const judged = input.targets.map(toJudged);
  const decisions =
    input.pass.kind === "lifecycle"
      ? judge({ handler: input.pass.spec, result: input.pass.result, targets: judged, nowMs: input.nowMs })
      : judgePromotions(
          input.pass.spec,
          sessionsToPromote(input.pass.spec, input.targets),
          judged,
          input.nowMs,
        );
  const read = new Map(input.targets.map((t) => [t.session.id, t.session]));
  const toCarryOut = decisions.filter(
    (d) =>
      d.result !== SchedulingResult.SKIPPED ||
      !isRecentRepeat(read.get(d.sessionId)?.lastHistory, d.history, input.skipRecordIntervalMs),
  );
  return { decisions, toCarryOut };
}

/** What the coordinator knows of a target when judging it. */
export function toJudged({ session }: SessionWithKernels): JudgedTarget {
  const status = session.status;
  return {
    sessionId: session.id,
    status,
    tries: session.tries,
    maxTries: isWaitingStatus(status) ? session.spec.maxTries[stageKey(status)] : 1,
    expiresAtMs: session.stage.expiresAtMs,
  };
}

export interface CarryOutInput {
  readonly kind: "carry-out";
  readonly decision: Decision;
  /** The session as it is now (read again after the pass), or undefined when it is gone. */
  readonly session: SessionWithKernels | undefined;
  /**
   * This run claimed the session's stage itself before judging it (a placement's reservation, or
   * kernel reports that decided the stage): the claimed token (`stage.claimedToken`) is its own.
   */
  readonly ownClaim: boolean;
  /** The retry catalog, when the decision ends a run that needs it (needsRetryCatalog). */
  readonly catalog: RetryCatalogView | undefined;
  readonly nowMs: number;
  readonly skipRecordIntervalMs: number;
}

/** A decision, carried out. `token` is the stage callback's: the table's, or the run's own claim. */
export type CarryOutPlan =
  /** Nothing to do: the session moved on since it was read, or the skip repeats its record. */
  | { readonly kind: "none" }
  /** Write (claiming the stage when it changes status), then complete the callback. */
  | {
      readonly kind: "write";
      readonly write: SessionWrite;
      readonly complete?: {
        readonly token: string;
        readonly transition: StageTransition;
        /** The session as the write leaves it, for the next entry to start from. */
        readonly known: SessionWithKernels;
      };
    }
  /** A stage this run claimed that keeps waiting: the decision is written with the token given back. */
  | { readonly kind: "give-back"; readonly write: SessionWrite }
  /**
   * A stage this run claimed that changes status: completed at once. A run's record too large to
   * travel is written first (`write`); otherwise it travels in the transition.
   */
  | {
      readonly kind: "claimed-complete";
      readonly token: string;
      readonly transition: StageTransition;
      readonly write?: SessionWrite;
      readonly known?: SessionWithKernels;
    };

/** Whether carrying `decision` out on `session` needs the retry catalog loaded first. */
export function needsRetryCatalog(decision: Decision, session: SessionWithKernels | undefined): boolean {
  return (
    session !== undefined &&
    session.session.status === decision.fromStatus &&
    decision.complete !== undefined &&
    runNeedsRetryCatalog(session, decision.complete)
  );
}

export function stepCarryOut(input: CarryOutInput): CarryOutPlan {
  const { decision, session: s, nowMs } = input;
  // The session moved on since it was read as a target: the next run judges it afresh.
  if (!s || s.session.status !== decision.fromStatus) return { kind: "none" };
  if (
    decision.result === SchedulingResult.SKIPPED &&
    isRecentRepeat(s.session.lastHistory, decision.history, input.skipRecordIntervalMs)
  ) {
    return { kind: "none" };
  }
  const write = decisionWrite(s.session, decision, nowMs);
  const held =
    input.ownClaim && s.session.stage.taskToken === undefined ? s.session.stage.claimedToken : undefined;
  if (held !== undefined) {
    if (!decision.complete)
      return { kind: "give-back", write: { ...write, stage: givenBack(s.session.stage) } };
    const { transition, run } = callbackPayload(judgeRun(s, decision.complete, input));
    if (run && JSON.stringify(run).length > MAX_CARRIED_RUN_CHARS) {
      // Too large for the callback: the record goes to the table, the transition names its index.
      return { kind: "claimed-complete", token: held, transition, write: { ...write, run } };
    }
    // Small enough to travel with the transition: the next entry writes it with the status.
    const { runIndex: _inTable, ...carried } = transition;
    return {
      kind: "claimed-complete",
      token: held,
      transition: run ? { ...carried, run } : transition,
      known: s,
    };
  }
  const token = s.session.stage.taskToken;
  if (!decision.complete) return { kind: "write", write };
  if (token === undefined) return { kind: "none" };
  // A run leaving TERMINATING is judged first: retried (back to PENDING) or finished. The run's
  // record is written with the claim; the callback carries its index (a payload is 256 KiB at most).
  const { transition, run } = callbackPayload(judgeRun(s, decision.complete, input));
  const written = run ? { ...write, run } : write;
  return {
    kind: "write",
    write: written,
    complete: { token, transition, known: sessionAfterWrite(s, written) },
  };
}

function judgeRun(s: SessionWithKernels, t: StageTransition, input: CarryOutInput): StageTransition {
  if (!runNeedsRetryCatalog(s, t)) return judgeFinishedRun(s, t, input.nowMs);
  if (!input.catalog) throw new Error(`session ${s.session.id}: judging its run needs the retry catalog`);
  return judgeFinishedRun(s, t, input.nowMs, input.catalog);
}

/**
 * A callback payload is small by construction (Step Functions: 256 KiB). The run's
 * record (every kernel's message) goes to the table; the transition carries its index and a
 * capped message.
 */
export function callbackPayload(judged: StageTransition): { transition: StageTransition; run?: RunRecord } {
  const { run, ...rest } = judged;
  const message =
    rest.message !== undefined && rest.message.length > MAX_TRANSITION_MESSAGE_CHARS
      ? `${rest.message.slice(0, MAX_TRANSITION_MESSAGE_CHARS - 1)}…`
      : rest.message;
  const transition: StageTransition = {
    ...rest,
    ...(message !== undefined ? { message } : {}),
    ...(run ? { runIndex: run.runIndex } : {}),
  };
  return run ? { transition, run } : { transition };
}

export interface CancelsInput {
  readonly kind: "cancels";
  /** Sessions that may carry a cancel request, as read. */
  readonly candidates: readonly SessionWithKernels[];
  /** Sessions whose stage this run claimed itself (their `stage.claimedToken` is its own). */
  readonly ownClaims: ReadonlySet<string>;
  readonly nowMs: number;
}

/** A cancel request honoured: the stage's callback completed with `transition`. */
export interface CancelPlan {
  readonly sessionId: string;
  readonly token: string;
  readonly transition: StageTransition;
  /** The claim to write first; absent when the run claimed the stage already. */
  readonly claim?: SessionWrite;
  /** The session as the claim leaves it (or as read), for the next entry to start from. */
  readonly known: SessionWithKernels;
}

/** Cancel requests of sessions waiting in a stage: before start → CANCELLED, after → TERMINATING. */
export function stepCancels(input: CancelsInput): CancelPlan[] {
  const plans: CancelPlan[] = [];
  for (const candidate of input.candidates) {
    const { session } = candidate;
    const heldToken =
      session.stage.taskToken === undefined && input.ownClaims.has(session.id)
        ? session.stage.claimedToken
        : undefined;
    const token = session.stage.taskToken ?? heldToken;
    if (
      session.cancelRequestedAtMs === undefined ||
      token === undefined ||
      !isWaitingStatus(session.status)
    ) {
      continue;
    }
    const to = STAGES[session.status].onCancel;
    if (to === session.status) continue;
    const transition: StageTransition = {
      from: session.status,
      to,
      result: "CANCELLED",
      handler: "Cancel",
      message: "cancel requested",
    };
    if (heldToken !== undefined) {
      // Claimed by this run already: nothing to write before completing.
      plans.push({ sessionId: session.id, token, transition, known: candidate });
      continue;
    }
    const claim: SessionWrite = {
      sessionId: session.id,
      expected: { status: session.status, version: session.version },
      nowMs: input.nowMs,
      ...claimOf(session),
    };
    plans.push({
      sessionId: session.id,
      token,
      transition,
      claim,
      known: sessionAfterWrite(candidate, claim),
    });
  }
  return plans;
}

/** A stage this run claimed, its token given back: a target again for the next pass. */
export function givenBack(stage: StageRecord): StageRecord {
  const { claimedToken, claimedAtMs: _at, ...rest } = stage;
  return claimedToken !== undefined ? { ...rest, taskToken: claimedToken } : rest;
}
