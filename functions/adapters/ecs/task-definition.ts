/**
 * The task definition Cairn registers for a kernel image and size, and its content hash: the
 * family is `<prefix>-<hash12>`, so equal content always lands in the same family (and reuses
 * its registration) while any change is a new family.
 */
import { createHash } from "node:crypto";
import type { RegisterTaskDefinitionCommandInput } from "@aws-sdk/client-ecs";
import type { FargateTaskDefinitionSpec } from "../../core/ports/fargate-tasks.ts";
import { KERNEL_CONTAINER_NAME } from "../../core/ecs-task-events.ts";

/**
 * The kernel's container name in every Cairn task: events name the kernel container by it, and
 * awslogs names its stream `<prefix>/kernel/<task id>` (core/fargate-logs.ts).
 */
export const KERNEL_CONTAINER = KERNEL_CONTAINER_NAME;
export const DEFAULT_FAMILY_PREFIX = "cairn";
export const HASH_TAG = "cairn:task-definition-hash";
/** ECS's default when a definition names no `runtimePlatform`. */
export const DEFAULT_CPU_ARCHITECTURE = "X86_64";

export interface PlannedDefinition {
  readonly family: string;
  readonly hash: string;
  readonly input: RegisterTaskDefinitionCommandInput;
}

export function planTaskDefinition(spec: FargateTaskDefinitionSpec, region: string): PlannedDefinition {
  const content: Omit<RegisterTaskDefinitionCommandInput, "family" | "tags"> = {
    requiresCompatibilities: ["FARGATE"],
    networkMode: "awsvpc",
    cpu: String(spec.cpu),
    memory: String(spec.memoryMiB),
    // Always stated, so that an arm64 image is never started on x86_64 hosts by default.
    runtimePlatform: {
      cpuArchitecture: spec.cpuArchitecture ?? DEFAULT_CPU_ARCHITECTURE,
      operatingSystemFamily: "LINUX",
    },
    ...(spec.executionRoleArn !== undefined ? { executionRoleArn: spec.executionRoleArn } : {}),
    ...(spec.taskRoleArn !== undefined ? { taskRoleArn: spec.taskRoleArn } : {}),
    containerDefinitions: [
      {
        name: KERNEL_CONTAINER,
        image: spec.image,
        essential: true,
        logConfiguration: {
          logDriver: "awslogs",
          options: {
            "awslogs-group": spec.logGroup,
            "awslogs-region": region,
            "awslogs-stream-prefix": spec.logStreamPrefix,
          },
        },
      },
    ],
  };
  const hash = createHash("sha256").update(canonicalJson(content)).digest("hex");
  const family = `${spec.familyPrefix ?? DEFAULT_FAMILY_PREFIX}-${hash.slice(0, 12)}`;
  return { family, hash, input: { family, ...content, tags: [{ key: HASH_TAG, value: hash }] } };
}

/** JSON with keys sorted at every level, so equal content hashes equally. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}
