/**
 * The embedded runtime: all of Cairn on one machine, no Docker, no AWS account. DynamoDB Local,
 * the exact ASL run by the local Step Functions engine, local AWS-protocol endpoints for Step
 * Functions and EventBridge, the Lambda handlers invoked in-process, the coordinator queue, the
 * sweep, and local agents running kernels as child processes. Everything is assembled from the
 * shared topology (functions/topology/index.ts), as the CDK stack is.
 *
 * Application code is not told it is local: the runtime only sets the standard SDK endpoint
 * variables and Cairn's configuration in the environment, as Lambda would.
 */
import { randomUUID } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { DescribeTableCommand, DynamoDBClient, ResourceNotFoundException } from "@aws-sdk/client-dynamodb";
import { createTable } from "../functions/adapters/dynamo/create-table.ts";
import {
  bindClusterArn,
  DEFAULT_MAX_RECEIVE_COUNT,
  disposableLifetimeSeconds,
  FARGATE,
  FUNCTIONS,
  maxReceiveCountOf,
  QUEUES,
  RULES,
  RuleBus,
  STATE_MACHINES,
  SWEEP,
  SWEEPS,
  type FunctionName,
  queueRetentionSeconds,
  visibilityTimeoutSeconds,
} from "../functions/topology/index.ts";
import { runtimeAccess } from "./access.ts";
import { AgentProcess } from "./agent-processes.ts";
import { supervise } from "./agent-supervision.ts";
import { sessionsMidLifecycle } from "./restart.ts";
import {
  pidFilePath,
  recordProcess,
  recoverStaleRuntime,
  writePidFile,
  type PidFileContents,
  type RecordedProcess,
} from "./pid-file.ts";
import { startEdgeServer } from "./edge.ts";
import { startDynamoDbGate } from "./dynamodb-gate/server.ts";
import { TABLE_SCHEMA } from "../functions/topology/table-schema.ts";
import { startSqsServer, type SqsServer } from "./sqs/index.ts";
import { ecsAuth, logsStoreSink, reapStaleEcsTasks, startEcsServer, type EcsServer } from "./ecs/index.ts";
import { logsFaultsFromEnv, startLogsServer, type LogsFaults, type LogsServer } from "./logs/index.ts";
import { startDynamoDbLocal, type RunningDynamoDb } from "./dynamodb-local.ts";
import { LocalEventBus, startEventBridgeServer, type EventBridgeServer } from "./eventbridge/index.ts";
import { LocalQueue, type QueueConsumer } from "./queue.ts";
import { withTopologyTimeouts } from "./function-timeout.ts";
import {
  dynamoDbFaultsFromEnv,
  parseDynamoDbFaults,
  startDynamoDbFaultProxy,
  type DynamoDbFaults,
  type DynamoDbFaultSwitch,
} from "./dynamodb-faults.ts";
import { queueFaultsFromEnv, type QueueFaults } from "./queue-faults.ts";
import {
  faultOptionsFromEnv,
  LocalStepFunctions,
  startStepFunctionsServer,
  stateMachineArn,
  substituteDefinition,
  type FaultOptions,
  type RunningStepFunctionsServer,
} from "./stepfunctions/index.ts";
import type { JsonValue } from "./stepfunctions/json.ts";

