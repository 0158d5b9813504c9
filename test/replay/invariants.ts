/**
 * What must hold after every step of a replay, whatever the scenario (Iris's controller tests:
 * no orphan attempt, no split gang), checked on a dump read back from DynamoDB together with
 * the driver's executions. Each check returns its problems; an empty list means it holds.
 */
import type { Allocation } from "../../functions/core/ports/agents.ts";
import type { Agent, SessionWithKernels } from "../../functions/core/model.ts";
import { TERMINAL_SESSION_STATUSES } from "../../functions/core/status.ts";
import type { Execution } from "./driver.ts";

export interface Dump {
  readonly atMs: number;
  readonly sessions: readonly SessionWithKernels[];
  readonly agents: readonly Agent[];
  readonly allocations: readonly Allocation[];
  readonly executions: ReadonlyMap<string, Execution>;
  /** StartExecution calls per execution name. */
  readonly executionsCreated: ReadonlyMap<string, number>;
  /** Kernel processes the (scripted) agents that are still up have running. */
  readonly processes: readonly {
    readonly agentId: string;
    readonly sessionId: string;
    readonly kernelIndex: number;
  }[];
}

const ended = (s: SessionWithKernels) => TERMINAL_SESSION_STATUSES.has(s.session.status);

/**
 * Single writer: one execution per session, and the session's stage token (if any) is the one
 * callback its execution holds open, in the state for the session's status: no second holder
 * could complete the stage.
 */
export function singleWriter(d: Dump): string[] {
  const problems: string[] = [];
  for (const [name, n] of d.executionsCreated) {
    if (n > 1) problems.push(`${name}: ${n} executions`);
  }
  for (const { session } of d.sessions) {
    const e = d.executions.get(session.executionName);
    if (!e) {
      // A submission that failed admission is stored ended, never queued: no lifecycle.
      if (!failedAdmission(session)) problems.push(`${session.id}: no execution ${session.executionName}`);
      continue;
    }
    const token = session.stage.taskToken;
    if (token === undefined) continue;
    if (e.open?.token !== token) {
      problems.push(
        `${session.id}: holds token ${token} but its execution ${e.status === "RUNNING" ? `holds ${e.open?.token ?? "none"}` : `is ${e.status}`}`,
      );
    }
  }
  return problems;
}

/** Stored TERMINATED at version 0 with its reason, never entered a stage: admission refused it. */
function failedAdmission(session: Dump["sessions"][number]["session"]): boolean {
  return session.status === "TERMINATED" && session.version === 0 && session.pendingReason !== undefined;
}

/**
 * No stranded stage: a callback its execution holds open is held by the session too, so the
 * next event or the sweep can complete it: as its token, or under a claim (`stage.claimedToken`),
 * which its claimer completes or gives back — or the sweep, if the claimer died.
 */
export function noStrandedStage(d: Dump): string[] {
  const problems: string[] = [];
  for (const s of d.sessions) {
    const e = d.executions.get(s.session.executionName);
    if (ended(s) || e?.status !== "RUNNING" || e.open === undefined || e.closed !== undefined) continue;
    const { taskToken, claimedToken } = s.session.stage;
    if ((taskToken ?? claimedToken) !== e.open.token) {
      problems.push(
        `${s.session.id}: ${s.session.status} holds ${taskToken ?? (claimedToken !== undefined ? `claimed ${claimedToken}` : "no token")} but its execution waits in ${e.open.state} on ${e.open.token}`,
      );
    }
  }
  return problems;
}

/** No orphan token: an ended session holds no token and its execution has ended too. */
export function noOrphanToken(d: Dump): string[] {
  const problems: string[] = [];
  for (const s of d.sessions) {
    const { session } = s;
    const e = d.executions.get(session.executionName);
    if (ended(s)) {
      const token = session.stage.taskToken ?? session.stage.claimedToken;
      if (token !== undefined) {
        problems.push(`${session.id}: ${session.status} but holds token ${token}`);
      }
      if (e?.status === "RUNNING") problems.push(`${session.id}: ${session.status} but its execution runs`);
    } else if (e && e.status !== "RUNNING") {
      problems.push(`${session.id}: ${session.status} but its execution is ${e.status} (stranded)`);
    }
  }
  return problems;
}

function add(a: { cpu: number; memoryMiB: number }, b: { cpu: number; memoryMiB: number }) {
  return { cpu: a.cpu + b.cpu, memoryMiB: a.memoryMiB + b.memoryMiB };
}
const ZERO = { cpu: 0, memoryMiB: 0 };
const same = (a: { cpu: number; memoryMiB: number }, b: { cpu: number; memoryMiB: number }) =>
  Math.abs(a.cpu - b.cpu) < 1e-9 && a.memoryMiB === b.memoryMiB;
const fmt = (r: { cpu: number; memoryMiB: number }) => `${r.cpu} cpu/${r.memoryMiB} MiB`;

/**
 * Capacity conserved: each agent's taken capacity (capacity − free) is the sum of its
 * allocations, and each allocation is exactly the kernels placed on that agent by a session that
 * still holds its agents (placed and not ended: capacity goes back when the session leaves its
 * agents, at PENDING, TERMINATED or CANCELLED, not kernel by kernel).
 */
