/**
 * `npm start`'s command line, validated whole before anything starts: every option names its
 * range, and a value outside it (`--sweep-seconds 0` would spin the sweep in a tight loop) is
 * a usage error naming the option, the value and the reason.
 */
import { parseArgs } from "node:util";
import type { RuntimeOptions } from "./runtime.ts";

export const START_USAGE = `usage: npm start -- [--agents N] [--agent-cpu N] [--agent-memory-mib N] [--data-dir DIR]
                      [--sfn-port N] [--events-port N] [--dashboard-port N] [--sweep-seconds N]
                      [--submission-filter PATH] [--submission-filter-timeout-ms N]
                      [--submission-filter-on-failure accept|reject]
                      [--dynamodb-endpoint URL [--table-name NAME]] [--kernel-user NAME] [--verbose]

  --agents N            cairn agent processes to run, 0 to 64 (default 4)
  --agent-cpu N         CPUs each agent offers, 1 to 1024 (default 4)
  --agent-memory-mib N  memory each agent offers in MiB, 1 to 16777216 (default 4096)
  --data-dir DIR        keep sessions and history in DIR across restarts (default: .cairn, in memory)
  --sfn-port N          Step Functions endpoint port, 1 to 65535 (default: a free port)
  --events-port N       EventBridge endpoint port, 1 to 65535 (default: a free port)
  --dashboard-port N    the dashboard's port on 127.0.0.1, 0 to 65535 (default 0: a free port)
  --sweep-seconds N     period of the safety sweep, 1 to 86400 (default 60)
  --submission-filter PATH
                        a module whose default export filters every submission: answers
                        {decision: "accept"}, {decision: "reject", reason} or {decision: "modify", spec}
  --submission-filter-timeout-ms N
                        how long the filter may take, 1 to 900000 (default 5000)
  --submission-filter-on-failure accept|reject
                        a filter that fails, times out or answers nonsense: accept (fail open)
                        or reject (fail closed, the default)
  --dynamodb-endpoint URL
                        keep the table in a DynamoDB Local already running at URL (started with
                        -sharedDb) instead of starting one: no JVM to start and warm up on every
                        start, and the table stays as long as that DynamoDB Local runs; --data-dir
                        then holds only the kernels' files and the runtime file
  --table-name NAME     the table's name there, 3 to 255 of a-z A-Z 0-9 _ . - (default cairn)
  --kernel-user NAME    run kernels as this unprivileged user (npm start must run as root), so
                        they cannot read the runtime file nor the agents' credentials
  --verbose             the functions' info logs too`;

export class StartUsageError extends Error {
  override readonly name = "StartUsageError";
  readonly code = "USAGE";
}

export type StartCommand =
  | { readonly kind: "help" }
  | {
      readonly kind: "start";
      readonly options: RuntimeOptions & { readonly dataDir: string };
      /** The dashboard's port on 127.0.0.1; 0 picks a free one. */
      readonly dashboardPort: number;
    };

