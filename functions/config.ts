/**
 * Runtime configuration of the Lambda functions, read from the environment that the CDK stack
 * (or the embedded runtime) sets. Passed in, never read at import time.
 */
import { CoreError } from "./core/errors.ts";
import { FILTER_FAILURE_MODES, type FilterFailureMode } from "./core/submission-filter.ts";

export interface CairnConfig {
  readonly tableName: string;
  readonly eventBusName: string;
  readonly stateMachineArn: string;
  /** Shards of the status indexes (must match the table the stack created). */
  readonly shards: number;
  /** An agent whose last heartbeat is older than this is treated as lost. */
  readonly agentTimeoutMs: number;
  /** Most targets a handler pass takes in one run. */
  readonly batchLimit: number;
  /** How long a kernel gets between SIGTERM and SIGKILL when its session terminates. */
  readonly terminationGraceMs: number;
  readonly logLevel: "info" | "warn" | "error";
  /** How long retry policies, queues and the retry config are cached by a function. */
  readonly retryCacheMs: number;
  /**
   * The sweep asks Step Functions about a session's execution only once its stage was entered
   * this long ago (a younger one is still being started or completed), and repairs it if gone.
   */
  readonly repairAfterMs: number;
  /** Agent queues are named `<prefix><agentId>` (docs/agents.md). */
  readonly agentQueuePrefix: string;
  /**
   * Ended sessions, their runs, finished jobs and lost agents are deleted this many days after
   * their end (at least 90: a session's id names its execution, and Step Functions keeps a
   * closed execution's name that long).
   */
  readonly retentionDays: number;
  /** Where kernels run as ECS tasks on Fargate; absent when the stack has no Fargate executor. */
  readonly fargate?: FargateConfig;
  /**
   * The deployment and route lifecycles' state machines (Backend.AI's BEP-1030): set for the function that
   * starts their executions, absent elsewhere.
   */
  readonly familyStateMachines?: FamilyStateMachines;
  /** The administrator's submission filter (HPC Pack's Validating): absent, submissions are not filtered. */
  readonly submissionFilter?: SubmissionFilterConfig;
}

export interface SubmissionFilterConfig {
  /** A Lambda function's ARN (on AWS), or a local module whose default export is the filter. */
  readonly target:
    | { readonly kind: "lambda"; readonly functionArn: string }
    | { readonly kind: "module"; readonly path: string };
  /** How long the coordinator waits for an answer; past it, the filter failed. */
  readonly timeoutMs: number;
  /** A failed filter (an error, a timeout, a malformed answer): `accept` fails open, `reject` closed. */
  readonly onFailure: FilterFailureMode;
}

export interface FamilyStateMachines {
  readonly deploymentArn: string;
  readonly routeArn: string;
}

/** The Fargate executor's cluster, networking and roles (lib/fargate.ts sets them). */
export interface FargateConfig {
  readonly clusterArn: string;
  /** awsvpc subnets of every task (1 to 16, RunTask's limit). */
  readonly subnets: readonly string[];
  /** awsvpc security groups of every task (1 to 5, RunTask's limit). */
  readonly securityGroups: readonly string[];
  readonly assignPublicIp: boolean;
  /** The role ECS pulls images and ships logs with (a task definition's executionRoleArn). */
  readonly executionRoleArn: string;
  /** The role a kernel's code runs as (a task definition's taskRoleArn). */
  readonly taskRoleArn: string;
  /** The `awslogs` driver's group: the kernel log group `cairn logs` reads. */
  readonly logGroupName: string;
  /** The capacity providers the cluster has, of FARGATE and FARGATE_SPOT. */
  readonly capacityProviders: readonly FargateCapacityProvider[];
}

export const FARGATE_CAPACITY_PROVIDERS = ["FARGATE", "FARGATE_SPOT"] as const;
export type FargateCapacityProvider = (typeof FARGATE_CAPACITY_PROVIDERS)[number];

/** A setting missing or malformed: the same environment is refused again (CoreError: never retryable). */
export class ConfigError extends CoreError {
  override readonly name = "ConfigError";
  readonly code = "CONFIG";
}

