/**
 * A lifecycle handler (Backend.AI's BEP-1030): targets in, `{successes, failures, skipped}` out. Handlers
 * do the work of a stage (placement, dispatching commands to agents) and never judge retry,
 * expiry or give-up: that is the coordinator's.
 */
import type { CairnConfig } from "../../config.ts";
import type { LifecycleHandlerSpec } from "../../core/handlers.ts";
import { guardedByRead, type KernelPatch } from "../../core/effects.ts";
import type { Agent, Queue, SessionWithKernels } from "../../core/model.ts";
import type { AgentRepository } from "../../core/ports/agents.ts";
import type { SessionRepository } from "../../core/ports/sessions.ts";
import type { HandlerResult } from "../../core/scheduling.ts";
import type { SessionStatus } from "../../core/status.ts";
import type { FargateKernels } from "../fargate-kernels.ts";
import type { KernelCommand, KernelCommands } from "../kernel-commands.ts";
import type { EventsPort } from "../../core/ports/event-bus.ts";
import { rereadOnConflict } from "../reread.ts";
import type { RunSnapshot } from "../snapshot.ts";

export interface HandlerContext {
  readonly store: SessionRepository & AgentRepository;
  /** The sessions and agents this coordinator run has read (forget a session once written). */
  readonly snapshot: RunSnapshot;
  readonly events: EventsPort;
  /** Kernel commands, onto the agents' own queues. */
  readonly commands: KernelCommands;
  /** Kernels as ECS tasks; absent when the stack has no Fargate executor. */
  readonly fargate?: FargateKernels;
  readonly config: CairnConfig;
  readonly nowMs: number;
  /**
   * The handler's own write claimed the session's stage (a placement that decides it): the claim
   * is the run's, to complete the stage with or give back.
   */
  claimed(sessionId: string, status: SessionStatus): void;
  /**
   * The live agents among `agents` (a recent heartbeat), each read once per coordinator run; one
   * named with the incarnation a kernel was placed with is read again when the copy at hand is
   * of another.
   */
  liveAgents(agents: Iterable<AgentRef>): Promise<ReadonlyMap<string, Agent>>;
  /** A queue as stored (cached across runs, as the retry catalog keeps it); undefined: none. */
  queue(name: string): Promise<Queue | undefined>;
}

export interface LifecycleHandler {
  readonly spec: LifecycleHandlerSpec;
  execute(targets: readonly SessionWithKernels[], ctx: HandlerContext): Promise<HandlerResult>;
}

/** Collects a handler's result while it works through its targets. */
export class ResultBuilder {
  readonly successes: string[] = [];
  readonly failures: string[] = [];
  readonly skipped: string[] = [];
  readonly messages: Record<string, string> = {};

  success(id: string, message?: string): void {
    this.successes.push(id);
    if (message !== undefined) this.messages[id] = message;
  }
  failure(id: string, message: string): void {
    this.failures.push(id);
    this.messages[id] = message;
  }
  skip(id: string, message: string): void {
    this.skipped.push(id);
    this.messages[id] = message;
  }
  build(): HandlerResult {
    return {
      successes: this.successes,
      failures: this.failures,
      skipped: this.skipped,
      messages: this.messages,
    };
  }
}

/** An agent a handler needs, and the incarnation its kernel was placed with, when recorded. */
export interface AgentRef {
  readonly agentId: string;
  readonly incarnation?: string;
}

/** The agents the targets' kernels are placed on. */
export function agentsOf(targets: readonly SessionWithKernels[]): AgentRef[] {
  const refs = new Map<string, AgentRef>();
  for (const k of targets.flatMap((t) => t.kernels)) {
    if (k.agentId === undefined) continue;
    refs.set(k.agentId, {
      agentId: k.agentId,
      ...(k.agentIncarnation !== undefined ? { incarnation: k.agentIncarnation } : {}),
    });
  }
  return [...refs.values()];
}

/** Kernels whose agent has stopped heartbeating, described for history. */
export function lostAgentsOf(
  target: SessionWithKernels,
  live: ReadonlyMap<string, Agent>,
): string | undefined {
  const lost = [
    ...new Set(target.kernels.flatMap((k) => (k.agentId && !live.has(k.agentId) ? [k.agentId] : []))),
  ];
  return lost.length > 0 ? `agent ${lost.join(", ")} is not responding` : undefined;
}

/**
 * Why a placed session's kernels cannot be reached: a kernel with no placement, or an agent that
 * stopped heartbeating. Undefined when every kernel is on a live agent.
 */
export function placementProblem(
  target: SessionWithKernels,
  live: ReadonlyMap<string, Agent>,
): string | undefined {
  const unplaced = target.kernels.filter((k) => k.agentId === undefined).map((k) => k.index);
  if (unplaced.length > 0) return `kernel ${unplaced.join(", ")} has no placement`;
  return lostAgentsOf(target, live);
}

/** Why a Fargate session's kernels cannot be prepared or started here. */
export const NO_FARGATE_EXECUTOR_FAILURE =
  "this stack has no Fargate executor (deploy with the fargate prop): the session's kernels cannot run";

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Writes kernel patches that depend on the session's current kernels, re-reading on a version
 * conflict (agents report concurrently). `plan` returns undefined when, on a fresh read, there is
 * nothing left to do, e.g. another coordinator run already handled it. Returns the session as
 * planned from, or undefined when nothing was written.
 */
export async function patchKernels(
  ctx: HandlerContext,
  target: SessionWithKernels,
  plan: (current: SessionWithKernels) => readonly KernelPatch[] | undefined,
): Promise<SessionWithKernels | undefined> {
  return rereadOnConflict(async (n, conflict) => {
    ctx.snapshot.rememberRefused(conflict);
    const current = n === 1 ? target : await ctx.snapshot.session(target.session.id);
    if (!current || current.session.status !== target.session.status) return undefined;
    const planned = plan(current);
    if (!planned || planned.length === 0) return undefined;
    const patches = guardedByRead(planned, current.kernels);
    // Written or conflicting, the copy read is out of date either way.
    ctx.snapshot.forget(current.session.id);
    await ctx.store.applyWrite({
      sessionId: current.session.id,
      expected: { status: current.session.status, version: current.session.version },
      nowMs: ctx.nowMs,
      kernels: patches,
    });
    return current;
  });
}

/** Sends the commands; a session whose commands could not be sent is a failure, not a success. */
export async function dispatch(
  ctx: HandlerContext,
  commands: readonly { sessionId: string; detail: KernelCommand }[],
  result: ResultBuilder,
): Promise<void> {
  if (commands.length === 0) return;
  try {
    await ctx.commands.send(
      commands.map((c) => c.detail),
      await ctx.liveAgents(commands.map((c) => ({ agentId: c.detail.agentId }))),
    );
  } catch (error) {
    const failed = new Set(commands.map((c) => c.sessionId));
    for (const id of failed) {
      const i = result.successes.indexOf(id);
      if (i >= 0) result.successes.splice(i, 1);
      if (!result.failures.includes(id)) result.failure(id, `could not reach agents: ${errorMessage(error)}`);
    }
  }
}
