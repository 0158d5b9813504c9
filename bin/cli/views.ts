/**
 * The JSON shapes the CLI prints (`--output json`): stable field names, ISO 8601 times, and
 * `null` for what is not known yet, so every field is always present. Pure.
 */
import type {
  HistoryRecord,
  Kernel,
  RunKernelRecord,
  RunRecord,
  SessionWithKernels,
} from "../../functions/core/model.ts";
import { runName } from "../../functions/core/retry/naming.ts";
import { sessionResult, type SessionResult } from "../../functions/core/sessions.ts";
import {
  hpcAdmissionSteps,
  hpcSessionAdmissionSteps,
  hpcSessionState,
  type HpcState,
} from "../../functions/core/hpc-view.ts";
import { sessionStates } from "../../functions/core/session-vocabularies.ts";
import type { JobState } from "../../functions/core/status.ts";

export interface KernelView {
  readonly index: number;
  readonly status: string;
  readonly agent: string | null;
  readonly exitCode: number | null;
  readonly condition: string | null;
  /** How the agent classified the run's failure (oom, killed, user_error…), if it failed. */
  readonly failureCategory: string | null;
  /** Termination message, or why the kernel ended. */
  readonly message: string | null;
  /** The latest preparation failure the agent reported (cleared when preparation is retried). */
  readonly error: string | null;
  readonly startedAt: string | null;
  readonly finishedAt: string | null;
}

export interface SessionView {
  readonly sessionId: string;
  readonly name: string;
  readonly status: string;
  /** succeeded / failed / cancelled once the session has ended; null before. */
  readonly result: SessionResult | null;
  /** HPC Pack's state of the session (functions/core/hpc-view.ts). */
  readonly hpcState: HpcState;
  /**
   * The HPC Pack states its submission went through before it was stored: Submitted, Validating,
   * then Queued (or Failed); null for a session created before validation was recorded.
   */
  readonly hpcAdmission: readonly HpcState[] | null;
  readonly queue: string;
  readonly priority: number;
  /** Handler tries spent in the current stage. */
  readonly tries: number;
  /** The current run: 0 for the first, + 1 per retry. */
  readonly runIndex: number;
  /** The current run's name: the session id, then `<id>.<n>` for retries. */
  readonly runName: string;
  /** Retry counters across runs; null before the first retry was judged. */
  readonly retry: RetryView | null;
  /** Agents the next placement avoids (anti-affinity after a failed run). */
  readonly avoidAgents: readonly string[];
  /** Why the session is still waiting (the latest skip reason). */
  readonly pendingReason: string | null;
  readonly cancelRequestedAt: string | null;
  readonly createdAt: string;
  readonly updatedAt: string;
  /** The current (or last) stage: when it was entered and when its timer expires. */
  readonly stage: { readonly enteredAt: string; readonly expiresAt: string };
  readonly executionName: string;
  /** Null when the state machine's ARN is not known (an --endpoint without one). */
  readonly executionArn: string | null;
  readonly kernels: readonly KernelView[];
  /** Finished runs, oldest first: how each ended and what was decided. */
  readonly runs: readonly RunView[];
}

export interface RetryView {
  readonly failureCount: number;
  readonly preemptionCount: number;
  /** Retries that counted against the global cap. */
  readonly totalRetries: number;
  /** Retries granted per rule, keyed `<policy>#<rule index>` or `<policy>#default`. */
  readonly ruleRetries: Readonly<Record<string, number>>;
}

export interface RunKernelView {
  readonly index: number;
  readonly status: string;
  readonly agent: string | null;
  readonly outcome: string | null;
  readonly exitCode: number | null;
  readonly condition: string | null;
  /** How the agent classified the failure (core/retry/failure-categories.ts), if it did. */
  readonly failureCategory: string | null;
  readonly message: string | null;
  readonly startedAt: string | null;
  readonly finishedAt: string | null;
}

export interface RunView {
  readonly runIndex: number;
  readonly name: string;
  readonly outcome: string;
  /** retry: the session ran again; finished: it did not. */
  readonly decision: string;
  /** What decided: the rule or budget and the counts it read. */
  readonly reason: string;
  /** The wait before the next run, when retried. */
  readonly delayMs: number | null;
  /** The agent the next run avoided. */
  readonly avoidAgentId: string | null;
  readonly startedAt: string | null;
  readonly endedAt: string;
  readonly kernels: readonly RunKernelView[];
}

export interface HistoryRecordView {
  readonly seq: number;
  readonly handler: string;
  readonly result: string;
  readonly from: string;
  /** Null when the status was maintained. */
  readonly to: string | null;
  /** How many identical outcomes in a row this record stands for. */
  readonly count: number;
  readonly message: string | null;
  /** The submission's record: the HPC Pack states it stands for (Submitted → Validating → Queued). */
  readonly hpc: readonly HpcState[] | null;
  readonly firstAt: string;
  readonly lastAt: string;
}

export interface HistoryView {
  readonly sessionId: string;
  readonly records: readonly HistoryRecordView[];
  readonly runs: readonly RunView[];
}

