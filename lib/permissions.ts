/**
 * Least privilege, from the topology's `uses`: the exact actions each use needs, on the exact
 * resources. The lists follow the SDK commands the adapters send (test/cdk-permissions.test.ts
 * reads functions/ and fails when a command appears that no grant covers, or a grant covers
 * nothing the code sends).
 */
import { Arn, ArnFormat, Stack } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import type * as events from "aws-cdk-lib/aws-events";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import type * as sfn from "aws-cdk-lib/aws-stepfunctions";
import type { IConstruct } from "constructs";
import { TABLE_SCHEMA } from "../functions/topology/table-schema.ts";
import type { FunctionDecl } from "../functions/topology/index.ts";
import { TopologyError } from "./errors.ts";
import { acknowledgeWildcardResource, NAG_WILDCARD_RESOURCES } from "./nag-acknowledgements.ts";

export type Use = FunctionDecl["uses"][number];

/**
 * Item actions on the table. TransactWriteItems has no IAM action of its own: each of its Put,
 * Update, Delete and ConditionCheck items is authorised as PutItem, UpdateItem, DeleteItem and
 * ConditionCheckItem.
 */
export const TABLE_ITEM_ACTIONS = [
  "dynamodb:GetItem",
  "dynamodb:BatchGetItem",
  "dynamodb:PutItem",
  "dynamodb:UpdateItem",
  "dynamodb:DeleteItem",
  "dynamodb:ConditionCheckItem",
] as const;
/** Queries run on the table (history) and on every GSI (status, target and listing indexes). */
export const TABLE_QUERY_ACTIONS = ["dynamodb:Query"] as const;
export const BUS_PUT_ACTIONS = ["events:PutEvents"] as const;
/** The submission filter: granted to the coordinator on the filter's ARN only (lib/cairn.ts). */
export const FILTER_INVOKE_ACTIONS = ["lambda:InvokeFunction"] as const;
export const START_ACTIONS = ["states:StartExecution"] as const;
/**
 * Completing a stage's callback: SendTaskSuccess leads a stage to its first success status,
 * SendTaskFailure `Cairn.To.<STATUS>` to any other (the state catches it by name; no stage
 * heartbeats). Task-token actions are authorised against the state machine that issued the token.
 */
export const CALLBACK_ACTIONS = ["states:SendTaskSuccess", "states:SendTaskFailure"] as const;
/** The sweep's repair asks whether a session's execution is still running, so it never restarts a live one. */
export const DESCRIBE_ACTIONS = ["states:DescribeExecution"] as const;
/**
 * Executions are named at run time (by session id), so the grant can name them only under their
 * state machine: `execution:<state machine name>:*`.
 */
export const EXECUTIONS_WILDCARD = {
  reason:
    "Lifecycle executions are started at run time, one per session and named by the session's id, so their ARNs are known only by the state machine's name: the resource is `execution:<state machine name>:*` and names no other state machine's executions. The Coordinator's sweep only reads them (states:DescribeExecution) to find sessions whose execution is no longer running.",
} as const;

/**
 * Opening an agent's queue when it registers. CreateQueue with tags is authorised as CreateQueue
 * plus TagQueue; a queue an earlier version made with other attributes (QueueNameExists) is read
 * back with GetQueueUrl and given this version's with SetQueueAttributes.
 */
export const AGENT_QUEUE_OPEN_ACTIONS = [
  "sqs:CreateQueue",
  "sqs:TagQueue",
  "sqs:GetQueueUrl",
  "sqs:SetQueueAttributes",
] as const;
/** Sending kernel commands: SendMessageBatch is authorised as SendMessage. */
export const AGENT_QUEUE_SEND_ACTIONS = ["sqs:GetQueueUrl", "sqs:SendMessage"] as const;

export interface GrantTargets {
  readonly table: dynamodb.ITable;
  readonly bus: events.IEventBus;
  /**
   * The state machines the function's statemachine:* uses apply to (the topology's
   * `stateMachinesOf`), and no other: the session coordinator cannot start a deployment's
   * execution, nor the deployments' function a session's.
   */
  readonly stateMachines: readonly sfn.IStateMachine[];
  /** Every agent queue, `arn:…:sqs:<region>:<account>:<prefix>*` (agentQueuesArn). */
  readonly agentQueuesArn: string;
}

