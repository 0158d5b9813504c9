/**
 * AWS SDK clients. Endpoints come from the standard SDK environment (`AWS_ENDPOINT_URL`,
 * `AWS_ENDPOINT_URL_DYNAMODB`, …), so the same code talks to AWS, LocalStack or the embedded
 * runtime without knowing which.
 */
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { ECSClient } from "@aws-sdk/client-ecs";
import { EventBridgeClient } from "@aws-sdk/client-eventbridge";
import { SFNClient } from "@aws-sdk/client-sfn";
import { SQSClient } from "@aws-sdk/client-sqs";
import { FargateKernels } from "../app/fargate-kernels.ts";
import { KernelCommands } from "../app/kernel-commands.ts";
import { withoutSdkLogging } from "../adapters/sdk-logging.ts";
import { SERVICE_RETRY } from "../adapters/sdk-retry.ts";
import { EcsFargateTasks } from "../adapters/ecs/fargate-tasks.ts";
import { SqsAgentChannel } from "../adapters/sqs/agent-channel.ts";
import { Coordinator } from "../app/coordinator.ts";
import type { EnterStageDeps } from "../app/enter-stage.ts";
import { jsonLogger, type Logger } from "../app/logger.ts";
import { systemClock } from "./system-clock.ts";
import { type Clock } from "../core/ports/clock.ts";
import type { CairnConfig } from "../config.ts";
import type { SessionStore } from "../core/ports/store.ts";
import { DynamoSessionStore } from "../adapters/dynamo/dynamo-session-store.ts";
import { RequestCounter } from "../adapters/dynamo/metrics.ts";
import { storeRetryConfig } from "../adapters/dynamo/retry.ts";
import { eventBridgeEvents } from "../adapters/eventbridge/events-port.ts";
import { EventPublisher } from "../adapters/eventbridge/publisher.ts";
import { LifecycleExecutions } from "../adapters/sfn/lifecycle-executions.ts";
import { DynamoRequests } from "../adapters/dynamo/dynamo-requests.ts";
import { TemplateItems } from "../adapters/dynamo/template-items.ts";
import { FailureCategoryItems } from "../adapters/dynamo/failure-category-items.ts";
import type { CoordinatorDeps } from "../app/coordinator.ts";
import type { ExpiryJudged, ExpiryJudgement } from "../app/expiry-judge.ts";
import { LeaseItems } from "../adapters/dynamo/lease-items.ts";
import { FUNCTION_TIMEOUT_SECONDS } from "../topology/function-timeouts.ts";

export interface Wiring {
  readonly coordinator: Coordinator;
  /** The Fargate executor's cluster, if any: its tasks' state changes are reports (coordinator-envelopes.ts). */
  readonly fargateClusterArn?: string;
  /**
   * The stage-entry Lambda's port to the coordinator: the next step it takes itself (in
   * `enterStage.advance`) and the PENDING timer's judgment — never the whole coordinator.
   */
  readonly enterStage: EnterStageDeps;
  readonly judgeExpiry: (input: ExpiryJudgement) => Promise<ExpiryJudged>;
  readonly store: SessionStore;
  readonly clock: Clock;
  /** The entry points' own log (the sweep's census). */
  readonly log: Logger;
}

/** How the entry points observe the clients and log (Powertools in handlers/telemetry.ts). */
export interface Instrumentation {
  /** Returns the client to use: the same one, traced where tracing is on. */
  captureClient<T extends object>(client: T): T;
  logger(component: string): Logger;
}

const plain = (config: CairnConfig): Instrumentation => ({
  captureClient: (client) => client,
  logger: (component) => jsonLogger(component, undefined, config.logLevel),
});

/**
 * Every DynamoDB write request the functions of this process send. One process is one Lambda
 * execution environment (or the whole embedded runtime): the benchmark reads it for "writes
 * per session".
 */
export const storeMetrics = new RequestCounter();

/** The SDK clients' retry and the plain instrumentation, shared with the deployments' wiring. */
export { plain };

/**
 * What only some entry points build: the submission filter's client is the
 * coordinator's alone (handlers/submission-filter.ts), so EnterStage's bundle does not carry it.
 */