export interface RuntimeOptions {
  /** Local agents to start. @default 4 */
  readonly agents?: number;
  /**
   * Restart an agent process that exits on its own (a crash, a `kill -9`), with backoff
   * (agent-supervision.ts), as `npm start` does. Its exit is reported either way.
   * @default false: tests that kill agents see them stay dead
   */
  readonly restartAgents?: boolean;
  /** Capacity of each agent. @default { cpu: 4, memoryMiB: 4096 } */
  readonly agentCapacity?: { readonly cpu: number; readonly memoryMiB: number };
  /** Kernels' work directories and the runtime file the CLI reads. @default ".cairn" */
  readonly dataDir?: string;
  /**
   * Keep the table (sessions, history, queues, policies) on disk under `<dataDir>/dynamodb`,
   * so a restart finds it again. @default false: in memory, gone at stop
   */
  readonly persistent?: boolean;
  /**
   * An already-running DynamoDB (DynamoDB Local, or anything that speaks its API) to keep the
   * table in, instead of starting a DynamoDB Local of the runtime's own. The runtime creates the
   * table there if it is absent, carries on with what it holds if not (as a persistent runtime
   * does), and never stops the database. The test suite runs every runtime against its one
   * DynamoDB Local this way, each with a table of its own. Excludes `persistent` and
   * `ports.dynamoDb`. @default none: the runtime starts DynamoDB Local
   */
  readonly dynamoDb?: {
    readonly endpoint: string;
    /** @default "cairn" */
    readonly tableName?: string;
  };
  /** Fixed ports for the AWS endpoints; 0 picks free ones. */
  readonly ports?: {
    readonly stepFunctions?: number;
    readonly eventBridge?: number;
    readonly dynamoDb?: number;
  };
  /** Agent heartbeat period. @default 5000 */
  readonly heartbeatMs?: number;
  /** Labels of each agent, by agent number (1-based); e.g. `{ 2: { gpu: "a100" } }`. */
  readonly agentLabels?: Readonly<Record<number, Readonly<Record<string, string>>>>;
  /**
   * Run the agents' kernels as this unprivileged user (`cairn agent --kernel-user`); the runtime
   * must run as root. Kernels then cannot read the runtime file nor any process of the runtime's
   * user. @default none: kernels run as the runtime's user
   */
  readonly kernelUser?: string;
  /** An agent silent this long is lost. @default max(30 s, 3 × heartbeatMs) */
  readonly agentTimeoutMs?: number;
  /** Sweep period. @default the topology's rate */
  readonly sweepMs?: number;
  /** The deployments' sweep period (a replica not reported on becomes STALE). @default sweepMs, else the topology's rate */
  readonly deploymentSweepMs?: number;
  /** How old a stage must be before the sweep repairs a session without a live execution. @default 60000 */
  readonly repairAfterMs?: number;
  /** Grace between SIGTERM and SIGKILL when a session's kernels are stopped. @default 5000 */
  readonly terminationGraceMs?: number;
  /** How long the functions cache retry policies, queues and the retry config. @default 5000 */
  readonly retryCacheMs?: number;
  /**
   * The administrator's submission filter: a local module whose default export is the
   * filter, the coordinator's timeout for its answer, and what a failure means.
   * @default none (submissions are not filtered)
   */
  readonly submissionFilter?: {
    readonly module: string;
    /** @default 5000 */
    readonly timeoutMs?: number;
    /** `accept`: fail open; `reject`: fail closed. @default "reject" */
    readonly onFailure?: "accept" | "reject";
  };
  /** Where the runtime's own log lines go. @default stderr */
  readonly log?: (line: string) => void;
  /** Log level of the Lambda handlers' JSON logs. @default "warn" */
  readonly handlerLogLevel?: "info" | "warn" | "error";
  /**
   * AWS faults the local Step Functions engine injects (local/stepfunctions/faults.ts).
   * @default `CAIRN_FAULTS` / `CAIRN_FAULT_SEED` from the environment, else none
   */
  readonly faults?: FaultOptions;
  /**
   * Every queue's visibility timeout, instead of the stack's (its consumer's timeout and a
   * margin, functions/topology): how long a failed message waits before it is delivered again.
   * Tests shorten it to seconds. @default the stack's
   */
  readonly queueVisibilityTimeoutMs?: number;
  /**
   * Batches the queues fail as a failed invocation would (local/queue-faults.ts).
   * @default `CAIRN_QUEUE_FAULTS` from the environment, else none
   */
  readonly queueFaults?: QueueFaults;
  /**
   * The embedded CloudWatch Logs' faults (local/logs/faults.ts): how long put events stay
   * unreadable. @default `CAIRN_LOGS_FAULTS` from the environment, else none
   */
  readonly logsFaults?: LogsFaults;
  /**
   * DynamoDB's faults under load (throttling, transaction conflicts, unprocessed keys), which
   * DynamoDB Local never produces: given, the functions reach the table through a proxy that
   * answers chosen requests so (local/dynamodb-faults.ts; `Runtime.dynamoDbFaults` sets them
   * later). @default `CAIRN_DYNAMODB_FAULTS` from the environment, else none (no proxy)
   */
  readonly dynamoDbFaults?: DynamoDbFaults;
  /**
   * EventBridge delivers at least once: this share of the buses' deliveries is made a second
   * time (the same event, as a duplicate reaches an SQS target on AWS). @default
   * `CAIRN_DUPLICATE_DELIVERY_RATE` from the environment, else 0
   */
  readonly duplicateDeliveryRate?: number;
  /**
   * The order the queues feed their functions: SQS standard queues order on a best-effort
   * basis, `shuffled` takes deliverable messages in a random order (local/queue.ts). @default
   * `CAIRN_QUEUE_ORDER` from the environment, else "sent"
   */
  readonly queueOrder?: "sent" | "shuffled";
}

export interface RuntimeInfo {
  readonly region: string;
  readonly tableName: string;
  readonly eventBusName: string;
  readonly stateMachineArn: string;
  readonly endpoints: {
    readonly dynamoDb: string;
    readonly stepFunctions: string;
    readonly eventBridge: string;
    readonly sqs: string;
    readonly logs: string;
    /** The embedded ECS (Fargate tasks as local processes, local/ecs/README.md). */
    readonly ecs: string;
    /** Every endpoint above on one port, routed by the request's SigV4 service name. */
    readonly edge: string;
  };
  /** The embedded ECS's cluster for Fargate kernels. */
  readonly ecsClusterArn: string;
  /** Agent queues are `<prefix><agentId>` (docs/agents.md). */
  readonly agentQueuePrefix: string;
  /** Where agents ship kernel output (one stream per run) and `cairn logs` reads it. */
  readonly kernelLogGroupName: string;
  /**
   * This run's credentials: clients (the CLI) may send client events, agents agent events
   * (docs/agents.md). New each run; the file is readable by its owner only.
   */
  readonly credentials: {
    readonly client: { readonly accessKeyId: string; readonly secretAccessKey: string };
    /** The client's rights and an operator's (OperatorPolicy): the CLI of the runtime's user. */
    readonly operator: { readonly accessKeyId: string; readonly secretAccessKey: string };
    readonly agent: { readonly accessKeyId: string; readonly secretAccessKey: string };
  };
  /** The agents `npm start` runs (each a `cairn agent` process) and where their kernels' files are. */
  readonly agents: readonly { readonly id: string; readonly workRoot: string; readonly pid: number }[];
  readonly pid: number;
}

