/**
 * Where Cairn is, resolved from the global options: the local runtime's file (the default), or
 * a CloudFormation stack's outputs, or an endpoint such as LocalStack. Reads nothing itself:
 * files, the environment and the stack lookup are passed in.
 */
import { z } from "zod";
import { safeParseWithIssues } from "../../functions/core/spec.ts";
import type { TargetOptions } from "./args.ts";
import { UnreachableError, UsageError } from "./errors.ts";
import { endpointLogAccess, runtimeLogAccess, stackLogAccess, type LogAccess } from "./log-access.ts";
import { locateRuntimeFile } from "./runtime-locate.ts";

export type { LogAccess } from "./log-access.ts";

/** The outputs the CDK stack emits, by key. */
export const STACK_OUTPUT_KEYS = {
  tableName: "TableName",
  eventBusName: "EventBusName",
  stateMachineArn: "StateMachineArn",
} as const;

/** Outputs only `cairn agent` needs: an older stack without them still serves every other command. */
export const AGENT_OUTPUT_KEYS = { agentQueuePrefix: "AgentQueuePrefix" } as const;

export interface Connection {
  /** Where Cairn is, for messages: "the local runtime (.cairn/runtime.json)", "stack Cairn", … */
  readonly where: string;
  /** What to try when it cannot be reached. */
  readonly hint: string;
  /** Undefined: the SDK's own resolution (AWS_REGION, profile). */
  readonly region?: string;
  /** Undefined: the SDK's default credential chain. */
  readonly credentials?: { readonly accessKeyId: string; readonly secretAccessKey: string };
  /** Per service; undefined: the SDK's default (AWS, or AWS_ENDPOINT_URL…). */
  readonly endpoints: { readonly dynamoDb?: string; readonly eventBridge?: string; readonly sqs?: string };
  /** Agent queues are `<prefix><agentId>` (docs/agents.md); undefined when the stack predates agents. */
  readonly agentQueuePrefix?: string;
  /** The local runtime's credentials for agents (its EventBridge lets only them send agent events). */
  readonly agentCredentials?: { readonly accessKeyId: string; readonly secretAccessKey: string };
  readonly tableName: string;
  readonly eventBusName: string;
  /** For the execution ARN in `get`; undefined when not known. */
  readonly stateMachineArn?: string;
  /** Shards of the status indexes: must match the table (CAIRN_SHARDS, as the functions read it). */
  readonly shards?: number;
  /** The kernel log group on CloudWatch Logs, or why there is none to read (log-access.ts). */
  readonly logs: LogAccess;
}

export interface StackRequest {
  readonly stack: string;
  readonly region?: string;
  readonly endpoint?: string;
}

export interface TargetDeps {
  readonly cwd: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Throws (with `code` ENOENT for a missing file) like fs.readFileSync. */
  readFile(path: string): string;
  /** Whether a process with this pid runs on this host (a runtime file's writer); undefined: not checked. */
  processAlive?(pid: number): boolean;
  /** The stack's outputs by key. Throws UnreachableError when there is no such stack. */
  stackOutputs(request: StackRequest): Promise<Readonly<Record<string, string>>>;
}

/** The runtime has no credentials check; the SDK still wants some to sign with. */
const LOCAL_CREDENTIALS = { accessKeyId: "local", secretAccessKey: "local" };

const RuntimeFileSchema = z.object({
  region: z.string().min(1),
  tableName: z.string().min(1),
  eventBusName: z.string().min(1),
  stateMachineArn: z.string().min(1),
  endpoints: z.object({ dynamoDb: z.url(), eventBridge: z.url(), sqs: z.url().optional() }),
  agentQueuePrefix: z.string().min(1).optional(),
  credentials: z
    .object({
      client: z.object({ accessKeyId: z.string().min(1), secretAccessKey: z.string().min(1) }),
      operator: z.object({ accessKeyId: z.string().min(1), secretAccessKey: z.string().min(1) }).optional(),
      // Written by runtimes before agents' credentials were handed to each agent process only.
      agent: z.object({ accessKeyId: z.string().min(1), secretAccessKey: z.string().min(1) }).optional(),
    })
    .optional(),
});

