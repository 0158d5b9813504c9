/**
 * The lifecycle execution entering a state: the only writer of `session.status`. It records the
 * status, the stage's task token and entry time, the transition's kernel statuses and history
 * record in one conditional write, and announces the status change. When the session leaves its
 * agents, it first stops kernels that must not outlive the transition and gives capacity back.
 *
 * Every attempt of a callback state gets a new task token, and the earlier attempt's is dead. An
 * attempt whose response was lost (the write happened) is retried; the retry replaces the token
 * of the same state entry — without that the session would hold a token nothing can complete, and
 * wait for the stage's expiry — and a late older attempt never overwrites a newer one. A state that
 * fails with an error no retry clears comes back here as a failure to record: the session ends
 * TERMINATED, FAILED.
 */
import type { SessionWrite } from "../core/effects.ts";
import { kernelGuardsOf, stageEntryWrite } from "../core/effects.ts";
import { placeHistory } from "../core/history.ts";
import type { SessionWithKernels, StageTransition } from "../core/model.ts";
import type { AgentRepository } from "../core/ports/agents.ts";
import type { SessionRepository } from "../core/ports/sessions.ts";
import {
  isTerminalKernelStatus,
  KernelStatus,
  SessionStatus,
  PLACEMENT_STATUSES,
  TERMINAL_SESSION_STATUSES,
  WAITING_SESSION_STATUSES,
  type SessionStatus as Status,
} from "../core/status.ts";
import { runName } from "../core/retry/naming.ts";
import { runRecord } from "../core/runs.ts";
import { sessionAfterWrite } from "../core/session-after-write.ts";
import { rereadOnConflict } from "./reread.ts";
import { kernelCommand } from "./kernel-commands.ts";
import type { Clock } from "../core/ports/clock.ts";
import type { EventsPort } from "../core/ports/event-bus.ts";
import type { KernelCommand, KernelCommands } from "./kernel-commands.ts";
import { AppError } from "./errors.ts";
import type { Logger } from "./logger.ts";
import { hpcSessionState } from "../core/hpc-view.ts";

export interface EnterStageInput {
  readonly sessionId: string;
  readonly status: Status;
  readonly transition: StageTransition;
  /** Absent for TERMINATED and CANCELLED, which do not wait. */
  readonly taskToken?: string;
  readonly executionName: string;
  /** Callback states: which entry of the state this is, and which attempt of it (`$$.State`). */
  readonly entry?: StateEntryRef;
  /** The failure recorder: the Catch output of the state that failed (no retry cleared it). */
  readonly failure?: StateFailure;
}

export interface StateEntryRef {
  readonly state: string;
  /** `$$.State.EnteredTime`: the same for every attempt of one entry. */
  readonly enteredTime: string;
  /** `$$.State.RetryCount`: 0 for the first attempt. */
  readonly retryCount: number;
}

/** Step Functions' error output, as a Catch passes it on. */
export interface StateFailure {
  readonly Error: string;
  readonly Cause?: string;
}

/**
 * Where a state that failed beyond its retries leaves the session (the ASL's RecordFailure
 * state; test/asl-graph.test.ts checks that they agree).
 */
export const LIFECYCLE_FAILURE = {
  status: SessionStatus.TERMINATED,
  result: "FAILED",
  handler: "Lifecycle",
} as const satisfies Pick<StageTransition, "result" | "handler"> & { status: Status };

/** How much of a failure's cause the history keeps: the rest is in the execution's events. */
const FAILURE_CAUSE_CHARS = 1_000;

export interface EnterStageDeps {
  readonly store: SessionRepository & AgentRepository;
  readonly events: EventsPort;
  readonly commands: KernelCommands;
  readonly clock: Clock;
  readonly log: Logger;
  readonly terminationGraceMs: number;
  /**
   * Takes the session's next step at once, in this invocation, where that step is the session's
   * own work (Coordinator.advance): every waiting stage but PENDING, whose placement is
   * serialized through the coordinator's queue. `written` is the session as the entry left it.
   */
  readonly advance?: (
    sessionId: string,
    status: Status,
    written: SessionWithKernels,
    claimed: boolean,
  ) => Promise<unknown>;
}

/** The stages whose next step EnterStage takes itself (see EnterStageDeps.advance). */
const ADVANCED_ON_ENTRY: ReadonlySet<Status> = new Set(
  WAITING_SESSION_STATUSES.filter((s) => !PLACEMENT_STATUSES.includes(s)),
);

