/**
 * The handler passes a run's events made possible: jobs settled, cancels honoured, then every
 * lifecycle handler and promotion over its targets — each "load the targets → the pure step's
 * decision → carry it out" (effect-executor.ts). Placement goes one scheduling queue at a time
 * (placement.ts).
 */
import type { PassResultEffects } from "../core/coordinator/passes.ts";
import { step } from "../core/coordinator/step.ts";
import { isLiveAgent, type SessionWithKernels } from "../core/model.ts";
import { promotionDue } from "../core/promotion.ts";
import { WAITING_SESSION_STATUSES, SessionStatus } from "../core/status.ts";
import { errorMessage, type HandlerContext } from "./lifecycle/handler.ts";
import { unlessConflict } from "./reread.ts";
import { PASSES, passName, passStatuses, type Pass } from "./passes.ts";
import type { RunSnapshot } from "./snapshot.ts";
import { compareQueueOrder } from "../core/queue-order.ts";
import type { Dirty, OwnClaims } from "./coordinator-core.ts";
import type { CoordinatorCore, PassOutcome, RunReport } from "./coordinator-core.ts";
import { carryOut, complete, giveBack } from "./effect-executor.ts";
import { placeByQueue, waitingBehind } from "./placement.ts";

/** What the run's events made possible: jobs settled, cancels honoured, the handler passes. */
export async function passesAfterEvents(
  c: CoordinatorCore,
  dirty: Dirty,
  snapshot: RunSnapshot,
  sweep: boolean,
): Promise<Pick<RunReport, "passes" | "completed" | "retry">> {
  try {
    return await passes(c, dirty, snapshot, sweep);
  } finally {
    // Claims the run made and neither used to complete a stage nor wrote back with a decision.
    for (const { sessionId, status } of dirty.claims.unused()) await giveBack(c, sessionId, status, snapshot);
  }
}

export async function passes(
  c: CoordinatorCore,
  dirty: Dirty,
  snapshot: RunSnapshot,
  sweep: boolean,
): Promise<Pick<RunReport, "passes" | "completed" | "retry">> {
  const retry: number[] = [];
  const passes: RunReport["passes"][number][] = [];
  let completed = 0;
  const ctx = context(c, snapshot, dirty.claims);
  try {
    for (const id of await c.jobs.settle([...dirty.ended.keys()], snapshot)) dirty.sessions.add(id);
  } catch (error) {
    // Cascades are idempotent: the status changes that asked for them are redelivered.
    retry.push(...[...dirty.ended.values()].flat());
    c.d.log.error("job pass failed; its status changes will be redelivered", {
      error: errorMessage(error),
    });
  }
  if (sweep) {
    try {
      // Jobs past their run-time limit (timeouts.job) are cancelled: checked on every sweep.
      for (const id of await c.jobs.enforceRunTimeLimits(snapshot)) dirty.sessions.add(id);
    } catch (error) {
      // The next sweep looks again.
      c.d.log.error("checking job run-time limits failed", { error: errorMessage(error) });
    }
  }
  completed += await cancelPass(c, dirty, sweep, snapshot);
  for (const pass of PASSES) {
    let outcome: PassOutcome;
    try {
      const targets = await passTargets(c, passStatuses(pass), dirty, snapshot);
      if (targets.length === 0) continue;
      outcome =
        isPlacement(pass) && c.d.placementLeases
          ? await placeByQueue(c, targets, snapshot, c.d.placementLeases, (round) =>
              runPass(c, pass, round, context(c, snapshot, dirty.claims), dirty.claims),
            )
          : await runPass(c, pass, targets, ctx, dirty.claims);
    } catch (error) {
      // One pass failing must not stall the others or the events already applied; what it
      // left undone is picked up by the next event or the sweep.
      c.d.log.error("handler pass failed", { pass: passName(pass), error: errorMessage(error) });
      continue;
    }
    passes.push({ name: passName(pass), targets: outcome.targets, decisions: outcome.decisions });
    completed += outcome.completed;
  }
  return { retry, passes, completed };
}

