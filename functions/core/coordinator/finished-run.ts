/**
 * A run that ends is judged here: retried — back to PENDING, with the next run's backoff and the
 * retry state it spends — or finished. A failed run's kernels are first classified with the
 * failure categories operators define (retry/category-definitions.ts), so its record shows the
 * categories and its rules match on them. Two ends are judged:
 *
 * - a run leaving TERMINATING (TERMINATING → TERMINATED): the transition carries the run's
 *   record either way;
 * - a run never placed (PENDING → CANCELLED on the pending timeout or placement's give-up,
 *   endsUnplaced): its kernels end UNSCHEDULABLE with Armada's condition `Unschedulable`
 *   (Armada's "Pod couldn't be scheduled"), so a rule on that condition retries it as a new run
 *   (PENDING → Requeued → PENDING, recorded as a run). Without a policy the budgets never retry
 *   it, and the session ends CANCELLED as Backend.AI's PENDING expiry says; that path records no
 *   run. This departs from Backend.AI only where a policy asks for it.
 *
 * Pure: the retry policies and configuration that apply are given.
 */
import { STAGES } from "../handlers.ts";
import type { SessionWithKernels, StageTransition } from "../model.ts";
import { classifyRunKernels, type FailureCategoryDefinition } from "../retry/category-definitions.ts";
import type { RetryConfig } from "../retry/config.ts";
import {
  evaluateRetry,
  INITIAL_RETRY_STATE,
  type RetryDecision,
  type RetryVerdict,
} from "../retry/evaluate.ts";
import { failedKernels } from "../retry/match.ts";
import type { RetryPolicy } from "../retry/policy.ts";
import { runRecord, runSucceeded } from "../runs.ts";
import { AttemptOutcome, SessionStatus } from "../status.ts";
import { endsUnplaced, unplacedEnd } from "../effects.ts";

/** What a failed run's judgment reads besides the session: the catalog operators manage. */
export interface RetryCatalogView {
  readonly config: RetryConfig;
  /** The policies that apply to the session, in order (resolvePolicies). */
  readonly policies: readonly RetryPolicy[];
  /** The failure categories operators define; absent or empty: the agents' built-in ones stand. */
  readonly categories?: readonly FailureCategoryDefinition[];
}

/**
 * Whether judging the run needs the retry catalog: it ended a run that failed, was not
 * cancelled, and had kernels report how they ended — or it was never placed and not cancelled.
 * Otherwise the run is over without asking.
 */
export function runNeedsRetryCatalog({ session, kernels }: SessionWithKernels, t: StageTransition): boolean {
  if (endsUnplaced(t)) return session.cancelRequestedAtMs === undefined;
  return (
    endsRun(t) &&
    session.cancelRequestedAtMs === undefined &&
    !runSucceeded(kernels) &&
    failedKernels(kernels).length > 0 &&
    !preemptedAndNotRerunnable({ session, kernels })
  );
}

/** HPC Pack: a preempted task that is not rerunnable is marked Failed instead of queued again. */
function preemptedAndNotRerunnable({ session, kernels }: SessionWithKernels): boolean {
  return (
    session.spec.rerunnable === false &&
    failedKernels(kernels).some((k) => k.outcome === AttemptOutcome.PREEMPTED)
  );
}

/**
 * The transition a finished run takes: `t` itself (with the run's record) when the run is over,
 * or a REQUEUED transition back to PENDING when its policies or budgets retry it. `catalog` is
 * required exactly when runNeedsRetryCatalog says so.
 */
