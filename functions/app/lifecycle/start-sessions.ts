/**
 * StartSessions (PREPARED): has each kernel's agent start its process. A session whose agents
 * are still there is sent its `start` commands and succeeds (→ CREATING); one whose commands
 * could not be sent is a failure, for the coordinator to judge. An agent's RUNNING (or the
 * kernel's exit) may arrive before the CREATING entry is written: the entry keeps it (a kernel
 * never moves back), and PromoteToRunning sees it once CREATING is.
 *
 * A Fargate session's kernels are started here as ECS tasks, all of a gang or none,
 * with the queue's capacity provider; each kernel records its task. ECS's events report them.
 */
import { executorOf, Executor } from "../../core/fargate.ts";
import { LIFECYCLE_HANDLERS } from "../../core/handlers.ts";
import type { SessionWithKernels } from "../../core/model.ts";
import type { HandlerResult } from "../../core/scheduling.ts";
import { isTerminalKernelStatus } from "../../core/status.ts";
import { kernelCommand, type KernelCommand } from "../kernel-commands.ts";
import {
  errorMessage,
  NO_FARGATE_EXECUTOR_FAILURE,
  patchKernels,
  placementProblem,
  ResultBuilder,
  type HandlerContext,
  type LifecycleHandler,
  agentsOf,
  dispatch,
} from "./handler.ts";

export const startSessions: LifecycleHandler = {
  spec: LIFECYCLE_HANDLERS.StartSessions,
  async execute(targets: readonly SessionWithKernels[], ctx: HandlerContext): Promise<HandlerResult> {
    const result = new ResultBuilder();
    const live = await ctx.liveAgents(agentsOf(targets));
    const commands: { sessionId: string; detail: KernelCommand }[] = [];
    for (const target of targets) {
      const lost = placementProblem(target, live);
      if (lost) {
        result.failure(target.session.id, lost);
        continue;
      }
      if (executorOf(target.session.spec) === Executor.fargate) {
        await startOnFargate(ctx, target, result);
        continue;
      }
      for (const k of target.kernels.filter((k) => !isTerminalKernelStatus(k.status)))
        commands.push({ sessionId: target.session.id, detail: kernelCommand(target, k, "start") });
      result.success(target.session.id);
    }
    await dispatch(ctx, commands, result);
    return result.build();
  },
};

/**
 * Runs the session's tasks and records them on its kernels. A gang that cannot start is the
 * session's failure (none of its tasks is left running), retryable or not: the coordinator's
 * judgment of the stage decides whether to try again.
 */
async function startOnFargate(
  ctx: HandlerContext,
  target: SessionWithKernels,
  result: ResultBuilder,
): Promise<void> {
  const { session } = target;
  if (!ctx.fargate) {
    result.failure(session.id, NO_FARGATE_EXECUTOR_FAILURE);
    return;
  }
  let settings;
  try {
    settings = (await ctx.queue(session.spec.queue))?.fargate;
  } catch (error) {
    result.failure(session.id, `could not read queue ${session.spec.queue}: ${errorMessage(error)}`);
    return;
  }
  if (!settings) {
    result.failure(
      session.id,
      `queue "${session.spec.queue}" has no Fargate settings any more: set them with \`cairn queue update ${session.spec.queue} --vcpu-quota N\``,
    );
    return;
  }
  let started;
  try {
    started = await ctx.fargate.start(target, settings);
  } catch (error) {
    result.failure(session.id, `could not start the kernels' ECS tasks: ${errorMessage(error)}`);
    return;
  }
  if (!started.ok) {
    result.failure(session.id, `ECS could not start the kernels' tasks: ${started.reason}`);
    return;
  }
  const tasks = started.tasks;
  try {
    await patchKernels(ctx, target, (current) =>
      tasks.flatMap((t) =>
        current.kernels.find((k) => k.index === t.kernelIndex)?.taskArn === undefined
          ? [{ index: t.kernelIndex, taskArn: t.taskArn }]
          : [],
      ),
    );
  } catch (error) {
    // The tasks run: their events name their kernels (startedBy, environment) all the same.
    ctx.snapshot.forget(session.id);
    result.success(session.id, `tasks started; recording them failed: ${errorMessage(error)}`);
    return;
  }
  result.success(session.id);
}
