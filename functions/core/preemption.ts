/**
 * Priority preemption (Iris's preemption pass): when a session cannot be placed,
 * which running sessions of lower priority bands to preempt so that it can be. Pure: it works on
 * a snapshot of free capacity and of the sessions holding capacity, and returns one plan per
 * session that could not be placed; the app carries the plans out.
 *
 * Rules:
 * - Only sessions of strictly lower priority are preempted.
 * - Lowest priority band first: a session of a higher band is preempted only when every session
 *   of the bands below would not make room. Within a band, sessions that have not started are
 *   preferred (preempting them costs no budget), then the newest (the least work lost).
 * - The fewest needed: victims are chosen greedily (one that makes room on its own first, else
 *   the one freeing most of what the session needs on agents it may use), then every victim the
 *   placement does not need is spared again, highest band first. Greedy, not a minimum cover.
 * - Nothing is preempted when even preempting every lower-priority session would not make room.
 * - Capacity already on its way back (sessions preempted earlier, or ending) counts as free, so a
 *   session waiting for it preempts no one else; it is told what it waits for.
 * - Sessions are planned in the order given (queue order): each plan holds the capacity it will
 *   use, so a later, lower session neither counts on it nor preempts for it twice.
 */
import { CoreError } from "./errors.ts";
import { placeKernels, type AgentFree, type KernelDemand } from "./placement.ts";
import type { ResourceRequest } from "./model.ts";

/** Capacity a session holds on one agent. */
export interface HeldCapacity {
  readonly agentId: string;
  readonly resources: ResourceRequest;
}

/** A session holding capacity: a possible victim, or capacity on its way back. */
export interface PreemptionCandidate {
  readonly sessionId: string;
  readonly priority: number;
  readonly createdAtMs: number;
  /** Whether any kernel started its command: preempting it then spends its preemption budget. */
  readonly started: boolean;
  readonly holds: readonly HeldCapacity[];
  /**
   * Already leaving its agents: `preempted` earlier, or `ending` (terminating, cancelled). Its
   * capacity counts as free and it is never chosen again. `false`: it may be preempted.
   */
  readonly releasing: false | "preempted" | "ending";
}

/** A session that could not be placed. */
export interface Preemptor {
  readonly sessionId: string;
  readonly priority: number;
  readonly kernels: readonly KernelDemand[];
  readonly avoidAgentIds?: ReadonlySet<string>;
  readonly maxPerAgent?: number;
  /** The spec's nodeSelector: only agents with these labels can hold it. */
  readonly nodeSelector?: Readonly<Record<string, string>>;
}

export type PreemptionPlan =
  /** Fits the free capacity as it is: nothing to preempt (the next scheduling pass places it). */
  | { readonly kind: "fits" }
  /** Fits once sessions already leaving their agents have released their capacity. */
  | { readonly kind: "wait"; readonly awaiting: readonly PreemptionCandidate[] }
  /** Fits once `victims` are preempted (and `awaiting` have released their capacity). */
  | {
      readonly kind: "preempt";
      readonly victims: readonly PreemptionCandidate[];
      readonly awaiting: readonly PreemptionCandidate[];
    }
  /** Does not fit even if every lower-priority session (`lowerPriority` of them) were preempted. */
  | { readonly kind: "none"; readonly lowerPriority: number };

export interface PreemptionInput {
  /** In the order to serve them (queue order, queue-order.ts): highest priority first, requeued before new, then oldest. */
  readonly preemptors: readonly Preemptor[];
  /** Live agents and their free capacity now. */
  readonly agents: readonly AgentFree[];
  /** Sessions holding capacity on those agents. */
  readonly candidates: readonly PreemptionCandidate[];
}

export class PreemptionInputError extends CoreError {
  override readonly name = "PreemptionInputError";
  readonly code = "PREEMPTION_INPUT";
}

/** One plan per preemptor, keyed by its session id. */
export function planPreemptions(input: PreemptionInput): Map<string, PreemptionPlan> {
  checkInput(input);
  const agentIds = new Set(input.agents.map((a) => a.id));
  const labels = new Map(input.agents.map((a) => [a.id, a.labels]));
  // Free capacity as it will be once what is already leaving has gone.
  const free = new Map(input.agents.map((a) => [a.id, { ...a.free }]));
  const releasing: PreemptionCandidate[] = [];
  let pool: PreemptionCandidate[] = [];
  for (const c of input.candidates) {
    if (c.releasing === false) pool.push(c);
    else {
      releasing.push(c);
      give(free, c, agentIds);
    }
  }
  const plans = new Map<string, PreemptionPlan>();
  for (const p of input.preemptors) {
    const plan = planOne(p, free, pool, releasing, agentIds, labels);
    plans.set(p.sessionId, plan.plan);
    if (plan.plan.kind === "none") continue;
    if (plan.plan.kind === "preempt") {
      const chosen = new Set(plan.plan.victims.map((v) => v.sessionId));
      pool = pool.filter((c) => !chosen.has(c.sessionId));
      for (const v of plan.plan.victims) {
        releasing.push({ ...v, releasing: "preempted" });
        give(free, v, agentIds);
      }
    }
    // Hold what this session will use, so sessions after it neither count on it nor preempt for it.
    for (const k of plan.placement) {
      const f = free.get(k.agentId);
      const need = p.kernels.find((d) => d.index === k.index)?.resources;
      if (f && need) free.set(k.agentId, { cpu: f.cpu - need.cpu, memoryMiB: f.memoryMiB - need.memoryMiB });
    }
  }
  return plans;
}

