/**
 * The lifecycle execution entering a state: the only writer of `session.status`. It records the
 * status, the stage's task token and entry time, the transition's kernel statuses and history
 * record in one conditional write, and announces the status change. When the session leaves its
 * agents, it first stops kernels that must not outlive the transition and gives capacity back.
 */
import type { SessionWrite } from "../core/effects.ts";
import { stageEntryWrite } from "../core/effects.ts";
import type { SessionWithKernels, StageTransition } from "../core/model.ts";
import type { SessionStore } from "../core/ports/session-store.ts";
import {
  isTerminalKernelStatus,
  KernelStatus,
  SessionStatus,
  type SessionStatus as Status,
} from "../core/status.ts";
import { runName } from "../core/retry/naming.ts";
import { runRecord } from "../core/runs.ts";
import { errorCode } from "../lifecycle/handler.ts";
import { kernelCommand } from "./kernel-commands.ts";
import type { KernelCommandDetailInput } from "./event-types.ts";
import type { Clock, EventsPort } from "./ports.ts";
import type { KernelCommands } from "./kernel-commands.ts";
import type { Logger } from "./logger.ts";

export interface EnterStageInput {
  readonly sessionId: string;
  readonly status: Status;
  readonly transition: StageTransition;
  /** Absent for TERMINATED and CANCELLED, which do not wait. */
  readonly taskToken?: string;
  readonly executionName: string;
}

export interface EnterStageDeps {
  readonly store: SessionStore;
  readonly events: EventsPort;
  readonly commands: KernelCommands;
  readonly clock: Clock;
  readonly log: Logger;
  readonly terminationGraceMs: number;
}

export class StageEntryError extends Error {
  override readonly name = "StageEntryError";
  readonly code = "STAGE_ENTRY";
}

const MAX_CONFLICT_RETRIES = 8;
/** Where the session's processes must stop and its capacity go back. */
const LEAVES_AGENTS: ReadonlySet<Status> = new Set([
  SessionStatus.PENDING,
  SessionStatus.TERMINATED,
  SessionStatus.CANCELLED,
]);

export async function enterStage(input: EnterStageInput, deps: EnterStageDeps): Promise<{ status: Status }> {
  const { transition } = input;
  if (transition.to !== input.status) {
    throw new StageEntryError(
      `state records ${input.status} but the transition leads to ${transition.to} (session ${input.sessionId})`,
    );
  }
  // Leaving the agents: stop what may still run and give the capacity back *before* the write
  // that makes the session a target again (PENDING), so no placement can race the release.
  let prefetched: SessionWithKernels | undefined;
  if (LEAVES_AGENTS.has(input.status) && transition.from !== input.status) {
    const current = await deps.store.getSession(input.sessionId);
    // Releasing touches allocations and agents, not the session item: this read stays current.
    prefetched = current;
    if (current && current.session.status === transition.from && !alreadyEntered(current, input)) {
      await stopLeftoverKernels(current, input, transition, deps);
      await deps.store.releaseCapacity(input.sessionId);
    }
  }
  let before: SessionWithKernels | undefined;
  let applied = transition;
  for (let attempt = 1; ; attempt++) {
    const current =
      (attempt === 1 ? prefetched : undefined) ?? (await deps.store.getSession(input.sessionId));
    if (!current) throw new StageEntryError(`session ${input.sessionId} does not exist`);
    if (alreadyEntered(current, input)) break;
    if (current.session.status !== transition.from) {
      throw new StageEntryError(
        `session ${input.sessionId} is ${current.session.status}; cannot apply ${transition.from} → ${transition.to}`,
      );
    }
    applied = withRunRecord(current, transition, deps.clock.nowMs());
    const write: SessionWrite = stageEntryWrite({
      session: current.session,
      kernels: current.kernels,
      transition: applied,
      ...(input.taskToken !== undefined ? { taskToken: input.taskToken } : {}),
      nowMs: deps.clock.nowMs(),
    });
    try {
      await deps.store.applyWrite(write);
      before = current;
      break;
    } catch (error) {
      // A kernel report landed between the read and the write: read again and recompute.
      if (errorCode(error) !== "CONFLICT" || attempt >= MAX_CONFLICT_RETRIES) throw error;
    }
  }
  if (!before) return { status: input.status };
  const atMs = deps.clock.nowMs();
  await deps.events.statusChanged([
    {
      sessionId: input.sessionId,
      executionName: input.executionName,
      from: applied.from,
      to: applied.to,
      result: applied.result,
      handler: applied.handler,
      ...(applied.message !== undefined ? { message: applied.message.slice(0, 4096) } : {}),
      atMs,
    },
  ]);
  if (applied.requeue) {
    const runIndex = before.session.runIndex + 1;
    await deps.events.requeued([
      {
        sessionId: input.sessionId,
        executionName: input.executionName,
        runIndex,
        runName: runName(input.sessionId, runIndex),
        reason: (applied.message ?? "retried").slice(0, 4096),
        delayMs: applied.requeue.delaySeconds * 1000,
        ...(applied.requeue.avoidAgentIds[0] !== undefined
          ? { avoidAgentId: applied.requeue.avoidAgentIds[0] }
          : {}),
        atMs,
      },
    ]);
  }
  return { status: input.status };
}

/**
 * A run that ends without the coordinator judging it (the TERMINATING timer ran out) is still
 * recorded: its record is built here from the kernels as they are.
 */
function withRunRecord(current: SessionWithKernels, t: StageTransition, nowMs: number): StageTransition {
  if (t.run || t.to !== SessionStatus.TERMINATED || t.from !== SessionStatus.TERMINATING) return t;
  return {
    ...t,
    run: runRecord(current, { decision: "finished", reason: t.message ?? t.result.toLowerCase() }, nowMs),
  };
}

/** A redelivered invocation: this state was already entered with this token. */
function alreadyEntered({ session }: SessionWithKernels, input: EnterStageInput): boolean {
  if (session.status !== input.status) return false;
  const t = input.transition;
  if (t.from === input.status && session.stage.taskToken === undefined) return false;
  return input.taskToken === undefined
    ? t.from !== input.status
    : session.stage.taskToken === input.taskToken;
}

/**
 * Kernels that may have a process on an agent when the session leaves it without going through
 * TerminateSessions (a cancel in CREATING, a CREATING expiry back to PENDING).
 */
async function stopLeftoverKernels(
  before: SessionWithKernels,
  input: EnterStageInput,
  transition: StageTransition,
  deps: EnterStageDeps,
): Promise<void> {
  const launched: ReadonlySet<KernelStatus> = new Set([
    KernelStatus.PREPARING,
    KernelStatus.PULLING,
    KernelStatus.PREPARED,
    KernelStatus.CREATING,
    KernelStatus.RUNNING,
    KernelStatus.TERMINATING,
  ]);
  const commands: KernelCommandDetailInput[] = before.kernels
    .filter((k) => k.agentId !== undefined && launched.has(k.status) && !isTerminalKernelStatus(k.status))
    .map((k) =>
      kernelCommand(before, k, "stop", {
        graceMs: deps.terminationGraceMs,
        reason: `session ${transition.result.toLowerCase()}: ${transition.from} → ${input.status}`,
      }),
    );
  if (commands.length > 0) await deps.commands.send(commands, new Map(), { skipUnregistered: true });
}
