/**
 * ScheduleNewSessions (PENDING): places every kernel of a session on agents with enough free
 * cpu and memory, all or none, highest priority first then oldest (the order targets arrive
 * in), and reserves the capacity atomically. A session that cannot be placed is SKIPPED with the
 * reason, which becomes its pending reason.
 */
import { LIFECYCLE_HANDLERS } from "../core/handlers.ts";
import { jobSettings } from "../core/jobs.ts";
import { placeKernels, type AgentFree } from "../core/placement.ts";
import type { SessionWithKernels } from "../core/model.ts";
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
    const free = new Map<string, AgentFree>(
      [...(await ctx.liveAgents()).values()].map((a) => [a.id, { id: a.id, free: { ...a.free } }]),
    );
    for (const target of targets) {
      const { session, kernels } = target;
      // Reserved by an earlier run that stopped before its outcome was recorded.
      if (kernels.length > 0 && kernels.every((k) => k.agentId !== undefined)) {
        result.success(session.id, placedMessage(target));
        continue;
      }
      // Anti-affinity: a retry avoids the agent of the run that failed (most recent only).
      const placement = placeKernels(
        kernels.map((k) => ({ index: k.index, resources: k.resources })),
        [...free.values()],
        {
          ...(session.avoidAgentIds ? { avoidAgentIds: new Set(session.avoidAgentIds) } : {}),
          maxPerAgent: jobSettings(session.spec).perAgent,
        },
      );
      if (!placement.ok) {
        result.skip(session.id, placement.reason);
        continue;
      }
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
          if (agent) free.set(agent.id, { id: agent.id, free: { ...agent.free } });
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
            id: agent.id,
            free: { cpu: agent.free.cpu - need.cpu, memoryMiB: agent.free.memoryMiB - need.memoryMiB },
          });
        }
      }
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