/** Whole numbers only, in [min, max]: "1e3", "0x10", "2.5" and " 7" are refused. */
function integer(name: string, raw: string | undefined, min: number, max: number): number | undefined {
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new StartUsageError(`--${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
  }
  return Number(raw);
}

export function parseStartArgs(argv: readonly string[]): StartCommand {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        agents: { type: "string" },
        "agent-cpu": { type: "string" },
        "agent-memory-mib": { type: "string" },
        "data-dir": { type: "string" },
        "sfn-port": { type: "string" },
        "events-port": { type: "string" },
        "dashboard-port": { type: "string" },
        "sweep-seconds": { type: "string" },
        "submission-filter": { type: "string" },
        "submission-filter-timeout-ms": { type: "string" },
        "submission-filter-on-failure": { type: "string" },
        "dynamodb-endpoint": { type: "string" },
        "table-name": { type: "string" },
        "kernel-user": { type: "string" },
        verbose: { type: "boolean", default: false },
        help: { type: "boolean", default: false },
      },
    }));
  } catch (error) {
    throw new StartUsageError((error as Error).message);
  }
  if (values.help) return { kind: "help" };
  const dataDir = values["data-dir"];
  if (dataDir !== undefined && dataDir.trim() === "") {
    throw new StartUsageError(`--data-dir must name a directory, got ""`);
  }
  const agents = integer("agents", values.agents, 0, 64);
  const cpu = integer("agent-cpu", values["agent-cpu"], 1, 1024);
  const memoryMiB = integer("agent-memory-mib", values["agent-memory-mib"], 1, 16 * 1024 * 1024);
  const sfnPort = integer("sfn-port", values["sfn-port"], 1, 65535);
  const eventsPort = integer("events-port", values["events-port"], 1, 65535);
  const dashboardPort = integer("dashboard-port", values["dashboard-port"], 0, 65535);
  const sweepSeconds = integer("sweep-seconds", values["sweep-seconds"], 1, 86_400);
  const filterPath = values["submission-filter"];
  const filterTimeoutMs = integer(
    "submission-filter-timeout-ms",
    values["submission-filter-timeout-ms"],
    1,
    900_000,
  );
  const onFailure = values["submission-filter-on-failure"];
  if (filterPath !== undefined && filterPath.trim() === "") {
    throw new StartUsageError(`--submission-filter must name a module, got ""`);
  }
  if (onFailure !== undefined && onFailure !== "accept" && onFailure !== "reject") {
    throw new StartUsageError(`--submission-filter-on-failure must be accept or reject, got "${onFailure}"`);
  }
  if (filterPath === undefined && (filterTimeoutMs !== undefined || onFailure !== undefined)) {
    throw new StartUsageError(
      "--submission-filter-timeout-ms and --submission-filter-on-failure need --submission-filter",
    );
  }
  const dynamoDb = externalDynamoDb(values["dynamodb-endpoint"], values["table-name"]);
  const kernelUser = values["kernel-user"];
  if (kernelUser !== undefined && kernelUser.trim() === "") {
    throw new StartUsageError(`--kernel-user must name a user, got ""`);
  }
  if (sfnPort !== undefined && sfnPort === eventsPort) {
    throw new StartUsageError(`--sfn-port and --events-port must differ, both are ${sfnPort}`);
  }
  if (dashboardPort !== undefined && dashboardPort !== 0 && [sfnPort, eventsPort].includes(dashboardPort)) {
    throw new StartUsageError(
      `--dashboard-port must differ from --sfn-port and --events-port, got ${dashboardPort}`,
    );
  }
  return {
    kind: "start",
    dashboardPort: dashboardPort ?? 0,
    options: {
      agents: agents ?? 4,
      // An agent that dies is said and restarted (with backoff), as a service manager would.
      restartAgents: true,
      agentCapacity: { cpu: cpu ?? 4, memoryMiB: memoryMiB ?? 4096 },
      // A named data directory is one to come back to: its table is kept on disk (unless the
      // table is in a DynamoDB Local of the user's, which keeps it itself).
      dataDir: dataDir ?? ".cairn",
      ...(dynamoDb !== undefined ? { dynamoDb } : dataDir !== undefined ? { persistent: true } : {}),
      ports: { stepFunctions: sfnPort ?? 0, eventBridge: eventsPort ?? 0 },
      ...(sweepSeconds !== undefined ? { sweepMs: sweepSeconds * 1000 } : {}),
      handlerLogLevel: values.verbose ? "info" : "warn",
      ...(kernelUser !== undefined ? { kernelUser } : {}),
      ...(filterPath !== undefined
        ? {
            submissionFilter: {
              module: filterPath,
              ...(filterTimeoutMs !== undefined ? { timeoutMs: filterTimeoutMs } : {}),
              ...(onFailure !== undefined ? { onFailure } : {}),
            },
          }
        : {}),
    },
  };
}

/** DynamoDB's own rule for table names. */
const TABLE_NAME = /^[a-zA-Z0-9_.-]{3,255}$/;

function externalDynamoDb(
  endpoint: string | undefined,
  tableName: string | undefined,
): RuntimeOptions["dynamoDb"] {
  if (endpoint === undefined) {
    if (tableName !== undefined) throw new StartUsageError("--table-name needs --dynamodb-endpoint");
    return undefined;
  }
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new StartUsageError(`--dynamodb-endpoint must be an http:// or https:// URL, got "${endpoint}"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new StartUsageError(`--dynamodb-endpoint must be an http:// or https:// URL, got "${endpoint}"`);
  }
  if (tableName !== undefined && !TABLE_NAME.test(tableName)) {
    throw new StartUsageError(
      `--table-name must be 3 to 255 of a-z A-Z 0-9 _ . - (DynamoDB's rule), got "${tableName}"`,
    );
  }
  return { endpoint, ...(tableName !== undefined ? { tableName } : {}) };
}
