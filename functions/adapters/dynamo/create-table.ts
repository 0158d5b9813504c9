/**
 * Creates the table TABLE_SCHEMA describes, for local runs and tests (the CDK stack builds the
 * deployed one from the same data).
 */
import {
  CreateTableCommand,
  DescribeTableCommand,
  UpdateTimeToLiveCommand,
  type CreateTableCommandInput,
  type DynamoDBClient,
} from "@aws-sdk/client-dynamodb";
import { TABLE_SCHEMA } from "../../topology/table-schema.ts";

/** The CreateTable request for TABLE_SCHEMA (on-demand billing). */
export function createTableInput(tableName: string): CreateTableCommandInput {
  const s = TABLE_SCHEMA;
  const attributes = new Map<string, "S">();
  for (const key of [
    s.partitionKey,
    s.sortKey,
    ...s.globalSecondaryIndexes.flatMap((g) => [g.partitionKey, g.sortKey]),
  ]) {
    attributes.set(key.name, key.type);
  }
  return {
    TableName: tableName,
    BillingMode: s.billingMode,
    AttributeDefinitions: [...attributes].map(([AttributeName, AttributeType]) => ({
      AttributeName,
      AttributeType,
    })),
    KeySchema: [
      { AttributeName: s.partitionKey.name, KeyType: "HASH" },
      { AttributeName: s.sortKey.name, KeyType: "RANGE" },
    ],
    GlobalSecondaryIndexes: s.globalSecondaryIndexes.map((g) => ({
      IndexName: g.indexName,
      KeySchema: [
        { AttributeName: g.partitionKey.name, KeyType: "HASH" },
        { AttributeName: g.sortKey.name, KeyType: "RANGE" },
      ],
      Projection: { ProjectionType: g.projection },
    })),
  };
}

/** Creates the table, waits until it is ACTIVE and turns TTL on. For local runs and tests. */
export async function createTable(
  client: DynamoDBClient,
  tableName: string,
  timeoutMs = 30_000,
): Promise<void> {
  await client.send(new CreateTableCommand(createTableInput(tableName)));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    const indexesActive = (Table?.GlobalSecondaryIndexes ?? []).every((g) => g.IndexStatus === "ACTIVE");
    if (Table?.TableStatus === "ACTIVE" && indexesActive) break;
    if (Date.now() > deadline) throw new Error(`table ${tableName} not ACTIVE after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await client.send(
    new UpdateTimeToLiveCommand({
      TableName: tableName,
      TimeToLiveSpecification: { AttributeName: TABLE_SCHEMA.timeToLiveAttribute, Enabled: true },
    }),
  );
}
