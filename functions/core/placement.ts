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
 * load), breaking ties by memory then id (`localeCompare`) so the result is deterministic.
 *
 * `agents` holds one entry per agent id (callers build it from a map keyed by id).
 *
 * A scheduling pass calls this once per pending session over every live agent (10,000 × 1,000 in
 * bench/placement.ts), so it walks the agents once per kernel and keeps the best one seen, rather
 * than copying, filtering and sorting them for every kernel. A lone kernel reads the agents' free
 * capacity as given; a gang's kernels work on a copy in flat arrays that its earlier kernels
 * draw down. test/core/placement-reference.test.ts holds it to the copy-filter-sort version.
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
  const selector = options.nodeSelector ? Object.entries(options.nodeSelector) : undefined;
  const avoid = options.avoidAgentIds;
  let candidates = agents;
  let selected = agents.length;
  if (selector || avoid) {
    const kept: AgentFree[] = [];
    selected = 0;
    for (const agent of agents) {
      if (selector && !hasLabels(agent.labels, selector)) continue;
      selected += 1;
      if (avoid?.has(agent.id)) continue;
      kept.push(agent);
    }
    candidates = kept;
  }
  const n = candidates.length;
  if (n === 0) {
    return {
      ok: false,
      reason:
        agents.length === 0
          ? "no live agents are registered"
          : selected === 0
            ? `no live agent has the labels nodeSelector asks for (${Object.entries(
                options.nodeSelector ?? {},
              )
                .map(([k, v]) => `${k}=${v}`)
                .join(", ")})`
            : "every live agent is excluded for this session",
    };
  }
  const maxPerAgent = options.maxPerAgent ?? Number.POSITIVE_INFINITY;
  if (Math.ceil(kernels.length / maxPerAgent) > n) {
    return {
      ok: false,
      reason: `needs ${Math.ceil(kernels.length / maxPerAgent)} agents (${kernels.length} tasks, at most ${maxPerAgent} per agent); ${n} ${n === 1 ? "is" : "are"} live`,
    };
  }
  const order =
    kernels.length === 1
      ? kernels
      : [...kernels].sort(
          (a, b) =>
            b.resources.cpu - a.resources.cpu ||
            b.resources.memoryMiB - a.resources.memoryMiB ||
            a.index - b.index,
        );
  if (order.length === 1) {
    // One kernel (most sessions): the agents' free capacity as given, nothing to keep track of.
    const kernel = order[0]!;
    const best = 0 < maxPerAgent ? bestFit(kernel.resources, candidates) : -1;
    if (best < 0) return { ok: false, reason: explain(kernel.resources, kernels.length, 0, candidates) };
    return { ok: true, kernels: [{ index: kernel.index, agentId: candidates[best]!.id }] };
  }
  // A gang: free capacity as its placement uses it, and the kernels it put on each candidate,
  // in buffers kept between calls (this function never runs twice at once).
  if (scratch.cpu.length < n) scratch = newScratch(Math.max(n, 2 * scratch.cpu.length));
  const { cpu, memory, count } = scratch;
  for (let i = 0; i < n; i++) {
    const free = candidates[i]!.free;
    cpu[i] = free.cpu;
    memory[i] = free.memoryMiB;
  }
  count.fill(0, 0, n);
  const placed: { index: number; agentId: string }[] = [];
  for (const kernel of order) {
    const needCpu = kernel.resources.cpu;
    const needMemory = kernel.resources.memoryMiB;
    let best = -1;
    for (let i = 0; i < n; i++) {
      const c = cpu[i]!;
      const m = memory[i]!;
      // Negated so that NaN counts as not fitting, as in the comparisons it stands for.
      if (!(c >= needCpu && m >= needMemory && count[i]! < maxPerAgent)) continue;
      if (best >= 0 && !better(c, m, candidates[i]!.id, cpu[best]!, memory[best]!, candidates[best]!.id)) {
        continue;
      }
      best = i;
    }
    if (best < 0) {
      return { ok: false, reason: explain(kernel.resources, kernels.length, placed.length, candidates) };
    }
    cpu[best] = cpu[best]! - needCpu;
    memory[best] = memory[best]! - needMemory;
    count[best] = count[best]! + 1;
    placed.push({ index: kernel.index, agentId: candidates[best]!.id });
  }
  placed.sort((a, b) => a.index - b.index);
  return { ok: true, kernels: placed };
}

