/**
 * What a decision or a stage entry writes, as data. The store applies one `SessionWrite`
 * atomically (one conditional transaction): session fields, kernel patches, history records
 * and the try count, conditional on the expected status and version.
 */
import type { Decision } from "./coordinator/decide.ts";
import { placeHistory } from "./history.ts";
import type {
  HistoryRecord,
  Kernel,
  PreemptionMark,
  RunRecord,
  Session,
  SessionWithKernels,
  StageRecord,
  StageTransition,
} from "./model.ts";
import { INITIAL_RETRY_STATE, type RetryState } from "./retry/evaluate.ts";
import { stageKey } from "./model.ts";
import { transitionKernelStatus } from "./transitions.ts";
import {
  AttemptOutcome,
  isTerminalKernelStatus,
  isWaitingStatus,
  SessionStatus,
  TerminationCondition,
  type KernelStatus,
} from "./status.ts";
import { SchedulingResult } from "./scheduling.ts";

export interface KernelPatch {
  readonly index: number;
  /**
   * The kernel's version the patch was computed from (Kernel.version, 0 when absent): the write
   * commits only if the kernel is still there. Omitted only by writes that do not depend on what
   * the kernel held.
   */
  readonly expectedVersion?: number;
  readonly status?: KernelStatus;
  /** `null` clears the placement. */
  readonly agentId?: string | null;
  readonly exitCode?: number;
  /** The kernel's ECS task (Kernel.taskArn); `null` clears it. */
  readonly taskArn?: string | null;
  readonly condition?: TerminationCondition;
  readonly message?: string;
  readonly failureCategory?: string;
  /** Events the run's log stream holds (Kernel.logEventCount); `null` clears it. */
  readonly logEventCount?: number | null;
  readonly outcome?: AttemptOutcome;
  /** `null` clears it. */
  readonly error?: string | null;
  /**
   * Clears what the kernel's previous run left (exit code, ECS task, condition, message, outcome,
   * error, log event count, start and finish times) before the other fields of the patch apply: a retried run starts
   * clean. Its record is kept in the session's RunRecord.
   */
  readonly resetRun?: boolean;
  readonly startedAtMs?: number;
  readonly finishedAtMs?: number;
}

/** `patches`, each guarded by the version its kernel had in `read` (the kernels they were planned from). */
export function guardedByRead(patches: readonly KernelPatch[], read: readonly Kernel[]): KernelPatch[] {
  const versions = new Map(read.map((k) => [k.index, k.version ?? 0]));
  return patches.map((p) =>
    p.expectedVersion !== undefined ? p : { ...p, expectedVersion: versions.get(p.index) ?? 0 },
  );
}

/** Guards on `kernels` at the versions read (a write that depends on them but leaves them alone). */
export function kernelGuardsOf(kernels: readonly Kernel[]): KernelGuard[] {
  return kernels.map((k) => ({ index: k.index, version: k.version ?? 0 }));
}

/**
 * Kernel reports that decide the session's stage (a promotion is due once they are written): the
 * kernels and the stage's claim in one write, guarded by the session's version and every kernel's,
 * so the writer holds the token and knows the session exactly (sessionAfterWrite).
 */
export function reportClaimWrite(
  read: SessionWithKernels,
  patches: readonly KernelPatch[],
  nowMs: number,
): SessionWrite {
  const { session, kernels } = read;
  return {
    sessionId: session.id,
    expected: { status: session.status, version: session.version },
    nowMs,
    kernels: guardedByRead(patches, kernels),
    ...unpatchedGuards(kernels, patches),
    ...claimOf(session),
  };
}

/** The fields of a write that claims the session's stage, keeping its token in the table. */
export function claimOf(session: Session): Pick<SessionWrite, "claimStage" | "claimedToken"> {
  const token = session.stage.taskToken;
  return token !== undefined ? { claimStage: true, claimedToken: token } : { claimStage: true };
}

/** Guards on the kernels `patches` leave alone, at the versions read. */
function unpatchedGuards(
  kernels: readonly Kernel[],
  patches: readonly KernelPatch[],
): { kernelGuards?: KernelGuard[] } {
  const patched = new Set(patches.map((p) => p.index));
  const guards = kernelGuardsOf(kernels.filter((k) => !patched.has(k.index)));
  return guards.length > 0 ? { kernelGuards: guards } : {};
}

