/**
 * StartSessions (PREPARED): asks each kernel's agent to start its process. Dispatching is the
 * success (→ CREATING); PromoteToRunning sees the agents' RUNNING reports.
 */
import { LIFECYCLE_HANDLERS } from "../../core/handlers.ts";
import type { SessionWithKernels } from "../../core/model.ts";
import type { HandlerResult } from "../../core/scheduling.ts";
import { kernelCommand } from "../kernel-commands.ts";
import type { KernelCommandDetailInput } from "../event-types.ts";
import {
  dispatch,
  placementProblem,
  ResultBuilder,
  type HandlerContext,
  type LifecycleHandler,
  agentsOf,
} from "./handler.ts";

export const startSessions: LifecycleHandler = {
  spec: LIFECYCLE_HANDLERS.StartSessions,
  async execute(targets: readonly SessionWithKernels[], ctx: HandlerContext): Promise<HandlerResult> {
    const result = new ResultBuilder();
    const live = await ctx.liveAgents(agentsOf(targets));
    const commands: { sessionId: string; detail: KernelCommandDetailInput }[] = [];
    for (const target of targets) {
      const lost = placementProblem(target, live);
      if (lost) {
        result.failure(target.session.id, lost);
        continue;
      }
      for (const k of target.kernels) {
        commands.push({ sessionId: target.session.id, detail: kernelCommand(target, k, "start") });
      }
      result.success(target.session.id);
    }
    await dispatch(ctx, commands, result);
    return result.build();
  },
};