export interface WiringExtras {
  readonly submissionFilter?: (
    config: CairnConfig,
    captureClient: <T extends object>(client: T) => T,
  ) => CoordinatorDeps["submissionFilter"];
}

export function wire(
  config: CairnConfig,
  instrumentation: Instrumentation = plain(config),
  extras: WiringExtras = {},
): Wiring {
  // Built without a logger: the SDK's logger middleware would only walk every call's data.
  const captureClient = <T extends object>(client: T): T =>
    instrumentation.captureClient(withoutSdkLogging(client));
  const dynamo = captureClient(new DynamoDBClient({ ...storeRetryConfig() }));
  const store = new DynamoSessionStore({
    client: dynamo,
    tableName: config.tableName,
    shards: config.shards,
    retentionDays: config.retentionDays,
    metrics: storeMetrics,
  });
  const events = eventBridgeEvents(
    new EventPublisher(captureClient(new EventBridgeClient({ ...SERVICE_RETRY }))),
    config.eventBusName,
  );
  const executions = new LifecycleExecutions(
    captureClient(new SFNClient({ ...SERVICE_RETRY })),
    config.stateMachineArn,
  );
  const channel = new SqsAgentChannel(
    captureClient(new SQSClient({ ...SERVICE_RETRY })),
    config.agentQueuePrefix,
  );
  const fargate = fargateKernels(config, captureClient);
  const coordinator = new Coordinator({
    store,
    executions,
    events,
    channel,
    ...(fargate ? { fargate } : {}),
    templates: new TemplateItems(new DynamoRequests(dynamo, config.tableName, storeMetrics)),
    failureCategories: new FailureCategoryItems(new DynamoRequests(dynamo, config.tableName, storeMetrics)),
    placementLeases: {
      leases: new LeaseItems(new DynamoRequests(dynamo, config.tableName, storeMetrics)),
      leaseMs: functionTimeoutMs("Coordinator"),
    },
    // Stages are claimed by the coordinator and by EnterStage's next step: the longer lives longer.
    claimLifetimeMs: Math.max(functionTimeoutMs("Coordinator"), functionTimeoutMs("EnterStage")),
    ...optionalFilter(extras.submissionFilter?.(config, captureClient)),
    config,
    clock: systemClock,
    log: instrumentation.logger("coordinator"),
  });
  return {
    coordinator,
    judgeExpiry: (input) => coordinator.judgeExpiry(input),
    ...(config.fargate ? { fargateClusterArn: config.fargate.clusterArn } : {}),
    enterStage: {
      store,
      events,
      commands: new KernelCommands(store, channel, fargate),
      clock: systemClock,
      log: instrumentation.logger("enter-stage"),
      terminationGraceMs: config.terminationGraceMs,
      advance: (sessionId, status, written, claimed) =>
        coordinator.advance(sessionId, status, written, claimed),
    },
    store,
    clock: systemClock,
    log: instrumentation.logger("entry"),
  };
}

/** A lease is held at most as long as the function holding it may run. */
export function functionTimeoutMs(name: keyof typeof FUNCTION_TIMEOUT_SECONDS): number {
  return FUNCTION_TIMEOUT_SECONDS[name] * 1000;
}

/**
 * Kernels as ECS tasks, only when the stack has a Fargate executor. The region is the cluster's
 * (awslogs writes to the log group in the task's region, which is the cluster's).
 */
function fargateKernels(
  config: CairnConfig,
  captureClient: <T extends object>(client: T) => T,
): FargateKernels | undefined {
  if (config.fargate === undefined) return undefined;
  const region = config.fargate.clusterArn.split(":")[3]!;
  const tasks = new EcsFargateTasks(captureClient(new ECSClient({ ...SERVICE_RETRY })), {
    cluster: config.fargate.clusterArn,
    region,
  });
  return new FargateKernels(tasks, config.fargate);
}

function optionalFilter(
  filter: CoordinatorDeps["submissionFilter"],
): Pick<CoordinatorDeps, "submissionFilter"> {
  return filter === undefined ? {} : { submissionFilter: filter };
}
