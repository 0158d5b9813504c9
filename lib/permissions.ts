/**
 * Least privilege, from the topology's `uses`: the exact actions each use needs, on the exact
 * resources. The lists follow the SDK commands the adapters send (test/cdk-permissions.test.ts
 * reads functions/ and fails when a command appears that no grant covers, or a grant covers
 * nothing the code sends).
 */
import * as iam from "aws-cdk-lib/aws-iam";
import type * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import type * as events from "aws-cdk-lib/aws-events";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import type * as sfn from "aws-cdk-lib/aws-stepfunctions";
import { TABLE_SCHEMA } from "../functions/adapters/dynamo/table-schema.ts";
import type { FunctionDecl } from "../functions/topology.ts";

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
export const START_ACTIONS = ["states:StartExecution"] as const;
/**
 * Completing a stage's callback. Only SendTaskSuccess is sent (failures the state machine routes
 * travel as a transition, and no stage heartbeats). Task-token actions are authorised against the
 * state machine that issued the token.
 */
export const CALLBACK_ACTIONS = ["states:SendTaskSuccess"] as const;

export interface GrantTargets {
  readonly table: dynamodb.ITable;
  readonly bus: events.IEventBus;
  readonly stateMachine: sfn.IStateMachine;
}

/** Adds to the function's role exactly what its `uses` need. */
export function grantUses(fn: lambda.IFunction, uses: readonly Use[], targets: GrantTargets): void {
  for (const use of new Set(uses)) {
    for (const statement of statementsFor(use, targets)) fn.addToRolePolicy(statement);
  }
}

export function statementsFor(use: Use, { table, bus, stateMachine }: GrantTargets): iam.PolicyStatement[] {
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
        new iam.PolicyStatement({ actions: [...START_ACTIONS], resources: [stateMachine.stateMachineArn] }),
      ];
    case "statemachine:callback":
      return [
        new iam.PolicyStatement({
          actions: [...CALLBACK_ACTIONS],
          resources: [stateMachine.stateMachineArn],
        }),
      ];
  }
}

/** One ARN per index the schema declares: no `index/*` wildcard. */
function indexArns(table: dynamodb.ITable): string[] {
  return TABLE_SCHEMA.globalSecondaryIndexes.map((g) => `${table.tableArn}/index/${g.indexName}`);
}