type Placed = readonly { readonly index: number; readonly agentId: string }[];

function planOne(
  p: Preemptor,
  free: ReadonlyMap<string, ResourceRequest>,
  pool: readonly PreemptionCandidate[],
  releasing: readonly PreemptionCandidate[],
  agentIds: ReadonlySet<string>,
  labels: ReadonlyMap<string, Readonly<Record<string, string>> | undefined>,
): { plan: PreemptionPlan; placement: Placed } {
  const place = (model: ReadonlyMap<string, ResourceRequest>) =>
    placeKernels(
      p.kernels,
      [...model.entries()].map(([id, f]) => {
        const l = labels.get(id);
        return { id, free: f, ...(l ? { labels: l } : {}) };
      }),
      {
        ...(p.avoidAgentIds ? { avoidAgentIds: p.avoidAgentIds } : {}),
        ...(p.maxPerAgent !== undefined ? { maxPerAgent: p.maxPerAgent } : {}),
        ...(p.nodeSelector ? { nodeSelector: p.nodeSelector } : {}),
      },
    );
  const awaitingOn = (placement: Placed) => {
    const used = new Set(placement.map((k) => k.agentId));
    return releasing.filter((c) => c.holds.some((h) => used.has(h.agentId)));
  };
  const now = place(free);
  if (now.ok) {
    const awaiting = awaitingOn(now.kernels);
    return {
      plan: awaiting.length > 0 ? { kind: "wait", awaiting } : { kind: "fits" },
      placement: now.kernels,
    };
  }
  const usable = (agentId: string) => agentIds.has(agentId) && !p.avoidAgentIds?.has(agentId);
  const eligible = pool
    .filter((c) => c.priority < p.priority && c.holds.some((h) => usable(h.agentId)))
    .sort(preference);
  const model = new Map([...free.entries()].map(([id, f]) => [id, { ...f }]));
  const fits = () => place(model).ok;
  const all = new Map(model);
  for (const c of eligible) give(all, c, agentIds);
  const lowerPriority = pool.filter((c) => c.priority < p.priority).length;
  if (!place(all).ok) return { plan: { kind: "none", lowerPriority }, placement: [] };

  const need = total(p.kernels);
  const chosen: PreemptionCandidate[] = [];
  for (const band of bands(eligible)) {
    const remaining = [...band];
    while (!fits() && remaining.length > 0) {
      const finisher = remaining.find((c) => place(withGiven(model, c, agentIds)).ok);
      const pick = finisher ?? mostHelpful(remaining, need, usable);
      remaining.splice(remaining.indexOf(pick), 1);
      chosen.push(pick);
      give(model, pick, agentIds);
    }
    if (fits()) break;
  }
  // Spare every victim the placement turns out not to need, the most valuable first.
  for (const c of [...chosen].reverse()) {
    take(model, c, agentIds);
    if (fits()) chosen.splice(chosen.indexOf(c), 1);
    else give(model, c, agentIds);
  }
  const placed = place(model);
  // Feasible with every eligible session preempted, so the greedy choice always ends fitting.
  if (!placed.ok) throw new PreemptionInputError(`no placement for ${p.sessionId} after choosing victims`);
  return {
    plan: { kind: "preempt", victims: chosen, awaiting: awaitingOn(placed.kernels) },
    placement: placed.kernels,
  };
}

/** Lowest priority first; then not started (free to preempt); then newest; then id. */
function preference(a: PreemptionCandidate, b: PreemptionCandidate): number {
  return (
    a.priority - b.priority ||
    Number(a.started) - Number(b.started) ||
    b.createdAtMs - a.createdAtMs ||
    a.sessionId.localeCompare(b.sessionId)
  );
}

/** Candidates grouped by priority, lowest band first (input already in preference order). */
function bands(sorted: readonly PreemptionCandidate[]): PreemptionCandidate[][] {
  const out: PreemptionCandidate[][] = [];
  for (const c of sorted) {
    const last = out.at(-1);
    if (last && last[0]?.priority === c.priority) last.push(c);
    else out.push([c]);
  }
  return out;
}

/**
 * The candidate freeing most of what the session needs on agents it may use, as a share of the
 * need per resource; ties keep preference order.
 */
