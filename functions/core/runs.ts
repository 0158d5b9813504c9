/**
 * A finished run (attempt) as a record: how each kernel ended and how the run as a whole did.
 * Pure; the coordinator builds it when a run leaves TERMINATING, and the stage entry stores it
 * with the transition.
 */
import type { Kernel, RunKernelRecord, RunRecord, SessionWithKernels } from "./model.ts";
import { failedKernels } from "./retry/match.ts";
import { runName } from "./retry/naming.ts";
import { AttemptOutcome } from "./status.ts";

export interface RunVerdict {
  readonly decision: "retry" | "finished";
  readonly reason: string;
  readonly delayMs?: number;
  readonly avoidAgentId?: string;
}

/** Every kernel exited 0. */
export function runSucceeded(kernels: readonly Kernel[]): boolean {
  return kernels.length > 0 && kernels.every((k) => k.outcome === AttemptOutcome.SUCCEEDED);
}

export function runOutcome(kernels: readonly Kernel[]): AttemptOutcome {
  if (runSucceeded(kernels)) return AttemptOutcome.SUCCEEDED;
  return failedKernels(kernels)[0]?.outcome ?? AttemptOutcome.KILLED;
}

export function runRecord(
  { session, kernels }: SessionWithKernels,
  verdict: RunVerdict,
  nowMs: number,
): RunRecord {
  const started = kernels.flatMap((k) => (k.startedAtMs !== undefined ? [k.startedAtMs] : []));
  return {
    sessionId: session.id,
    runIndex: session.runIndex,
    name: runName(session.id, session.runIndex),
    outcome: runOutcome(kernels),
    ...(started.length > 0 ? { startedAtMs: Math.min(...started) } : {}),
    endedAtMs: nowMs,
    decision: verdict.decision,
    reason: verdict.reason,
    ...(verdict.delayMs !== undefined ? { delayMs: verdict.delayMs } : {}),
    ...(verdict.avoidAgentId !== undefined ? { avoidAgentId: verdict.avoidAgentId } : {}),
    kernels: kernels.map(kernelRecord),
  };
}

function kernelRecord(k: Kernel): RunKernelRecord {
  return {
    index: k.index,
    status: k.status,
    ...(k.agentId !== undefined ? { agentId: k.agentId } : {}),
    ...(k.taskArn !== undefined ? { taskArn: k.taskArn } : {}),
    ...(k.outcome !== undefined ? { outcome: k.outcome } : {}),
    ...(k.exitCode !== undefined ? { exitCode: k.exitCode } : {}),
    ...(k.condition !== undefined ? { condition: k.condition } : {}),
    ...(k.message !== undefined ? { message: k.message } : {}),
    ...(k.failureCategory !== undefined ? { failureCategory: k.failureCategory } : {}),
    ...(k.logEventCount !== undefined ? { logEventCount: k.logEventCount } : {}),
    ...(k.startedAtMs !== undefined ? { startedAtMs: k.startedAtMs } : {}),
    ...(k.finishedAtMs !== undefined ? { finishedAtMs: k.finishedAtMs } : {}),
  };
}