export interface KernelGuard {
  readonly index: number;
  readonly version: number;
}

/** Fields a patch's `resetRun` clears: what one run leaves on the kernel. */
export const RUN_FIELDS = [
  "exitCode",
  "taskArn",
  "condition",
  "message",
  "failureCategory",
  "logEventCount",
  "outcome",
  "error",
  "startedAtMs",
  "finishedAtMs",
] as const satisfies readonly (keyof Kernel & keyof KernelPatch)[];

export interface SessionWrite {
  readonly sessionId: string;
  /** The write commits only if the session still has this status and version. */
  readonly expected: { readonly status: SessionStatus; readonly version: number };
  readonly nowMs: number;
  /** New status. Only the lifecycle execution's stage entry sets it. */
  readonly status?: SessionStatus;
  /** Enter a stage: its token (absent for terminal states), entry time and deadline. */
  readonly stage?: StageRecord;
  /**
   * An outcome claimed the stage: its token moves to `stage.claimedToken` (with the time), so no
   * other run targets or completes it while the claimer does. `claimedToken` is the token the
   * claim keeps (the session's, as read: the version guard makes it the stored one).
   */
  readonly claimStage?: boolean;
  readonly claimedToken?: string;
  readonly tries?: "increment" | "reset";
  readonly kernels?: readonly KernelPatch[];
  /**
   * Kernels the write leaves alone but depends on: it commits only if each is still at the
   * version read. A stage entry names every kernel it does not patch, so the session it wrote is
   * exactly its copy plus the write (sessionAfterWrite) and needs no read to act on.
   */
  readonly kernelGuards?: readonly KernelGuard[];
  /** Placed history records (see placeHistory); a merged record overwrites its seq. */
  readonly history?: readonly HistoryRecord[];
  /** `null` clears it. */
  readonly pendingReason?: string | null;
  /** A cancel request was accepted at this time (set once). */
  readonly cancelRequestedAtMs?: number;
  /** Why the cancel was requested (set once, with the request). */
  readonly cancelReason?: string;
  /** A force cancel was asked for at this time (set once; with or after the cancel request). */
  readonly cancelForcedAtMs?: number;
  /** A new run begins: runIndex + 1. */
  readonly runIndex?: "increment";
  /** Replaces the session's retry counters. */
  readonly retry?: RetryState;
  /** Agents the next placement avoids; `null` clears them. */
  readonly avoidAgentIds?: readonly string[] | null;
  /** The finished run's record, written in the same transaction (item RUN#<runIndex>). */
  readonly run?: RunRecord;
  /** A higher-priority session preempted this one (written with the claim); `null` clears it. */
  readonly preemption?: PreemptionMark | null;
  /**
   * The session is back in PENDING for the first time since it left it: it takes a requeued
   * session's place in its queue (queue-order.ts), rebuilt from its priority and submission time.
   */
  readonly requeue?: { readonly atMs: number; readonly priority: number; readonly createdAtMs: number };
}

/** The coordinator's write for one decision. A status change is left to the stage entry. */
export function decisionWrite(session: Session, decision: Decision, nowMs: number): SessionWrite {
  const base = {
    sessionId: session.id,
    expected: { status: session.status, version: session.version },
    nowMs,
    ...(decision.spendsTry ? { tries: "increment" as const } : {}),
  };
  if (decision.complete) {
    // The history record and kernel statuses of a status change commit with the status, in
    // the next state's entry; here the stage is only claimed.
    return { ...base, ...claimOf(session) };
  }
  return {
    ...base,
    history: placeHistory(session.lastHistory, [decision.history]),
    ...(decision.result === SchedulingResult.SKIPPED && decision.history.message !== undefined
      ? { pendingReason: decision.history.message }
      : {}),
  };
}

export interface StageEntry {
  readonly session: Session;
  readonly kernels: readonly Kernel[];
  /** Absent for the first entry into PENDING when the execution starts. */
  readonly transition?: StageTransition;
  /** The callback token of the state being entered; absent for terminal states. */
  readonly taskToken?: string;
  readonly nowMs: number;
}

