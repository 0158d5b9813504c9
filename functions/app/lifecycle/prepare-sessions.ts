/**
 * PrepareSessions (SCHEDULED, PREPARING): asks each kernel's agent to prepare it (work
 * directory, executable check). In SCHEDULED, dispatching is the success (→ PREPARING). In
 * PREPARING, a kernel whose preparation failed makes the session a failure (the coordinator
 * judges retry or give-up) and is dispatched again; sessions still preparing are left for
 * PromoteToPrepared or expiry.
 */
import { LIFECYCLE_HANDLERS } from "../../core/handlers.ts";
import type { SessionWithKernels } from "../../core/model.ts";
import type { HandlerResult } from "../../core/scheduling.ts";
import { KernelStatus, SessionStatus } from "../../core/status.ts";
import { kernelCommand } from "../kernel-commands.ts";
import type { KernelCommandDetailInput } from "../event-types.ts";
import {
  errorMessage,
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
    const commands: { sessionId: string; detail: KernelCommandDetailInput }[] = [];
    for (const target of targets) {
      const { session, kernels } = target;
      const lost = placementProblem(target, live);
      if (lost) {
        result.failure(session.id, lost);
        continue;
      }
      if (session.status === SessionStatus.SCHEDULED) {
        for (const k of kernels)
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
