/**
 * Priority preemption in the coordinator: after ScheduleNewSessions, the sessions it
 * could not place may preempt sessions of lower priority bands holding capacity. The pure core
 * (core/preemption.ts) chooses the victims; this module reads what it needs and carries the plan
 * out, the way a cancel is carried out: claim the victim's stage, complete it with a transition.
 *
 * - A victim not yet running (SCHEDULED … CREATING) goes back to PENDING, recorded PREEMPTED; its
 *   stage entry gives the capacity back, and it keeps its run index. From SCHEDULED (Iris's
 *   ASSIGNED) it costs no budget; from PREPARING on (BUILDING) it is charged to the preemption
 *   budget (core/building-loss.ts).
 * - A RUNNING victim goes to TERMINATING, recorded PREEMPTED; TerminateSessions stops its kernels
 *   as Preempted, and the finished run is judged under the preemption budget (the coordinator's
 *   retry judgment), which requeues it as a new run.
 *
 * The claim also marks the victim (`session.preemption`) until it is queued again, so capacity it
 * is releasing counts as freed: a session waiting for it preempts no one else, and its pending
 * reason says what it waits for.
 */
import type { CairnConfig } from "../config.ts";
import { executorOf, Executor } from "../core/fargate.ts";
import { isFargatePool } from "../core/fargate-pool.ts";
import { chargeLossBeforeRunning, lossIsFree } from "../core/building-loss.ts";
import { STAGES } from "../core/handlers.ts";
import { jobSettings } from "../core/jobs.ts";
import { isLiveAgent, type Agent, type SessionWithKernels, type StageTransition } from "../core/model.ts";
import { placeKernels, type AgentFree } from "../core/placement.ts";
import type { AgentRepository } from "../core/ports/agents.ts";
import type { SessionRepository } from "../core/ports/sessions.ts";
import {
  describePlan,
  planPreemptions,
  type HeldCapacity,
  type PreemptionCandidate,
  type Preemptor,
} from "../core/preemption.ts";
import type { HandlerResult } from "../core/scheduling.ts";
import { AttemptOutcome, isWaitingStatus, SessionStatus, WAITING_SESSION_STATUSES } from "../core/status.ts";
import { errorMessage } from "./lifecycle/handler.ts";
import { unlessConflict } from "./reread.ts";
import type { Logger } from "./logger.ts";
import type { Clock } from "../core/ports/clock.ts";
import type { LifecycleExecutionsPort } from "../core/ports/lifecycle-executions.ts";

export interface PreemptionDeps {
  readonly store: SessionRepository & AgentRepository;
  readonly executions: LifecycleExecutionsPort;
  readonly config: CairnConfig;
  readonly clock: Clock;
  readonly log: Logger;
  /**
   * How long "preempting cannot help sessions up to priority P" (no lower-priority session holds
   * capacity, or preempting them would not make room) is trusted without looking again.
   * Placements this instance makes below P forget it at once; other instances' within this time.
   * @default 2000
   */
  readonly noLowerPriorityCacheMs?: number;
}

/** Statuses in which a session holds capacity on agents: every waiting stage after PENDING. */
const HOLDING: readonly SessionStatus[] = WAITING_SESSION_STATUSES.filter((s) => s !== SessionStatus.PENDING);

export class Preemption {
  readonly #d: PreemptionDeps;
  /**
   * A backlog is skipped pass after pass, and each look for lower-priority holders reads every
   * shard of six status indexes (and each holder found): remember when it found nothing to do,
   * with what it told the sessions it looked at, so their pending reasons stay the same.
   */
  #noneBelow:
    | {
        readonly priority: number;
        readonly untilMs: number;
        readonly notes: ReadonlyMap<string, string>;
      }
    | undefined;

  constructor(deps: PreemptionDeps) {
    this.#d = deps;
  }

  /**
   * For the sessions a scheduling pass skipped (`targets` in queue order): preempts what makes
   * room for them, and returns the pass's result with their pending reasons saying so, and how
   * many stages it completed. A failure here is logged and leaves the result as it was.
   */
  async afterSchedule(
    targets: readonly SessionWithKernels[],
    result: HandlerResult,
  ): Promise<{ result: HandlerResult; completed: number }> {
    try {
      return await this.#afterSchedule(targets, result);
    } catch (error) {
      this.#d.log.error("preemption pass failed", { error: errorMessage(error) });
      return { result, completed: 0 };
    }
  }

