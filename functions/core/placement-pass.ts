/**
 * One scheduling pass's placements (ScheduleNewSessions), pure: the sessions in queue order
 * against the free capacity the pass started with, each placement drawing it down once its
 * reservation holds. The handler reserves each placement in the store between `place` and
 * `taken`; bench/placement.ts takes every reservation as granted. A session that cannot be
 * placed waits with the reason, which says so when higher-priority sessions placed ahead of it
 * in this pass took the capacity it would have fitted in (it waits for priority).
 */
import { executorOf, Executor } from "./fargate.ts";
import { fargatePoolId, isFargatePool } from "./fargate-pool.ts";
import { jobSettings } from "./jobs.ts";
import type { Agent, SessionWithKernels } from "./model.ts";
import { placeKernels, type AgentFree } from "./placement.ts";

export type PassPlacement =
  /** Reserved by an earlier run that stopped before its outcome was recorded. */
  | { readonly kind: "placed-before"; readonly message: string }
  | {
      readonly kind: "place";
      readonly kernels: readonly { readonly index: number; readonly agentId: string }[];
      readonly message: string;
    }
  | { readonly kind: "wait"; readonly message: string; readonly forPriority: boolean };

export interface PlacementPassOptions {
  /** Whether the stack has a Fargate executor (config.fargate): without one, no pool will appear. */
  readonly fargate?: boolean;
}

export class PlacementPass {
  /** Agents' free capacity: agent sessions are placed here, never on a pool. */
  readonly #free: Map<string, AgentFree>;
  readonly #atStart: readonly AgentFree[];
  /** Queues' Fargate pools (fargate-pool.ts): a Fargate session only on its own queue's. */
  readonly #pools: Map<string, AgentFree>;
  readonly #poolsAtStart: ReadonlyMap<string, AgentFree>;
  readonly #fargate: boolean;
  /** Priorities of the sessions placed so far in this pass (they were ahead in queue order). */
  readonly #placedAhead: number[] = [];

  /** `agents`: the live agents and pools, one entry per id. */
  constructor(agents: Iterable<AgentFree>, options: PlacementPassOptions = {}) {
    const all = [...agents];
    this.#free = new Map(all.filter((a) => !isFargatePool(a.id)).map((a) => [a.id, a]));
    this.#atStart = [...this.#free.values()];
    this.#pools = new Map(all.filter((a) => isFargatePool(a.id)).map((a) => [a.id, a]));
    this.#poolsAtStart = new Map(this.#pools);
    this.#fargate = options.fargate === true;
  }

  /** The agents' free capacity (pools apart). */
  get free(): ReadonlyMap<string, AgentFree> {
    return this.#free;
  }

  /** The pools' free capacity. */
  get pools(): ReadonlyMap<string, AgentFree> {
    return this.#pools;
  }

  place({ session, kernels }: SessionWithKernels): PassPlacement {
    if (kernels.length > 0 && kernels.every((k) => k.agentId !== undefined)) {
      return { kind: "placed-before", message: placedOn(kernels.map((k) => k.agentId!)) };
    }
    if (executorOf(session.spec) === Executor.fargate) return this.#placeOnPool({ session, kernels });
    // Anti-affinity: a retry avoids the agent of the run that failed (most recent only).
    const demand = kernels.map((k) => ({ index: k.index, resources: k.resources }));
    const options = {
      ...(session.avoidAgentIds ? { avoidAgentIds: new Set(session.avoidAgentIds) } : {}),
      maxPerAgent: jobSettings(session.spec).perAgent,
      ...(session.spec.nodeSelector ? { nodeSelector: session.spec.nodeSelector } : {}),
    };
    const placement = placeKernels(demand, [...this.#free.values()], options);
    if (placement.ok) {
      return {
        kind: "place",
        kernels: placement.kernels,
        message: placedOn(placement.kernels.map((p) => p.agentId)),
      };
    }
    // Sessions of the same priority ahead of it are plain first come, first served. No count in
    // the reason: it would differ pass after pass, and a reason that repeats is not rewritten.
    const forPriority =
      this.#placedAhead.some((p) => p > session.spec.priority) &&
      placeKernels(demand, this.#atStart, options).ok;
    return {
      kind: "wait",
      forPriority,
      message: forPriority
        ? `capacity: higher-priority sessions were placed first (${placement.reason})`
        : placement.reason,
    };
  }

  /**
   * A Fargate session: every kernel on its queue's pool (each is its own task, so a gang spreads
   * over nothing), when the pool's free vCPU holds them all.
   */
  #placeOnPool({ session, kernels }: SessionWithKernels): PassPlacement {
    const queue = session.spec.queue;
    if (!this.#fargate) {
      return { kind: "wait", forPriority: false, message: NO_FARGATE_EXECUTOR };
    }
    const poolId = fargatePoolId(queue);
    const pool = this.#pools.get(poolId);
    if (!pool) {
      return {
        kind: "wait",
        forPriority: false,
        message: `queue "${queue}" has no Fargate capacity: set one with \`cairn queue update ${queue} --vcpu-quota N\``,
      };
    }
    const cpu = kernels.reduce((sum, k) => sum + k.resources.cpu, 0);
    const memoryMiB = kernels.reduce((sum, k) => sum + k.resources.memoryMiB, 0);
    const fits = (p: AgentFree | undefined) =>
      p !== undefined && p.free.cpu >= cpu && p.free.memoryMiB >= memoryMiB;
    if (fits(pool)) {
      const placed = kernels.map((k) => ({ index: k.index, agentId: poolId }));
      return { kind: "place", kernels: placed, message: placedOn([poolId]) };
    }
    const quota = pool.capacity?.cpu;
    const reason =
      quota !== undefined && cpu > quota
        ? `needs ${cpu} vCPU; queue ${queue}'s Fargate quota is ${quota} vCPU: raise it with \`cairn queue update ${queue} --vcpu-quota N\``
        : `needs ${cpu} vCPU; queue ${queue}'s Fargate quota has ${pool.free.cpu} of ${quota ?? "?"} free`;
    const forPriority =
      this.#placedAhead.some((p) => p > session.spec.priority) && fits(this.#poolsAtStart.get(poolId));
    return {
      kind: "wait",
      forPriority,
      message: forPriority ? `capacity: higher-priority sessions were placed first (${reason})` : reason,
    };
  }

  /** The placement's reservation holds: its capacity is taken for the rest of the pass. */
  taken(
    { session, kernels }: SessionWithKernels,
    placed: readonly { readonly index: number; readonly agentId: string }[],
  ): void {
    for (const p of placed) {
      const free = isFargatePool(p.agentId) ? this.#pools : this.#free;
      const agent = free.get(p.agentId);
      const need = kernels[p.index]?.resources;
      if (agent && need) {
        free.set(p.agentId, {
          ...agent,
          free: { cpu: agent.free.cpu - need.cpu, memoryMiB: agent.free.memoryMiB - need.memoryMiB },
        });
      }
    }
    this.#placedAhead.push(session.spec.priority);
  }
}

/** Why a Fargate session waits on a stack deployed without the Fargate executor. */
export const NO_FARGATE_EXECUTOR = "this stack has no Fargate executor (deploy with the fargate prop)";

function placedOn(agentIds: readonly string[]): string {
  return `placed on ${[...new Set(agentIds)].join(", ")}`;
}

/** An agent as placement sees it: its free capacity (a copy), its capacity and labels. */
export function toAgentFree(a: Agent): AgentFree {
  return { id: a.id, free: { ...a.free }, capacity: a.capacity, ...(a.labels ? { labels: a.labels } : {}) };
}