export function loadConfig(env: Readonly<Record<string, string | undefined>> = process.env): CairnConfig {
  const required = (key: string): string => {
    const value = env[key];
    if (!value) throw new ConfigError(`environment variable ${key} is required`);
    return value;
  };
  const int = (key: string, fallback: number): number => {
    const raw = env[key];
    if (raw === undefined || raw === "") return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value <= 0) {
      throw new ConfigError(`environment variable ${key} must be a positive integer, got "${raw}"`);
    }
    return value;
  };
  return {
    tableName: required("CAIRN_TABLE_NAME"),
    eventBusName: required("CAIRN_EVENT_BUS_NAME"),
    stateMachineArn: required("CAIRN_STATE_MACHINE_ARN"),
    shards: int("CAIRN_SHARDS", 4),
    agentTimeoutMs: int("CAIRN_AGENT_TIMEOUT_MS", 30_000),
    batchLimit: int("CAIRN_BATCH_LIMIT", 200),
    terminationGraceMs: int("CAIRN_TERMINATION_GRACE_MS", 5_000),
    logLevel: logLevel(env["CAIRN_LOG_LEVEL"]),
    retryCacheMs: int("CAIRN_RETRY_CACHE_MS", 5_000),
    repairAfterMs: int("CAIRN_REPAIR_AFTER_MS", 60_000),
    agentQueuePrefix: queuePrefix(env["CAIRN_AGENT_QUEUE_PREFIX"]),
    retentionDays: retentionDays(int("CAIRN_RETENTION_DAYS", MIN_RETENTION_DAYS)),
    ...fargate(env),
    ...familyStateMachines(env),
    ...submissionFilter(env, int),
  };
}

/**
 * The submission filter: CAIRN_SUBMISSION_FILTER_ARN (a Lambda function) or
 * CAIRN_SUBMISSION_FILTER_MODULE (a local module, the embedded runtime), with its timeout
 * (default 5000 ms) and failure mode (default reject: fail-closed).
 */
function submissionFilter(
  env: Readonly<Record<string, string | undefined>>,
  int: (key: string, fallback: number) => number,
): { submissionFilter?: SubmissionFilterConfig } {
  const functionArn = env["CAIRN_SUBMISSION_FILTER_ARN"] ?? "";
  const path = env["CAIRN_SUBMISSION_FILTER_MODULE"] ?? "";
  if (functionArn === "" && path === "") return {};
  if (functionArn !== "" && path !== "") {
    throw new ConfigError(
      "environment variables CAIRN_SUBMISSION_FILTER_ARN and CAIRN_SUBMISSION_FILTER_MODULE are exclusive: set one",
    );
  }
  if (
    functionArn !== "" &&
    !/^arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:function:[\w-]{1,64}(:[\w$-]+)?$/.test(functionArn)
  ) {
    throw new ConfigError(
      `environment variable CAIRN_SUBMISSION_FILTER_ARN must be a Lambda function ARN, got "${functionArn}"`,
    );
  }
  const onFailure = env["CAIRN_SUBMISSION_FILTER_ON_FAILURE"] || "reject";
  if (!(FILTER_FAILURE_MODES as readonly string[]).includes(onFailure)) {
    throw new ConfigError(
      `environment variable CAIRN_SUBMISSION_FILTER_ON_FAILURE must be accept or reject, got "${onFailure}"`,
    );
  }
  return {
    submissionFilter: {
      target: functionArn !== "" ? { kind: "lambda", functionArn } : { kind: "module", path },
      timeoutMs: int("CAIRN_SUBMISSION_FILTER_TIMEOUT_MS", 5_000),
      onFailure: onFailure as FilterFailureMode,
    },
  };
}

/** Both family state machines' ARNs, or neither. */
function familyStateMachines(env: Readonly<Record<string, string | undefined>>): {
  familyStateMachines?: FamilyStateMachines;
} {
  const deploymentArn = env["CAIRN_DEPLOYMENT_STATE_MACHINE_ARN"] ?? "";
  const routeArn = env["CAIRN_ROUTE_STATE_MACHINE_ARN"] ?? "";
  if (deploymentArn === "" && routeArn === "") return {};
  if (deploymentArn === "" || routeArn === "") {
    throw new ConfigError(
      "environment variables CAIRN_DEPLOYMENT_STATE_MACHINE_ARN and CAIRN_ROUTE_STATE_MACHINE_ARN are set together or not at all",
    );
  }
  return { familyStateMachines: { deploymentArn, routeArn } };
}

/**
 * The Fargate executor's settings: all of them when CAIRN_FARGATE_CLUSTER_ARN is set, none
 * otherwise.
 */