export interface Runtime {
  readonly info: RuntimeInfo;
  /** Environment for an SDK client (or the CLI) to talk to this runtime. */
  readonly clientEnv: Readonly<Record<string, string>>;
  /**
   * DynamoDB Local itself: the functions' way to the table (and a test's, to set up or inspect
   * it). The runtime's own DynamoDB Local accepts only requests signed with `tableCredential`,
   * the control plane's key, and applies no policy; clients are given the gate in front of it,
   * `info.endpoints.dynamoDb`, which enforces their policies.
   */
  readonly tableEndpoint: string;
  readonly tableCredential: { readonly accessKeyId: string; readonly secretAccessKey: string };
  readonly stepFunctions: LocalStepFunctions;
  readonly bus: LocalEventBus;
  readonly queues: ReadonlyMap<string, LocalQueue>;
  readonly sqs: SqsServer;
  readonly logs: LogsServer;
  /** The embedded ECS; `ecs.service.interruptSpot(taskArn)` simulates a Fargate Spot interruption. */
  readonly ecs: EcsServer;
  /**
   * The account's default bus, where the embedded ECS puts its `ECS Task State Change` events
   * (as AWS services do); Cairn's own events go to `bus`. Rules meant for it go here.
   */
  readonly defaultBus: LocalEventBus;
  /** The agent processes now running (startAgent adds to them). */
  readonly agents: readonly AgentProcess[];
  /** The functions' DynamoDB fault switch, when the runtime was started with `dynamoDbFaults`. */
  readonly dynamoDbFaults: DynamoDbFaultSwitch | undefined;
  /** Invocations of each function so far, by name (for the benchmark's "per session" figures). */
  readonly invocations: ReadonlyMap<FunctionName, number>;
  /**
   * The runtime's DynamoDB Local JVM's process id (the benchmark reads its CPU time); undefined
   * when the runtime uses a database it did not start (`dynamoDb`).
   */
  readonly dynamoDbPid: number | undefined;
  /**
   * Starts one more `cairn agent` process (or one with the id of an agent that died: it
   * registers as a new incarnation). Resolves once it has registered.
   */
  /**
   * The credential this runtime hands to its agent `agentId` (on a pipe, never in a file), in
   * this process only: tagged with the agent's id, it consumes that agent's queue alone.
   */
  agentCredential(agentId: string): { readonly accessKeyId: string; readonly secretAccessKey: string };
  startAgent(options?: {
    readonly id?: string;
    readonly cpu?: number;
    readonly memoryMiB?: number;
    readonly labels?: Readonly<Record<string, string>>;
  }): Promise<AgentProcess>;
  stop(): Promise<void>;
}

const REGION = "local";
const DEFAULT_TABLE_NAME = "cairn";
const BUS_NAME = "cairn";
const AGENT_QUEUE_PREFIX = "cairn-agent-";
const KERNEL_LOG_GROUP = "/cairn/kernels";
const ACCOUNT = "000000000000";
const ECS_CLUSTER = "cairn";