function mostHelpful(
  candidates: readonly PreemptionCandidate[],
  need: ResourceRequest,
  usable: (agentId: string) => boolean,
): PreemptionCandidate {
  const share = (freed: number, needed: number) => (needed > 0 ? Math.min(freed, needed) / needed : 0);
  const score = (c: PreemptionCandidate) => {
    const freed = total(c.holds.filter((h) => usable(h.agentId)));
    return share(freed.cpu, need.cpu) + share(freed.memoryMiB, need.memoryMiB);
  };
  let best = candidates[0]!;
  let bestScore = score(best);
  for (const c of candidates.slice(1)) {
    const s = score(c);
    if (s > bestScore) {
      best = c;
      bestScore = s;
    }
  }
  return best;
}

function total(items: readonly { readonly resources: ResourceRequest }[]): ResourceRequest {
  return items.reduce(
    (sum, i) => ({ cpu: sum.cpu + i.resources.cpu, memoryMiB: sum.memoryMiB + i.resources.memoryMiB }),
    { cpu: 0, memoryMiB: 0 },
  );
}

/** Adds what `c` holds to `model` (capacity on agents outside it is of no use and ignored). */
function give(
  model: Map<string, ResourceRequest>,
  c: PreemptionCandidate,
  agentIds: ReadonlySet<string>,
): void {
  shift(model, c, agentIds, 1);
}

function take(
  model: Map<string, ResourceRequest>,
  c: PreemptionCandidate,
  agentIds: ReadonlySet<string>,
): void {
  shift(model, c, agentIds, -1);
}

function shift(
  model: Map<string, ResourceRequest>,
  c: PreemptionCandidate,
  agentIds: ReadonlySet<string>,
  sign: 1 | -1,
): void {
  for (const h of c.holds) {
    const f = model.get(h.agentId);
    if (!f || !agentIds.has(h.agentId)) continue;
    model.set(h.agentId, {
      cpu: f.cpu + sign * h.resources.cpu,
      memoryMiB: f.memoryMiB + sign * h.resources.memoryMiB,
    });
  }
}

function withGiven(
  model: ReadonlyMap<string, ResourceRequest>,
  c: PreemptionCandidate,
  agentIds: ReadonlySet<string>,
): Map<string, ResourceRequest> {
  const copy = new Map(model);
  give(copy, c, agentIds);
  return copy;
}

function checkInput({ preemptors, candidates, agents }: PreemptionInput): void {
  const seen = new Set<string>();
  for (const [i, a] of agents.entries()) {
    if (seen.has(a.id)) throw new PreemptionInputError(`agents[${i}].id: agent ${a.id} is listed twice`);
    seen.add(a.id);
  }
  const ids = new Set<string>();
  for (const [i, c] of candidates.entries()) {
    if (ids.has(c.sessionId)) {
      throw new PreemptionInputError(`candidates[${i}].sessionId: session ${c.sessionId} is listed twice`);
    }
    ids.add(c.sessionId);
    for (const [j, h] of c.holds.entries()) {
      if (!(h.resources.cpu >= 0 && h.resources.memoryMiB >= 0)) {
        throw new PreemptionInputError(`candidates[${i}].holds[${j}].resources: must not be negative`);
      }
    }
  }
  for (const [i, p] of preemptors.entries()) {
    if (ids.has(p.sessionId)) {
      throw new PreemptionInputError(
        `preemptors[${i}].sessionId: session ${p.sessionId} also holds capacity as a candidate`,
      );
    }
    if (p.kernels.length === 0) throw new PreemptionInputError(`preemptors[${i}].kernels: must not be empty`);
  }
}

// ------------------------------------------------------------------------------ for people

const LISTED = 3;

/** Why the session waits, for its pending reason; undefined when the plan changes nothing. */
export function describePlan(plan: PreemptionPlan): string | undefined {
  switch (plan.kind) {
    case "fits":
      return undefined;
    case "wait":
      return `waiting for ${sessions(plan.awaiting)} to release capacity`;
    case "preempt": {
      const preempting = `preempting ${count(plan.victims.length, "lower-priority session")} (${listed(plan.victims)})`;
      return plan.awaiting.length > 0
        ? `${preempting}; waiting for ${sessions(plan.awaiting)} to release capacity`
        : `${preempting} to make room`;
    }
    case "none":
      return plan.lowerPriority > 0
        ? `preempting every lower-priority session (${plan.lowerPriority}) would not make room`
        : undefined;
  }
}

function sessions(cs: readonly PreemptionCandidate[]): string {
  const kind = cs.every((c) => c.releasing === "preempted")
    ? "preempted session"
    : cs.every((c) => c.releasing === "ending")
      ? "ending session"
      : "session";
  return `${count(cs.length, kind)} (${listed(cs)})`;
}

function listed(cs: readonly PreemptionCandidate[]): string {
  const shown = cs.slice(0, LISTED).map((c) => `${c.sessionId}, priority ${c.priority}`);
  return cs.length > LISTED ? `${shown.join("; ")}; and ${cs.length - LISTED} more` : shown.join("; ");
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}
