/**
 * The sessions table, built from TABLE_SCHEMA (the same data the embedded runtime creates its
 * table from): on-demand, point-in-time recovery, TTL, the sparse KEYS_ONLY GSIs the store queries.
 */
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import type { Construct } from "constructs";
import { TABLE_SCHEMA, type KeyAttribute } from "../functions/topology/table-schema.ts";
import type { ResolvedCairnProps } from "./props.ts";

export function createSessionsTable(
  scope: Construct,
  id: string,
  settings: ResolvedCairnProps,
): dynamodb.Table {
  const table = new dynamodb.Table(scope, id, {
    ...(settings.tableName !== undefined ? { tableName: settings.tableName } : {}),
    partitionKey: attribute(TABLE_SCHEMA.partitionKey),
    sortKey: attribute(TABLE_SCHEMA.sortKey),
    billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    timeToLiveAttribute: TABLE_SCHEMA.timeToLiveAttribute,
    deletionProtection: settings.deletionProtection,
    removalPolicy: settings.removalPolicy,
  });
  for (const index of TABLE_SCHEMA.globalSecondaryIndexes) {
    table.addGlobalSecondaryIndex({
      indexName: index.indexName,
      partitionKey: attribute(index.partitionKey),
      sortKey: attribute(index.sortKey),
      projectionType: dynamodb.ProjectionType[index.projection],
    });
  }
  return table;
}

function attribute(key: KeyAttribute): dynamodb.Attribute {
  return { name: key.name, type: dynamodb.AttributeType.STRING };
}
