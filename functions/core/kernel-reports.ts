/**
 * How an agent's report moves a kernel. Reports arrive at least once and possibly late, so a
 * report only moves a kernel forward, and one from another run or agent is ignored by the caller.
 */
import { guardedByRead, reportClaimWrite, type KernelPatch, type SessionWrite } from "./effects.ts";
import type { Kernel, SessionWithKernels } from "./model.ts";
import { promotionDue } from "./promotion.ts";
import { kernelsAfter } from "./session-after-write.ts";
import {
  AttemptOutcome,
  isTerminalKernelStatus,
  KernelStatus,
  TerminationCondition,
  type TerminationCondition as Condition,
} from "./status.ts";

export interface KernelReport {
  readonly status: "PULLING" | "PREPARED" | "RUNNING" | "TERMINATED" | "ERROR";
  readonly exitCode?: number;
  readonly condition?: Condition;
  readonly message?: string;
  readonly failureCategory?: string;
  /** With the run's end: events the run's log stream holds (Kernel.logEventCount). */
  readonly logEventCount?: number;
  readonly atMs: number;
}

const BEFORE_PULLING: ReadonlySet<KernelStatus> = new Set([
  KernelStatus.PENDING,
  KernelStatus.SCHEDULED,
  KernelStatus.PREPARING,
]);
const BEFORE_PREPARED: ReadonlySet<KernelStatus> = new Set([...BEFORE_PULLING, KernelStatus.PULLING]);
const BEFORE_RUNNING: ReadonlySet<KernelStatus> = new Set([
  ...BEFORE_PREPARED,
  KernelStatus.PREPARED,
  KernelStatus.CREATING,
]);

/** The patch a report makes, or undefined when it would move the kernel backwards. */
export function kernelReportPatch(
  kernel: Kernel,
  report: KernelReport,
  context: { readonly cancelled: boolean },
): KernelPatch | undefined {
  if (isTerminalKernelStatus(kernel.status)) return undefined;
  const index = kernel.index;
  switch (report.status) {
    case "PULLING":
      // Informational (Iris's BUILDING): the kernel is PULLING until its PREPARED or ERROR, which
      // both apply from PULLING. A late one (the kernel PREPARED or past it) changes nothing, as
      // does one landing on a preparation error not yet judged: PrepareSessions finds the error
      // by the kernel being PREPARING, and a PULLING sent before that ERROR must not hide it.
      return BEFORE_PULLING.has(kernel.status) && kernel.error === undefined
        ? { index, status: KernelStatus.PULLING }
        : undefined;
    case "PREPARED":
      return BEFORE_PREPARED.has(kernel.status)
        ? { index, status: KernelStatus.PREPARED, error: null }
        : undefined;
    case "RUNNING":
      return BEFORE_RUNNING.has(kernel.status)
        ? { index, status: KernelStatus.RUNNING, startedAtMs: report.atMs }
        : undefined;
    case "ERROR":
      // A failed preparation keeps the kernel PREPARING with the error: PrepareSessions turns it
      // into a failure the coordinator judges (retry, or give up and re-schedule).
      if (BEFORE_PREPARED.has(kernel.status)) {
        // The category says whether a retry could clear it (retry/permanent-failures.ts).
        return {
          index,
          status: KernelStatus.PREPARING,
          error: report.message ?? "preparation failed",
          ...(report.failureCategory !== undefined ? { failureCategory: report.failureCategory } : {}),
        };
      }
      return {
        index,
        status: KernelStatus.ERROR,
        message: report.message ?? "the kernel could not be started",
        ...(report.failureCategory !== undefined ? { failureCategory: report.failureCategory } : {}),
        ...logEventCountOf(report),
        outcome: AttemptOutcome.FAILED,
        finishedAtMs: report.atMs,
      };
    case "TERMINATED":
      return {
        index,
        status: KernelStatus.TERMINATED,
        ...(report.exitCode !== undefined ? { exitCode: report.exitCode } : {}),
        ...(report.condition !== undefined ? { condition: report.condition } : {}),
        ...(report.message !== undefined ? { message: report.message } : {}),
        ...(report.failureCategory !== undefined ? { failureCategory: report.failureCategory } : {}),
        ...logEventCountOf(report),
        outcome: attemptOutcome(report, context.cancelled, kernel.status === KernelStatus.TERMINATING),
        finishedAtMs: report.atMs,
      };
  }
}

/**
 * The run's log event count, kept with the run's end. A failed preparation's is not: the run may
 * be prepared again and write more to the same stream.
 */
function logEventCountOf(report: KernelReport): { logEventCount?: number } {
  return report.logEventCount !== undefined ? { logEventCount: report.logEventCount } : {};
}

