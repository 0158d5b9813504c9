/**
 * Placement of a session's kernels on agents: all kernels or none (a session is a gang).
 * Pure: it works on a snapshot of free capacity and says why when nothing fits, in words an
 * operator can act on ("no agent has 64 cpu free; largest free is 8").
 */
import type { ResourceRequest } from "./model.ts";

export interface AgentFree {
  readonly id: string;
  readonly free: ResourceRequest;
  /** The agent's whole capacity, when known: tells "no agent matches" from "wait for capacity". */
  readonly capacity?: ResourceRequest;
  /** The agent's labels, for a session's nodeSelector. */
  readonly labels?: Readonly<Record<string, string>>;
}

/** Whether an agent carries every label the selector asks for, with the same value. */
export function matchesSelector(
  labels: Readonly<Record<string, string>> | undefined,
  selector: Readonly<Record<string, string>> | undefined,
): boolean {
  if (!selector) return true;
  return Object.entries(selector).every(([key, value]) => labels?.[key] === value);
}

export interface KernelDemand {
  readonly index: number;
  readonly resources: ResourceRequest;
}

export type Placement =
  | { readonly ok: true; readonly kernels: readonly { readonly index: number; readonly agentId: string }[] }
  | { readonly ok: false; readonly reason: string };

/**
 * Largest kernels first; each goes to the agent with the most free cpu that holds it (spreading
 * load), breaking ties by memory then id so the result is deterministic.
 */
export function placeKernels(
  kernels: readonly KernelDemand[],
  agents: readonly AgentFree[],
  options: {
    readonly avoidAgentIds?: ReadonlySet<string>;
    /** At most this many kernels on one agent (a gang's `perAgent`). */
    readonly maxPerAgent?: number;
    /** Only agents with these labels (the spec's nodeSelector). */
    readonly nodeSelector?: Readonly<Record<string, string>>;
  } = {},
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
      return { ok: false, reason: explain(kernel.resources, kernels.length, placed.length, candidates) };
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

function explain(
  need: ResourceRequest,
  total: number,
  placedSoFar: number,
  agents: readonly AgentFree[],
): string {
  const sizes = agents.flatMap((a) => (a.capacity ? [a.capacity] : []));
  const holds = (c: ResourceRequest) => c.cpu >= need.cpu && c.memoryMiB >= need.memoryMiB;
  if (sizes.length === agents.length && !sizes.some(holds)) {
    // Waiting cannot help: no agent could hold the task even idle.
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