/**
 * The agents' queues are created at run time, one per agent, so the grants can name them only
 * by their prefix.
 */
export function agentQueuesArn(scope: IConstruct, prefix: string): string {
  return Stack.of(scope).formatArn({ service: "sqs", resource: `${prefix}*` });
}

/** Adds to the function's role exactly what its `uses` need. */
export function grantUses(fn: lambda.IFunction, uses: readonly Use[], targets: GrantTargets): void {
  if (uses.some((use) => use.startsWith("statemachine:")) && targets.stateMachines.length === 0) {
    throw new TopologyError(`FUNCTIONS ${fn.node.id}`, "uses statemachine:* but names no state machine");
  }
  for (const use of new Set(uses)) {
    for (const statement of statementsFor(use, targets)) fn.addToRolePolicy(statement);
  }
  if (fn.role && uses.some((use) => use === "agents:open" || use === "agents:send")) {
    acknowledgeWildcardResource(fn.role, targets.agentQueuesArn, NAG_WILDCARD_RESOURCES.functionAgentQueues);
  }
  if (fn.role && uses.includes("statemachine:describe")) {
    for (const stateMachine of targets.stateMachines)
      acknowledgeWildcardResource(fn.role, executionsArn(stateMachine), EXECUTIONS_WILDCARD);
  }
}

export function statementsFor(
  use: Use,
  { table, bus, stateMachines, agentQueuesArn }: GrantTargets,
): iam.PolicyStatement[] {
  switch (use) {
    case "table":
      return [
        new iam.PolicyStatement({ actions: [...TABLE_ITEM_ACTIONS], resources: [table.tableArn] }),
        new iam.PolicyStatement({
          actions: [...TABLE_QUERY_ACTIONS],
          resources: [table.tableArn, ...indexArns(table)],
        }),
      ];
    case "bus:put":
      return [new iam.PolicyStatement({ actions: [...BUS_PUT_ACTIONS], resources: [bus.eventBusArn] })];
    case "statemachine:start":
      return [
        new iam.PolicyStatement({ actions: [...START_ACTIONS], resources: stateMachineArns(stateMachines) }),
      ];
    case "statemachine:describe":
      return [
        new iam.PolicyStatement({
          actions: [...DESCRIBE_ACTIONS],
          resources: stateMachines.map(executionsArn),
        }),
      ];
    case "statemachine:callback":
      return [
        new iam.PolicyStatement({
          actions: [...CALLBACK_ACTIONS],
          resources: stateMachineArns(stateMachines),
        }),
      ];
    case "agents:open":
      return [
        new iam.PolicyStatement({ actions: [...AGENT_QUEUE_OPEN_ACTIONS], resources: [agentQueuesArn] }),
      ];
    case "agents:send":
      return [
        new iam.PolicyStatement({ actions: [...AGENT_QUEUE_SEND_ACTIONS], resources: [agentQueuesArn] }),
      ];
  }
}

function stateMachineArns(stateMachines: readonly sfn.IStateMachine[]): string[] {
  return stateMachines.map((m) => m.stateMachineArn);
}

/** Every execution of the state machine: `arn:…:states:<region>:<account>:execution:<name>:*`. */
export function executionsArn(stateMachine: sfn.IStateMachine): string {
  // As aws-cdk-lib's StateMachine.executionArn: the name is read off the state machine's ARN.
  const { resourceName } = Arn.split(stateMachine.stateMachineArn, ArnFormat.COLON_RESOURCE_NAME);
  return `${Stack.of(stateMachine).formatArn({
    service: "states",
    resource: "execution",
    resourceName,
    arnFormat: ArnFormat.COLON_RESOURCE_NAME,
  })}:*`;
}

/** One ARN per index the schema declares: no `index/*` wildcard. */
export function indexArns(table: dynamodb.ITable): string[] {
  return TABLE_SCHEMA.globalSecondaryIndexes.map((g) => `${table.tableArn}/index/${g.indexName}`);
}