export async function resolveConnection(options: TargetOptions, deps: TargetDeps): Promise<Connection> {
  const shards = shardsFrom(deps.env);
  if (options.stack === undefined && options.endpoint === undefined) {
    if (options.region !== undefined) {
      throw new UsageError(
        "--region applies to --stack or --endpoint; the local runtime's region comes from its runtime file",
      );
    }
    return localConnection(options.runtimeFile, shards, deps);
  }
  const region =
    options.region ?? nonEmpty(deps.env["AWS_REGION"]) ?? nonEmpty(deps.env["AWS_DEFAULT_REGION"]);
  const endpoints =
    options.endpoint === undefined
      ? {}
      : { dynamoDb: options.endpoint, eventBridge: options.endpoint, sqs: options.endpoint };
  const at = options.endpoint === undefined ? "" : ` at ${options.endpoint}`;
  const base = {
    ...(region === undefined ? {} : { region }),
    endpoints,
    ...(shards === undefined ? {} : { shards }),
  };
  if (options.stack !== undefined) {
    const outputs = await deps.stackOutputs({
      stack: options.stack,
      ...(region === undefined ? {} : { region }),
      ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint }),
    });
    const missing = Object.values(STACK_OUTPUT_KEYS).filter((key) => !nonEmpty(outputs[key]));
    if (missing.length > 0) {
      const has = Object.keys(outputs);
      throw new UnreachableError(
        `stack ${options.stack}${at} lacks the output${missing.length === 1 ? "" : "s"} ${missing.join(", ")} ` +
          `(it has: ${has.length === 0 ? "no outputs" : has.join(", ")}); is it the Cairn stack, fully deployed?`,
      );
    }
    return {
      ...base,
      where: `stack ${options.stack}${at}`,
      logs: stackLogAccess(outputs, `stack ${options.stack}${at}`, options.endpoint),
      hint: "check the stack, the region and your AWS credentials",
      tableName: outputs[STACK_OUTPUT_KEYS.tableName] ?? "",
      eventBusName: outputs[STACK_OUTPUT_KEYS.eventBusName] ?? "",
      stateMachineArn: outputs[STACK_OUTPUT_KEYS.stateMachineArn] ?? "",
      ...(nonEmpty(outputs[AGENT_OUTPUT_KEYS.agentQueuePrefix]) === undefined
        ? {}
        : { agentQueuePrefix: outputs[AGENT_OUTPUT_KEYS.agentQueuePrefix] }),
    };
  }
  // --endpoint alone: the names come from the environment the functions use.
  const tableName = nonEmpty(deps.env["CAIRN_TABLE_NAME"]);
  const eventBusName = nonEmpty(deps.env["CAIRN_EVENT_BUS_NAME"]);
  if (tableName === undefined || eventBusName === undefined) {
    throw new UsageError(
      "--endpoint needs --stack NAME to read the table and bus names from the stack's outputs " +
        "(or CAIRN_TABLE_NAME and CAIRN_EVENT_BUS_NAME in the environment)",
    );
  }
  const stateMachineArn = nonEmpty(deps.env["CAIRN_STATE_MACHINE_ARN"]);
  const agentQueuePrefix = nonEmpty(deps.env["CAIRN_AGENT_QUEUE_PREFIX"]);
  return {
    ...(agentQueuePrefix === undefined ? {} : { agentQueuePrefix }),
    ...base,
    where: `endpoint ${options.endpoint ?? ""}`,
    logs: endpointLogAccess(deps.env, options.endpoint ?? ""),
    hint: "is LocalStack (or the endpoint) running, with the Cairn stack deployed?",
    tableName,
    eventBusName,
    ...(stateMachineArn === undefined ? {} : { stateMachineArn }),
  };
}

function localConnection(
  explicitFile: string | undefined,
  shards: number | undefined,
  deps: TargetDeps,
): Connection {
  const { shown: runtimeFile, text } = locateRuntimeFile(explicitFile, deps);
  const hint = "start one with `npm start`, or pass --stack/--endpoint";
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new UnreachableError(
      `the runtime file ${runtimeFile} is not JSON — restart the runtime (\`npm start\`)`,
    );
  }
  const parsed = safeParseWithIssues(RuntimeFileSchema, json);
  if (!parsed.success) {
    throw new UnreachableError(
      `the runtime file ${runtimeFile} is not a Cairn runtime file (` +
        parsed.issues.map((i) => `${i.path}: ${i.message}`).join("; ") +
        ") — restart the runtime (`npm start`)",
    );
  }
  const info = parsed.data;
  return {
    where: `the local runtime (${runtimeFile})`,
    hint: `is \`npm start\` still running? Otherwise ${hint}`,
    region: info.region,
    // The runtime's own user operates it: the operator's rights (the stack's ClientPolicy and
    // OperatorPolicy), or a client's when the file names no operator.
    credentials: info.credentials?.operator ?? info.credentials?.client ?? LOCAL_CREDENTIALS,
    ...(info.credentials?.agent ? { agentCredentials: info.credentials.agent } : {}),
    endpoints: {
      dynamoDb: info.endpoints.dynamoDb,
      eventBridge: info.endpoints.eventBridge,
      ...(info.endpoints.sqs ? { sqs: info.endpoints.sqs } : {}),
    },
    ...(info.agentQueuePrefix ? { agentQueuePrefix: info.agentQueuePrefix } : {}),
    tableName: info.tableName,
    eventBusName: info.eventBusName,
    stateMachineArn: info.stateMachineArn,
    ...(shards === undefined ? {} : { shards }),
    // Read apart from the schema: a runtime file from before kernel logs serves every other command.
    logs: runtimeLogAccess(json, runtimeFile),
  };
}

/** Undefined: the store's default, as for the functions. */
function shardsFrom(env: Readonly<Record<string, string | undefined>>): number | undefined {
  const raw = nonEmpty(env["CAIRN_SHARDS"]);
  if (raw === undefined) return undefined;
  const shards = Number(raw);
  if (!Number.isInteger(shards) || shards < 1 || shards > 100) {
    throw new UsageError(
      `environment variable CAIRN_SHARDS must be a whole number from 1 to 100, got "${raw}"`,
    );
  }
  return shards;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value;
}