/**
 * `stopped`: the control plane had asked the kernel to stop (it was TERMINATING). Short of a
 * cancel, a preemption or the run-time limit (each named by its condition), a running kernel is
 * stopped only because a sibling of its gang failed: Iris's coscheduled cascade makes that
 * WORKER_FAILED, which retries under the preemption budget and never counts as the job's failure.
 *
 * The run-time limit (RUNNING's timeout, condition DeadlineExceeded) is Iris's per-task timeout:
 * "KILLED … Set by the controller: … per-task timeout", never retried by the budgets, whatever
 * the exit code the stopped process gave.
 */
function attemptOutcome(report: KernelReport, cancelled: boolean, stopped: boolean): AttemptOutcome {
  if (report.condition === TerminationCondition.Preempted) return AttemptOutcome.PREEMPTED;
  if (report.condition === TerminationCondition.Evicted) return AttemptOutcome.WORKER_FAILED;
  if (report.condition === TerminationCondition.AgentLost) return AttemptOutcome.WORKER_FAILED;
  if (report.condition === TerminationCondition.DeadlineExceeded) return AttemptOutcome.KILLED;
  if (report.exitCode === 0) return AttemptOutcome.SUCCEEDED;
  if (cancelled) return AttemptOutcome.KILLED;
  if (stopped && report.condition === undefined) return AttemptOutcome.WORKER_FAILED;
  return AttemptOutcome.FAILED;
}

/** What a report may carry besides its own status: the statuses its kernel passed through. */
export interface PassedStatuses {
  readonly passed?: readonly { readonly status: "PULLING" | "RUNNING"; readonly atMs: number }[];
}

/**
 * A report as the reports it stands for, oldest first: one per status its kernel passed through
 * (KernelStatusChangedDetail.passed), then itself. Each is judged as if it had come on its own.
 */
export function reportsOf<R extends KernelReport & PassedStatuses & { readonly kernelIndex: number }>(
  report: R,
): (KernelReport & { readonly kernelIndex: number })[] {
  const passed = (report.passed ?? []).map((p) => ({
    kernelIndex: report.kernelIndex,
    status: p.status,
    atMs: p.atMs,
  }));
  return [...passed, report];
}

/**
 * The patches several reports make to one session's kernels, at most one per kernel: each report
 * is judged against the kernel as the reports before it in `reports` left it, and the patches of
 * one kernel are merged, later fields over earlier ones. So a batch holding a kernel's RUNNING
 * and TERMINATED reports costs one write, and says what the two writes in turn would have.
 */
export function kernelReportPatches(
  kernels: readonly Kernel[],
  reports: readonly (KernelReport & { readonly kernelIndex: number })[],
  context: { readonly cancelled: boolean },
): KernelPatch[] {
  const current = new Map(kernels.map((k) => [k.index, k]));
  const patches = new Map<number, KernelPatch>();
  for (const report of reports) {
    const kernel = current.get(report.kernelIndex);
    if (!kernel) continue;
    const patch = kernelReportPatch(kernel, report, context);
    if (!patch) continue;
    current.set(kernel.index, { ...kernel, status: patch.status ?? kernel.status });
    patches.set(kernel.index, { ...patches.get(kernel.index), ...patch });
  }
  // Guarded by the kernels as read, not as the batch's earlier reports left them.
  return guardedByRead([...patches.values()], kernels);
}

/** What a session's accepted reports of one batch write (reportsEffect). */
export type ReportsEffect =
  | { readonly kind: "none" }
  /** The kernels alone, each guarded by its version: the stage is not decided by them. */
  | { readonly kind: "patch"; readonly patches: readonly KernelPatch[] }
  /**
   * They complete the stage: the kernels and the claim in one write (reportClaimWrite); the
   * writer then holds `token` and knows the session exactly (sessionAfterWrite).
   */
  | { readonly kind: "claim"; readonly write: SessionWrite; readonly token: string };

/**
 * The one write a session's accepted reports make, decided from the copy read: nothing, the
 * kernels alone, or — when a promotion is due once they are written and the stage holds its
 * token — the kernels with the stage's claim.
 */
export function reportsEffect(
  read: SessionWithKernels,
  reports: readonly (KernelReport & { readonly kernelIndex: number })[],
  nowMs: number,
): ReportsEffect {
  const patches = kernelReportPatches(read.kernels, reports, {
    cancelled: read.session.cancelRequestedAtMs !== undefined,
  });
  if (patches.length === 0) return { kind: "none" };
  const token = read.session.stage.taskToken;
  const after = { session: read.session, kernels: kernelsAfter(read.kernels, patches, nowMs) };
  if (token !== undefined && promotionDue(after)) {
    return { kind: "claim", write: reportClaimWrite(read, patches, nowMs), token };
  }
  return { kind: "patch", patches };
}
