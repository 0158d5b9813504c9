/**
 * One scheduling pass's placements (ScheduleNewSessions), pure: the sessions in queue order
 * against the free capacity the pass started with, each placement drawing it down once its
 * reservation holds. The handler reserves each placement in the store between `place` and
 * `taken`; bench/placement.ts takes every reservation as granted. A session that cannot be
 * placed waits with the reason, which says so when higher-priority sessions placed ahead of it
 * in this pass took the capacity it would have fitted in (it waits for priority).
 */
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

export class PlacementPass {
  readonly #free: Map<string, AgentFree>;
  readonly #atStart: readonly AgentFree[];
  /** Priorities of the sessions placed so far in this pass (they were ahead in queue order). */
  readonly #placedAhead: number[] = [];

  /** `agents`: the live agents, one entry per id. */
  constructor(agents: Iterable<AgentFree>) {
    this.#free = new Map([...agents].map((a) => [a.id, a]));
    this.#atStart = [...this.#free.values()];
  }

  get free(): ReadonlyMap<string, AgentFree> {
    return this.#free;
  }

  place({ session, kernels }: SessionWithKernels): PassPlacement {
    if (kernels.length > 0 && kernels.every((k) => k.agentId !== undefined)) {
      return { kind: "placed-before", message: placedOn(kernels.map((k) => k.agentId!)) };
    }
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

  /** The placement's reservation holds: its capacity is taken for the rest of the pass. */
  taken(
    { session, kernels }: SessionWithKernels,
    placed: readonly { readonly index: number; readonly agentId: string }[],
  ): void {
    for (const p of placed) {
      const agent = this.#free.get(p.agentId);
      const need = kernels[p.index]?.resources;
      if (agent && need) {
        this.#free.set(p.agentId, {
          ...agent,
          free: { cpu: agent.free.cpu - need.cpu, memoryMiB: agent.free.memoryMiB - need.memoryMiB },
        });
      }
    }
    this.#placedAhead.push(session.spec.priority);
  }

  /** An agent as read again (another run took its capacity first). */
  refresh(agent: AgentFree): void {
    this.#free.set(agent.id, agent);
  }
}

function placedOn(agentIds: readonly string[]): string {
  return `placed on ${[...new Set(agentIds)].join(", ")}`;
}

/** An agent as placement sees it: its free capacity (a copy), its capacity and labels. */
export function toAgentFree(a: Agent): AgentFree {
  return { id: a.id, free: { ...a.free }, capacity: a.capacity, ...(a.labels ? { labels: a.labels } : {}) };
}