export interface SessionSummaryView {
  readonly sessionId: string;
  readonly name: string;
  /** Sokovan's session status. */
  readonly status: string;
  /** succeeded / failed / cancelled once the session has ended; null before. */
  readonly result: SessionResult | null;
  /** Iris's job state of the session (its kernels are the tasks). */
  readonly irisState: JobState;
  /** HPC Pack's job state of the session. */
  readonly hpcState: HpcState;
  readonly queue: string;
  readonly priority: number;
  readonly pendingReason: string | null;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export interface ListView {
  readonly sessions: readonly SessionSummaryView[];
  /** True when more sessions matched than --limit allowed. */
  readonly truncated: boolean;
}

export function sessionView(
  found: SessionWithKernels,
  stateMachineArn: string | undefined,
  runs: readonly RunRecord[] = [],
): SessionView {
  const { session, kernels } = found;
  return {
    sessionId: session.id,
    name: session.spec.name,
    status: session.status,
    result: sessionResult(found) ?? null,
    hpcState: hpcSessionState(session, kernels),
    hpcAdmission: hpcSessionAdmissionSteps(session) ?? null,
    queue: session.spec.queue,
    priority: session.spec.priority,
    tries: session.tries,
    runIndex: session.runIndex,
    runName: runName(session.id, session.runIndex),
    retry:
      session.retry === undefined
        ? null
        : {
            failureCount: session.retry.failureCount,
            preemptionCount: session.retry.preemptionCount,
            totalRetries: session.retry.totalRetries,
            ruleRetries: { ...session.retry.ruleRetries },
          },
    avoidAgents: [...(session.avoidAgentIds ?? [])],
    pendingReason: session.pendingReason ?? null,
    cancelRequestedAt: isoOrNull(session.cancelRequestedAtMs),
    createdAt: iso(session.createdAtMs),
    updatedAt: iso(session.updatedAtMs),
    stage: { enteredAt: iso(session.stage.enteredAtMs), expiresAt: iso(session.stage.expiresAtMs) },
    executionName: session.executionName,
    executionArn: executionArn(stateMachineArn, session.executionName),
    kernels: kernels.map(kernelView),
    runs: runs.map(runView),
  };
}

export function runView(run: RunRecord): RunView {
  return {
    runIndex: run.runIndex,
    name: run.name,
    outcome: run.outcome,
    decision: run.decision,
    reason: run.reason,
    delayMs: run.delayMs ?? null,
    avoidAgentId: run.avoidAgentId ?? null,
    startedAt: isoOrNull(run.startedAtMs),
    endedAt: iso(run.endedAtMs),
    kernels: run.kernels.map(runKernelView),
  };
}

function runKernelView(kernel: RunKernelRecord): RunKernelView {
  return {
    index: kernel.index,
    status: kernel.status,
    agent: kernel.agentId ?? null,
    outcome: kernel.outcome ?? null,
    exitCode: kernel.exitCode ?? null,
    condition: kernel.condition ?? null,
    failureCategory: kernel.failureCategory ?? null,
    message: kernel.message ?? null,
    startedAt: isoOrNull(kernel.startedAtMs),
    finishedAt: isoOrNull(kernel.finishedAtMs),
  };
}

function kernelView(kernel: Kernel): KernelView {
  return {
    index: kernel.index,
    status: kernel.status,
    agent: kernel.agentId ?? null,
    exitCode: kernel.exitCode ?? null,
    condition: kernel.condition ?? null,
    failureCategory: kernel.failureCategory ?? null,
    message: kernel.message ?? null,
    error: kernel.error ?? null,
    startedAt: isoOrNull(kernel.startedAtMs),
    finishedAt: isoOrNull(kernel.finishedAtMs),
  };
}

export function historyView(
  sessionId: string,
  records: readonly HistoryRecord[],
  runs: readonly RunRecord[] = [],
): HistoryView {
  return { sessionId, records: records.map(historyRecordView), runs: runs.map(runView) };
}

export function historyRecordView(record: HistoryRecord): HistoryRecordView {
  return {
    seq: record.seq,
    handler: record.handler,
    result: record.result,
    from: record.fromStatus,
    to: record.toStatus ?? null,
    count: record.count,
    message: record.message ?? null,
    hpc: hpcAdmissionSteps(record) ?? null,
    firstAt: iso(record.firstAtMs),
    lastAt: iso(record.lastAtMs),
  };
}

export function listView(sessions: readonly SessionWithKernels[], truncated: boolean): ListView {
  return {
    sessions: sessions.map((found) => summaryView(found)),
    truncated,
  };
}

export function summaryView(found: SessionWithKernels): SessionSummaryView {
  const s = found.session;
  const states = sessionStates(found);
  return {
    sessionId: s.id,
    name: s.spec.name,
    status: s.status,
    result: states.result ?? null,
    irisState: states.iris,
    hpcState: states.hpc,
    queue: s.spec.queue,
    priority: s.spec.priority,
    pendingReason: s.pendingReason ?? null,
    createdAt: iso(s.createdAtMs),
    updatedAt: iso(s.updatedAtMs),
  };
}

/**
 * A Step Functions execution's ARN: the state machine's, with `execution` for `stateMachine`
 * and the execution name appended.
 */
export function executionArn(stateMachineArn: string | undefined, executionName: string): string | null {
  const match = /^(arn:[^:]+:states:[^:]*:[^:]*):stateMachine:([^:]+)$/.exec(stateMachineArn ?? "");
  if (match === null) return null;
  return `${match[1]}:execution:${match[2]}:${executionName}`;
}

export function iso(epochMs: number): string {
  return new Date(epochMs).toISOString();
}

function isoOrNull(epochMs: number | undefined): string | null {
  return epochMs === undefined ? null : iso(epochMs);
}
