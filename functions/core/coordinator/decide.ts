/**
 * The coordinator's judgment (Backend.AI Sokovan's `_handle_result`) as a pure function: handler result in,
 * decisions out. Nothing here performs I/O; adapters carry the decisions out.
 *
 * Decisions are emitted SUCCESS, GIVE_UP, EXPIRED, NEED_RETRY, SKIPPED. Sokovan's
 * `_handle_result` writes NEED_RETRY before EXPIRED; the two sets are disjoint, because
 * expiry judges only targets that neither succeeded nor failed (Sokovan's `remaining`), so the
 * order changes the sequence of writes, never an outcome. A failure is never EXPIRED here
 * (Backend.AI does classify a late failure as expired); the stage's own timer expires it.
 *
 * Each target gets at most one decision: a skipped target whose stage has expired is judged
 * EXPIRED (its status changes, so a SKIPPED record as well would misreport it), otherwise
 * SKIPPED, which never spends a try.
 */
import type { LifecycleHandlerSpec, PromotionHandlerSpec } from "../handlers.ts";
import type { HistoryDraft, StageTransition } from "../model.ts";
import { SchedulingResult, type HandlerResult, type TransitionStatus } from "../scheduling.ts";
import type { KernelStatus, SessionStatus } from "../status.ts";
import { HandlerContractError } from "./errors.ts";

/** What the coordinator knows of a target when judging it. */
export interface JudgedTarget {
  readonly sessionId: string;
  readonly status: SessionStatus;
  /** Tries already spent in the current stage. */
  readonly tries: number;
  readonly maxTries: number;
  readonly expiresAtMs: number;
}

export interface Decision {
  readonly sessionId: string;
  readonly result: SchedulingResult;
  readonly fromStatus: SessionStatus;
  /** Present when the outcome changes the session's status. */
  readonly toStatus?: SessionStatus;
  /** Kernel status the transition sets, if any. */
  readonly kernelStatus?: KernelStatus;
  /** A failure spends one try of the current stage. */
  readonly spendsTry: boolean;
  readonly history: HistoryDraft;
  /**
   * The stage's callback to complete, with the transition the next state applies. Present
   * exactly when the status changes: NEED_RETRY and SKIPPED never complete it.
   */
  readonly complete?: StageTransition;
}

export interface JudgeInput {
  readonly handler: LifecycleHandlerSpec;
  readonly result: HandlerResult;
  readonly targets: readonly JudgedTarget[];
  readonly nowMs: number;
}

export function judge({ handler, result, targets, nowMs }: JudgeInput): Decision[] {
  const byId = checkContract(handler.name, result, targets);
  const handled = new Set([...result.successes, ...result.failures]);
  const t = handler.transitions;
  const decisions: Decision[] = [];
  const make = (
    target: JudgedTarget,
    outcome: SchedulingResult,
    transition: TransitionStatus | undefined,
    spendsTry: boolean,
  ): Decision =>
    decision(
      handler.name,
      target,
      outcome,
      transition,
      spendsTry,
      result.messages?.[target.sessionId],
      nowMs,
    );

  for (const id of result.successes) {
    decisions.push(make(need(byId, id), SchedulingResult.SUCCESS, t.success, false));
  }
  const failed = result.failures.map((id) => need(byId, id));
  for (const target of failed.filter((f) => isGiveUp(f.tries, f.maxTries))) {
    decisions.push(make(target, SchedulingResult.GIVE_UP, t.giveUp, true));
  }
  const remaining = targets.filter((target) => !handled.has(target.sessionId));
  const expired = new Set<string>();
  for (const target of remaining.filter((r) => isExpired(r.expiresAtMs, nowMs))) {
    expired.add(target.sessionId);
    decisions.push(make(target, SchedulingResult.EXPIRED, t.expired, false));
  }
  for (const target of failed.filter((f) => !isGiveUp(f.tries, f.maxTries))) {
    decisions.push(make(target, SchedulingResult.NEED_RETRY, t.needRetry, true));
  }
  for (const id of result.skipped.filter((s) => !expired.has(s))) {
    decisions.push(make(need(byId, id), SchedulingResult.SKIPPED, undefined, false));
  }
  return decisions;
}

/** Promotions only succeed: a matched session moves to the success status, kernels untouched. */
export function judgePromotions(
  spec: PromotionHandlerSpec,
  promoted: readonly string[],
  targets: readonly JudgedTarget[],
  nowMs: number,
): Decision[] {
  const byId = new Map(targets.map((target) => [target.sessionId, target]));
  return promoted.map((id) =>
    decision(
      spec.name,
      need(byId, id, spec.name),
      SchedulingResult.SUCCESS,
      { session: spec.successSessionStatus },
      false,
      undefined,
      nowMs,
    ),
  );
}

function decision(
  handler: LifecycleHandlerSpec["name"] | PromotionHandlerSpec["name"],
  target: JudgedTarget,
  result: SchedulingResult,
  transition: TransitionStatus | undefined,
  spendsTry: boolean,
  message: string | undefined,
  nowMs: number,
): Decision {
  const to = transition?.session;
  const changes = to !== undefined && to !== target.status;
  const history: HistoryDraft = {
    sessionId: target.sessionId,
    handler,
    result,
    fromStatus: target.status,
    ...(changes ? { toStatus: to } : {}),
    ...(message !== undefined ? { message } : {}),
    atMs: nowMs,
  };
  return {
    sessionId: target.sessionId,
    result,
    fromStatus: target.status,
    ...(changes ? { toStatus: to } : {}),
    ...(transition?.kernel !== undefined ? { kernelStatus: transition.kernel } : {}),
    spendsTry,
    history,
    ...(changes
      ? {
          complete: {
            from: target.status,
            to,
            result,
            handler,
            ...(message !== undefined ? { message } : {}),
          },
        }
      : {}),
  };
}

function need(byId: ReadonlyMap<string, JudgedTarget>, id: string, handler = "handler"): JudgedTarget {
  const target = byId.get(id);
  // Name the promotion handler: judgePromotions has no contract check before this lookup.
  if (!target) throw new HandlerContractError(handler, id, "that was not among its targets");
  return target;
}

function checkContract(
  handler: string,
  result: HandlerResult,
  targets: readonly JudgedTarget[],
): Map<string, JudgedTarget> {
  const byId = new Map(targets.map((target) => [target.sessionId, target]));
  const seen = new Map<string, string>();
  const lists = [
    ["successes", result.successes],
    ["failures", result.failures],
    ["skipped", result.skipped],
  ] as const;
  for (const [list, ids] of lists) {
    for (const id of ids) {
      if (!byId.has(id)) throw new HandlerContractError(handler, id, `in ${list} but it was not a target`);
      const previous = seen.get(id);
      if (previous !== undefined) {
        throw new HandlerContractError(handler, id, `in both ${previous} and ${list}`);
      }
      seen.set(id, list);
    }
  }
  return byId;
}

/** Expiry: the stage's timer has run out. The same deadline drives the state machine's timeout. */
function isExpired(expiresAtMs: number, nowMs: number): boolean {
  return nowMs >= expiresAtMs;
}

/**
 * Give-up: a failure that spends the stage's last try. `maxTries` counts attempts, so with
 * maxTries = 3 the first two failures are NEED_RETRY and the third is GIVE_UP: give up exactly
 * when the tries spent (this failure included) exceed the retries allowed (maxTries − 1). Every
 * Sokovan session handler has `need_retry = None`: a retried stage keeps its status, and only
 * history is written.
 */
function isGiveUp(triesSpentBefore: number, maxTries: number): boolean {
  return triesSpentBefore + 1 >= maxTries;
}
