/**
 * Registered task definitions by family and revision, with the checks RegisterTaskDefinition
 * makes for what Cairn registers (Fargate: awsvpc, task-level cpu and memory of a valid size,
 * an execution role for awslogs; container names, images, stop timeouts). Each registration is
 * a new revision, as on AWS, even when its content equals the previous one.
 */
import { taskDefinitionArn, type Scope } from "./arns.ts";
import { clientError, invalidParameter } from "./errors.ts";
import { cpuUnits, isFargateSize, memoryMiB } from "./fargate-sizes.ts";
import { asArray, asObject, optionalString, type Json } from "./input.ts";

export interface KeyValue {
  readonly name: string;
  readonly value: string;
}

export interface LogConfiguration {
  readonly logDriver: string;
  readonly options: Readonly<Record<string, string>>;
}

export interface ContainerDefinition {
  readonly name: string;
  readonly image: string;
  readonly essential: boolean;
  readonly command?: readonly string[];
  readonly entryPoint?: readonly string[];
  readonly environment: readonly KeyValue[];
  readonly logConfiguration?: LogConfiguration;
  /** Seconds between SIGTERM and SIGKILL. @default 30 (Fargate) */
  readonly stopTimeout?: number;
  readonly workingDirectory?: string;
  readonly cpu: number;
}

export interface TaskDefinition {
  readonly taskDefinitionArn: string;
  readonly family: string;
  readonly revision: number;
  readonly status: "ACTIVE";
  readonly containerDefinitions: readonly ContainerDefinition[];
  readonly cpu?: string;
  readonly memory?: string;
  readonly networkMode: string;
  readonly requiresCompatibilities: readonly string[];
  readonly compatibilities: readonly string[];
  readonly executionRoleArn?: string;
  readonly taskRoleArn?: string;
  readonly registeredAt: Date;
  readonly volumes: readonly never[];
  readonly placementConstraints: readonly never[];
  /** What the task's image is built for; absent: ECS runs it as X86_64 on LINUX. */
  readonly runtimePlatform?: RuntimePlatform;
}

export interface RuntimePlatform {
  readonly cpuArchitecture: CpuArchitecture;
  readonly operatingSystemFamily: "LINUX";
}

export type CpuArchitecture = "X86_64" | "ARM64";
const CPU_ARCHITECTURES: readonly string[] = ["X86_64", "ARM64"];

/** The architecture a task of `definition` runs on, in the task attribute's words (`ecs.cpu-architecture`). */
export function cpuArchitectureOf(definition: TaskDefinition): "x86_64" | "arm64" {
  return definition.runtimePlatform?.cpuArchitecture === "ARM64" ? "arm64" : "x86_64";
}

export interface Tag {
  readonly key: string;
  readonly value: string;
}

const NAME = /^[A-Za-z0-9_-]{1,255}$/;
/** Fargate's stopTimeout range, in seconds. */
const FARGATE_STOP_TIMEOUT = { min: 2, max: 120 } as const;

export class TaskDefinitions {
  readonly #scope: Scope;
  readonly #clock: () => number;
  readonly #families = new Map<string, TaskDefinition[]>();
  readonly #tags = new Map<string, readonly Tag[]>();

  constructor(scope: Scope, clock: () => number) {
    this.#scope = scope;
    this.#clock = clock;
  }