  async #afterSchedule(
    targets: readonly SessionWithKernels[],
    result: HandlerResult,
  ): Promise<{ result: HandlerResult; completed: number }> {
    const { store, config, clock } = this.#d;
    const nowMs = clock.nowMs();
    this.#forgetIfPlacedBelow(targets, result.successes);
    const skipped = new Set(result.skipped);
    // Fargate sessions wait for their queue's vCPU quota, which no agent session holds: only
    // agent sessions preempt, and only other agent sessions (toCandidate).
    const waiting = targets.filter(
      ({ session }) =>
        skipped.has(session.id) &&
        session.cancelRequestedAtMs === undefined &&
        executorOf(session.spec) === Executor.agent,
    );
    if (waiting.length === 0) return { result, completed: 0 };
    const top = Math.max(...waiting.map((t) => t.session.spec.priority));
    const memo = this.#noneBelow;
    if (memo && top <= memo.priority && nowMs < memo.untilMs) {
      return { result: withNotes(result, memo.notes), completed: 0 };
    }
    // A session no live agent could hold even idle waits for an agent, not for preemption.
    const idle = (await this.#liveAgents()).map((a) => ({
      id: a.id,
      free: a.capacity,
      ...(a.labels ? { labels: a.labels } : {}),
    }));
    const could = waiting.filter((t) => fitsOn(t, idle));
    if (could.length === 0) return { result, completed: 0 };
    const remember = (notes: ReadonlyMap<string, string>) => {
      this.#noneBelow = { priority: top, untilMs: nowMs + (this.#d.noLowerPriorityCacheMs ?? 2_000), notes };
    };
    // One read, bounded by the highest waiting priority: with no lower-priority session holding
    // capacity (the common backlog of equals), this is all preemption costs.
    const holders = await store.targetsByStatus({
      statuses: HOLDING,
      limit: config.batchLimit,
      belowPriority: Math.max(...could.map((t) => t.session.spec.priority)),
    });
    const candidates = holders.flatMap(toCandidate);
    const lowest = Math.min(...candidates.map((c) => c.priority));
    const preemptors = could.filter((t) => t.session.spec.priority > lowest).map(toPreemptor);
    if (preemptors.length === 0) {
      if (holders.length === 0) remember(new Map());
      return { result, completed: 0 };
    }
    // Free capacity is read after the holders, never before: a session gives its capacity back
    // before it leaves the statuses read above, so a release between the two reads is counted
    // twice (nothing preempted this pass) rather than not at all (a needless preemption).
    const agents = (await this.#liveAgents()).map((a) => ({
      id: a.id,
      free: a.free,
      ...(a.labels ? { labels: a.labels } : {}),
    }));
    const plans = planPreemptions({ preemptors, agents, candidates });
    if ([...plans.values()].every((p) => p.kind === "none" || p.kind === "fits")) {
      const notes = new Map(
        [...plans].flatMap(([id, plan]) => {
          const text = describePlan(plan);
          return text === undefined ? [] : [[id, text] as const];
        }),
      );
      remember(notes);
      return { result: withNotes(result, notes), completed: 0 };
    }

    const byId = new Map(holders.map((h) => [h.session.id, h]));
    // Another coordinator run may have placed a preemptor since this pass skipped it (this pass
    // read its agents earlier): preempting for it then would be for nothing. Re-read them.
    const toPreempt = preemptors.filter((p) => plans.get(p.sessionId)?.kind === "preempt");
    const stillWaiting = new Set(
      toPreempt.length === 0
        ? []
        : (await store.getSessions(toPreempt.map((p) => p.sessionId)))
            .filter(isWaiting)
            .map((s) => s.session.id),
    );
    const messages: Record<string, string> = { ...result.messages };
    let completed = 0;
    for (const p of preemptors) {
      const plan = plans.get(p.sessionId);
      if (!plan) continue;
      if (plan.kind === "preempt") {
        if (!stillWaiting.has(p.sessionId)) continue;
        // A victim between two stages (its stage claimed by another transition) cannot be claimed
        // now; preempting the others instead would pick a worse set (often a running session
        // over one that has not started). The next pass claims it wherever it has landed.
        const inTransit = plan.victims.some(
          (v) => byId.get(v.sessionId)?.session.stage.taskToken === undefined,
        );
        for (const victim of inTransit ? [] : plan.victims) {
          const holder = byId.get(victim.sessionId);
          if (holder && (await this.#preempt(holder, p))) completed++;
        }
      }
      const text = describePlan(plan);
      if (text === undefined) continue;
      const before = messages[p.sessionId];
      messages[p.sessionId] = plan.kind === "none" && before !== undefined ? `${before}; ${text}` : text;
    }
    return { result: { ...result, messages }, completed };
  }

  /** A session placed below the remembered priority holds capacity there now. */
  #forgetIfPlacedBelow(targets: readonly SessionWithKernels[], placedIds: readonly string[]): void {
    const memo = this.#noneBelow;
    if (!memo || placedIds.length === 0) return;
    const placed = new Set(placedIds);
    if (targets.some((t) => placed.has(t.session.id) && t.session.spec.priority < memo.priority)) {
      this.#noneBelow = undefined;
    }
  }

  /** Agents heartbeating now, with their free capacity after this run's placements. */
  async #liveAgents(): Promise<Agent[]> {
    const nowMs = this.#d.clock.nowMs();
    return (await this.#d.store.listAgents()).filter(
      (a) => !isFargatePool(a.id) && isLiveAgent(a, nowMs, this.#d.config.agentTimeoutMs),
    );
  }

  /** Claims the victim's stage, marking it preempted, and completes it. False if it moved on. */
  async #preempt({ session }: SessionWithKernels, by: Preemptor): Promise<boolean> {
    const token = session.stage.taskToken;
    const to = isWaitingStatus(session.status) ? STAGES[session.status].onPreempt : undefined;
    if (to === undefined || token === undefined) return false;
    const nowMs = this.#d.clock.nowMs();
    // A conflict: it moved on since it was read (a report, its own transition), and the next
    // pass sees it anew.
    const claimed = await unlessConflict(() =>
      this.#d.store.applyWrite({
        sessionId: session.id,
        expected: { status: session.status, version: session.version },
        nowMs,
        claimStage: true,
        claimedToken: token,
        preemption: { atMs: nowMs, by: by.sessionId, byPriority: by.priority },
      }),
    );
    if (claimed === undefined) return false;
    const free = to === SessionStatus.PENDING && lossIsFree(session.status);
    const transition: StageTransition = chargeLossBeforeRunning(
      session,
      {
        from: session.status,
        to,
        result: "PREEMPTED",
        handler: "Preempt",
        message:
          `preempted by ${by.sessionId} (priority ${by.priority})` +
          (free ? ": queued again at no cost, it had not started running" : ""),
      },
      AttemptOutcome.PREEMPTED,
    );
    const outcome = await this.#d.executions.complete(token, transition);
    this.#d.log.info("session preempted", {
      sessionId: session.id,
      priority: session.spec.priority,
      from: session.status,
      to,
      by: by.sessionId,
      byPriority: by.priority,
      ...(outcome === "already-closed" ? { note: "its stage had already closed" } : {}),
    });
    return outcome === "completed";
  }
}

