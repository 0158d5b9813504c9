/**
 * The Fargate executor's port: kernels as ECS tasks. The application asks for a task
 * definition for an image and size, starts kernels' tasks (one task per kernel, all-or-nothing
 * for a gang) and stops them; how a task's life is reported back is ECS's own events
 * (functions/core/ecs-task-events.ts), not this port. Implemented by
 * functions/adapters/ecs/fargate-tasks.ts.
 */

/** Fargate capacity: on demand, or Spot (cheaper, interrupted with a two-minute warning). */
export type FargateCapacity = "FARGATE" | "FARGATE_SPOT";

/** `runtimePlatform.cpuArchitecture` of a Fargate task definition. */
export type FargateCpuArchitecture = "X86_64" | "ARM64";

export interface FargateTaskDefinitionSpec {
  /** The kernel container's image. */
  readonly image: string;
  /** Task CPU units (1024 = 1 vCPU); with memoryMiB, one of Fargate's sizes. */
  readonly cpu: number;
  readonly memoryMiB: number;
  /** awslogs: the stack's kernel log group and the stream prefix (`<prefix>/kernel/<task id>`). */
  readonly logGroup: string;
  readonly logStreamPrefix: string;
  /** Pulls the image and writes the logs; required by Fargate for awslogs. */
  readonly executionRoleArn?: string;
  /** The kernel's own AWS identity. @default none */
  readonly taskRoleArn?: string;
  /**
   * The CPU architecture the image is built for (the task definition's `runtimePlatform`):
   * Fargate runs an arm64 image on Graviton only when the definition says ARM64.
   * @default "X86_64" (ECS's own default)
   */
  readonly cpuArchitecture?: FargateCpuArchitecture;
  /**
   * Families are `<familyPrefix>-<12 hex digits of the content hash>`; the stack grants RunTask
   * on `cairn-*` families only. @default "cairn"
   */
  readonly familyPrefix?: string;
}

export interface FargateRunRequest {
  /** Which kernel of the session the task runs; results are reported by it. */
  readonly kernelIndex: number;
  readonly taskDefinitionArn: string;
  /** The kernel container's command (replaces the image's). */
  readonly command: readonly string[];
  /** The kernel container's environment: the spec's, then Cairn's identity (CAIRN_*), last wins. */
  readonly environment: readonly { readonly name: string; readonly value: string }[];
  /** Task-level size overrides, when the kernel's differs from the definition's. */
  readonly cpu?: number;
  readonly memoryMiB?: number;
  readonly capacity: FargateCapacity;
  readonly network: {
    readonly subnets: readonly string[];
    readonly securityGroups: readonly string[];
    readonly assignPublicIp: boolean;
  };
  /** Names the session (ListTasks filters by it); ECS allows 36 characters safely. */
  readonly startedBy: string;
  /**
   * RunTask's idempotency token (core/ecs-task-events.ts `ecsClientToken`): the same request
   * sent again with it starts no second task, ECS answers with the first one.
   */
  readonly clientToken: string;
  readonly tags: readonly { readonly key: string; readonly value: string }[];
}

export interface FargateRunFailure {
  readonly kernelIndex: number;
  /** ECS's words: an exception's `<name>: <message>` or a RunTask failure's reason. */
  readonly reason: string;
  /** Whether asking again later may succeed (capacity, throttling, a service fault). */
  readonly retryable: boolean;
}

export interface FargateRunResult {
  readonly started: readonly { readonly kernelIndex: number; readonly taskArn: string }[];
  readonly failures: readonly FargateRunFailure[];
}

export interface FargateGangResult extends FargateRunResult {
  /** The tasks of the gang that had started and were stopped because another member failed. */
  readonly rolledBack: readonly string[];
}

export interface FargateStopRequest {
  readonly taskArn: string;
  /** StopTask's reason (ECS keeps 255 characters; longer ones are cut). */
  readonly reason: string;
}

export interface FargateTasksPort {
  /**
   * The ARN of a task definition with exactly this content: the registered one when it exists
   * (same content, same family), else a new registration. Cached per process.
   */
  ensureTaskDefinition(spec: FargateTaskDefinitionSpec): Promise<string>;
  /** One RunTask per request; each kernel's outcome on its own. */
  runTasks(requests: readonly FargateRunRequest[]): Promise<FargateRunResult>;
  /**
   * All or nothing: when any member cannot be started, the members that were are stopped, and
   * `started` is empty. Throws only when a rollback stop fails (a split gang must not pass
   * silently).
   */
  runGang(requests: readonly FargateRunRequest[], rollbackReason: string): Promise<FargateGangResult>;
  /** StopTask each; a task already stopped (or long gone) counts as stopped. */
  stopTasks(requests: readonly FargateStopRequest[]): Promise<void>;
}