/**
 * Stages whose handler decides the moment they are entered (dispatching the agents' prepare or
 * start commands, finding the run over): the entry records its token already claimed by its own
 * next step (`stage.claimedToken`), taken right after in this invocation, so no other run races
 * it and the step needs no claim write of its own. The claim is in the table like any other: if
 * this invocation dies before the step completes the stage or gives the token back, the sweep
 * gives it back (Coordinator's claim recovery).
 */
const CLAIMED_ON_ENTRY: ReadonlySet<Status> = new Set([
  SessionStatus.SCHEDULED,
  SessionStatus.PREPARED,
  SessionStatus.TERMINATING,
]);

/**
 * Whether the entry is written claimed: a stage of CLAIMED_ON_ENTRY, or RUNNING entered with every
 * kernel ended already (a kernel that exits at once reports RUNNING and TERMINATED together),
 * whose promotion to TERMINATING decides at once too.
 */
function claimsOnEntry(input: EnterStageInput, deps: EnterStageDeps, from: SessionWithKernels): boolean {
  if (deps.advance === undefined || input.taskToken === undefined) return false;
  if (CLAIMED_ON_ENTRY.has(input.status)) return true;
  return (
    input.status === SessionStatus.RUNNING &&
    from.kernels.length > 0 &&
    from.kernels.every((k) => isTerminalKernelStatus(k.status))
  );
}

/** A transition the session's flow does not allow from where it is: never retried. */
export class StageEntryError extends AppError {
  override readonly name = "StageEntryError";
  readonly code = "STAGE_ENTRY";
}

/** An entry written: the session as read before it and as written, and the transition applied. */
interface EntryWrite {
  readonly before: SessionWithKernels;
  readonly written: SessionWithKernels;
  readonly applied: StageTransition;
  /** Written with its token claimed by the step taken right after (claimsOnEntry). */
  readonly claimed: boolean;
}

/** Where the session's processes must stop and its capacity go back. */
const LEAVES_AGENTS: ReadonlySet<Status> = new Set([
  SessionStatus.PENDING,
  SessionStatus.TERMINATED,
  SessionStatus.CANCELLED,
]);

export async function enterStage(input: EnterStageInput, deps: EnterStageDeps): Promise<{ status: Status }> {
  if (input.failure) return recordFailure(input, input.failure, deps);
  const { known, start, ...transition } = input.transition;
  const sent = known ?? start?.known ?? undefined;
  if (transition.to !== input.status) {
    throw new StageEntryError(
      `state records ${input.status} but the transition leads to ${transition.to} (session ${input.sessionId})`,
    );
  }
  // Leaving the agents: stop what may still run and give the capacity back *before* the write
  // that makes the session a target again (PENDING), so no placement can race the release.
  // The copy the callback brought (the coordinator's claim) stands in for a read; the entry's
  // write is guarded by its versions, so if it went stale the write fails and the loop reads.
  let prefetched = knownCopy(sent, input.sessionId, transition);
  if (LEAVES_AGENTS.has(input.status) && transition.from !== input.status) {
    const current = prefetched ?? (await deps.store.getSession(input.sessionId));
    // Releasing touches allocations and agents, not the session item: this read stays current.
    prefetched = current;
    if (current && current.session.status === transition.from && !alreadyEntered(current, input)) {
      await stopLeftoverKernels(current, input, transition, deps);
      await deps.store.releaseCapacity(input.sessionId, current);
    }
  }
  // A retried attempt whose token could not be stored conflicted like any write: read again.
  const entry = await rereadOnConflict(async (n, conflict): Promise<EntryWrite | "done"> => {
    const current =
      (n === 1 ? prefetched : conflict?.current) ?? (await deps.store.getSession(input.sessionId));
    if (!current) throw new StageEntryError(`session ${input.sessionId} does not exist`);
    const seen = attemptOf(current, input);
    if (seen === "stale") {
      deps.log.info("a late attempt of a state entry found a newer one; nothing written", {
        sessionId: input.sessionId,
        status: input.status,
        attempt: input.entry?.retryCount,
      });
      return "done";
    }
    if (seen === "retried") {
      const replaced = await replaceToken(current, input, deps);
      // The first attempt may have failed before announcing the change: announce it (again).
      await announce(input, deps, [{ applied: transition, entered: replaced }]);
      await advance(input, replaced, deps, false);
      return "done";
    }
    if (alreadyEntered(current, input)) return "done";
    if (current.session.status !== transition.from) {
      throw new StageEntryError(
        `session ${input.sessionId} is ${current.session.status}; cannot apply ${transition.from} → ${transition.to}`,
      );
    }
    const applied = await withRunRecord(current, transition, deps);
    const claimed = claimsOnEntry(input, deps, current);
    const write: SessionWrite = entryWrite(input, current, applied, claimed, deps);
    // A kernel report landing between the read and the write conflicts only where the entry
    // patches its kernel (read again, recompute). The entry's write depends on the kernels it
    // leaves alone only for the copy it goes on from: those are not guarded, and the store returns
    // the session as written, the report's change included. (A write with the run's record, which
    // is made from every kernel, is two items: the store keeps its guards and returns nothing.)
    const stored = await deps.store.applyWrite(write, { returnSession: true });
    return {
      before: current,
      written: stored.session ?? sessionAfterWrite(current, write),
      applied,
      claimed,
    };
  });
  if (entry === "done") return { status: input.status };
  const { before, written, applied } = entry;
  const atMs = await announce(input, deps, [{ applied, entered: written }]);
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
  await advance(input, written, deps, entry.claimed);
  return { status: input.status };
}