export function context(c: CoordinatorCore, snapshot: RunSnapshot, claims: OwnClaims): HandlerContext {
  const { store, events, config } = c.d;
  const nowMs = c.d.clock.nowMs();
  return {
    store,
    snapshot,
    claimed: (sessionId, status) => claims.add(sessionId, status),
    events,
    commands: c.commands,
    ...(c.d.fargate ? { fargate: c.d.fargate } : {}),
    config,
    nowMs,
    queue: (name) => c.catalog.queue(name),
    liveAgents: async (refs) => {
      const wanted = new Map([...refs].map((r) => [r.agentId, r.incarnation]));
      const agents = await Promise.all(
        [...wanted].map(([id, incarnation]) => snapshot.agent(id, incarnation)),
      );
      return new Map(
        agents.flatMap((a) => (a && isLiveAgent(a, nowMs, config.agentTimeoutMs) ? [[a.id, a]] : [])),
      );
    },
  };
}

// --- inbound events --------------------------------------------------------------------

/**
 * A pass's targets: every waiting session of its statuses (a batch of each scheduling queue's,
 * for placement), or only those the events named.
 */
export async function passTargets(
  c: CoordinatorCore,
  statuses: readonly SessionStatus[],
  dirty: Dirty,
  snapshot: RunSnapshot,
): Promise<SessionWithKernels[]> {
  if (statuses.some((s) => dirty.full.has(s))) {
    const page = await c.d.store.targetsByStatus({
      statuses,
      limit: c.d.config.batchLimit,
      targetableOnly: true,
    });
    snapshot.remember(page);
    // Placement: queues the first batch left out, or held only part of, are read on their own
    // when the run asks for every queue (Wake.everyQueue).
    if (!statuses.includes(SessionStatus.PENDING) || !dirty.everyQueue) return page;
    const behind = await waitingBehind(c, page, snapshot);
    return behind.length === 0 ? page : [...page, ...behind].sort(queueOrder);
  }
  const ids = dirty.touched(statuses);
  if (ids.length === 0) return [];
  const sessions = (await snapshot.sessions(ids)).filter(
    ({ session }) =>
      statuses.includes(session.status) &&
      (session.stage.taskToken !== undefined || dirty.claims.has(session.id)),
  );
  const ahead = await waitingAhead(c, statuses, sessions);
  snapshot.remember(ahead);
  return [...sessions, ...ahead].sort(queueOrder);
}

/**
 * A targeted scheduling pass lets the waiting sessions of higher priority go first, as a full
 * pass does: otherwise a lower-priority session (say, a preempted one back in the queue) could
 * take capacity a higher-priority one waits for, and be preempted again. A few are enough: it
 * is the head of the queue that is owed the capacity.
 */
export async function waitingAhead(
  c: CoordinatorCore,
  statuses: readonly SessionStatus[],
  targets: readonly SessionWithKernels[],
): Promise<SessionWithKernels[]> {
  if (!statuses.includes(SessionStatus.PENDING)) return [];
  const pending = targets.filter((t) => t.session.status === SessionStatus.PENDING);
  if (pending.length === 0) return [];
  const have = new Set(targets.map((t) => t.session.id));
  const ahead = await c.d.store.targetsByStatus({
    statuses: [SessionStatus.PENDING],
    limit: Math.min(c.d.config.batchLimit, WAITING_AHEAD_LIMIT),
    targetableOnly: true,
    abovePriority: Math.min(...pending.map((t) => t.session.spec.priority)),
  });
  return ahead.filter((s) => !have.has(s.session.id));
}

