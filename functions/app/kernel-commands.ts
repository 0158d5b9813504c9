/**
 * Builds the commands agents receive for a session's kernels, and sends them on their queues;
 * stops of kernels on a queue's Fargate pool go to ECS instead (fargate-kernels.ts).
 */
import { AgentMessageType } from "../core/agent-protocol.ts";
import { isFargatePool } from "../core/fargate-pool.ts";
import type { Agent, Kernel, SessionWithKernels } from "../core/model.ts";
import type { AgentRepository } from "../core/ports/agents.ts";
import { sessionPlacement } from "../core/sessions.ts";
import type { TerminationCondition } from "../core/status.ts";
import type { KernelCommandDetailInput } from "../core/ports/event-bus.ts";
import type { FargateKernels } from "./fargate-kernels.ts";
import type { AgentChannelPort } from "../core/ports/agent-channel.ts";
import { AppError } from "./errors.ts";

/**
 * A command for a kernel. A Fargate kernel's stop also names its task: only ECS is told it, and
 * it is never part of what an agent is sent. A prepare or a start names the agent incarnation the
 * kernel was placed with (`placedWith`), and goes to that incarnation: an agent restarted since
 * refuses it, and the lost placement is judged as any other.
 */
export type KernelCommand = KernelCommandDetailInput & {
  readonly taskArn?: string;
  readonly placedWith?: string;
};

export function kernelCommand(
  { session, kernels }: SessionWithKernels,
  kernel: Kernel,
  action: "prepare" | "start" | "stop",
  stop?: { graceMs: number; condition?: TerminationCondition; reason?: string },
): KernelCommand {
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
    // Returns to PENDING within a run are counted per session: each placement has its own number.
    placement: sessionPlacement(session),
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
    // A deployment's replica: its agent gives it a port and probes its health.
    ...(action === "start" && session.service !== undefined ? { service: session.service } : {}),
    ...(action === "stop" && kernel.taskArn !== undefined && isFargatePool(kernel.agentId)
      ? { taskArn: kernel.taskArn }
      : {}),
    ...(action !== "stop" && kernel.agentIncarnation !== undefined
      ? { placedWith: kernel.agentIncarnation }
      : {}),
  };
}

/** Commands for a Fargate pool's kernels reach ECS, not an agent: without the executor, nothing can. */
export class FargateUnavailableError extends AppError {
  override readonly name = "FargateUnavailableError";
  readonly code = "FARGATE_UNAVAILABLE";
  override readonly retryable = false;
  constructor(agentId: string) {
    super(`kernels on ${agentId} run on Fargate, and this stack has no Fargate executor to reach them`);
  }
}

/** An agent never registered under the protocol (or gone from the store): nothing can reach it. */
export class AgentUnreachableError extends AppError {
  override readonly name = "AgentUnreachableError";
  readonly code = "AGENT_UNREACHABLE";
  readonly agentId: string;
  constructor(agentId: string) {
    super(`agent ${agentId} is not registered: it has no queue to send commands to`);
    this.agentId = agentId;
  }
}

/**
 * Sends kernel commands to their agents' queues, each addressed to the agent's current
 * incarnation, so a restarted agent can tell commands meant for its previous life.
 */
export class KernelCommands {
  readonly #store: Pick<AgentRepository, "getAgent">;
  readonly #channel: AgentChannelPort;
  readonly #fargate: FargateKernels | undefined;

  constructor(store: Pick<AgentRepository, "getAgent">, channel: AgentChannelPort, fargate?: FargateKernels) {
    this.#store = store;
    this.#channel = channel;
    this.#fargate = fargate;
  }

  /**
   * `known` are agents the caller has already read (a handler's live agents); the others are
   * read here, unless every command for them names the incarnation it is for (`placedWith`).
   */
  async send(
    all: readonly KernelCommand[],
    known: ReadonlyMap<string, Pick<Agent, "incarnation">> = new Map(),
    options: {
      /** Stops for an agent that was never registered: there is nothing there to stop. */
      readonly skipUnregistered?: boolean;
    } = {},
  ): Promise<void> {
    const onPools = all.filter((c) => isFargatePool(c.agentId));
    if (onPools.length > 0) await this.#sendToFargate(onPools);
    const toAgents = all.filter((c) => !isFargatePool(c.agentId));
    if (toAgents.length === 0) return;
    const agents = new Map(known);
    for (const agentId of new Set(toAgents.filter((c) => c.placedWith === undefined).map((c) => c.agentId))) {
      if (agents.has(agentId)) continue;
      const agent = await this.#store.getAgent(agentId);
      if (agent) agents.set(agentId, agent);
    }
    await this.#channel.send(
      // What an agent is sent: the command without what only the control plane reads.
      toAgents.flatMap(({ taskArn: _task, placedWith, ...command }) => {
        const incarnation = placedWith ?? agents.get(command.agentId)?.incarnation;
        if (incarnation === undefined) {
          if (options.skipUnregistered) return [];
          throw new AgentUnreachableError(command.agentId);
        }
        return [
          { agentId: command.agentId, message: { type: AgentMessageType.command, incarnation, command } },
        ];
      }),
    );
  }

  /**
   * A pool's kernels are ECS tasks: a stop is StopTask (a kernel without a task has nothing
   * running to stop). Prepare and start need the session (image, queue): the handlers make them.
   */
  async #sendToFargate(commands: readonly KernelCommand[]): Promise<void> {
    const stops = commands.flatMap((c) =>
      c.action === "stop" && c.taskArn !== undefined
        ? [
            {
              taskArn: c.taskArn,
              ...(c.condition !== undefined ? { condition: c.condition } : {}),
              ...(c.reason !== undefined ? { reason: c.reason } : {}),
            },
          ]
        : [],
    );
    if (stops.length === 0) return;
    if (!this.#fargate) throw new FargateUnavailableError(commands[0]!.agentId);
    await this.#fargate.stop(stops);
  }
}