/**
 * The session's next step, where EnterStage takes it; `written` is the session as the entry left
 * it, `claimed` whether its token was written claimed for this step. A failure here does not
 * fail the entry (which is recorded and announced): the passes log their own errors, and the
 * sweep picks up a session left waiting — unless the entry's claim may not have been given back,
 * which fails the entry so that the state's retry replaces the token at once (a claim left in the
 * table is the sweep's too, but only once it is older than any claimer lives).
 */
async function advance(
  input: EnterStageInput,
  written: SessionWithKernels,
  deps: EnterStageDeps,
  claimed: boolean,
): Promise<void> {
  if (!deps.advance || !ADVANCED_ON_ENTRY.has(input.status) || input.taskToken === undefined) return;
  try {
    await deps.advance(input.sessionId, input.status, written, claimed);
  } catch (error) {
    if (claimed) throw error;
    deps.log.warn("taking the session's next step after its stage entry failed; the sweep will", {
      sessionId: input.sessionId,
      status: input.status,
      error: error instanceof Error ? error.message : String(error),
    });
  }
}

/**
 * The entry's write, planned from `from` (the session as read): status, token and entry time;
 * `claimed`: the token recorded as claimed by the step taken right after (claimsOnEntry).
 */
function entryWrite(
  input: EnterStageInput,
  from: SessionWithKernels,
  applied: StageTransition,
  claimed: boolean,
  deps: EnterStageDeps,
): SessionWrite {
  const nowMs = deps.clock.nowMs();
  const entered: SessionWrite = stageEntryWrite({
    session: from.session,
    kernels: from.kernels,
    transition: applied,
    ...(input.taskToken !== undefined ? { taskToken: input.taskToken } : {}),
    nowMs,
  });
  if (!entered.stage) return entered;
  const { taskToken, ...stage } = entered.stage;
  return {
    ...entered,
    stage: {
      ...(claimed && taskToken !== undefined
        ? { ...stage, claimedToken: taskToken, claimedAtMs: nowMs }
        : entered.stage),
      ...(input.entry ? { entryAtMs: entryAtMs(input.entry), attempt: input.entry.retryCount } : {}),
    },
  };
}

/** Publishes status changes, in order, in one request; returns the time of the last. */
async function announce(
  input: EnterStageInput,
  deps: EnterStageDeps,
  changes: readonly {
    readonly applied: StageTransition;
    /** The session as the entry left it: its HPC Pack state goes with the event. */
    readonly entered: SessionWithKernels;
    readonly atMs?: number;
  }[],
): Promise<number> {
  const nowMs = deps.clock.nowMs();
  const details = changes.map(({ applied, entered, atMs = nowMs }) => ({
    sessionId: input.sessionId,
    executionName: input.executionName,
    from: applied.from,
    to: applied.to,
    result: applied.result,
    handler: applied.handler,
    ...(applied.message !== undefined ? { message: applied.message.slice(0, 4096) } : {}),
    hpcState: hpcSessionState(entered.session, entered.kernels),
    // A deployment's replica: the event wakes its deployment.
    ...(entered.session.service !== undefined ? { deploymentId: entered.session.service.deploymentId } : {}),
    atMs,
  }));
  await deps.events.statusChanged(details);
  return details.at(-1)?.atMs ?? nowMs;
}

