/**
 * RunTask's request, checked as ECS checks it before placing anything: the cluster exists, the
 * task definition exists and runs on Fargate, a launch type or a capacity provider strategy (not
 * both), awsvpc networking given, overrides naming containers of the definition and within
 * 8192 characters, a valid Fargate size after overrides, 1–10 tasks, `startedBy` and tags
 * within their limits, a `clientToken` of ECS's alphabet and length. Anything else RunTask
 * accepts and Cairn does not use is ignored.
 */
import { clientError, clusterNotFound, invalidParameter } from "./errors.ts";
import { cpuUnits, isFargateSize, memoryMiB } from "./fargate-sizes.ts";
import { asArray, asObject, optionalString, type Json } from "./input.ts";
import type { CapacityProvider, ContainerOverride, TaskOverrides } from "./task.ts";
import { cpuArchitectureOf, keyValues, type Tag, type TaskDefinition } from "./task-definitions.ts";

export interface StrategyItem {
  readonly capacityProvider: CapacityProvider;
  readonly weight: number;
  readonly base: number;
}

export interface RunPlan {
  readonly cluster: string;
  readonly definition: TaskDefinition;
  readonly count: number;
  /** Undefined for `launchType: FARGATE` (the task has no capacityProviderName). */
  readonly strategy?: readonly StrategyItem[];
  readonly subnets: readonly string[];
  readonly overrides: TaskOverrides;
  readonly cpu: string;
  readonly memory: string;
  readonly startedBy?: string;
  readonly group: string;
  readonly tags: readonly Tag[];
  /** `propagateTags: TASK_DEFINITION`: the definition's tags are added to the task's. */
  readonly propagateTaskDefinitionTags: boolean;
  /** `enableECSManagedTags`: the task is tagged `aws:ecs:clusterName`. */
  readonly managedTags: boolean;
  /** The idempotency token, when the request has one. */
  readonly clientToken?: string;
}

export const MAX_TASKS_PER_RUN = 10;
export const MAX_OVERRIDES_CHARS = 8192;
/** RunTask's `startedBy` (the API reference; StartTask's is 36). */
export const STARTED_BY = /^[A-Za-z0-9_/-]{1,128}$/;
export const TAG_LIMITS = { count: 50, keyChars: 128, valueChars: 256 } as const;
/** RunTask's `clientToken`: up to 64 ASCII characters from 33 to 126 (ECS_Idempotency). */
export const CLIENT_TOKEN = /^[\x21-\x7e]{1,64}$/;

const PROVIDERS: readonly string[] = ["FARGATE", "FARGATE_SPOT"];