/** The execution's write when it enters a state: status, stage record, kernels, history. */
export function stageEntryWrite({
  session,
  kernels,
  transition,
  taskToken,
  nowMs,
}: StageEntry): SessionWrite {
  const to = transition?.to ?? session.status;
  const timeoutSec = isWaitingStatus(to) ? session.spec.timeouts[stageKey(to)] : 0;
  const stage: StageRecord = {
    enteredAtMs: nowMs,
    expiresAtMs: nowMs + timeoutSec * 1000,
    ...(taskToken !== undefined ? { taskToken } : {}),
  };
  const write: SessionWrite = {
    sessionId: session.id,
    expected: { status: transition?.from ?? session.status, version: session.version },
    nowMs,
    stage,
  };
  if (!transition) return write;

  const kernelStatus = transitionKernelStatus(transition);
  const returnCounters = countReturn(session, transition);
  const patches: KernelPatch[] =
    kernelStatus === undefined
      ? []
      : kernels
          .filter((k) => kernelMovesTo(k.status, kernelStatus))
          .map((k): KernelPatch => {
            if (kernelStatus === "PENDING") {
              return {
                index: k.index,
                status: kernelStatus,
                agentId: null,
                error: null,
                // A Fargate kernel placed again runs a new task: the old one was stopped on the way.
                taskArn: null,
                // Placed again within its run, it writes on in the same stream: an earlier
                // placement's count no longer says how many events the stream holds.
                logEventCount: null,
                ...(transition.requeue ? { resetRun: true } : {}),
              };
            }
            // Never placed in time: Armada's `Unschedulable` condition, so a rule on it matches.
            if (endsUnplaced(transition)) {
              return { index: k.index, status: kernelStatus, ...unplacedEnd(transition, nowMs) };
            }
            // The run could never start: each kernel ends FAILED with its own error, if it had one
            // (or as the loss that spent its budget while BUILDING: PREEMPTED, WORKER_FAILED; the
            // callback carries the run's index, not its record, so the session's mark says so).
            if (transition.result === "FAILED") {
              return {
                index: k.index,
                status: kernelStatus,
                outcome: transition.run?.outcome ?? session.retry?.budgetSpentBy ?? AttemptOutcome.FAILED,
                message: k.error ?? transition.message ?? "the run could not start",
                finishedAtMs: nowMs,
              };
            }
            return { index: k.index, status: kernelStatus };
          });
  return {
    ...write,
    status: to,
    tries: "reset",
    ...(patches.length > 0 ? { kernels: guardedByRead(patches, kernels) } : {}),
    ...unpatchedGuards(kernels, patches),
    history: placeHistory(session.lastHistory, [
      {
        sessionId: session.id,
        handler: transition.handler,
        result: transition.result,
        fromStatus: transition.from,
        toStatus: to,
        ...messageOf(session, transition),
        atMs: nowMs,
      },
    ]),
    ...(transition.from === SessionStatus.PENDING ? { pendingReason: null } : {}),
    // Back in the queue: a preemption is over, and the next run starts unmarked.
    ...(to === SessionStatus.PENDING && session.preemption !== undefined ? { preemption: null } : {}),
    ...(transition.run ? { run: transition.run } : {}),
    ...(transition.requeue
      ? {
          runIndex: "increment" as const,
          avoidAgentIds:
            transition.requeue.avoidAgentIds.length > 0 ? transition.requeue.avoidAgentIds : null,
        }
      : {}),
    ...(returnCounters ? { retry: returnCounters } : {}),
    ...((to === SessionStatus.PENDING && transition.from !== SessionStatus.PENDING) || transition.requeue
      ? requeueMark(session, nowMs)
      : {}),
  };
}

/**
 * A record's message: the transition's; the execution's first record (SUBMITTED) has none of its
 * own and takes what validation checked of the submission (history.ts admissionSummary).
 */
function messageOf(session: Session, transition: StageTransition): { message?: string } {
  const message = transition.message ?? (transition.result === "SUBMITTED" ? session.admission : undefined);
  return message !== undefined ? { message } : {};
}

/** The first return to PENDING marks the session requeued (queue-order.ts); later ones keep the mark. */
function requeueMark(session: Session, nowMs: number): Pick<SessionWrite, "requeue"> {
  if (session.requeuedAtMs !== undefined) return {};
  return { requeue: { atMs: nowMs, priority: session.spec.priority, createdAtMs: session.createdAtMs } };
}

