/**
 * Kernel commands as ECS calls: a Fargate kernel has no agent to prepare, start or
 * stop it, so the lifecycle handlers ask ECS through the FargateTasksPort instead.
 *
 * - prepare: a task definition for the session's image and size (registered once per content:
 *   nothing of a session or run is in it, so every run with the same image, size, roles and log
 *   group shares one); there is no agent to report the kernel PREPARED, so the handler patches it so.
 * - start: one task per kernel, all of a gang or none (runGang), each RunTask with a client token
 *   (ecsClientToken) so that a start repeated after a lost answer gets the same task back
 *   instead of a second one; the handler records each kernel's task (Kernel.taskArn).
 * - stop: StopTask with the stop command's condition in its reason (ecsStopReason), which the
 *   task's STOPPED event carries back as the kernel's condition, as an agent would report it.
 *
 * How the tasks go on is ECS's own events (core/ecs-task-events.ts), read by the coordinator.
 */
import type { FargateConfig } from "../config.ts";
import {
  ecsClientToken,
  ecsStopReason,
  ecsTaskIdentity,
  fargateKernelEnvironment,
} from "../core/ecs-task-events.ts";
import { DEFAULT_FARGATE_ARCHITECTURE, type FargateArchitecture } from "../core/fargate.ts";
import { FARGATE_LOG_STREAM_PREFIX } from "../core/fargate-logs.ts";
import type { Kernel, QueueFargateSettings, SessionWithKernels } from "../core/model.ts";
import { sessionPlacement } from "../core/sessions.ts";
import type { TerminationCondition } from "../core/status.ts";
import type {
  FargateCpuArchitecture,
  FargateRunRequest,
  FargateTaskDefinitionSpec,
  FargateTasksPort,
} from "../core/ports/fargate-tasks.ts";

/** A stop for a Fargate kernel: its task, and what the stop command says. */
export interface FargateStop {
  readonly taskArn: string;
  readonly condition?: TerminationCondition;
  readonly reason?: string;
}

export type FargateStartOutcome =
  | {
      readonly ok: true;
      readonly tasks: readonly { readonly kernelIndex: number; readonly taskArn: string }[];
    }
  /** Why the gang did not start, in ECS's words, naming the kernel (none of its tasks runs). */
  | { readonly ok: false; readonly reason: string };

/** A spec's architecture in ECS's words (`runtimePlatform.cpuArchitecture`). */
const ECS_CPU_ARCHITECTURE: Record<FargateArchitecture, FargateCpuArchitecture> = {
  x86_64: "X86_64",
  arm64: "ARM64",
};

/** Fargate has 1024 CPU units per vCPU. */
const CPU_UNITS_PER_VCPU = 1024;

export class FargateKernels {
  readonly #port: FargateTasksPort;
  readonly #config: FargateConfig;

  constructor(port: FargateTasksPort, config: FargateConfig) {
    this.#port = port;
    this.#config = config;
  }

  /**
   * The task definition of a session's kernels: the image and size are the session's, and the
   * logs go to the stack's kernel log group under the constant prefix (core/fargate-logs.ts:
   * awslogs names a task's stream after the task, and `cairn logs` finds it by the run's task).
   * Nothing in it names the session or the run, so equal content is one registration.
   */
  taskDefinition(target: SessionWithKernels, kernel: Kernel): Promise<string> {
    return this.#port.ensureTaskDefinition(this.#definitionSpec(target, kernel));
  }

  #definitionSpec({ session }: SessionWithKernels, kernel: Kernel): FargateTaskDefinitionSpec {
    const image = session.spec.image;
    if (image === undefined)
      throw new Error(`session ${session.id}: spec.image is required with executor fargate`);
    return {
      image,
      cpu: kernel.resources.cpu * CPU_UNITS_PER_VCPU,
      memoryMiB: kernel.resources.memoryMiB,
      logGroup: this.#config.logGroupName,
      logStreamPrefix: FARGATE_LOG_STREAM_PREFIX,
      executionRoleArn: this.#config.executionRoleArn,
      taskRoleArn: this.#config.taskRoleArn,
      cpuArchitecture: ECS_CPU_ARCHITECTURE[session.spec.architecture ?? DEFAULT_FARGATE_ARCHITECTURE],
    };
  }

  /**
   * Starts every kernel of the session that has no task yet, all or none. A kernel's task is
   * the kernel's definition, its command and environment, the queue's capacity provider and the
   * stack's network; startedBy and tags name the kernel (ecsTaskIdentity).
   */
  async start(target: SessionWithKernels, settings: QueueFargateSettings): Promise<FargateStartOutcome> {
    const { session, kernels } = target;
    const requests: FargateRunRequest[] = [];
    for (const kernel of kernels) {
      if (kernel.taskArn !== undefined) continue;
      const identity = ecsTaskIdentity({
        sessionId: session.id,
        kernelIndex: kernel.index,
        runIndex: session.runIndex,
        placement: sessionPlacement(session),
      });
      requests.push({
        kernelIndex: kernel.index,
        taskDefinitionArn: await this.taskDefinition(target, kernel),
        command: [...session.spec.command],
        // The spec's, then what an agent gives its kernels, then the identity: last wins, so a
        // spec cannot pose as another kernel.
        environment: [
          ...Object.entries(session.spec.env).map(([name, value]) => ({ name, value })),
          ...fargateKernelEnvironment({
            sessionId: session.id,
            kernelIndex: kernel.index,
            numKernels: kernels.length,
            ...(session.task ? { task: session.task } : {}),
          }),
          ...identity.environment,
        ],
        cpu: kernel.resources.cpu * CPU_UNITS_PER_VCPU,
        memoryMiB: kernel.resources.memoryMiB,
        capacity: settings.capacityProvider,
        network: {
          subnets: this.#config.subnets,
          securityGroups: this.#config.securityGroups,
          assignPublicIp: this.#config.assignPublicIp,
        },
        startedBy: identity.startedBy,
        clientToken: ecsClientToken({
          sessionId: session.id,
          kernelIndex: kernel.index,
          runIndex: session.runIndex,
          placement: sessionPlacement(session),
          startTry: session.tries,
        }),
        tags: identity.tags,
      });
    }
    if (requests.length === 0) return { ok: true, tasks: [] };
    const result = await this.#port.runGang(
      requests,
      `session ${session.id}: another kernel of the gang could not start`,
    );
    if (result.failures.length > 0) {
      return {
        ok: false,
        reason: result.failures.map((f) => `kernel ${f.kernelIndex}: ${f.reason}`).join("; "),
      };
    }
    return { ok: true, tasks: result.started };
  }

  /** StopTask for each; a task already stopped counts as stopped. */
  stop(stops: readonly FargateStop[]): Promise<void> {
    return this.#port.stopTasks(
      stops.map((s) => ({
        taskArn: s.taskArn,
        reason: ecsStopReason({
          ...(s.condition !== undefined ? { condition: s.condition } : {}),
          ...(s.reason !== undefined ? { reason: s.reason } : {}),
        }),
      })),
    );
  }
}
