/**
 * ScheduleNewSessions (PENDING): places every kernel of a session on agents with enough free
 * cpu and memory, all or none, highest priority first then oldest (the order targets arrive
 * in), and reserves the capacity atomically. A session that cannot be placed is SKIPPED with the
 * reason, which becomes its pending reason; when higher-priority sessions placed ahead of it in
 * this pass took the capacity it would have fitted in, the reason says so (it waits for priority).
 */
import { LIFECYCLE_HANDLERS } from "../core/handlers.ts";
import { jobSettings } from "../core/jobs.ts";
import { placeKernels, type AgentFree } from "../core/placement.ts";
import { isLiveAgent, type Agent, type SessionWithKernels } from "../core/model.ts";
import type { HandlerResult } from "../core/scheduling.ts";
import {
  errorCode,
  errorMessage,
  ResultBuilder,
  type HandlerContext,
  type LifecycleHandler,
} from "./handler.ts";

export const scheduleNewSessions: LifecycleHandler = {
  spec: LIFECYCLE_HANDLERS.ScheduleNewSessions,
  async execute(targets: readonly SessionWithKernels[], ctx: HandlerContext): Promise<HandlerResult> {
    const result = new ResultBuilder();
    // Free capacity as it is now, not the run's snapshot: passes earlier in this run may have
    // released capacity, and a higher-priority session must not miss it to a later, targeted
    // pass that places a lower-priority one (priority inversion, then a needless preemption).
    const free = new Map<string, AgentFree>(
      (await ctx.store.listAgents())
        .filter((a) => isLiveAgent(a, ctx.nowMs, ctx.config.agentTimeoutMs))
        .map((a) => [a.id, toAgentFree(a)]),
    );
    const freeAtStart = [...free.values()];
    /** Priorities of the sessions placed so far in this pass (they were ahead in queue order). */
    const placedAhead: number[] = [];
    // No count in the reason: it would differ pass after pass, and a reason that repeats is
    // not rewritten (a backlog would otherwise write a history record per session per pass).
    const aheadReason = (reason: string) =>
      `capacity: higher-priority sessions were placed first (${reason})`;
    for (const target of targets) {
      const { session, kernels } = target;
      // Reserved by an earlier run that stopped before its outcome was recorded.
      if (kernels.length > 0 && kernels.every((k) => k.agentId !== undefined)) {
        result.success(session.id, placedMessage(target));
        continue;
      }
      // Anti-affinity: a retry avoids the agent of the run that failed (most recent only).
      const demand = kernels.map((k) => ({ index: k.index, resources: k.resources }));
      const options = {
        ...(session.avoidAgentIds ? { avoidAgentIds: new Set(session.avoidAgentIds) } : {}),
        maxPerAgent: jobSettings(session.spec).perAgent,
        ...(session.spec.nodeSelector ? { nodeSelector: session.spec.nodeSelector } : {}),
      };
      const placement = placeKernels(demand, [...free.values()], options);
      if (!placement.ok) {
        // Sessions of the same priority ahead of it are plain first come, first served.
        const tookIt =
          placedAhead.some((p) => p > session.spec.priority) && placeKernels(demand, freeAtStart, options).ok;
        result.skip(session.id, tookIt ? aheadReason(placement.reason) : placement.reason);
        continue;
      }
      // The reservation places the kernels: the copy read no longer shows them.
      ctx.snapshot.forget(session.id);
      try {
        await ctx.store.reserveCapacity({
          sessionId: session.id,
          expected: { status: session.status, version: session.version },
          nowMs: ctx.nowMs,
          placements: placement.kernels.map((p) => ({
            kernelIndex: p.index,
            agentId: p.agentId,
            resources: kernels[p.index]?.resources ?? session.spec.resources,
          })),
        });
      } catch (error) {
        const code = errorCode(error);
        if (code === "CAPACITY") {
          // Another run took the capacity first: not this session's failure, so no try is spent.
          result.skip(session.id, `capacity changed while placing: ${errorMessage(error)}`);
          const agent = await ctx.store.getAgent((error as { agentId: string }).agentId);
          if (agent) free.set(agent.id, toAgentFree(agent));
        } else if (code === "CONFLICT" || code === "NOT_FOUND") {
          // The session moved on (cancelled, or another run placed it): nothing to judge.
        } else {
          result.failure(session.id, `could not reserve capacity: ${errorMessage(error)}`);
        }
        continue;
      }
      for (const p of placement.kernels) {
        const agent = free.get(p.agentId);
        const need = kernels[p.index]?.resources;
        if (agent && need) {
          free.set(p.agentId, {
            ...agent,
            free: { cpu: agent.free.cpu - need.cpu, memoryMiB: agent.free.memoryMiB - need.memoryMiB },
          });
        }
      }
      placedAhead.push(session.spec.priority);
      result.success(
        session.id,
        `placed on ${[...new Set(placement.kernels.map((p) => p.agentId))].join(", ")}`,
      );
    }
    return result.build();
  },
};

function placedMessage({ kernels }: SessionWithKernels): string {
  return `placed on ${[...new Set(kernels.map((k) => k.agentId))].join(", ")}`;
}

function toAgentFree(a: Agent): AgentFree {
  return { id: a.id, free: { ...a.free }, capacity: a.capacity, ...(a.labels ? { labels: a.labels } : {}) };
}
