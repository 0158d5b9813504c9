/**
 * placeKernels walks the agents once per kernel (it runs for every pending session of a pass over
 * every live agent). Held here to the straightforward version it replaced, kept below as the
 * reference: copy the free capacity, filter the agents that fit, sort them, take the first. Same
 * placement, same reason, on random small clusters and queues, one call at a time and over a
 * whole pass where each placement draws the free capacity down (as ScheduleNewSessions does).
 */
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import {
  matchesSelector,
  placeKernels,
  type AgentFree,
  type KernelDemand,
  type Placement,
} from "../../functions/core/placement.ts";
import type { ResourceRequest } from "../../functions/core/model.ts";

interface Options {
  readonly avoidAgentIds?: ReadonlySet<string>;
  readonly maxPerAgent?: number;
  readonly nodeSelector?: Readonly<Record<string, string>>;
}

// ---- The reference ---------------------------------------------------------------------------

function referencePlaceKernels(
  kernels: readonly KernelDemand[],
  agents: readonly AgentFree[],
  options: Options = {},
): Placement {
  const selected = agents.filter((a) => matchesSelector(a.labels, options.nodeSelector));
  const candidates = selected.filter((a) => !options.avoidAgentIds?.has(a.id));
  if (candidates.length === 0) {
    return {
      ok: false,
      reason:
        agents.length === 0
          ? "no live agents are registered"
          : selected.length === 0
            ? `no live agent has the labels nodeSelector asks for (${Object.entries(
                options.nodeSelector ?? {},
              )
                .map(([k, v]) => `${k}=${v}`)
                .join(", ")})`
            : "every live agent is excluded for this session",
    };
  }
  const free = new Map(candidates.map((a) => [a.id, { cpu: a.free.cpu, memoryMiB: a.free.memoryMiB }]));
  const order = [...kernels].sort(
    (a, b) =>
      b.resources.cpu - a.resources.cpu || b.resources.memoryMiB - a.resources.memoryMiB || a.index - b.index,
  );
  const placed: { index: number; agentId: string }[] = [];
  const perAgent = new Map<string, number>();
  const maxPerAgent = options.maxPerAgent ?? Number.POSITIVE_INFINITY;
  if (Math.ceil(kernels.length / maxPerAgent) > candidates.length) {
    return {
      ok: false,
      reason: `needs ${Math.ceil(kernels.length / maxPerAgent)} agents (${kernels.length} tasks, at most ${maxPerAgent} per agent); ${candidates.length} ${candidates.length === 1 ? "is" : "are"} live`,
    };
  }
  for (const kernel of order) {
    const fits = [...free.entries()]
      .filter(([id]) => (perAgent.get(id) ?? 0) < maxPerAgent)
      .filter(([, f]) => f.cpu >= kernel.resources.cpu && f.memoryMiB >= kernel.resources.memoryMiB)
      .sort(([ia, a], [ib, b]) => b.cpu - a.cpu || b.memoryMiB - a.memoryMiB || ia.localeCompare(ib));
    const chosen = fits[0];
    if (!chosen) {
      return {
        ok: false,
        reason: referenceExplain(kernel.resources, kernels.length, placed.length, candidates),
      };
    }
    const [agentId, f] = chosen;
    f.cpu -= kernel.resources.cpu;
    f.memoryMiB -= kernel.resources.memoryMiB;
    perAgent.set(agentId, (perAgent.get(agentId) ?? 0) + 1);
    placed.push({ index: kernel.index, agentId });
  }
  placed.sort((a, b) => a.index - b.index);
  return { ok: true, kernels: placed };
}

function referenceExplain(
  need: ResourceRequest,
  total: number,
  placedSoFar: number,
  agents: readonly AgentFree[],
): string {
  const sizes = agents.flatMap((a) => (a.capacity ? [a.capacity] : []));
  const holds = (c: ResourceRequest) => c.cpu >= need.cpu && c.memoryMiB >= need.memoryMiB;
  if (sizes.length === agents.length && !sizes.some(holds)) {
    const largest = [...sizes].sort((a, b) => b.cpu - a.cpu || b.memoryMiB - a.memoryMiB)[0];
    return `no agent matches: a task needs ${need.cpu} cpu and ${need.memoryMiB} MiB; the largest agent has ${largest?.cpu ?? 0} cpu and ${largest?.memoryMiB ?? 0} MiB`;
  }
  const maxCpu = Math.max(...agents.map((a) => a.free.cpu));
  const maxMem = Math.max(...agents.map((a) => a.free.memoryMiB));
  const cpuOk = agents.some((a) => a.free.cpu >= need.cpu);
  const memOk = agents.some((a) => a.free.memoryMiB >= need.memoryMiB);
  if (!cpuOk && !memOk) {
    return `no agent has ${need.cpu} cpu and ${need.memoryMiB} MiB free; largest free is ${maxCpu} cpu and ${maxMem} MiB`;
  }
  if (!cpuOk) return `no agent has ${need.cpu} cpu free; largest free is ${maxCpu}`;
  if (!memOk) return `no agent has ${need.memoryMiB} MiB memory free; largest free is ${maxMem} MiB`;
  if (!agents.some((a) => a.free.cpu >= need.cpu && a.free.memoryMiB >= need.memoryMiB)) {
    return `no agent has ${need.cpu} cpu and ${need.memoryMiB} MiB free together`;
  }
  return `only ${placedSoFar} of ${total} kernels (${need.cpu} cpu, ${need.memoryMiB} MiB each) fit in the free capacity`;
}

