/**
 * Runtime configuration of the Lambda functions, read from the environment that the CDK stack
 * (or the embedded runtime) sets. Passed in, never read at import time.
 */
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
}

export class ConfigError extends Error {
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
  };
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
