/**
 * ScheduleNewSessions (PENDING): places every kernel of a session on agents with enough free
 * cpu and memory, all or none, highest priority first then oldest (the order targets arrive
 * in), and reserves the capacity atomically. A session that cannot be placed is SKIPPED with the
 * reason, which becomes its pending reason; when higher-priority sessions placed ahead of it in
 * this pass took the capacity it would have fitted in, the reason says so (it waits for priority).
 * The pass plans every target first and then reserves: the sessions placed on the same agents
 * several to a write, writes on different agents at once and those sharing an agent one after
 * another, so a pass's time is not one round trip per session (the placement queue runs one pass
 * at a time).
 */
import { executorOf, Executor } from "../../core/fargate.ts";
import { fargatePoolCapacity, fargatePoolId, isFargatePool } from "../../core/fargate-pool.ts";
import { LIFECYCLE_HANDLERS } from "../../core/handlers.ts";
import { isLiveAgent, type Agent, type SessionWithKernels } from "../../core/model.ts";
import { PlacementPass, toAgentFree } from "../../core/placement-pass.ts";
import { hasCode } from "../../core/ports/errors.ts";
import { type ReservationRequest } from "../../core/ports/agents.ts";
import type { HandlerResult } from "../../core/scheduling.ts";
import { sessionAfterPlacement } from "../../core/session-after-write.ts";
import pLimit from "p-limit";
import { isConflict } from "../reread.ts";
import { errorMessage, ResultBuilder, type HandlerContext, type LifecycleHandler } from "./handler.ts";

export const scheduleNewSessions: LifecycleHandler = {
  spec: LIFECYCLE_HANDLERS.ScheduleNewSessions,
  async execute(targets: readonly SessionWithKernels[], ctx: HandlerContext): Promise<HandlerResult> {
    const first = await placementRound(targets, ctx);
    const outcomes = first.outcomes;
    // A reservation that failed gave back capacity the round had counted as taken, or found an
    // agent with less than it was read with: the sessions that waited are placed once more,
    // against the agents as they are now.
    const again = targets.filter((t) => outcomes.get(t.session.id)?.replan === true);
    if (first.failed && again.length > 0) {
      for (const [id, outcome] of (await placementRound(again, ctx)).outcomes) outcomes.set(id, outcome);
    }
    const result = new ResultBuilder();
    for (const { session } of targets) {
      const outcome = outcomes.get(session.id);
      if (outcome?.kind === "success") result.success(session.id, outcome.message);
      else if (outcome?.kind === "skip") result.skip(session.id, outcome.message);
      else if (outcome?.kind === "failure") result.failure(session.id, outcome.message);
    }
    return result.build();
  },
};

/** What became of a target: recorded as the handler's result, or (moved) nothing to judge. */
type Outcome =
  | { readonly kind: "success" | "failure"; readonly message: string; readonly replan?: undefined }
  /** `replan`: it may fit once capacity a failed reservation had counted is back. */
  | { readonly kind: "skip"; readonly message: string; readonly replan: boolean }
  | { readonly kind: "moved"; readonly replan?: undefined };

/**
 * Reservation writes of one round sent at once, at most this many; those sharing an agent go one
 * after another (inAgentLanes).
 */
const RESERVATIONS_AT_ONCE = 16;

/**
 * One round: the live agents read, every target planned in order (a placement's capacity
 * counted as taken for the targets after it), then the reservations sent. `failed`: some
 * reservation did not hold, so capacity counted as taken may not be.
 */
