/**
 * AWS SDK clients. Endpoints come from the standard SDK environment (`AWS_ENDPOINT_URL`,
 * `AWS_ENDPOINT_URL_DYNAMODB`, …), so the same code talks to AWS, LocalStack or the embedded
 * runtime without knowing which.
 */
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { EventBridgeClient } from "@aws-sdk/client-eventbridge";
import { SFNClient } from "@aws-sdk/client-sfn";
import { Coordinator } from "../app/coordinator.ts";
import type { EnterStageDeps } from "../app/enter-stage.ts";
import { jsonLogger } from "../app/logger.ts";
import { systemClock } from "../app/ports.ts";
import type { CairnConfig } from "../config.ts";
import { DynamoSessionStore } from "./dynamo/dynamo-session-store.ts";
import { eventBridgeEvents } from "./eventbridge/events-port.ts";
import { EventPublisher } from "./eventbridge/publisher.ts";
import { LifecycleExecutions } from "./sfn/lifecycle-executions.ts";

export interface Wiring {
  readonly coordinator: Coordinator;
  readonly enterStage: EnterStageDeps;
}

export function wire(config: CairnConfig): Wiring {
  const store = new DynamoSessionStore({
    client: new DynamoDBClient({}),
    tableName: config.tableName,
    shards: config.shards,
  });
  const events = eventBridgeEvents(new EventPublisher(new EventBridgeClient({})), config.eventBusName);
  const executions = new LifecycleExecutions(new SFNClient({}), config.stateMachineArn);
  return {
    coordinator: new Coordinator({
      store,
      executions,
      events,
      config,
      clock: systemClock,
      log: jsonLogger("coordinator", undefined, config.logLevel),
    }),
    enterStage: {
      store,
      events,
      clock: systemClock,
      log: jsonLogger("enter-stage", undefined, config.logLevel),
      terminationGraceMs: config.terminationGraceMs,
    },
  };
}