function fargate(env: Readonly<Record<string, string | undefined>>): { fargate?: FargateConfig } {
  const clusterArn = env["CAIRN_FARGATE_CLUSTER_ARN"];
  if (clusterArn === undefined || clusterArn === "") return {};
  const required = (key: string, pattern: RegExp, rule: string): string => {
    const value = env[key];
    if (!value) {
      throw new ConfigError(`environment variable ${key} is required when CAIRN_FARGATE_CLUSTER_ARN is set`);
    }
    if (!pattern.test(value))
      throw new ConfigError(`environment variable ${key} must be ${rule}, got "${value}"`);
    return value;
  };
  const list = (key: string, item: RegExp, rule: string, max: number): string[] => {
    const values = required(key, /./, "").split(",");
    if (values.length > max || values.some((v) => !item.test(v))) {
      throw new ConfigError(
        `environment variable ${key} must be 1 to ${max} comma-separated ${rule}, got "${env[key]}"`,
      );
    }
    return values;
  };
  const roleArn = /^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@/-]+$/;
  const providers = list(
    "CAIRN_FARGATE_CAPACITY_PROVIDERS",
    /^(FARGATE|FARGATE_SPOT)$/,
    "of FARGATE and FARGATE_SPOT",
    2,
  );
  if (new Set(providers).size !== providers.length) {
    throw new ConfigError(
      `environment variable CAIRN_FARGATE_CAPACITY_PROVIDERS names a capacity provider twice: "${env["CAIRN_FARGATE_CAPACITY_PROVIDERS"]}"`,
    );
  }
  const publicIp = env["CAIRN_FARGATE_ASSIGN_PUBLIC_IP"] ?? "false";
  if (publicIp !== "true" && publicIp !== "false") {
    throw new ConfigError(
      `environment variable CAIRN_FARGATE_ASSIGN_PUBLIC_IP must be true or false, got "${publicIp}"`,
    );
  }
  return {
    fargate: {
      clusterArn: required(
        "CAIRN_FARGATE_CLUSTER_ARN",
        /^arn:aws[a-z-]*:ecs:[a-z0-9-]+:\d{12}:cluster\/[A-Za-z0-9_-]{1,255}$/,
        "an ECS cluster ARN",
      ),
      subnets: list("CAIRN_FARGATE_SUBNETS", /^subnet-[0-9a-f]+$/, "subnet ids", 16),
      securityGroups: list("CAIRN_FARGATE_SECURITY_GROUPS", /^sg-[0-9a-f]+$/, "security group ids", 5),
      assignPublicIp: publicIp === "true",
      executionRoleArn: required("CAIRN_FARGATE_EXECUTION_ROLE_ARN", roleArn, "an IAM role ARN"),
      taskRoleArn: required("CAIRN_FARGATE_TASK_ROLE_ARN", roleArn, "an IAM role ARN"),
      logGroupName: required("CAIRN_FARGATE_LOG_GROUP_NAME", /^[\w#/.-]{1,512}$/, "a log group name"),
      capacityProviders: providers as FargateCapacityProvider[],
    },
  };
}

/** Step Functions refuses a closed execution's name for 90 days; a session's id names its execution. */
export const MIN_RETENTION_DAYS = 90;
export const MAX_RETENTION_DAYS = 3650;

function retentionDays(days: number): number {
  if (days < MIN_RETENTION_DAYS || days > MAX_RETENTION_DAYS) {
    throw new ConfigError(
      `environment variable CAIRN_RETENTION_DAYS must be from ${MIN_RETENTION_DAYS} to ${MAX_RETENTION_DAYS} (a session's id names its execution, and Step Functions keeps a closed execution's name 90 days), got ${days}`,
    );
  }
  return days;
}

function logLevel(raw: string | undefined): CairnConfig["logLevel"] {
  if (raw === undefined || raw === "") return "info";
  if (raw === "info" || raw === "warn" || raw === "error") return raw;
  throw new ConfigError(`environment variable CAIRN_LOG_LEVEL must be info, warn or error, got "${raw}"`);
}

/** SQS names are 1 to 80 of letters, digits, '-' and '_'; agent ids take up to 40 of them. */
function queuePrefix(raw: string | undefined): string {
  if (raw === undefined || raw === "") return "cairn-agent-";
  if (!/^[A-Za-z0-9_-]{1,40}$/.test(raw)) {
    throw new ConfigError(
      `environment variable CAIRN_AGENT_QUEUE_PREFIX must be 1 to 40 of letters, digits, '-' and '_', got "${raw}"`,
    );
  }
  return raw;
}
