/**
 * The table as plain data. The CDK stack and the embedded runtime both build the table from
 * TABLE_SCHEMA, so they cannot drift; `createTable` is the local/test form of it.
 * docs/data-model.md describes what each key and index holds.
 */
import {
  CreateTableCommand,
  DescribeTableCommand,
  UpdateTimeToLiveCommand,
  type CreateTableCommandInput,
  type DynamoDBClient,
} from "@aws-sdk/client-dynamodb";

export interface KeyAttribute {
  readonly name: string;
  readonly type: "S";
}

export interface IndexSchema {
  readonly indexName: string;
  readonly partitionKey: KeyAttribute;
  readonly sortKey: KeyAttribute;
  /** Index entries carry keys only: readers fetch the item itself consistently. */
  readonly projection: "KEYS_ONLY";
  readonly purpose: string;
}

export const STATUS_INDEX = "gsi1";
export const TARGET_INDEX = "gsi2";
export const LISTING_INDEX = "gsi3";

export const TABLE_SCHEMA = {
  partitionKey: { name: "pk", type: "S" },
  sortKey: { name: "sk", type: "S" },
  billingMode: "PAY_PER_REQUEST",
  timeToLiveAttribute: "expiresAtEpochSec",
  globalSecondaryIndexes: [
    {
      indexName: STATUS_INDEX,
      partitionKey: { name: "gsi1pk", type: "S" },
      sortKey: { name: "gsi1sk", type: "S" },
      projection: "KEYS_ONLY",
      purpose:
        "sessions by status and kernels by non-terminal status (sharded, queue order); allocations by agent",
    },
    {
      indexName: TARGET_INDEX,
      partitionKey: { name: "gsi2pk", type: "S" },
      sortKey: { name: "gsi1sk", type: "S" },
      projection: "KEYS_ONLY",
      purpose: "targetable sessions: waiting in a stage with an unclaimed task token (sparse, sharded)",
    },
    {
      indexName: LISTING_INDEX,
      partitionKey: { name: "gsi3pk", type: "S" },
      sortKey: { name: "gsi3sk", type: "S" },
      projection: "KEYS_ONLY",
      purpose: "sessions by creation time (sharded); the rosters of agents, queues and retry policies",
    },
  ],
} as const satisfies {
  partitionKey: KeyAttribute;
  sortKey: KeyAttribute;
  billingMode: "PAY_PER_REQUEST";
  timeToLiveAttribute: string;
  globalSecondaryIndexes: readonly IndexSchema[];
};

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