export function parseRunTask(
  input: Json,
  lookup: {
    readonly clusterExists: (name: string) => boolean;
    readonly findDefinition: (reference: string) => TaskDefinition | undefined;
    readonly clusterName: (reference: string | undefined) => string;
  },
): RunPlan {
  const cluster = lookup.clusterName(optionalString(input, "cluster"));
  if (!lookup.clusterExists(cluster)) throw clusterNotFound();
  const reference = optionalString(input, "taskDefinition");
  if (reference === undefined) throw invalidParameter("taskDefinition can not be blank.");
  const definition = lookup.findDefinition(reference);
  if (!definition) throw clientError("TaskDefinition not found.");

  const count = input.count ?? 1;
  if (typeof count !== "number" || !Number.isInteger(count) || count < 1 || count > MAX_TASKS_PER_RUN) {
    throw invalidParameter(`count must be between 1 and ${MAX_TASKS_PER_RUN}.`);
  }
  const launchType = optionalString(input, "launchType");
  const rawStrategy = input.capacityProviderStrategy;
  const hasStrategy = Array.isArray(rawStrategy) && rawStrategy.length > 0;
  if (launchType !== undefined && hasStrategy) {
    throw invalidParameter(
      "Specifying both a launch type and capacity provider strategy is not supported. Remove one and try again.",
    );
  }
  // With neither, ECS uses the cluster's default strategy, and with none of those, EC2: the
  // embedded ECS has no container instances, as a Fargate-only cluster has none.
  if (!hasStrategy && launchType !== "FARGATE") {
    throw invalidParameter("No Container Instances were found in your cluster.");
  }
  const strategy = hasStrategy ? parseStrategy(rawStrategy) : undefined;
  // ECS's Fargate capacity providers: "Fargate Spot only supports Linux tasks with the X86_64
  // architecture" (Fargate capacity provider considerations).
  if (
    strategy?.some((i) => i.capacityProvider === "FARGATE_SPOT") &&
    cpuArchitectureOf(definition) === "arm64"
  ) {
    throw invalidParameter(
      "Linux tasks with the ARM64 architecture don't support the Fargate Spot capacity provider.",
    );
  }
  if (!definition.compatibilities.includes("FARGATE")) {
    throw invalidParameter("Task definition does not support launch_type FARGATE.");
  }

  const network = asObject(input.networkConfiguration ?? {}, "networkConfiguration");
  if (network.awsvpcConfiguration === undefined) {
    throw invalidParameter("Network Configuration must be provided when networkMode 'awsvpc' is specified.");
  }
  const vpc = asObject(network.awsvpcConfiguration, "awsvpcConfiguration");
  const subnets = asArray(vpc.subnets ?? [], "subnets").map(String);
  if (subnets.length === 0) throw invalidParameter("subnets can not be empty.");
  if (subnets.length > 16) throw invalidParameter("At most 16 subnets can be specified.");
  const securityGroups = asArray(vpc.securityGroups ?? [], "securityGroups");
  if (securityGroups.length > 5) throw invalidParameter("At most 5 security groups can be specified.");
  const assignPublicIp = optionalString(vpc, "assignPublicIp");
  if (assignPublicIp !== undefined && assignPublicIp !== "ENABLED" && assignPublicIp !== "DISABLED") {
    throw invalidParameter(`assignPublicIp must be ENABLED or DISABLED, not ${assignPublicIp}.`);
  }

  const overrides = parseOverrides(input.overrides, definition);
  const cpu = overrides.cpu !== undefined ? String(cpuUnits(overrides.cpu) ?? overrides.cpu) : definition.cpu;
  const memory =
    overrides.memory !== undefined
      ? String(memoryMiB(overrides.memory) ?? overrides.memory)
      : definition.memory;
  const units = cpu === undefined ? undefined : cpuUnits(cpu);
  const mib = memory === undefined ? undefined : memoryMiB(memory);
  if (units === undefined || mib === undefined || !isFargateSize(units, mib)) {
    throw clientError("No Fargate configuration exists for given values.");
  }

  const startedBy = optionalString(input, "startedBy");
  if (startedBy !== undefined && !STARTED_BY.test(startedBy)) {
    throw invalidParameter(
      "startedBy: up to 128 letters (uppercase and lowercase), numbers, hyphens (-), forward slash (/), and underscores (_) are allowed.",
    );
  }
  const propagateTags = optionalString(input, "propagateTags") ?? "NONE";
  if (propagateTags !== "NONE" && propagateTags !== "TASK_DEFINITION") {
    throw invalidParameter(
      `propagateTags ${propagateTags} is not valid for a standalone task: use TASK_DEFINITION or NONE.`,
    );
  }
  const clientToken = optionalString(input, "clientToken");
  if (clientToken !== undefined && !CLIENT_TOKEN.test(clientToken)) {
    throw invalidParameter(
      "clientToken: up to 64 ASCII characters in the range 33-126 (inclusive) are allowed.",
    );
  }
  const group = optionalString(input, "group") ?? `family:${definition.family}`;
  if (group.length > 255) throw invalidParameter("group can be at most 255 characters.");
  return {
    cluster,
    definition,
    count,
    ...(strategy ? { strategy } : {}),
    subnets,
    overrides,
    cpu: String(units),
    memory: String(mib),
    ...(startedBy !== undefined ? { startedBy } : {}),
    group,
    tags: parseTags(input.tags),
    propagateTaskDefinitionTags: propagateTags === "TASK_DEFINITION",
    managedTags: input.enableECSManagedTags === true,
    ...(clientToken !== undefined ? { clientToken } : {}),
  };
}