export async function startRuntime(options: RuntimeOptions = {}): Promise<Runtime> {
  const log = options.log ?? ((line: string) => process.stderr.write(line + "\n"));
  const dataDir = resolve(options.dataDir ?? ".cairn");
  const heartbeatMs = options.heartbeatMs ?? 5_000;
  const agentTimeoutMs = options.agentTimeoutMs ?? Math.max(30_000, heartbeatMs * 3);
  // Checked before anything starts: a bad switch names its field and nothing is left running.
  const faults = options.faults ?? faultOptionsFromEnv(process.env);
  const queueFaults = options.queueFaults ?? queueFaultsFromEnv(process.env);
  const logsFaults = options.logsFaults ?? logsFaultsFromEnv(process.env);
  const dynamoDbFaults = options.dynamoDbFaults ?? dynamoDbFaultsFromEnv(process.env);
  const duplicateDeliveryRate = options.duplicateDeliveryRate ?? duplicateRateFromEnv(process.env);
  const queueOrder = options.queueOrder ?? queueOrderFromEnv(process.env);
  if (options.dynamoDbFaults !== undefined) parseDynamoDbFaults(options.dynamoDbFaults);
  const external = options.dynamoDb;
  if (external && options.persistent) {
    throw new Error(
      "dynamoDb and persistent exclude each other: a database the runtime did not start keeps its own tables",
    );
  }
  if (external && options.ports?.dynamoDb) {
    throw new Error(
      "dynamoDb and ports.dynamoDb exclude each other: the runtime starts no DynamoDB Local to give a port",
    );
  }
  const tableName = external?.tableName ?? DEFAULT_TABLE_NAME;
  // Shutdown runs in reverse order of start-up: agents first (their last reports still reach
  // the bus), then the sweep, the bus, the queue (in-flight batches finish), Step Functions,
  // the endpoints, and DynamoDB last.
  const stops: (() => Promise<void> | void)[] = [];
  let stopping = false;
  const stop = async () => {
    stopping = true;
    for (const fn of stops.splice(0).reverse()) {
      try {
        await fn();
      } catch (error) {
        log(`cairn: while stopping: ${String(error)}`);
      }
    }
  };
  try {
    mkdirSync(dataDir, { recursive: true });
    // An earlier runtime killed with SIGKILL left its agents, their kernels (and perhaps its
    // DynamoDB Local) running: stop them before anything of ours starts.
    for (const line of recoverStaleRuntime(dataDir)) log(`cairn: ${line}`);
    // …and the containers of its ECS tasks (detached process groups, recorded in their work dirs).
    const ecsWorkRoot = join(dataDir, "ecs-tasks");
    for (const line of reapStaleEcsTasks(ecsWorkRoot)) log(`cairn: ${line}`);
    const pids: { dynamoDb?: RecordedProcess; agents: PidFileContents["agents"] } = { agents: [] };
    const writePids = () => writePidFile(dataDir, { runtime: recordProcess(process.pid), ...pids });
    writePids();
    stops.unshift(() => rmSync(pidFilePath(dataDir), { force: true }));

    const bus = new LocalEventBus({
      name: BUS_NAME,
      region: REGION,
      retryBaseDelayMs: 200,
      retryMaxDelayMs: 10_000,
      duplicateDeliveryRate,
      logger: { warn: (m: string) => log(`cairn: bus: ${m}`) },
    });
    // Per-run credentials: clients may send client events only, agents agent events only. Made
    // before DynamoDB Local starts: it accepts requests signed by the control plane's key alone.
    const access = runtimeAccess({
      region: REGION,
      account: ACCOUNT,
      busArn: bus.arn,
      agentQueuePrefix: AGENT_QUEUE_PREFIX,
      kernelLogGroup: KERNEL_LOG_GROUP,
      tableName,
      stateMachineNames: STATE_MACHINES.map((m) => m.name),
    });
    const dbPath = options.persistent ? join(dataDir, "dynamodb") : undefined;
    let dynamo: { readonly endpoint: string; readonly pid?: number };
    if (external) {
      log(`cairn: using DynamoDB at ${external.endpoint}, table ${tableName}`);
      dynamo = { endpoint: external.endpoint };
    } else {
      log("cairn: starting DynamoDB Local …");
      // The table holds every agent's signing key: its files are the runtime user's alone.
      if (dbPath) mkdirSync(dbPath, { recursive: true, mode: 0o700 });
      const own: RunningDynamoDb = await startDynamoDbLocal({
        ...(options.ports?.dynamoDb ? { port: options.ports.dynamoDb } : {}),
        ...(dbPath ? { path: dbPath } : {}),
        credential: access.controlPlane,
      });
      stops.push(() => own.stop());
      pids.dynamoDb = recordProcess(own.pid);
      writePids();
      dynamo = own;
    }
    const ddb = new DynamoDBClient({
      endpoint: dynamo.endpoint,
      region: REGION,
      credentials: access.controlPlane,
    });
    // A table kept on disk, or in a database that outlives the runtime, may hold sessions.
    const kept = dbPath !== undefined || external !== undefined;
    const exists = kept
      ? await tableExists(ddb, tableName).catch((error: unknown) => {
          if (!external) throw error;
          throw new Error(
            `the DynamoDB at ${external.endpoint} did not answer: ${error instanceof Error ? error.message : String(error)}`,
            {
              cause: error,
            },
          );
        })
      : false;
    if (!exists) await createTable(ddb, tableName);
    else {
      // A kept table: its unfinished sessions lost their in-memory executions (local/restart.ts).
      const { ids, more } = await sessionsMidLifecycle(ddb, tableName);
      if (ids.length > 0) {
        log(
          `cairn: ${dbPath ?? `table ${tableName}`} holds sessions that were mid-lifecycle when the runtime stopped (${ids.join(", ")}${more ? ", …" : ""}); ` +
            "their executions were in memory and are gone: the sweep ends each with the reason",
        );
      }
    }
    ddb.destroy();

    // The bus (made before DynamoDB Local) stops before it: its stop is registered after.
    stops.push(() => bus.close());
    const dynamoGate = await startDynamoDbGate({
      upstream: dynamo.endpoint,
      upstreamCredential: access.controlPlane,
      auth: access.auth,
      layout: {
        tableArn: (name) => `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/${name}`,
        partitionKeyOf: (name, index) => {
          if (name !== tableName) return undefined;
          if (index === undefined) return TABLE_SCHEMA.partitionKey.name;
          return TABLE_SCHEMA.globalSecondaryIndexes.find((g) => g.indexName === index)?.partitionKey.name;
        },
      },
    });
    stops.push(() => dynamoGate.close());
    const eventBridge: EventBridgeServer = await startEventBridgeServer(bus, {
      port: options.ports?.eventBridge ?? 0,
      auth: access.auth,
    });
    stops.push(() => eventBridge.close());
    const sqs = await startSqsServer({ region: REGION, account: ACCOUNT, auth: access.auth });
    stops.push(() => sqs.close());
    const logs = await startLogsServer({
      logGroups: [KERNEL_LOG_GROUP],
      region: REGION,
      accountId: ACCOUNT,
      auth: access.auth,
      ...(logsFaults?.visibilityDelayMs === undefined
        ? {}
        : { visibilityDelayMs: logsFaults.visibilityDelayMs }),
      ...(logsFaults?.backwardPageWindowMs === undefined
        ? {}
        : { backwardPageWindowMs: logsFaults.backwardPageWindowMs }),
    });
    stops.push(() => logs.close());
    // ECS puts its events on the account's default bus, never on Cairn's: a separate bus, so a
    // rule on the wrong bus misses them here as it would on AWS.
    const defaultBus = new LocalEventBus({
      name: "default",
      region: REGION,
      retryBaseDelayMs: 200,
      retryMaxDelayMs: 10_000,
      duplicateDeliveryRate,
      logger: { warn: (m: string) => log(`cairn: default bus: ${m}`) },
    });
    stops.push(() => defaultBus.close());
    const ecs = await startEcsServer({
      region: REGION,
      account: ACCOUNT,
      clusters: [ECS_CLUSTER],
      workRoot: ecsWorkRoot,
      logs: logsStoreSink(logs.store),
      publish: (entry) => {
        const result = defaultBus.putServiceEvent({ ...entry, Resources: [...entry.Resources] });
        if ("ErrorCode" in result)
          log(`cairn: ecs: event not put: ${result.ErrorCode}: ${result.ErrorMessage}`);
      },
      auth: ecsAuth(access.auth),
      logger: { warn: (m: string) => log(`cairn: ${m}`) },
    });
    stops.push(() => ecs.close());

    const sfnArn = stateMachineArn(STATE_MACHINES[0]!.name);
    // Every state machine's ARN, under the variable the topology names (the family machines').
    const machineArns = Object.fromEntries(
      STATE_MACHINES.map((m) => [m.arnVariable, stateMachineArn(m.name)]),
    );
    // DynamoDB's faults under load, when asked for: the functions reach the table through them.
    const faultProxy =
      dynamoDbFaults === undefined
        ? undefined
        : await startDynamoDbFaultProxy({
            upstream: dynamo.endpoint,
            upstreamCredential: access.controlPlane,
            region: REGION,
            faults: dynamoDbFaults,
          });
    if (faultProxy) {
      stops.push(() => faultProxy.close());
      log(`cairn: DynamoDB fault injection on: ${JSON.stringify(dynamoDbFaults)}`);
    }
    // The functions read this environment on their first invocation, as Lambda's would.
    const env: Record<string, string> = {
      AWS_REGION: REGION,
      AWS_ACCESS_KEY_ID: access.controlPlane.accessKeyId,
      AWS_SECRET_ACCESS_KEY: access.controlPlane.secretAccessKey,
      AWS_ENDPOINT_URL_DYNAMODB: faultProxy?.endpoint ?? dynamo.endpoint,
      AWS_ENDPOINT_URL_EVENTBRIDGE: eventBridge.endpoint,
      AWS_ENDPOINT_URL_SQS: sqs.endpoint,
      AWS_ENDPOINT_URL_ECS: ecs.endpoint,
      CAIRN_AGENT_QUEUE_PREFIX: AGENT_QUEUE_PREFIX,
      CAIRN_TABLE_NAME: tableName,
      CAIRN_EVENT_BUS_NAME: BUS_NAME,
      ...machineArns,
      // Heartbeats have a queue of their own, but under a burst its batches wait for the same two
      // cores as everything else, so an agent's record is brought up to date late: liveness must
      // allow for that, not only for the period.
      CAIRN_AGENT_TIMEOUT_MS: String(agentTimeoutMs),
      CAIRN_TERMINATION_GRACE_MS: String(options.terminationGraceMs ?? 5_000),
      CAIRN_LOG_LEVEL: options.handlerLogLevel ?? "warn",
      CAIRN_RETRY_CACHE_MS: String(options.retryCacheMs ?? 5_000),
      // Set (or cleared) every start: the environment outlives a runtime stopped in this process.
      CAIRN_SUBMISSION_FILTER_MODULE: options.submissionFilter
        ? resolve(options.submissionFilter.module)
        : "",
      CAIRN_SUBMISSION_FILTER_TIMEOUT_MS: String(options.submissionFilter?.timeoutMs ?? 5_000),
      CAIRN_SUBMISSION_FILTER_ON_FAILURE: options.submissionFilter?.onFailure ?? "reject",
      ...(options.repairAfterMs !== undefined
        ? { CAIRN_REPAIR_AFTER_MS: String(options.repairAfterMs) }
        : {}),
      // The Fargate executor on the embedded ECS, as lib/fargate.ts configures a
      // stack's: tasks are local processes, so the network and roles are placeholders ECS's
      // checks accept; awslogs writes into the kernel log group `cairn logs` reads.
      CAIRN_FARGATE_CLUSTER_ARN: ecs.service.clusterArn(ECS_CLUSTER),
      CAIRN_FARGATE_SUBNETS: "subnet-0000000000000000a",
      CAIRN_FARGATE_SECURITY_GROUPS: "sg-0000000000000000a",
      CAIRN_FARGATE_ASSIGN_PUBLIC_IP: "false",
      CAIRN_FARGATE_EXECUTION_ROLE_ARN: `arn:aws:iam::${ACCOUNT}:role/cairn-local-task-execution`,
      CAIRN_FARGATE_TASK_ROLE_ARN: `arn:aws:iam::${ACCOUNT}:role/cairn-local-task`,
      CAIRN_FARGATE_LOG_GROUP_NAME: KERNEL_LOG_GROUP,
      CAIRN_FARGATE_CAPACITY_PROVIDERS: "FARGATE,FARGATE_SPOT",
    };

    const invocations = new Map<FunctionName, number>(FUNCTIONS.map((f) => [f.name, 0]));
    // Each under its function's timeout, as Lambda runs it (function-timeout.ts).
    const handlers = withTopologyTimeouts(countInvocations(await loadHandlers(), invocations));
    if (faults) log(`cairn: fault injection on: ${JSON.stringify(faults)}`);
    if (queueFaults) log(`cairn: queue fault injection on: ${JSON.stringify(queueFaults)}`);
    if (logsFaults) log(`cairn: logs fault injection on: ${JSON.stringify(logsFaults)}`);
    const sfn: LocalStepFunctions = new LocalStepFunctions(
      Object.fromEntries(
        FUNCTIONS.map((f) => [f.name, (payload: unknown) => handlers.get(f.name)!(payload)]),
      ),
      {
        ...(faults ? { faults } : {}),
        integrations: {
          // AWS's request-response StartExecution integration (a family execution's renewal):
          // start the execution and answer at once.
          "states:startExecution": async (parameters: JsonValue) => {
            const p = parameters as { StateMachineArn: string; Name: string; Input: JsonValue };
            const started = await sfn.startExecution({
              stateMachineArn: p.StateMachineArn,
              name: p.Name,
              input: JSON.stringify(p.Input),
            });
            return {
              ExecutionArn: started.executionArn,
              StartDate: started.startDate?.toISOString() ?? null,
            };
          },
        },
      },
    );
    stops.push(() => sfn.close());
    const sfnServer: RunningStepFunctionsServer = await startStepFunctionsServer(sfn, {
      port: options.ports?.stepFunctions ?? 0,
      auth: access.auth,
    });
    stops.push(() => sfnServer.close());
    env["AWS_ENDPOINT_URL_SFN"] = sfnServer.endpoint;
    // One port for all of them, as LocalStack's: `cairn --endpoint URL` works against the runtime.
    const edge = await startEdgeServer({
      dynamodb: dynamoGate.endpoint,
      events: eventBridge.endpoint,
      sqs: sqs.endpoint,
      logs: logs.endpoint,
      states: sfnServer.endpoint,
      ecs: ecs.endpoint,
    });
    stops.push(() => edge.close());
    Object.assign(process.env, env);

    for (const machine of STATE_MACHINES) {
      const text = readFileSync(machine.file, "utf8");
      const substitutions = Object.fromEntries(
        Object.entries(machine.substitutions).map(([key, fn]) => [key, lambdaArn(fn)]),
      );
      await sfn.createStateMachine({
        name: machine.name,
        definition: substituteDefinition(text, substitutions),
      });
    }

    const queues = new Map<string, LocalQueue>();
    for (const q of QUEUES) {
      const consumer = handlers.get(q.consumer) as unknown as QueueConsumer;
      const queue = new LocalQueue({
        name: q.name,
        consumer,
        batchSize: q.batchSize,
        batchingWindowMs: q.maxBatchingWindowSeconds * 1000,
        maxConcurrency: q.maxConcurrency,
        // The stack's settings for the queue (its default maxReceiveCount).
        visibilityTimeoutMs: options.queueVisibilityTimeoutMs ?? visibilityTimeoutSeconds(q) * 1000,
        maxReceives: maxReceiveCountOf(q, DEFAULT_MAX_RECEIVE_COUNT),
        // The stack's retention: heartbeats are dropped once older than the agent timeout.
        retentionMs: queueRetentionSeconds(q, agentTimeoutMs) * 1000,
        ...(q.fifoGroup !== undefined ? { fifoGroup: q.fifoGroup } : {}),
        order: queueOrder,
        ...(queueFaults?.[q.name] !== undefined ? { faults: queueFaults[q.name] } : {}),
        onError: (error) => log(`cairn: queue ${q.name}: ${String(error)}`),
      });
      queues.set(q.name, queue);
      stops.push(() => queue.close());
      stops.push(() => bus.close());
    }
    // The Fargate executor's rule listens on the default bus, where the embedded ECS puts its
    // events, bound to the runtime's cluster as the stack binds it to its own.
    const ecsRules = FARGATE.rules.map((r) => bindClusterArn(r, ecs.service.clusterArn(ECS_CLUSTER)));
    for (const rule of [...RULES, ...ecsRules]) {
      const queue = queues.get(rule.target.queue)!;
      (rule.bus === RuleBus.Default ? defaultBus : bus).putRule({
        name: rule.name,
        description: rule.description,
        eventPattern: rule.eventPattern,
        targets: [
          {
            id: rule.target.queue,
            invoke: (event) => Promise.resolve(queue.send(JSON.stringify(event))),
            // The stack's (lib/routing.ts): a disposable event is given up once it says nothing.
            retryPolicy: {
              maximumRetryAttempts: 185,
              maximumEventAgeSeconds: QUEUES.find((q) => q.name === rule.target.queue)?.disposable
                ? disposableLifetimeSeconds(agentTimeoutMs)
                : 86_400,
            },
            deadLetter: true,
          },
        ],
      });
    }

    // The sweeps as EventBridge delivers them: a scheduled event on each sweep's queue.
    for (const sweep of SWEEPS) {
      const sweepQueue = queues.get(sweep.target.queue)!;
      const sweepTimer = setInterval(
        () => {
          sweepQueue.send(
            JSON.stringify({
              version: "0",
              id: randomUUID(),
              "detail-type": "Scheduled Event",
              source: "aws.events",
              account: ACCOUNT,
              time: new Date().toISOString(),
              region: REGION,
              resources: [`arn:aws:events:${REGION}:${ACCOUNT}:rule/${sweep.name}`],
              detail: {},
            }),
          );
        },
        (sweep.name === SWEEP.name ? options.sweepMs : (options.deploymentSweepMs ?? options.sweepMs)) ??
          sweep.rateSeconds * 1000,
      );
      stops.push(() => clearInterval(sweepTimer));
    }

    const keys = ({ accessKeyId, secretAccessKey }: { accessKeyId: string; secretAccessKey: string }) => ({
      accessKeyId,
      secretAccessKey,
    });
    const credentials = {
      client: keys(access.client),
      operator: keys(access.operator),
      agent: keys(access.agent),
    };
    const workRoot = join(dataDir, "work");
    const runtimeFile = join(dataDir, "runtime.json");
    const agents: AgentProcess[] = [];
    const agentCapacity = options.agentCapacity ?? { cpu: 4, memoryMiB: 4096 };
    const writeRuntimeFile = (): RuntimeInfo => {
      const info: RuntimeInfo = {
        region: REGION,
        tableName,
        eventBusName: BUS_NAME,
        stateMachineArn: sfnArn,
        endpoints: {
          dynamoDb: dynamoGate.endpoint,
          stepFunctions: sfnServer.endpoint,
          eventBridge: eventBridge.endpoint,
          sqs: sqs.endpoint,
          logs: logs.endpoint,
          ecs: ecs.endpoint,
          edge: edge.endpoint,
        },
        ecsClusterArn: ecs.service.clusterArn(ECS_CLUSTER),
        agentQueuePrefix: AGENT_QUEUE_PREFIX,
        kernelLogGroupName: KERNEL_LOG_GROUP,
        credentials,
        agents: agents.map((a) => ({ id: a.id, workRoot: a.options.workRoot, pid: a.pid })),
        pid: process.pid,
      };
      // The agents' credentials are handed to each agent process only (AgentProcess), never written.
      const { agent: _agent, ...forClients } = info.credentials;
      writeFileSync(runtimeFile, JSON.stringify({ ...info, credentials: forClients }, null, 2) + "\n", {
        mode: 0o600,
      });
      pids.agents = agents.map((a) => ({ ...recordProcess(a.pid), id: a.id, workRoot: a.options.workRoot }));
      writePids();
      return info;
    };
    writeRuntimeFile();
    stops.unshift(() => rmSync(runtimeFile, { force: true }));
    let nextAgent = 1;
    const startAgent: Runtime["startAgent"] = async (o = {}) => {
      const n = nextAgent++;
      const id = o.id ?? `agent-${n}`;
      const agent = await AgentProcess.start({
        id,
        cpu: o.cpu ?? agentCapacity.cpu,
        memoryMiB: o.memoryMiB ?? agentCapacity.memoryMiB,
        ...((o.labels ?? options.agentLabels?.[n]) ? { labels: o.labels ?? options.agentLabels?.[n] } : {}),
        runtimeFile,
        workRoot,
        heartbeatMs,
        drainGraceMs: options.terminationGraceMs ?? 5_000,
        // Its own credential, tagged with its id: it consumes its own queue only.
        credentials: keys(access.agentCredential(id)),
        ...(options.kernelUser === undefined ? {} : { kernelUser: options.kernelUser }),
        log: (line) => log(`cairn: ${line}`),
      });
      agents.push(agent);
      supervise(agent, {
        log: (line) => log(`cairn: ${line}`),
        stopping: () => stopping,
        restart: options.restartAgents === true,
        removed: (gone) => {
          const i = agents.indexOf(gone);
          if (i >= 0) agents.splice(i, 1);
          if (!stopping) writeRuntimeFile();
        },
        added: (restarted) => {
          agents.push(restarted);
          writeRuntimeFile();
        },
      });
      writeRuntimeFile();
      return agent;
    };
    // Agents stop first (their last reports still reach the bus): registered last, so run first.
    stops.push(() => Promise.all([...agents].map((a) => a.stop())).then(() => undefined));
    await Promise.all(Array.from({ length: options.agents ?? 4 }, () => startAgent()));
    const info = writeRuntimeFile();

    return {
      info,
      clientEnv: {
        AWS_REGION: REGION,
        AWS_ACCESS_KEY_ID: access.client.accessKeyId,
        AWS_SECRET_ACCESS_KEY: access.client.secretAccessKey,
        AWS_ENDPOINT_URL_DYNAMODB: dynamoGate.endpoint,
        AWS_ENDPOINT_URL_EVENTBRIDGE: eventBridge.endpoint,
        AWS_ENDPOINT_URL_SFN: sfnServer.endpoint,
        AWS_ENDPOINT_URL_SQS: sqs.endpoint,
        AWS_ENDPOINT_URL_CLOUDWATCH_LOGS: logs.endpoint,
        AWS_ENDPOINT_URL_ECS: ecs.endpoint,
      },
      tableEndpoint: dynamo.endpoint,
      tableCredential: keys(access.controlPlane),
      stepFunctions: sfn,
      bus,
      queues,
      sqs,
      logs,
      ecs,
      defaultBus,
      agents,
      dynamoDbFaults: faultProxy?.faults,
      invocations,
      dynamoDbPid: dynamo.pid,
      agentCredential: (agentId) => keys(access.agentCredential(agentId)),
      startAgent,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** `CAIRN_QUEUE_ORDER`: `sent` or `shuffled`, `sent` when unset. */
function queueOrderFromEnv(env: Readonly<Record<string, string | undefined>>): "sent" | "shuffled" {
  const text = env["CAIRN_QUEUE_ORDER"];
  if (text === undefined || text.trim() === "") return "sent";
  if (text !== "sent" && text !== "shuffled") {
    throw new Error(`CAIRN_QUEUE_ORDER: must be "sent" or "shuffled", got ${JSON.stringify(text)}`);
  }
  return text;
}

/** `CAIRN_DUPLICATE_DELIVERY_RATE`: a number from 0 to 1, or 0 when unset. */
function duplicateRateFromEnv(env: Readonly<Record<string, string | undefined>>): number {
  const text = env["CAIRN_DUPLICATE_DELIVERY_RATE"];
  if (text === undefined || text.trim() === "") return 0;
  const rate = Number(text);
  if (!(rate >= 0 && rate <= 1)) {
    throw new Error(
      `CAIRN_DUPLICATE_DELIVERY_RATE: must be a number from 0 to 1, got ${JSON.stringify(text)}`,
    );
  }
  return rate;
}

async function tableExists(client: DynamoDBClient, tableName: string): Promise<boolean> {
  try {
    await client.send(new DescribeTableCommand({ TableName: tableName }));
    return true;
  } catch (error) {
    if (error instanceof ResourceNotFoundException) return false;
    throw error;
  }
}

function lambdaArn(name: FunctionName): string {
  return `arn:aws:lambda:${REGION}:000000000000:function:${name}`;
}

/** Wraps each handler so that each invocation is counted under its function's name. */
function countInvocations(
  handlers: ReadonlyMap<FunctionName, (event: unknown) => Promise<unknown>>,
  counts: Map<FunctionName, number>,
): Map<FunctionName, (event: unknown) => Promise<unknown>> {
  return new Map(
    [...handlers].map(([name, handler]) => [
      name,
      (event: unknown) => {
        counts.set(name, (counts.get(name) ?? 0) + 1);
        return handler(event);
      },
    ]),
  );
}

/** Imports each function's module from the topology, as Lambda would load its bundle. */
async function loadHandlers(): Promise<Map<FunctionName, (event: unknown) => Promise<unknown>>> {
  const handlers = new Map<FunctionName, (event: unknown) => Promise<unknown>>();
  for (const f of FUNCTIONS) {
    const mod = (await import(pathToFileURL(resolve(f.entry)).href)) as {
      handler?: (event: unknown) => Promise<unknown>;
    };
    if (typeof mod.handler !== "function") throw new Error(`${f.entry} does not export a handler function`);
    handlers.set(f.name, mod.handler);
  }
  return handlers;
}