  register(input: Json, tags: readonly Tag[]): TaskDefinition {
    const family = optionalString(input, "family");
    if (family === undefined || !NAME.test(family)) {
      throw clientError(
        "Family contains invalid characters or is too long: up to 255 letters (uppercase and lowercase), numbers, hyphens and underscores are allowed.",
      );
    }
    const containers = asArray(input.containerDefinitions, "containerDefinitions").map((c, i) =>
      containerDefinition(asObject(c, `containerDefinitions[${i}]`)),
    );
    if (containers.length === 0) throw clientError("Container list cannot be empty.");
    const names = new Set<string>();
    for (const c of containers) {
      if (names.has(c.name)) throw clientError(`Duplicate container name: ${c.name}.`);
      names.add(c.name);
    }
    if (!containers.some((c) => c.essential)) {
      throw clientError("Task definition must have at least one essential container.");
    }
    const requiresCompatibilities = asArray(
      input.requiresCompatibilities ?? [],
      "requiresCompatibilities",
    ).map((v) => String(v));
    const networkMode = optionalString(input, "networkMode") ?? "bridge";
    const cpu = optionalString(input, "cpu");
    const memory = optionalString(input, "memory");
    const executionRoleArn = optionalString(input, "executionRoleArn");
    const taskRoleArn = optionalString(input, "taskRoleArn");
    const runtimePlatform = runtimePlatformOf(input.runtimePlatform);
    if (requiresCompatibilities.includes("FARGATE")) {
      if (networkMode !== "awsvpc") throw clientError("Fargate only supports network mode ‘awsvpc’.");
      if (cpu === undefined) throw clientError("Fargate requires that 'cpu' be defined at the task level.");
      if (memory === undefined)
        throw clientError("Fargate requires that 'memory' be defined at the task level.");
      const units = cpuUnits(cpu);
      const mib = memoryMiB(memory);
      if (units === undefined || mib === undefined || !isFargateSize(units, mib)) {
        throw clientError("No Fargate configuration exists for given values.");
      }
      for (const c of containers) {
        if (c.logConfiguration?.logDriver === "awslogs" && executionRoleArn === undefined) {
          throw clientError(
            "Fargate requires task definition to have execution role ARN to support log driver awslogs.",
          );
        }
        const t = c.stopTimeout;
        if (t !== undefined && (t < FARGATE_STOP_TIMEOUT.min || t > FARGATE_STOP_TIMEOUT.max)) {
          throw clientError(
            `Invalid 'stopTimeout' setting for container '${c.name}': Fargate allows ${FARGATE_STOP_TIMEOUT.min} to ${FARGATE_STOP_TIMEOUT.max} seconds.`,
          );
        }
      }
    }
    const revisions = this.#families.get(family) ?? [];
    const revision = revisions.length + 1;
    const definition: TaskDefinition = {
      taskDefinitionArn: taskDefinitionArn(this.#scope, family, revision),
      family,
      revision,
      status: "ACTIVE",
      containerDefinitions: containers,
      ...(cpu !== undefined ? { cpu: String(cpuUnits(cpu) ?? cpu) } : {}),
      ...(memory !== undefined ? { memory: String(memoryMiB(memory) ?? memory) } : {}),
      networkMode,
      requiresCompatibilities,
      compatibilities: networkMode === "awsvpc" ? ["EC2", "FARGATE"] : ["EC2"],
      ...(executionRoleArn !== undefined ? { executionRoleArn } : {}),
      ...(taskRoleArn !== undefined ? { taskRoleArn } : {}),
      registeredAt: new Date(this.#clock()),
      volumes: [],
      placementConstraints: [],
      ...(runtimePlatform !== undefined ? { runtimePlatform } : {}),
    };
    revisions.push(definition);
    this.#families.set(family, revisions);
    this.#tags.set(definition.taskDefinitionArn, tags);
    return definition;
  }

  /** `family` (its latest revision), `family:revision` or the ARN; undefined when there is none. */
  find(reference: string): TaskDefinition | undefined {
    const arn = /^arn:aws[a-z-]*:ecs:[^:]*:[^:]*:task-definition\/(.+)$/.exec(reference);
    const name = arn ? arn[1]! : reference;
    const [family, revisionText, extra] = name.split(":");
    if (family === undefined || extra !== undefined) return undefined;
    const revisions = this.#families.get(family);
    if (!revisions || revisions.length === 0) return undefined;
    if (revisionText === undefined) return revisions.at(-1);
    if (!/^\d+$/.test(revisionText)) return undefined;
    return revisions[Number(revisionText) - 1];
  }

  tagsOf(arn: string): readonly Tag[] {
    return this.#tags.get(arn) ?? [];
  }
}

/**
 * `runtimePlatform`: cpuArchitecture X86_64 or ARM64 (ECS's default X86_64), operatingSystemFamily
 * LINUX (the default). The Windows families exist on ECS, but the embedded ECS runs its tasks as
 * local processes and refuses what it cannot run.
 */
function runtimePlatformOf(raw: unknown): RuntimePlatform | undefined {
  if (raw === undefined || raw === null) return undefined;
  const o = asObject(raw, "runtimePlatform");
  const cpuArchitecture = optionalString(o, "cpuArchitecture") ?? "X86_64";
  if (!CPU_ARCHITECTURES.includes(cpuArchitecture)) {
    throw clientError(
      `runtimePlatform.cpuArchitecture ${cpuArchitecture} is not valid: use X86_64 or ARM64.`,
    );
  }
  const family = optionalString(o, "operatingSystemFamily") ?? "LINUX";
  if (family !== "LINUX") {
    throw clientError(
      `runtimePlatform.operatingSystemFamily ${family}: the embedded ECS runs LINUX tasks only.`,
    );
  }
  return { cpuArchitecture: cpuArchitecture as CpuArchitecture, operatingSystemFamily: "LINUX" };
}

function containerDefinition(c: Json): ContainerDefinition {
  const name = optionalString(c, "name");
  if (name === undefined || !NAME.test(name)) {
    throw clientError(
      "Container name is required: up to 255 letters (uppercase and lowercase), numbers, hyphens and underscores are allowed.",
    );
  }
  const image = optionalString(c, "image");
  if (image === undefined || image === "") throw clientError(`Container.image should not be null or empty.`);
  const strings = (field: string): string[] | undefined =>
    c[field] === undefined || c[field] === null
      ? undefined
      : asArray(c[field], `${name}.${field}`).map((v) => {
          if (typeof v !== "string") throw invalidParameter(`Container ${name}: ${field} must be strings.`);
          return v;
        });
  const command = strings("command");
  const entryPoint = strings("entryPoint");
  const logConfiguration =
    c.logConfiguration === undefined || c.logConfiguration === null
      ? undefined
      : logConfigurationOf(asObject(c.logConfiguration, `${name}.logConfiguration`));
  const stopTimeout = c.stopTimeout;
  if (stopTimeout !== undefined && !Number.isInteger(stopTimeout)) {
    throw invalidParameter(`Container ${name}: stopTimeout must be an integer number of seconds.`);
  }
  const workingDirectory = optionalString(c, "workingDirectory");
  return {
    name,
    image,
    essential: c.essential !== false,
    ...(command !== undefined ? { command } : {}),
    ...(entryPoint !== undefined ? { entryPoint } : {}),
    environment: keyValues(c.environment, `${name}.environment`),
    ...(logConfiguration ? { logConfiguration } : {}),
    ...(typeof stopTimeout === "number" ? { stopTimeout } : {}),
    ...(workingDirectory !== undefined ? { workingDirectory } : {}),
    cpu: typeof c.cpu === "number" ? c.cpu : 0,
  };
}

function logConfigurationOf(l: Json): LogConfiguration {
  const logDriver = optionalString(l, "logDriver");
  if (logDriver === undefined) throw clientError("Log driver is required in logConfiguration.");
  const options: Record<string, string> = {};
  for (const [k, v] of Object.entries(asObject(l.options ?? {}, "logConfiguration.options"))) {
    if (typeof v !== "string") throw invalidParameter(`logConfiguration option ${k} must be a string.`);
    options[k] = v;
  }
  if (logDriver === "awslogs") {
    for (const required of ["awslogs-group", "awslogs-region"]) {
      if (options[required] === undefined) {
        throw clientError(`Log driver awslogs requires options: ${required}`);
      }
    }
  }
  return { logDriver, options };
}

export function keyValues(value: unknown, where: string): KeyValue[] {
  if (value === undefined || value === null) return [];
  return asArray(value, where).map((e, i) => {
    const o = asObject(e, `${where}[${i}]`);
    if (typeof o.name !== "string" || o.name === "") {
      throw invalidParameter(`${where}[${i}]: an environment variable needs a name.`);
    }
    return { name: o.name, value: typeof o.value === "string" ? o.value : "" };
  });
}