export function capacityConserved(d: Dump): string[] {
  const problems: string[] = [];
  for (const agent of d.agents) {
    const taken = {
      cpu: agent.capacity.cpu - agent.free.cpu,
      memoryMiB: agent.capacity.memoryMiB - agent.free.memoryMiB,
    };
    const allocated = d.allocations
      .filter((a) => a.agentId === agent.id)
      .reduce((s, a) => add(s, a.resources), ZERO);
    if (!same(taken, allocated)) {
      problems.push(`${agent.id}: ${fmt(taken)} taken but ${fmt(allocated)} allocated`);
    }
  }
  const held = new Map<string, { cpu: number; memoryMiB: number }>();
  for (const s of d.sessions) {
    if (ended(s)) continue;
    for (const k of s.kernels) {
      if (k.agentId === undefined) continue;
      const key = `${s.session.id}@${k.agentId}`;
      held.set(key, add(held.get(key) ?? ZERO, k.resources));
    }
  }
  const allocatedBy = new Map<string, { cpu: number; memoryMiB: number }>();
  for (const a of d.allocations) {
    const key = `${a.sessionId}@${a.agentId}`;
    allocatedBy.set(key, add(allocatedBy.get(key) ?? ZERO, a.resources));
  }
  for (const key of new Set([...held.keys(), ...allocatedBy.keys()])) {
    const want = held.get(key) ?? ZERO;
    const got = allocatedBy.get(key) ?? ZERO;
    if (!same(want, got)) problems.push(`${key}: kernels placed ${fmt(want)} but allocated ${fmt(got)}`);
  }
  return problems;
}

/** No split gang: a multi-kernel session still under way has all its kernels placed or none. */
export function noSplitGang(d: Dump): string[] {
  const problems: string[] = [];
  for (const s of d.sessions) {
    if (ended(s) || s.kernels.length < 2 || s.session.spec.coscheduled === false) continue;
    const placed = s.kernels.filter((k) => k.agentId !== undefined).length;
    if (placed !== 0 && placed !== s.kernels.length) {
      problems.push(`${s.session.id}: ${placed} of ${s.kernels.length} kernels placed (${s.session.status})`);
    }
  }
  return problems;
}

/**
 * Try counts monotonic between two dumps: within one stage entry a session's tries never go
 * down; its run index and its retry counters never go down in its life (pending returns within
 * one run); nor does its version.
 */
export function triesMonotonic(before: Dump, after: Dump): string[] {
  const problems: string[] = [];
  const prior = new Map(before.sessions.map((s) => [s.session.id, s.session]));
  for (const { session: now } of after.sessions) {
    const was = prior.get(now.id);
    if (!was) continue;
    const down = (what: string, a: number | undefined, b: number | undefined) => {
      if ((b ?? 0) < (a ?? 0)) problems.push(`${now.id}: ${what} went from ${a ?? 0} to ${b ?? 0}`);
    };
    if (was.status === now.status && was.stage.enteredAtMs === now.stage.enteredAtMs) {
      down("tries", was.tries, now.tries);
    }
    down("version", was.version, now.version);
    down("runIndex", was.runIndex, now.runIndex);
    down("retry.failureCount", was.retry?.failureCount, now.retry?.failureCount);
    down("retry.preemptionCount", was.retry?.preemptionCount, now.retry?.preemptionCount);
    down("retry.totalRetries", was.retry?.totalRetries, now.retry?.totalRetries);
    down("retry.freeReturns", was.retry?.freeReturns, now.retry?.freeReturns);
    if (was.runIndex === now.runIndex)
      down("retry.pendingReturns", was.retry?.pendingReturns, now.retry?.pendingReturns);
  }
  return problems;
}

/**
 * No orphan process: no agent that is up runs a kernel of a session that has ended (its
 * capacity is back in the pool, and nothing will ever stop it).
 */
export function noOrphanProcess(d: Dump): string[] {
  const byId = new Map(d.sessions.map((s) => [s.session.id, s]));
  return d.processes.flatMap((p) => {
    const s = byId.get(p.sessionId);
    return s && ended(s)
      ? [`${p.agentId} runs ${p.sessionId}/${p.kernelIndex} but the session is ${s.session.status}`]
      : [];
  });
}

/** Every invariant over one dump (and the one before it, for monotonicity). */
export function checkAll(before: Dump | undefined, after: Dump): string[] {
  return [
    ...singleWriter(after).map((p) => `single writer: ${p}`),
    ...noOrphanToken(after).map((p) => `no orphan token: ${p}`),
    ...noStrandedStage(after).map((p) => `no stranded stage: ${p}`),
    ...capacityConserved(after).map((p) => `capacity conserved: ${p}`),
    ...noSplitGang(after).map((p) => `no split gang: ${p}`),
    ...noOrphanProcess(after).map((p) => `no orphan process: ${p}`),
    ...(before ? triesMonotonic(before, after).map((p) => `tries monotonic: ${p}`) : []),
  ];
}