/**
 * A run that ends in PENDING because its stage expired (the pending timeout, Iris's
 * scheduling timeout) or gave up: it was never placed. Each kernel ends with Iris's outcome
 * UNSCHEDULABLE and Armada's condition `Unschedulable` ("Pod couldn't be scheduled"),
 * its message the transition's, so the run's kernels are what a retry rule on
 * `onConditions: [Unschedulable]` matches. A cancel request from PENDING is not this (KILLED).
 */
export function endsUnplaced(t: StageTransition): boolean {
  return (
    t.from === SessionStatus.PENDING &&
    t.to === SessionStatus.CANCELLED &&
    (t.result === SchedulingResult.EXPIRED || t.result === SchedulingResult.GIVE_UP)
  );
}

/** How each kernel of a run that was never placed ends (endsUnplaced): what a retry rule reads. */
export function unplacedEnd(
  t: StageTransition,
  nowMs: number,
): Required<Pick<Kernel, "outcome" | "condition" | "message" | "finishedAtMs">> {
  return {
    outcome: AttemptOutcome.UNSCHEDULABLE,
    condition: TerminationCondition.Unschedulable,
    message:
      t.message ??
      (t.result === SchedulingResult.EXPIRED ? "not placed before the pending timeout" : "placement gave up"),
    finishedAtMs: nowMs,
  };
}

/**
 * The retry counters after a return to PENDING: every return no budget counts is one
 * of the session's free returns; a stage's give-up or expiry is also one of this run's returns.
 * A retried run starts its own count from 0.
 */
export function countReturn(session: Session, transition: StageTransition): RetryState | undefined {
  if (transition.to !== SessionStatus.PENDING || transition.from === SessionStatus.PENDING) {
    return transition.requeue?.retry;
  }
  const before = session.retry ?? INITIAL_RETRY_STATE;
  const freeReturns = before.freeReturns ?? 0;
  // Counted by a budget: not one of the free returns, nor a return of a stage that failed.
  if (transition.charged) {
    return {
      ...transition.charged,
      ...(before.pendingReturns !== undefined ? { pendingReturns: before.pendingReturns } : {}),
      ...(before.freeReturns !== undefined ? { freeReturns: before.freeReturns } : {}),
    };
  }
  if (transition.requeue) {
    const counted = transition.requeue.retry.totalRetries > before.totalRetries;
    return {
      ...transition.requeue.retry,
      pendingReturns: 0,
      freeReturns: counted ? freeReturns : freeReturns + 1,
    };
  }
  const stageFailed =
    transition.result === SchedulingResult.GIVE_UP || transition.result === SchedulingResult.EXPIRED;
  const pendingReturns = before.pendingReturns ?? 0;
  return {
    ...before,
    pendingReturns: stageFailed ? pendingReturns + 1 : pendingReturns,
    freeReturns: freeReturns + 1,
  };
}

/** Kernel statuses in lifecycle order; the terminal ones share the last rank. */
const KERNEL_RANK: Readonly<Record<KernelStatus, number>> = {
  PENDING: 0,
  SCHEDULED: 1,
  PREPARING: 2,
  PULLING: 3,
  PREPARED: 4,
  CREATING: 5,
  RUNNING: 6,
  TERMINATING: 7,
  TERMINATED: 8,
  CANCELLED: 8,
  ERROR: 8,
};

/**
 * Whether a stage transition moves a kernel. Re-scheduling to PENDING resets every kernel for a
 * fresh placement. Otherwise a transition only moves kernels forward: agents report progress
 * as it happens, so a kernel may already be PREPARED (or even TERMINATED, for a command that
 * exits at once) when its session enters PREPARING or CREATING, and must not be set back; and
 * entering a terminal status keeps kernels that already ended, with their exit codes.
 */
export function kernelMovesTo(current: KernelStatus, target: KernelStatus): boolean {
  if (target === "PENDING") return current !== "PENDING";
  if (isTerminalKernelStatus(target)) return !isTerminalKernelStatus(current);
  return KERNEL_RANK[current] < KERNEL_RANK[target];
}
