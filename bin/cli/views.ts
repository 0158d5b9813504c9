/**
 * The JSON shapes the CLI prints (`--output json`): stable field names, ISO 8601 times, and
 * `null` for what is not known yet, so every field is always present. Pure.
 */
import type { HistoryRecord, Kernel, Session, SessionWithKernels } from "../../functions/core/model.ts";
import { sessionResult, type SessionResult } from "../../functions/core/sessions.ts";

export interface KernelView {
  readonly index: number;
  readonly status: string;
  readonly agent: string | null;
  readonly exitCode: number | null;
  readonly condition: string | null;
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
  readonly queue: string;
  readonly priority: number;
  /** Handler tries spent in the current stage. */
  readonly tries: number;
  readonly runIndex: number;
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
  readonly firstAt: string;
  readonly lastAt: string;
}

export interface HistoryView {
  readonly sessionId: string;
  readonly records: readonly HistoryRecordView[];
}

export interface SessionSummaryView {
  readonly sessionId: string;
  readonly name: string;
  readonly status: string;
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

export function sessionView(found: SessionWithKernels, stateMachineArn: string | undefined): SessionView {
  const { session, kernels } = found;
  return {
    sessionId: session.id,
    name: session.spec.name,
    status: session.status,
    result: sessionResult(found) ?? null,
    queue: session.spec.queue,
    priority: session.spec.priority,
    tries: session.tries,
    runIndex: session.runIndex,
    pendingReason: session.pendingReason ?? null,
    cancelRequestedAt: isoOrNull(session.cancelRequestedAtMs),
    createdAt: iso(session.createdAtMs),
    updatedAt: iso(session.updatedAtMs),
    stage: { enteredAt: iso(session.stage.enteredAtMs), expiresAt: iso(session.stage.expiresAtMs) },
    executionName: session.executionName,
    executionArn: executionArn(stateMachineArn, session.executionName),
    kernels: kernels.map(kernelView),
  };
}

function kernelView(kernel: Kernel): KernelView {
  return {
    index: kernel.index,
    status: kernel.status,
    agent: kernel.agentId ?? null,
    exitCode: kernel.exitCode ?? null,
    condition: kernel.condition ?? null,
    message: kernel.message ?? null,
    error: kernel.error ?? null,
    startedAt: isoOrNull(kernel.startedAtMs),
    finishedAt: isoOrNull(kernel.finishedAtMs),
  };
}

export function historyView(sessionId: string, records: readonly HistoryRecord[]): HistoryView {
  return { sessionId, records: records.map(historyRecordView) };
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
    firstAt: iso(record.firstAtMs),
    lastAt: iso(record.lastAtMs),
  };
}

export function listView(sessions: readonly Session[], truncated: boolean): ListView {
  return {
    sessions: sessions.map((s) => ({
      sessionId: s.id,
      name: s.spec.name,
      status: s.status,
      queue: s.spec.queue,
      priority: s.spec.priority,
      pendingReason: s.pendingReason ?? null,
      createdAt: iso(s.createdAtMs),
      updatedAt: iso(s.updatedAtMs),
    })),
    truncated,
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