export function judgeFinishedRun(
  s: SessionWithKernels,
  t: StageTransition,
  nowMs: number,
  catalog?: RetryCatalogView,
): StageTransition {
  if (endsUnplaced(t)) return judgeUnplacedRun(s, t, nowMs, catalog);
  if (!endsRun(t)) return t;
  const { session, kernels } = s;
  const finished = (reason: string, ended: SessionWithKernels = s): StageTransition => ({
    ...t,
    message: t.message !== undefined ? `${t.message}; ${reason}` : reason,
    run: runRecord(ended, { decision: "finished", reason }, nowMs),
  });
  if (session.cancelRequestedAtMs !== undefined) return finished("cancelled: not retried");
  if (runSucceeded(kernels)) return finished("every kernel exited 0");
  if (failedKernels(kernels).length === 0) return finished("no kernel reported how it ended: not retried");
  if (preemptedAndNotRerunnable(s)) {
    return finished("preempted while running, and the spec says rerunnable: false: not run again");
  }
  if (!catalog) throw new Error(`judging the failed run of ${session.id} needs the retry catalog`);
  // A run judged out of TERMINATING went through PREPARING (Iris's BUILDING): past ASSIGNED, so
  // a preemption of it is charged even if no kernel had reached RUNNING (a Fargate task
  // interrupted while it was being provisioned).
  const classified = classify(s, catalog);
  const decision = evaluate(classified, catalog, true);
  if (decision.action === "fail") return finished(decision.reason, classified);
  return requeued(classified, SessionStatus.TERMINATING, decision, nowMs);
}

/**
 * A run never placed: retried when a policy's rule (or default action) says so, otherwise `t`
 * as it was (CANCELLED), with the policy's reason added when one decided.
 */
function judgeUnplacedRun(
  s: SessionWithKernels,
  t: StageTransition,
  nowMs: number,
  catalog: RetryCatalogView | undefined,
): StageTransition {
  if (s.session.cancelRequestedAtMs !== undefined) return t;
  if (!catalog) throw new Error(`judging the unplaced run of ${s.session.id} needs the retry catalog`);
  const ended = classify(
    { session: s.session, kernels: s.kernels.map((k) => ({ ...k, ...unplacedEnd(t, nowMs) })) },
    catalog,
  );
  const decision = evaluate(ended, catalog, false);
  if (decision.action === "retry") return requeued(ended, SessionStatus.PENDING, decision, nowMs);
  if (decision.basis === "budget" || decision.basis === "not-retriable") return t;
  const reason = decision.reason;
  return { ...t, message: t.message !== undefined ? `${t.message}; ${reason}` : reason };
}

/** The run's kernels as the operators' failure categories classify them (the built-in ones otherwise). */
function classify(s: SessionWithKernels, catalog: RetryCatalogView): SessionWithKernels {
  const categories = catalog.categories ?? [];
  return categories.length === 0
    ? s
    : { session: s.session, kernels: classifyRunKernels(s.kernels, categories) };
}

function evaluate(
  { session, kernels }: SessionWithKernels,
  catalog: RetryCatalogView,
  pastAssigned: boolean,
): RetryDecision {
  const { policies: _named, ...budgets } = session.spec.retry ?? {};
  return evaluateRetry({
    run: { startedRunning: pastAssigned, kernels },
    policies: catalog.policies,
    state: session.retry ?? INITIAL_RETRY_STATE,
    config: catalog.config,
    budgets,
    gracePeriodMs: 0,
  });
}

/** The run retried: back to PENDING through Requeued, with its record and the next run's wait. */
function requeued(
  s: SessionWithKernels,
  from: typeof SessionStatus.TERMINATING | typeof SessionStatus.PENDING,
  decision: RetryVerdict,
  nowMs: number,
): StageTransition {
  const avoidAgentIds = decision.avoidAgentId !== undefined ? [decision.avoidAgentId] : [];
  return {
    from,
    to: STAGES[from].onRequeue ?? SessionStatus.PENDING,
    result: "REQUEUED",
    handler: "Retry",
    message: decision.reason,
    run: runRecord(
      s,
      {
        decision: "retry",
        reason: decision.reason,
        delayMs: decision.delayMs,
        ...(decision.avoidAgentId !== undefined ? { avoidAgentId: decision.avoidAgentId } : {}),
      },
      nowMs,
    ),
    requeue: { retry: decision.state, avoidAgentIds, delaySeconds: Math.ceil(decision.delayMs / 1000) },
  };
}

/** The run's end: TERMINATING → TERMINATED, as the stage's handler decides it. */
function endsRun(t: StageTransition): boolean {
  return t.from === SessionStatus.TERMINATING && t.to === SessionStatus.TERMINATED;
}