/** The agent a lone kernel goes to: the first best of those that hold it; -1 when none does. */
function bestFit(need: ResourceRequest, agents: readonly AgentFree[]): number {
  let best = -1;
  let bestCpu = 0;
  let bestMemory = 0;
  for (let i = 0; i < agents.length; i++) {
    const { cpu, memoryMiB } = agents[i]!.free;
    if (!(cpu >= need.cpu && memoryMiB >= need.memoryMiB)) continue;
    if (best >= 0 && !better(cpu, memoryMiB, agents[i]!.id, bestCpu, bestMemory, agents[best]!.id)) continue;
    best = i;
    bestCpu = cpu;
    bestMemory = memoryMiB;
  }
  return best;
}

/**
 * Whether an agent with this free capacity comes before the best so far: most free cpu, then most
 * free memory, then the first id in `localeCompare` order. On a full tie the earlier agent stays,
 * as a stable sort would keep it first.
 */
function better(
  cpu: number,
  memory: number,
  id: string,
  bestCpu: number,
  bestMemory: number,
  bestId: string,
) {
  if (cpu !== bestCpu) return cpu > bestCpu;
  if (memory !== bestMemory) return memory > bestMemory;
  return id.localeCompare(bestId) < 0;
}

interface Scratch {
  readonly cpu: Float64Array;
  readonly memory: Float64Array;
  readonly count: Float64Array;
}

function newScratch(size: number): Scratch {
  return { cpu: new Float64Array(size), memory: new Float64Array(size), count: new Float64Array(size) };
}

let scratch = newScratch(1024);

/** `matchesSelector` with the selector's entries read once, for a walk over many agents. */
function hasLabels(
  labels: Readonly<Record<string, string>> | undefined,
  selector: readonly (readonly [string, string])[],
): boolean {
  for (const [key, value] of selector) {
    if (labels?.[key] !== value) return false;
  }
  return true;
}

/** Why the kernel `need` found no agent, from the candidates' free capacity (one walk). */
function explain(
  need: ResourceRequest,
  total: number,
  placedSoFar: number,
  agents: readonly AgentFree[],
): string {
  let sized = 0;
  let anyHolds = false;
  let largest: ResourceRequest | undefined;
  let maxCpu = Number.NEGATIVE_INFINITY;
  let maxMem = Number.NEGATIVE_INFINITY;
  let cpuOk = false;
  let memOk = false;
  let bothOk = false;
  for (const a of agents) {
    const c = a.capacity;
    if (c) {
      sized += 1;
      if (c.cpu >= need.cpu && c.memoryMiB >= need.memoryMiB) anyHolds = true;
      // The first of the largest (most cpu, then most memory), as a stable sort would put it.
      if (!largest || c.cpu > largest.cpu || (c.cpu === largest.cpu && c.memoryMiB > largest.memoryMiB)) {
        largest = c;
      }
    }
    const { cpu, memoryMiB } = a.free;
    maxCpu = Math.max(maxCpu, cpu);
    maxMem = Math.max(maxMem, memoryMiB);
    const cpuFits = cpu >= need.cpu;
    const memFits = memoryMiB >= need.memoryMiB;
    cpuOk ||= cpuFits;
    memOk ||= memFits;
    bothOk ||= cpuFits && memFits;
  }
  if (sized === agents.length && !anyHolds) {
    // Waiting cannot help: no agent could hold the task even idle.
    return `no agent matches: a task needs ${need.cpu} cpu and ${need.memoryMiB} MiB; the largest agent has ${largest?.cpu ?? 0} cpu and ${largest?.memoryMiB ?? 0} MiB`;
  }
  if (!cpuOk && !memOk) {
    return `no agent has ${need.cpu} cpu and ${need.memoryMiB} MiB free; largest free is ${maxCpu} cpu and ${maxMem} MiB`;
  }
  if (!cpuOk) return `no agent has ${need.cpu} cpu free; largest free is ${maxCpu}`;
  if (!memOk) return `no agent has ${need.memoryMiB} MiB memory free; largest free is ${maxMem} MiB`;
  if (!bothOk) {
    return `no agent has ${need.cpu} cpu and ${need.memoryMiB} MiB free together`;
  }
  return `only ${placedSoFar} of ${total} kernels (${need.cpu} cpu, ${need.memoryMiB} MiB each) fit in the free capacity`;
}