/**
 * A run that ends without the coordinator judging it (the TERMINATING timer ran out, or a state
 * failed) is still recorded: its record is built here from the kernels as they are, unless the
 * coordinator already wrote it (it claimed the stage, then found the callback closed).
 */
async function withRunRecord(
  current: SessionWithKernels,
  t: StageTransition,
  deps: EnterStageDeps,
): Promise<StageTransition> {
  if (t.run || t.runIndex !== undefined) return t;
  if (t.to !== SessionStatus.TERMINATED || t.from !== SessionStatus.TERMINATING) return t;
  const runIndex = current.session.runIndex;
  if ((await deps.store.listRuns(current.session.id)).some((r) => r.runIndex === runIndex)) {
    return { ...t, runIndex };
  }
  const reason = t.message ?? t.result.toLowerCase();
  return { ...t, run: runRecord(current, { decision: "finished", reason }, deps.clock.nowMs()) };
}

/**
 * The session copy a transition carries, when it is one the entry can start from: this session,
 * in the status the transition leaves. Anything else is ignored and the session read.
 */
function knownCopy(
  known: SessionWithKernels | undefined,
  sessionId: string,
  transition: StageTransition,
): SessionWithKernels | undefined {
  if (known === undefined || typeof known !== "object" || known === null) return undefined;
  const { session, kernels } = known as Partial<SessionWithKernels>;
  if (session?.id !== sessionId || session.status !== transition.from) return undefined;
  if (typeof session.version !== "number" || !Array.isArray(kernels)) return undefined;
  return known;
}

function entryAtMs(entry: StateEntryRef): number {
  return Date.parse(entry.enteredTime);
}

/**
 * Which attempt of a callback state's entry this invocation is, against what the session holds:
 * `retried` when a later attempt of the entry the session is in brings a new token; `stale` when
 * the session already holds this entry's token from a later attempt (or a later entry of the
 * same status); `other` otherwise (a new entry, or a redelivery alreadyEntered recognises).
 */
function attemptOf({ session }: SessionWithKernels, input: EnterStageInput): "retried" | "stale" | "other" {
  const { entry, taskToken } = input;
  if (!entry || taskToken === undefined || session.status !== input.status) return "other";
  const stored = session.stage.entryAtMs;
  if (stored === undefined) return "other";
  const at = entryAtMs(entry);
  if (stored > at) return "stale";
  if (stored < at) return "other";
  if (session.stage.taskToken === taskToken) return "other";
  return (session.stage.attempt ?? 0) < entry.retryCount ? "retried" : "stale";
}

/**
 * The retry's token replaces the earlier attempt's, conditional on the version read, so a
 * concurrent writer (a late attempt, the coordinator's claim) makes this read and decide again.
 * An outcome may have claimed the earlier token already: the new one makes the session a
 * target again, and the coordinator judges it afresh. Returns the session as written; a
 * conflict is thrown, for the caller to read again.
 */
async function replaceToken(
  current: SessionWithKernels,
  input: EnterStageInput,
  deps: EnterStageDeps,
): Promise<SessionWithKernels> {
  const { session } = current;
  // A claim of the earlier token is dropped with it: that token is dead, and its claimer finds
  // the new one when it completes (Coordinator's token hops).
  const { claimedToken: _claimed, claimedAtMs: _at, ...stage } = session.stage;
  const write: SessionWrite = {
    sessionId: session.id,
    expected: { status: session.status, version: session.version },
    nowMs: deps.clock.nowMs(),
    stage: { ...stage, taskToken: input.taskToken!, attempt: input.entry!.retryCount },
    // The copy the next step starts from must be the stored one, kernels included.
    kernelGuards: kernelGuardsOf(current.kernels),
  };
  await deps.store.applyWrite(write);
  deps.log.info("a retried state entry replaced its task token", {
    sessionId: session.id,
    status: session.status,
    attempt: input.entry!.retryCount,
  });
  return sessionAfterWrite(current, write);
}