function parseStrategy(raw: unknown[]): StrategyItem[] {
  if (raw.length > 20) throw invalidParameter("A capacity provider strategy can contain at most 20 items.");
  const items = raw.map((r, i) => {
    const o = asObject(r, `capacityProviderStrategy[${i}]`);
    const provider = optionalString(o, "capacityProvider");
    if (provider === undefined || !PROVIDERS.includes(provider)) {
      throw invalidParameter(
        "The specified capacity provider strategy cannot contain a capacity provider that is not associated with the cluster. Associate the capacity provider with the cluster or specify a valid capacity provider and try again.",
      );
    }
    const weight = o.weight ?? 0;
    const base = o.base ?? 0;
    if (typeof weight !== "number" || !Number.isInteger(weight) || weight < 0 || weight > 1000) {
      throw invalidParameter("capacityProviderStrategy weight must be between 0 and 1000.");
    }
    if (typeof base !== "number" || !Number.isInteger(base) || base < 0 || base > 100_000) {
      throw invalidParameter("capacityProviderStrategy base must be between 0 and 100000.");
    }
    return { capacityProvider: provider as CapacityProvider, weight, base };
  });
  if (new Set(items.map((i) => i.capacityProvider)).size !== items.length) {
    throw invalidParameter("A capacity provider can appear only once in a capacity provider strategy.");
  }
  if (items.filter((i) => i.base > 0).length > 1) {
    throw invalidParameter("Only one capacity provider in a strategy can have a base defined.");
  }
  if (!items.some((i) => i.weight > 0 || i.base > 0)) {
    throw invalidParameter(
      "At least one capacity provider in the strategy must have a weight greater than 0.",
    );
  }
  return items;
}

function parseOverrides(raw: unknown, definition: TaskDefinition): TaskOverrides {
  if (raw === undefined || raw === null) return { containerOverrides: [] };
  const o = asObject(raw, "overrides");
  if (JSON.stringify(o).length > MAX_OVERRIDES_CHARS) {
    throw invalidParameter(`Container Overrides length must be at most ${MAX_OVERRIDES_CHARS}`);
  }
  const containerOverrides = asArray(o.containerOverrides ?? [], "containerOverrides").map(
    (c, i): ContainerOverride => {
      const co = asObject(c, `containerOverrides[${i}]`);
      const name = optionalString(co, "name");
      if (name === undefined) throw invalidParameter("Container override name can not be blank.");
      if (!definition.containerDefinitions.some((d) => d.name === name)) {
        throw invalidParameter(
          `Override for container named ${name} is not a container in the TaskDefinition.`,
        );
      }
      const command =
        co.command === undefined || co.command === null
          ? undefined
          : asArray(co.command, `${name}.command`).map((v) => {
              if (typeof v !== "string")
                throw invalidParameter(`Override for ${name}: command must be strings.`);
              return v;
            });
      const environment =
        co.environment === undefined ? undefined : keyValues(co.environment, `${name}.environment`);
      for (const field of ["cpu", "memory"] as const) {
        const v = co[field];
        if (v !== undefined && (typeof v !== "number" || !Number.isInteger(v) || v < 0)) {
          throw invalidParameter(`Override for ${name}: ${field} must be a non-negative integer.`);
        }
      }
      return {
        name,
        ...(command !== undefined ? { command } : {}),
        ...(environment !== undefined ? { environment } : {}),
        ...(typeof co.cpu === "number" ? { cpu: co.cpu } : {}),
        ...(typeof co.memory === "number" ? { memory: co.memory } : {}),
      };
    },
  );
  const cpu = optionalString(o, "cpu");
  const memory = optionalString(o, "memory");
  const executionRoleArn = optionalString(o, "executionRoleArn");
  const taskRoleArn = optionalString(o, "taskRoleArn");
  return {
    containerOverrides,
    ...(cpu !== undefined ? { cpu } : {}),
    ...(memory !== undefined ? { memory } : {}),
    ...(executionRoleArn !== undefined ? { executionRoleArn } : {}),
    ...(taskRoleArn !== undefined ? { taskRoleArn } : {}),
  };
}

export function parseTags(raw: unknown): Tag[] {
  if (raw === undefined || raw === null) return [];
  const tags = asArray(raw, "tags").map((t, i) => {
    const o = asObject(t, `tags[${i}]`);
    const key = optionalString(o, "key");
    const value = optionalString(o, "value") ?? "";
    if (key === undefined || key.length < 1 || key.length > TAG_LIMITS.keyChars) {
      throw invalidParameter(`Tag keys must be 1 to ${TAG_LIMITS.keyChars} characters.`);
    }
    if (value.length > TAG_LIMITS.valueChars) {
      throw invalidParameter(`Tag values must be at most ${TAG_LIMITS.valueChars} characters.`);
    }
    if (/^aws:/i.test(key) || /^aws:/i.test(value)) {
      throw invalidParameter("Tag keys and values cannot begin with the reserved prefix aws:.");
    }
    return { key, value };
  });
  if (tags.length > TAG_LIMITS.count) {
    throw invalidParameter(`A resource can have at most ${TAG_LIMITS.count} tags.`);
  }
  if (new Set(tags.map((t) => t.key)).size !== tags.length) {
    throw invalidParameter("Tag keys must be unique.");
  }
  return tags;
}
