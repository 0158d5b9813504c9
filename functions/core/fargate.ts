/**
 * Kernels as ECS tasks on Fargate, for work that needs no host of its own: which executor runs a spec's kernels, and the task
 * sizes Fargate accepts. A size Fargate would refuse is refused when the spec is submitted, with
 * the sizes it would accept, instead of when RunTask fails long after the session was queued.
 */
import type { ValidationIssue } from "./validation-issue.ts";

export const Executor = { agent: "agent", fargate: "fargate" } as const;
export type Executor = (typeof Executor)[keyof typeof Executor];
export const EXECUTORS = Object.values(Executor);

/** Specs written before executors existed have none: their kernels run on agents. */
export const DEFAULT_EXECUTOR: Executor = Executor.agent;

export function executorOf(spec: { readonly executor?: Executor }): Executor {
  return spec.executor ?? DEFAULT_EXECUTOR;
}

/**
 * The CPU architectures a Fargate kernel's image may be built for: an arm64 image runs on
 * Graviton (ECS's `runtimePlatform.cpuArchitecture` ARM64), which Fargate Spot does not offer.
 */
export const FargateArchitecture = { x86_64: "x86_64", arm64: "arm64" } as const;
export type FargateArchitecture = (typeof FargateArchitecture)[keyof typeof FargateArchitecture];
export const FARGATE_ARCHITECTURES = Object.values(FargateArchitecture);
/** Specs without one run as ECS runs a task definition without `runtimePlatform`: on x86_64. */
export const DEFAULT_FARGATE_ARCHITECTURE: FargateArchitecture = FargateArchitecture.x86_64;

/**
 * ECS's own rule for `image`: up to 255 of letters, digits, `-`, `_`, `:`, `.`, `/`, `#` before an
 * optional `@sha256:` digest of 64 hex digits (ContainerDefinition `image`,
 * https://docs.aws.amazon.com/AmazonECS/latest/APIReference/API_ContainerDefinition.html).
 */
export const IMAGE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:/#-]{0,254}(@sha256:[A-Fa-f0-9]{64})?$/;
export const IMAGE_PATTERN_MESSAGE =
  "must be a container image reference: repository[:tag] or repository@sha256:<64 hex digits>, " +
  "up to 255 of letters, digits, '-', '_', ':', '.', '/', '#'";

/**
 * Fargate's valid task sizes on Linux, in Cairn's units: vCPU → the memory sizes in MiB. From
 * "Troubleshoot Amazon ECS task definition invalid CPU or memory errors",
 * https://docs.aws.amazon.com/AmazonECS/latest/userguide/task-cpu-memory-error.html (8 and 16 vCPU
 * need Linux platform version 1.4.0 or later, the default). 0.25 vCPU is not a range: 1536 is refused.
 */
export const FARGATE_TASK_SIZES: readonly { readonly cpu: number; readonly memoryMiB: readonly number[] }[] =
  [
    { cpu: 0.25, memoryMiB: [512, 1024, 2048] },
    { cpu: 0.5, memoryMiB: steps(1024, 4096, 1024) },
    { cpu: 1, memoryMiB: steps(2048, 8192, 1024) },
    { cpu: 2, memoryMiB: steps(4096, 16_384, 1024) },
    { cpu: 4, memoryMiB: steps(8192, 30_720, 1024) },
    { cpu: 8, memoryMiB: steps(16_384, 61_440, 4096) },
    { cpu: 16, memoryMiB: steps(32_768, 122_880, 8192) },
  ];

export const FARGATE_CPUS: readonly number[] = FARGATE_TASK_SIZES.map((size) => size.cpu);

/** The memory sizes Fargate accepts for a task of `cpu` vCPUs; empty when `cpu` is not a Fargate size. */
export function fargateMemoryMiBFor(cpu: number): readonly number[] {
  return FARGATE_TASK_SIZES.find((size) => size.cpu === cpu)?.memoryMiB ?? [];
}

/**
 * What Fargate would refuse in one kernel's resources (a gang's kernels are one task each, so the
 * size applies per kernel), as issues on `resources.cpu` or `resources.memoryMiB`.
 */
export function fargateResourceIssues(resources: {
  readonly cpu: number;
  readonly memoryMiB: number;
}): ValidationIssue[] {
  const { cpu, memoryMiB } = resources;
  const valid = fargateMemoryMiBFor(cpu);
  if (valid.length === 0) {
    return [
      {
        path: "resources.cpu",
        message: `${cpu} vCPU is not a Fargate task size: with executor fargate, must be one of ${FARGATE_CPUS.join(", ")}`,
      },
    ];
  }
  if (!valid.includes(memoryMiB)) {
    return [
      {
        path: "resources.memoryMiB",
        message:
          `${memoryMiB} MiB is not a Fargate memory size for ${cpu} vCPU: ` +
          `with executor fargate, must be one of ${valid.join(", ")}`,
      },
    ];
  }
  return [];
}

function steps(min: number, max: number, step: number): number[] {
  return Array.from({ length: (max - min) / step + 1 }, (_, i) => min + i * step);
}