// ---- Arbitraries -----------------------------------------------------------------------------

// Ids whose localeCompare order is not their code-unit order ("B" between "a" and "b"), so the
// tie-break by id is exercised for real; few values, so ties in free capacity are common.
const IDS = ["a", "B", "b", "A", "a-1", "a1", "agent-10", "agent-9", "é", "e", "z", "Z"] as const;
const CPUS = [0, 0.1, 0.2, 0.5, 1, 2, 3, 4, 8] as const;
const MEMORIES = [0, 256, 512, 1024, 4096] as const;

const resources = fc.record({ cpu: fc.constantFrom(...CPUS), memoryMiB: fc.constantFrom(...MEMORIES) });
const labels = fc.option(
  fc.record({ zone: fc.constantFrom("a", "b"), gpu: fc.constantFrom("a100", "h100") }, { requiredKeys: [] }),
  { nil: undefined },
);

const agentsArb = fc.uniqueArray(fc.constantFrom(...IDS), { maxLength: IDS.length }).chain((ids) =>
  fc.tuple(
    ...ids.map((id) =>
      fc
        .record({
          free: resources,
          capacity: fc.option(resources, { nil: undefined }),
          labels,
        })
        .map((a): AgentFree => ({
          id,
          free: a.free,
          ...(a.capacity ? { capacity: a.capacity } : {}),
          ...(a.labels ? { labels: a.labels } : {}),
        })),
    ),
  ),
);

const demandArb = fc
  .array(resources, { maxLength: 6 })
  .map((rs): KernelDemand[] => rs.map((r, index) => ({ index, resources: r })));

const optionsArb = fc
  .record(
    {
      avoidAgentIds: fc.uniqueArray(fc.constantFrom(...IDS), { maxLength: 3 }).map((ids) => new Set(ids)),
      maxPerAgent: fc.constantFrom(0, 1, 2, 3, 1.5),
      nodeSelector: fc.record(
        { zone: fc.constantFrom("a", "b"), gpu: fc.constantFrom("a100", "h100") },
        { requiredKeys: [] },
      ),
    },
    { requiredKeys: [] },
  )
  .map((o): Options => o);

// ---- Properties ------------------------------------------------------------------------------

describe("placeKernels against the copy-filter-sort reference", () => {
  test("one call: the same placement, or the same reason", () => {
    fc.assert(
      fc.property(demandArb, agentsArb, optionsArb, (demand, agents, options) => {
        expect(placeKernels(demand, agents, options)).toEqual(referencePlaceKernels(demand, agents, options));
      }),
      { numRuns: 3000 },
    );
  });

  test("a pass: each placed session draws the free capacity down, and the next sees it", () => {
    const sessionArb = fc.record({ demand: demandArb, options: optionsArb });
    fc.assert(
      fc.property(agentsArb, fc.array(sessionArb, { maxLength: 12 }), (agents, sessions) => {
        let fast = agents;
        let reference = agents;
        for (const { demand, options } of sessions) {
          const got = placeKernels(demand, fast, options);
          const want = referencePlaceKernels(demand, reference, options);
          expect(got).toEqual(want);
          if (got.ok) fast = drawDown(fast, demand, got);
          if (want.ok) reference = drawDown(reference, demand, want);
        }
      }),
      { numRuns: 1000 },
    );
  });

  test("a gang after a larger cluster: buffers kept from an earlier call do not leak into the next", () => {
    const big: AgentFree[] = Array.from({ length: 3000 }, (_, i) => ({
      id: `big-${i}`,
      free: { cpu: 64, memoryMiB: 65536 },
    }));
    const gang = Array.from({ length: 4 }, (_, index) => ({ index, resources: { cpu: 1, memoryMiB: 1 } }));
    expect(placeKernels(gang, big).ok).toBe(true);
    const small: AgentFree[] = [
      { id: "a", free: { cpu: 2, memoryMiB: 2 } },
      { id: "b", free: { cpu: 1, memoryMiB: 1 } },
    ];
    expect(placeKernels(gang, small)).toEqual(referencePlaceKernels(gang, small));
    expect(placeKernels(gang, small, { maxPerAgent: 2 })).toEqual(
      referencePlaceKernels(gang, small, { maxPerAgent: 2 }),
    );
  });
});

/** The agents after a placement, as ScheduleNewSessions updates its free map. */
function drawDown(
  agents: readonly AgentFree[],
  demand: readonly KernelDemand[],
  placement: Extract<Placement, { ok: true }>,
): AgentFree[] {
  const byId = new Map(agents.map((a) => [a.id, a]));
  for (const p of placement.kernels) {
    const agent = byId.get(p.agentId);
    const need = demand[p.index]?.resources;
    if (agent && need) {
      byId.set(p.agentId, {
        ...agent,
        free: { cpu: agent.free.cpu - need.cpu, memoryMiB: agent.free.memoryMiB - need.memoryMiB },
      });
    }
  }
  return [...byId.values()];
}
