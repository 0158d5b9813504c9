/**
 * PrepareSessions (SCHEDULED, PREPARING): has each kernel's agent prepare it (work directory,
 * executable check). In SCHEDULED, a session whose agents are still there is sent its `prepare`
 * commands and succeeds (→ PREPARING); one whose commands could not be sent is a failure, for the
 * coordinator to judge. The commands go out before the stage is completed, so a fast agent's
 * reports may reach the control plane before the PREPARING entry is written: a report only moves
 * a kernel forward, and the entry never moves one back (core/effects.ts, stageEntryWrite), so
 * the entry keeps what the report set and the next pass goes on from it. In PREPARING, a kernel
 * whose preparation failed makes the session a failure (the coordinator judges retry or give-up)
 * and is sent `prepare` again; sessions still preparing are left for PromoteToPrepared or expiry.
 *
 * A Fargate session has no agent to prepare it: its task definition is ensured here
 * (registered once per content) and its kernels are marked PREPARED at once; an ECS failure is
 * the session's, in ECS's words.
 */
import { executorOf, Executor } from "../../core/fargate.ts";
import { LIFECYCLE_HANDLERS } from "../../core/handlers.ts";
import type { SessionWithKernels } from "../../core/model.ts";
import type { HandlerResult } from "../../core/scheduling.ts";
import { isTerminalKernelStatus, KernelStatus, SessionStatus } from "../../core/status.ts";
import { kernelCommand, type KernelCommand } from "../kernel-commands.ts";
import {
  errorMessage,
  NO_FARGATE_EXECUTOR_FAILURE,
  placementProblem,
  patchKernels,
  ResultBuilder,
  type HandlerContext,
  type LifecycleHandler,
  dispatch,
  agentsOf,
} from "./handler.ts";

export const prepareSessions: LifecycleHandler = {
  spec: LIFECYCLE_HANDLERS.PrepareSessions,
  async execute(targets: readonly SessionWithKernels[], ctx: HandlerContext): Promise<HandlerResult> {
    const result = new ResultBuilder();
    const live = await ctx.liveAgents(agentsOf(targets));
    const commands: { sessionId: string; detail: KernelCommand }[] = [];
    for (const target of targets) {
      const { session } = target;
      const lost = placementProblem(target, live);
      if (lost) {
        result.failure(session.id, lost);
        continue;
      }
      if (session.status === SessionStatus.SCHEDULED && executorOf(session.spec) === Executor.fargate) {
        await prepareOnFargate(ctx, target, result);
        continue;
      }
      if (session.status === SessionStatus.SCHEDULED) {
        for (const k of target.kernels.filter((k) => !isTerminalKernelStatus(k.status)))
          commands.push({ sessionId: session.id, detail: kernelCommand(target, k, "prepare") });
        result.success(session.id);
        continue;
      }
      // Clearing the reported errors claims this failure: a concurrent run that finds them
      // already cleared does not count it again.
      const failedIn = (s: SessionWithKernels) =>
        s.kernels.filter((k) => k.status === KernelStatus.PREPARING && k.error !== undefined);
      let claimed: SessionWithKernels | undefined;
      try {
        claimed = await patchKernels(ctx, target, (current) => {
          const failed = failedIn(current);
          return failed.length > 0 ? failed.map((k) => ({ index: k.index, error: null })) : undefined;
        });
      } catch (error) {
        result.failure(session.id, `could not retry preparation: ${errorMessage(error)}`);
        continue;
      }
      if (!claimed) continue;
      const failed = failedIn(claimed);
      for (const k of failed)
        commands.push({ sessionId: session.id, detail: kernelCommand(claimed, k, "prepare") });
      result.failure(session.id, failed.map((k) => `kernel ${k.index}: ${k.error ?? ""}`).join("; "));
    }
    await dispatch(ctx, commands, result);
    return result.build();
  },
};

/** The session's task definitions (one per kernel size; a gang's share one), then its kernels PREPARED. */
async function prepareOnFargate(
  ctx: HandlerContext,
  target: SessionWithKernels,
  result: ResultBuilder,
): Promise<void> {
  const { session, kernels } = target;
  const fargate = ctx.fargate;
  if (!fargate) {
    result.failure(session.id, NO_FARGATE_EXECUTOR_FAILURE);
    return;
  }
  try {
    await Promise.all(kernels.map((k) => fargate.taskDefinition(target, k)));
  } catch (error) {
    result.failure(session.id, `could not register the kernels' ECS task definition: ${errorMessage(error)}`);
    return;
  }
  try {
    await patchKernels(ctx, target, (current) =>
      current.kernels
        .filter((k) => k.status !== KernelStatus.PREPARED && !isTerminalKernelStatus(k.status))
        .map((k) => ({ index: k.index, status: KernelStatus.PREPARED })),
    );
  } catch (error) {
    result.failure(session.id, `could not mark the kernels prepared: ${errorMessage(error)}`);
    return;
  }
  result.success(session.id);
}
