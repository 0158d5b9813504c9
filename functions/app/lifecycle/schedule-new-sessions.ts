/**
 * ScheduleNewSessions (PENDING): places every kernel of a session on agents with enough free
 * cpu and memory, all or none, highest priority first then oldest (the order targets arrive
 * in), and reserves the capacity atomically. A session that cannot be placed is SKIPPED with the
 * reason, which becomes its pending reason; when higher-priority sessions placed ahead of it in
 * this pass took the capacity it would have fitted in, the reason says so (it waits for priority).
 */
import { executorOf, Executor } from "../../core/fargate.ts";
import { fargatePoolCapacity, fargatePoolId, isFargatePool } from "../../core/fargate-pool.ts";
import { LIFECYCLE_HANDLERS } from "../../core/handlers.ts";
import { isLiveAgent, type Agent, type SessionWithKernels } from "../../core/model.ts";
import { PlacementPass, toAgentFree } from "../../core/placement-pass.ts";
import { CapacityError, NotFoundError, type ReservationRequest } from "../../core/ports/session-store.ts";
import type { HandlerResult } from "../../core/scheduling.ts";
import { sessionAfterPlacement } from "../../core/session-after-write.ts";
import { isConflict } from "../reread.ts";
import { errorMessage, ResultBuilder, type HandlerContext, type LifecycleHandler } from "./handler.ts";

export const scheduleNewSessions: LifecycleHandler = {
  spec: LIFECYCLE_HANDLERS.ScheduleNewSessions,
  async execute(targets: readonly SessionWithKernels[], ctx: HandlerContext): Promise<HandlerResult> {
    const result = new ResultBuilder();
    // Free capacity as it is now, not the run's snapshot: passes earlier in this run may have
    // released capacity, and a higher-priority session must not miss it to a later, targeted
    // pass that places a lower-priority one (priority inversion, then a needless preemption).
    const agents = await ctx.store.listAgents();
    const live = [
      ...agents.filter((a) => !isFargatePool(a.id) && isLiveAgent(a, ctx.nowMs, ctx.config.agentTimeoutMs)),
      ...(await fargatePools(targets, agents, ctx)),
    ];
    const incarnations = new Map(live.map((a) => [a.id, a.incarnation]));
    const pass = new PlacementPass(live.map(toAgentFree), { fargate: ctx.config.fargate !== undefined });
    for (const target of targets) {
      const { session, kernels } = target;
      const planned = pass.place(target);
      if (planned.kind === "placed-before") {
        result.success(session.id, planned.message);
        continue;
      }
      if (planned.kind === "wait") {
        result.skip(session.id, planned.message);
        continue;
      }
      // The reservation places the kernels: the copy read no longer shows them.
      ctx.snapshot.forget(session.id);
      const token = session.stage.taskToken;
      const request: ReservationRequest = {
        sessionId: session.id,
        expected: { status: session.status, version: session.version },
        nowMs: ctx.nowMs,
        placements: planned.kernels.map((p) => ({
          kernelIndex: p.index,
          agentId: p.agentId,
          resources: kernels[p.index]?.resources ?? session.spec.resources,
          ...(incarnations.get(p.agentId) !== undefined ? { incarnation: incarnations.get(p.agentId)! } : {}),
        })),
        // Placing decides the stage: the reservation claims it too, and the run holds the token.
        ...(token !== undefined ? { claimStage: true } : {}),
      };
      try {
        await ctx.store.reserveCapacity(request);
        if (token !== undefined) {
          ctx.snapshot.remember([sessionAfterPlacement(target, request)]);
          ctx.hold(session.id, session.status, token);
        }
      } catch (error) {
        if (error instanceof CapacityError) {
          // Another run took the capacity first: not this session's failure, so no try is spent.
          result.skip(session.id, `capacity changed while placing: ${errorMessage(error)}`);
          const agent = await ctx.store.getAgent(error.agentId);
          if (agent) pass.refresh(toAgentFree(agent));
        } else if (isConflict(error) || error instanceof NotFoundError) {
          // The session moved on (cancelled, or another run placed it): nothing to judge.
        } else {
          result.failure(session.id, `could not reserve capacity: ${errorMessage(error)}`);
        }
        continue;
      }
      pass.taken(target, planned.kernels);
      result.success(session.id, planned.message);
    }
    return result.build();
  },
};

/**
 * The pools of the queues the targets' Fargate sessions name, sized from each queue's settings
 * as read now: created when absent, resized when the quota changed (the store's incarnation-less
 * heartbeat moves free capacity by the difference). A queue without Fargate settings has no
 * pool to offer, whatever a former setting left in the table. Nothing is read or written
 * without a Fargate executor or Fargate targets.
 */
async function fargatePools(
  targets: readonly SessionWithKernels[],
  agents: readonly Agent[],
  ctx: HandlerContext,
): Promise<Agent[]> {
  if (ctx.config.fargate === undefined) return [];
  const queues = new Set(
    targets.flatMap(({ session }) =>
      executorOf(session.spec) === Executor.fargate ? [session.spec.queue] : [],
    ),
  );
  const stored = new Map(agents.filter((a) => isFargatePool(a.id)).map((a) => [a.id, a]));
  const pools: Agent[] = [];
  for (const name of queues) {
    const settings = (await ctx.queue(name))?.fargate;
    if (!settings) continue;
    const agentId = fargatePoolId(name);
    const capacity = fargatePoolCapacity(settings);
    const pool = stored.get(agentId);
    const current =
      pool !== undefined &&
      pool.capacity.cpu === capacity.cpu &&
      pool.capacity.memoryMiB === capacity.memoryMiB &&
      pool.draining !== true;
    pools.push(current ? pool : await ctx.store.heartbeatAgent({ agentId, capacity, nowMs: ctx.nowMs }));
  }
  return pools.filter((p) => isLiveAgent(p, ctx.nowMs, ctx.config.agentTimeoutMs));
}