async function placementRound(
  targets: readonly SessionWithKernels[],
  ctx: HandlerContext,
): Promise<{ readonly outcomes: Map<string, Outcome>; readonly failed: boolean }> {
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
  const outcomes = new Map<string, Outcome>();
  const planned: { readonly target: SessionWithKernels; readonly request: ReservationRequest }[] = [];
  for (const target of targets) {
    const { session, kernels } = target;
    const placement = pass.place(target);
    if (placement.kind === "placed-before") {
      outcomes.set(session.id, { kind: "success", message: placement.message });
      continue;
    }
    if (placement.kind === "wait") {
      outcomes.set(session.id, { kind: "skip", message: placement.message, replan: true });
      continue;
    }
    // The reservation places the kernels: the copy read no longer shows them.
    ctx.snapshot.forget(session.id);
    planned.push({
      target,
      request: {
        sessionId: session.id,
        expected: { status: session.status, version: session.version },
        nowMs: ctx.nowMs,
        placements: placement.kernels.map((p) => ({
          kernelIndex: p.index,
          agentId: p.agentId,
          resources: kernels[p.index]?.resources ?? session.spec.resources,
          ...(incarnations.get(p.agentId) !== undefined ? { incarnation: incarnations.get(p.agentId)! } : {}),
        })),
        // Placing decides the stage: the reservation claims it too, for the run to complete.
        ...(session.stage.taskToken !== undefined
          ? { claimStage: true, claimedToken: session.stage.taskToken }
          : {}),
      },
    });
    outcomes.set(session.id, { kind: "success", message: placement.message });
    pass.taken(target, placement.kernels);
  }
  const settled = await reserveInLanes(
    planned.map((p) => p.request),
    ctx,
  );
  let failed = false;
  for (const [i, reserved] of settled.entries()) {
    const { target, request } = planned[i]!;
    const { session } = target;
    const token = session.stage.taskToken;
    if (reserved.status === "fulfilled") {
      if (token !== undefined) {
        ctx.snapshot.remember([sessionAfterPlacement(target, request)]);
        ctx.claimed(session.id, session.status);
      }
      continue;
    }
    failed = true;
    const error: unknown = reserved.reason;
    if (hasCode(error, "CAPACITY")) {
      // Another run took the capacity first: not this session's failure, so no try is spent.
      const message = `capacity changed while placing: ${errorMessage(error)}`;
      outcomes.set(session.id, { kind: "skip", message, replan: true });
    } else if (isConflict(error) || hasCode(error, "NOT_FOUND")) {
      // The session moved on (cancelled, or another run placed it): nothing to judge.
      outcomes.set(session.id, { kind: "moved" });
    } else {
      outcomes.set(session.id, {
        kind: "failure",
        message: `could not reserve capacity: ${errorMessage(error)}`,
      });
    }
  }
  return { outcomes, failed };
}

/**
 * The round's reservations: those of sessions placed on the same agents go together, several to
 * a write (the store's reserveCapacityTogether), and each one it did not take goes alone, which
 * says why it fails. Groups on different agents go at once; groups sharing an agent, one after
 * another (inAgentLanes). Results come back in the order of `requests`.
 */
async function reserveInLanes(
  requests: readonly ReservationRequest[],
  ctx: HandlerContext,
): Promise<PromiseSettledResult<unknown>[]> {
  const groups = new Map<string, number[]>();
  requests.forEach((request, i) => {
    const key = [...new Set(request.placements.map((p) => p.agentId))].sort().join("\n");
    const group = groups.get(key);
    if (group) group.push(i);
    else groups.set(key, [i]);
  });
  const alone = (request: ReservationRequest): Promise<PromiseSettledResult<unknown>> =>
    ctx.store.reserveCapacity(request).then(
      (value) => ({ status: "fulfilled", value }),
      (reason: unknown) => ({ status: "rejected", reason }),
    );
  const byGroup = await inAgentLanes(
    [...groups.values()].map((indexes) => ({
      agentIds: requests[indexes[0]!]!.placements.map((p) => p.agentId),
      run: async () => {
        const mine = indexes.map((i) => requests[i]!);
        const together = mine.length > 1 ? await ctx.store.reserveCapacityTogether(mine) : [];
        const results: PromiseSettledResult<unknown>[] = [];
        for (const [n, request] of mine.entries()) {
          const reserved = together[n];
          results.push(
            reserved !== undefined ? { status: "fulfilled", value: reserved } : await alone(request),
          );
        }
        return results;
      },
    })),
    RESERVATIONS_AT_ONCE,
  );
  const settled = new Map<number, PromiseSettledResult<unknown>>();
  [...groups.values()].forEach((indexes, g) => {
    const group = byGroup[g]!;
    indexes.forEach((i, n) => settled.set(i, group.status === "fulfilled" ? group.value[n]! : group));
  });
  return requests.map((_, i) => settled.get(i)!);
}

/**
 * Runs `tasks` at most `limit` at a time, each after every earlier task that shares one of its
 * agents has settled: two transactions writing one agent item conflict in DynamoDB instead of
 * queueing, so a placement pass's reservations go out together across agents and one by one
 * on each. Results come back in the order of `tasks`.
 */
export async function inAgentLanes<T>(
  tasks: readonly { readonly agentIds: readonly string[]; readonly run: () => Promise<T> }[],
  limit: number,
): Promise<PromiseSettledResult<T>[]> {
  const slots = pLimit(limit);
  const tails = new Map<string, Promise<unknown>>();
  const runs = tasks.map(({ agentIds, run }) => {
    const agents = [...new Set(agentIds)];
    const before = Promise.allSettled(agents.flatMap((id) => tails.get(id) ?? []));
    const ran = before.then(() => slots(run));
    const settled = ran.catch(() => undefined);
    for (const id of agents) tails.set(id, settled);
    return ran;
  });
  return Promise.allSettled(runs);
}

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