/**
 * A state failed with an error no retry cleared (ASL RecordFailure). A session still under way
 * ends TERMINATED with result FAILED, its kernels stopped and its capacity released, and the
 * change is announced; one that had already ended gets the failure as a history record.
 */
async function recordFailure(
  input: EnterStageInput,
  failure: StateFailure,
  deps: EnterStageDeps,
): Promise<{ status: Status }> {
  const cause = failure.Cause === undefined ? "" : `: ${failure.Cause.slice(0, FAILURE_CAUSE_CHARS)}`;
  const message = `the lifecycle failed entering ${input.transition.from} with ${failure.Error}${cause}`;
  return rereadOnConflict(async (attempt, conflict) => {
    const current = conflict?.current ?? (await deps.store.getSession(input.sessionId));
    if (!current) throw new StageEntryError(`session ${input.sessionId} does not exist`);
    const { session } = current;
    const nowMs = deps.clock.nowMs();
    const ended = TERMINAL_SESSION_STATUSES.has(session.status);
    const transition: StageTransition = {
      from: session.status,
      to: LIFECYCLE_FAILURE.status,
      result: LIFECYCLE_FAILURE.result,
      handler: LIFECYCLE_FAILURE.handler,
      message,
    };
    let write: SessionWrite;
    if (ended) {
      write = {
        sessionId: session.id,
        expected: { status: session.status, version: session.version },
        nowMs,
        history: placeHistory(session.lastHistory, [
          {
            sessionId: session.id,
            handler: LIFECYCLE_FAILURE.handler,
            result: LIFECYCLE_FAILURE.result,
            fromStatus: session.status,
            message,
            atMs: nowMs,
          },
        ]),
      };
    } else {
      if (attempt === 1) {
        await stopLeftoverKernels(current, { ...input, status: LIFECYCLE_FAILURE.status }, transition, deps);
        await deps.store.releaseCapacity(session.id, current);
      }
      write = stageEntryWrite({
        session,
        kernels: current.kernels,
        transition: await withRunRecord(current, transition, deps),
        nowMs,
      });
    }
    await deps.store.applyWrite(write);
    if (!ended)
      await announce(input, deps, [{ applied: transition, entered: sessionAfterWrite(current, write) }]);
    deps.log.error("a lifecycle state failed; the session records it", {
      sessionId: session.id,
      status: session.status,
      error: failure.Error,
    });
    return { status: ended ? session.status : LIFECYCLE_FAILURE.status };
  });
}

/** A redelivered invocation: this state was already entered with this token. */
function alreadyEntered({ session }: SessionWithKernels, input: EnterStageInput): boolean {
  if (session.status !== input.status) return false;
  const t = input.transition;
  // A retried run's entry moves the session on to the next run: one already past it was entered
  // (a PENDING → PENDING requeue of a run never placed holds no token to tell by).
  const retried = t.run?.runIndex ?? t.runIndex;
  if (t.requeue !== undefined && retried !== undefined && session.runIndex > retried) return true;
  // A stage claimed since it was entered keeps its token under the claim.
  const token = session.stage.taskToken ?? session.stage.claimedToken;
  if (t.from === input.status && token === undefined) return false;
  return input.taskToken === undefined ? t.from !== input.status : token === input.taskToken;
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
  // SCHEDULED too: PrepareSessions sends the prepare before it completes the stage, so a kernel
  // still SCHEDULED (its stage expired or was cancelled in between) may be preparing on its agent.
  const launched: ReadonlySet<KernelStatus> = new Set([
    KernelStatus.SCHEDULED,
    KernelStatus.PREPARING,
    KernelStatus.PULLING,
    KernelStatus.PREPARED,
    KernelStatus.CREATING,
    KernelStatus.RUNNING,
    KernelStatus.TERMINATING,
  ]);
  const commands: KernelCommand[] = before.kernels
    .filter((k) => k.agentId !== undefined && launched.has(k.status) && !isTerminalKernelStatus(k.status))
    .map((k) =>
      kernelCommand(before, k, "stop", {
        graceMs: deps.terminationGraceMs,
        reason: `session ${transition.result.toLowerCase()}: ${transition.from} → ${input.status}`,
      }),
    );
  if (commands.length > 0) await deps.commands.send(commands, new Map(), { skipUnregistered: true });
}