export async function runPass(
  c: CoordinatorCore,
  pass: Pass,
  targets: readonly SessionWithKernels[],
  ctx: HandlerContext,
  claims: OwnClaims,
): Promise<PassOutcome> {
  // A run that can never start ends FAILED here instead of reaching its handler again.
  const { ending, rest } =
    pass.kind === "lifecycle"
      ? step({
          kind: "pass-targets",
          handler: pass.handler.spec.name,
          targets,
          nowMs: c.d.clock.nowMs(),
        })
      : { ending: [], rest: targets };
  let decisions = ending.length;
  let completed = await carryOut(c, ending, ctx.snapshot, claims);
  if (rest.length === 0) return { targets: targets.length, decisions, completed };
  const judging = { targets: rest, skipRecordIntervalMs: c.skipRecordIntervalMs };
  let judged: PassResultEffects;
  if (pass.kind === "lifecycle") {
    let result = await pass.handler.execute(rest, ctx);
    // Sessions that could not be placed may preempt lower-priority ones.
    if (pass.handler.spec.name === "ScheduleNewSessions") {
      let preempted: number;
      ({ result, completed: preempted } = await c.preemption.afterSchedule(rest, result));
      completed += preempted;
    }
    judged = step({
      kind: "pass-result",
      pass: { kind: "lifecycle", spec: pass.handler.spec, result },
      nowMs: c.d.clock.nowMs(),
      ...judging,
    });
  } else {
    judged = step({ kind: "pass-result", pass: pass, nowMs: c.d.clock.nowMs(), ...judging });
  }
  decisions += judged.decisions.length;
  completed += await carryOut(c, judged.toCarryOut, ctx.snapshot, claims);
  return { targets: targets.length, decisions, completed };
}

/** Honours cancel requests of sessions waiting in a stage: PRE-start → CANCELLED, else TERMINATING. */
export async function cancelPass(
  c: CoordinatorCore,
  dirty: Dirty,
  sweep: boolean,
  snapshot: RunSnapshot,
): Promise<number> {
  const candidates = sweep
    ? await c.d.store.targetsByStatus({
        statuses: WAITING_SESSION_STATUSES,
        limit: c.d.config.batchLimit,
        targetableOnly: true,
      })
    : dirty.sessions.size > 0
      ? await snapshot.sessions(dirty.sessions)
      : [];
  let completed = 0;
  const plans = step({
    kind: "cancels",
    candidates,
    ownClaims: dirty.claims.ids(),
    nowMs: c.d.clock.nowMs(),
  });
  for (const plan of plans) {
    if (plan.claim) {
      const claim = plan.claim;
      snapshot.forget(plan.sessionId);
      if ((await unlessConflict(() => c.d.store.applyWrite(claim))) === undefined) continue;
    } else {
      // Claimed by this run already: nothing to write before completing.
      dirty.claims.use(plan.sessionId);
    }
    await complete(c, plan.sessionId, plan.token, plan.transition, plan.known);
    completed++;
  }
  return completed;
}

/** Higher-priority waiting sessions a targeted scheduling pass also tries, first. */
const WAITING_AHEAD_LIMIT = 10;

function isPlacement(pass: Pass): boolean {
  return pass.kind === "lifecycle" && pass.handler.spec.name === "ScheduleNewSessions";
}

/** The status queues' order (core/queue-order.ts): priority, requeued before new, oldest, id. */
function queueOrder(a: SessionWithKernels, b: SessionWithKernels): number {
  return compareQueueOrder(a.session, b.session);
}

/**
 * Whether a session that just entered `status`, as `entered` shows it (its kernels as the entry
 * was written against: the entry only moves kernels forward to the stage's own status, never
 * past what a report set), might be moved on by a pass now. Only a stage whose passes are all
 * promotions can be told without a read: none matches its kernels, and no cancel is asked for.
 * Otherwise a report still to come moves it, through the report queue.
 */
export function mayAdvance(status: SessionStatus, written: SessionWithKernels): boolean {
  if (written.session.cancelRequestedAtMs !== undefined) return true;
  const passes = PASSES.filter((p) => passStatuses(p).includes(status));
  if (passes.some((p) => p.kind === "lifecycle")) return true;
  // Written without its kernels: only a read tells (a promotion never acts on an empty set).
  if (written.kernels.length === 0) return true;
  return promotionDue({ session: { ...written.session, status }, kernels: written.kernels });
}
