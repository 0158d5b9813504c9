/**
 * The deployments function's and the family stage entry's wiring, apart from the
 * session functions' (wiring.ts), so that each function's bundle carries only what it runs.
 * Endpoints come from the standard SDK environment, as wiring.ts's do.
 */
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { EventBridgeClient } from "@aws-sdk/client-eventbridge";
import { SFNClient } from "@aws-sdk/client-sfn";
import { withoutSdkLogging } from "../adapters/sdk-logging.ts";
import { SERVICE_RETRY } from "../adapters/sdk-retry.ts";
import { DeploymentItems } from "../adapters/dynamo/deployment-items.ts";
import { DynamoRequests } from "../adapters/dynamo/dynamo-requests.ts";
import { DynamoSessionStore } from "../adapters/dynamo/dynamo-session-store.ts";
import { storeRetryConfig } from "../adapters/dynamo/retry.ts";
import { eventBridgeDeploymentBus, eventBridgeFamilyEvents } from "../adapters/eventbridge/events-port.ts";
import { EventPublisher } from "../adapters/eventbridge/publisher.ts";
import { FamilyExecutions } from "../adapters/sfn/family-executions.ts";
import { Deployments } from "../app/deployments.ts";
import type { EnterFamilyStageDeps } from "../app/enter-family-stage.ts";
import { systemClock } from "./system-clock.ts";
import type { CairnConfig } from "../config.ts";
import { LeaseItems } from "../adapters/dynamo/lease-items.ts";
import { functionTimeoutMs, plain, storeMetrics, type Instrumentation } from "./wiring.ts";

export interface DeploymentsWiring {
  /** Only where the family state machines are configured (the Deployments function's environment). */
  readonly deployments?: Deployments;
  readonly enterFamilyStage: EnterFamilyStageDeps;
}

export function wireDeployments(
  config: CairnConfig,
  instrumentation: Instrumentation = plain(config),
): DeploymentsWiring {
  // Built without a logger: the SDK's logger middleware would only walk every call's data.
  const captureClient = <T extends object>(client: T): T =>
    instrumentation.captureClient(withoutSdkLogging(client));
  const dynamo = captureClient(new DynamoDBClient({ ...storeRetryConfig() }));
  const store = new DeploymentItems(new DynamoRequests(dynamo, config.tableName, storeMetrics));
  const publisher = new EventPublisher(captureClient(new EventBridgeClient({ ...SERVICE_RETRY })));
  const deployments =
    config.familyStateMachines === undefined
      ? undefined
      : new Deployments({
          store,
          // The sessions behind routes, refused submissions and reporting agents: the session table's.
          sessions: new DynamoSessionStore({
            client: dynamo,
            tableName: config.tableName,
            shards: config.shards,
            retentionDays: config.retentionDays,
            metrics: storeMetrics,
          }),
          executions: new FamilyExecutions(
            captureClient(new SFNClient({ ...SERVICE_RETRY })),
            config.familyStateMachines,
          ),
          bus: eventBridgeDeploymentBus(publisher, config.eventBusName),
          clock: systemClock,
          log: instrumentation.logger("deployments"),
          leases: {
            leases: new LeaseItems(new DynamoRequests(dynamo, config.tableName, storeMetrics)),
            leaseMs: functionTimeoutMs("Deployments"),
          },
        });
  return {
    ...(deployments !== undefined ? { deployments } : {}),
    enterFamilyStage: {
      store,
      events: eventBridgeFamilyEvents(publisher, config.eventBusName),
      clock: systemClock,
      log: instrumentation.logger("enter-family-stage"),
    },
  };
}