/** The skip reasons with what preemption found appended ("…; preempting every … would not …"). */
function withNotes(result: HandlerResult, notes: ReadonlyMap<string, string>): HandlerResult {
  if (notes.size === 0) return result;
  const skipped = new Set(result.skipped);
  const messages: Record<string, string> = { ...result.messages };
  for (const [id, note] of notes) {
    if (!skipped.has(id)) continue;
    const before = messages[id];
    messages[id] = before !== undefined ? `${before}; ${note}` : note;
  }
  return { ...result, messages };
}

/** Whether the session's kernels fit on these agents at all. */
function fitsOn({ session, kernels }: SessionWithKernels, agents: readonly AgentFree[]): boolean {
  return placeKernels(
    kernels.map((k) => ({ index: k.index, resources: k.resources })),
    agents,
    {
      ...(session.avoidAgentIds ? { avoidAgentIds: new Set(session.avoidAgentIds) } : {}),
      maxPerAgent: jobSettings(session.spec).perAgent,
      ...(session.spec.nodeSelector ? { nodeSelector: session.spec.nodeSelector } : {}),
    },
  ).ok;
}

/** Still PENDING, unplaced and not cancelled: a preemption would still be for something. */
function isWaiting({ session, kernels }: SessionWithKernels): boolean {
  return (
    session.status === SessionStatus.PENDING &&
    session.stage.taskToken !== undefined &&
    session.cancelRequestedAtMs === undefined &&
    kernels.every((k) => k.agentId === undefined)
  );
}

/** A session holding capacity, as the core sees it; none when it holds nothing it could give. */
function toCandidate({ session, kernels }: SessionWithKernels): PreemptionCandidate[] {
  const held = new Map<string, { cpu: number; memoryMiB: number }>();
  for (const k of kernels) {
    // A pool's quota is no agent's capacity: preempting a Fargate kernel frees nothing an agent
    // session could use.
    if (k.agentId === undefined || isFargatePool(k.agentId)) continue;
    const h = held.get(k.agentId) ?? { cpu: 0, memoryMiB: 0 };
    held.set(k.agentId, { cpu: h.cpu + k.resources.cpu, memoryMiB: h.memoryMiB + k.resources.memoryMiB });
  }
  if (held.size === 0) return [];
  const releasing =
    session.preemption !== undefined
      ? "preempted"
      : session.status === SessionStatus.TERMINATING || session.cancelRequestedAtMs !== undefined
        ? "ending"
        : false;
  const holds: HeldCapacity[] = [...held.entries()].map(([agentId, resources]) => ({ agentId, resources }));
  return [
    {
      sessionId: session.id,
      priority: session.spec.priority,
      createdAtMs: session.createdAtMs,
      // Past ASSIGNED (SCHEDULED): preempting it spends its preemption budget (core/building-loss.ts).
      started: session.status !== SessionStatus.SCHEDULED || kernels.some((k) => k.startedAtMs !== undefined),
      holds,
      releasing,
    },
  ];
}

function toPreemptor({ session, kernels }: SessionWithKernels): Preemptor {
  return {
    sessionId: session.id,
    priority: session.spec.priority,
    kernels: kernels.map((k) => ({ index: k.index, resources: k.resources })),
    ...(session.avoidAgentIds ? { avoidAgentIds: new Set(session.avoidAgentIds) } : {}),
    maxPerAgent: jobSettings(session.spec).perAgent,
    ...(session.spec.nodeSelector ? { nodeSelector: session.spec.nodeSelector } : {}),
  };
}
