/**
 * TerminateSessions (TERMINATING): stops every kernel still alive. Kernels that never started
 * are cancelled on the spot; running ones get a stop command (SIGTERM, then SIGKILL after the
 * grace period) and are marked TERMINATING so the command is sent once. The session succeeds
 * (→ TERMINATED) when no kernel is left alive; until then PromoteToTerminated watches the agents'
 * reports. A kernel on a lost agent is a failure: after maxTries the coordinator gives up and
 * the session is TERMINATED anyway (the seed's give_up → TERMINATED). A preempted session's
 * kernels are stopped as Preempted, so their run ends PREEMPTED (the preemption budget's).
 */
import { LIFECYCLE_HANDLERS } from "../../core/handlers.ts";
import type { KernelPatch } from "../../core/effects.ts";
import type { Kernel, SessionWithKernels } from "../../core/model.ts";
import type { HandlerResult } from "../../core/scheduling.ts";
import {
  isTerminalKernelStatus,
  KernelStatus,
  SessionStatus,
  TerminationCondition,
} from "../../core/status.ts";
import { kernelCommand, type KernelCommand } from "../kernel-commands.ts";
import {
  errorMessage,
  lostAgentsOf,
  patchKernels,
  ResultBuilder,
  type HandlerContext,
  type LifecycleHandler,
  dispatch,
  agentsOf,
} from "./handler.ts";

const NOT_STARTED: ReadonlySet<KernelStatus> = new Set([
  KernelStatus.PENDING,
  KernelStatus.SCHEDULED,
  KernelStatus.PREPARING,
  KernelStatus.PULLING,
  KernelStatus.PREPARED,
]);

export const terminateSessions: LifecycleHandler = {
  spec: LIFECYCLE_HANDLERS.TerminateSessions,
  async execute(targets: readonly SessionWithKernels[], ctx: HandlerContext): Promise<HandlerResult> {
    const result = new ResultBuilder();
    const live = await ctx.liveAgents(agentsOf(targets));
    const commands: { sessionId: string; detail: KernelCommand }[] = [];
    for (const target of targets) {
      const { session, kernels } = target;
      const alive = kernels.filter((k) => !isTerminalKernelStatus(k.status));
      if (alive.length === 0) {
        result.success(session.id);
        continue;
      }
      const lost = lostAgentsOf({ session, kernels: alive }, live);
      if (lost) {
        result.failure(session.id, lost);
        continue;
      }
      // RUNNING's timer is the run-time limit: its expiry stops the kernels as DeadlineExceeded.
      const last = session.lastHistory;
      const deadline = last?.fromStatus === SessionStatus.RUNNING && last.result === "EXPIRED";
      const cancelled = session.cancelRequestedAtMs !== undefined;
      // A cancel wins over a preemption: the run is then KILLED, not retried.
      const preempted = !cancelled && session.preemption !== undefined;
      const condition = preempted
        ? TerminationCondition.Preempted
        : deadline
          ? TerminationCondition.DeadlineExceeded
          : undefined;
      const stopReason = cancelled
        ? "session cancelled"
        : session.preemption
          ? `preempted by ${session.preemption.by} (priority ${session.preemption.byPriority})`
          : undefined;
      const patches: KernelPatch[] = [];
      for (const k of alive) {
        if (NOT_STARTED.has(k.status)) {
          patches.push({
            index: k.index,
            status: KernelStatus.CANCELLED,
            finishedAtMs: ctx.nowMs,
            outcome: preempted ? "PREEMPTED" : "KILLED",
          });
        } else if (k.status !== KernelStatus.TERMINATING) {
          patches.push({ index: k.index, status: KernelStatus.TERMINATING });
          commands.push({
            sessionId: session.id,
            detail: kernelCommand(target, k, "stop", {
              graceMs: ctx.config.terminationGraceMs,
              ...(condition ? { condition } : {}),
              ...(stopReason ? { reason: stopReason } : {}),
            }),
          });
        }
      }
      if (patches.length > 0) {
        try {
          await patchKernels(ctx, target, (current) =>
            patches.filter(
              (p) => current.kernels.find((k) => k.index === p.index)?.status === kernelStatusOf(p, alive),
            ),
          );
        } catch (error) {
          result.failure(session.id, `could not mark kernels for termination: ${errorMessage(error)}`);
          continue;
        }
      }
      if (patches.every((p) => p.status === KernelStatus.CANCELLED) && patches.length === alive.length) {
        result.success(session.id);
      }
    }
    await dispatch(ctx, commands, result);
    return result.build();
  },
};

/** The status the kernel had when the patch was planned: the patch applies only if it still does. */
function kernelStatusOf(patch: KernelPatch, planned: readonly Kernel[]): KernelStatus | undefined {
  return planned.find((k) => k.index === patch.index)?.status;
}
