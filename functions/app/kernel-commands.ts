/** Builds the commands agents receive for a session's kernels. */
import type { Kernel, SessionWithKernels } from "../core/model.ts";
import type { TerminationCondition } from "../core/status.ts";
import type { KernelCommandDetailInput } from "./event-types.ts";

export function kernelCommand(
  { session, kernels }: SessionWithKernels,
  kernel: Kernel,
  action: "prepare" | "start" | "stop",
  stop?: { graceMs: number; condition?: TerminationCondition; reason?: string },
): KernelCommandDetailInput {
  if (!kernel.agentId) {
    throw new Error(`kernel ${session.id}/${kernel.index} has no agent; cannot ${action} it`);
  }
  return {
    agentId: kernel.agentId,
    action,
    sessionId: session.id,
    kernelIndex: kernel.index,
    numKernels: kernels.length,
    // An independent task's identity is its job's, not its one-kernel session's.
    ...(session.task
      ? { jobId: session.task.jobId, taskIndex: session.task.index, numTasks: session.task.count }
      : {}),
    runIndex: session.runIndex,
    command: [...session.spec.command],
    env: { ...session.spec.env },
    cpu: kernel.resources.cpu,
    memoryMiB: kernel.resources.memoryMiB,
    ...(action === "stop" && stop
      ? {
          graceMs: stop.graceMs,
          ...(stop.condition ? { condition: stop.condition } : {}),
          ...(stop.reason ? { reason: stop.reason } : {}),
        }
      : {}),
  };
}
