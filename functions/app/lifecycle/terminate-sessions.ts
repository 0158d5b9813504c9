/**
 * TerminateSessions (TERMINATING): stops every kernel still alive. Kernels that never started
 * are cancelled on the spot; running ones get a stop command (SIGTERM, then SIGKILL after the
 * grace period) and, once it has gone, are marked TERMINATING so that it is not sent again. The
 * session succeeds (→ TERMINATED) when no kernel is left alive; until then PromoteToTerminated
 * watches the agents' reports. A kernel on a lost agent is a failure: after maxTries the coordinator gives up and
 * the session is TERMINATED anyway (Sokovan's give_up → TERMINATED). A preempted session's
 * kernels are stopped as Preempted, so their run ends PREEMPTED (the preemption budget's).
 *
 * A force cancel (HPC Pack's Force Cancel) does not wait for the run's end: every
 * started kernel is sent a kill without a grace period, as far as its agent can be reached, and
 * is ended KILLED at once; the session succeeds in the same pass and its capacity is given back.
 * Whatever still runs on an agent that cannot be reached is no longer counted there.
 */
import { LIFECYCLE_HANDLERS } from "../../core/handlers.ts";
import type { KernelPatch } from "../../core/effects.ts";
import type { Agent, Kernel, SessionWithKernels } from "../../core/model.ts";
import type { HandlerResult } from "../../core/scheduling.ts";
import {
  isTerminalKernelStatus,
  KernelStatus,
  SessionStatus,
  TerminationCondition,
} from "../../core/status.ts";
import { isFargatePool } from "../../core/fargate-pool.ts";
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
    const planned: { target: SessionWithKernels; alive: readonly Kernel[]; patches: KernelPatch[] }[] = [];
    for (const target of targets) {
      const { session, kernels } = target;
      const alive = kernels.filter((k) => !isTerminalKernelStatus(k.status));
      if (alive.length === 0) {
        result.success(session.id);
        continue;
      }
      if (session.cancelForcedAtMs !== undefined) {
        await forceEnd(target, alive, live, ctx, result);
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
          : deadline
            ? `run-time limit of ${session.spec.timeouts.running} s (timeouts.running) exceeded`
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
      planned.push({ target, alive, patches });
    }
    // The stops go out before their kernels are marked TERMINATING (the mark is what keeps a
    // later pass from sending them again): a send that fails leaves the kernels unmarked, and the
    // stage's retry sends their stops again. A mark that fails after the send costs a second
    // stop, which an agent takes as one.
    await dispatch(ctx, commands, result);
    for (const { target, alive, patches } of planned) {
      const { session } = target;
      if (result.failures.includes(session.id)) continue;
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
    return result.build();
  },
};

/**
 * Force Cancel: kills what can be reached (no grace period), then ends every live kernel at once,
 * KILLED, without waiting for a report. A kill that cannot be sent is said in the kernel's message.
 */
async function forceEnd(
  target: SessionWithKernels,
  alive: readonly Kernel[],
  live: ReadonlyMap<string, Agent>,
  ctx: HandlerContext,
  result: ResultBuilder,
): Promise<void> {
  const { session } = target;
  const started = alive.filter((k) => !NOT_STARTED.has(k.status));
  const kills = started
    .filter((k) => k.agentId !== undefined && (isFargatePool(k.agentId) || live.has(k.agentId)))
    .map((k) => kernelCommand(target, k, "stop", { graceMs: 0, reason: "force cancelled" }));
  let unsent: string | undefined;
  if (kills.length > 0) {
    try {
      await ctx.commands.send(kills, live);
    } catch (error) {
      unsent = errorMessage(error);
    }
  }
  const message = (k: Kernel): string => {
    const where = k.agentId !== undefined ? `agent ${k.agentId}` : "its task";
    const reached = kills.some((c) => c.kernelIndex === k.index) && unsent === undefined;
    return reached
      ? `force cancelled: killed without a grace period; its end was not waited for on ${where}`
      : `force cancelled: ${where} could not be reached${unsent !== undefined ? ` (${unsent})` : ""}; its end was not waited for`;
  };
  const patches: KernelPatch[] = alive.map((k) =>
    NOT_STARTED.has(k.status)
      ? { index: k.index, status: KernelStatus.CANCELLED, finishedAtMs: ctx.nowMs, outcome: "KILLED" }
      : {
          index: k.index,
          status: KernelStatus.TERMINATED,
          finishedAtMs: ctx.nowMs,
          outcome: "KILLED",
          message: message(k),
        },
  );
  try {
    await patchKernels(ctx, target, (current) =>
      patches.filter((p) => {
        const now = current.kernels.find((k) => k.index === p.index);
        return now !== undefined && !isTerminalKernelStatus(now.status);
      }),
    );
  } catch (error) {
    result.failure(session.id, `could not end the kernels of a force cancel: ${errorMessage(error)}`);
    return;
  }
  result.success(session.id);
}

/** The status the kernel had when the patch was planned: the patch applies only if it still does. */
function kernelStatusOf(patch: KernelPatch, planned: readonly Kernel[]): KernelStatus | undefined {
  return planned.find((k) => k.index === patch.index)?.status;
}
