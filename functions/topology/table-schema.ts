/**
 * The table as plain data. The CDK stack and the embedded runtime both build the table from
 * TABLE_SCHEMA, so they cannot drift; adapters/dynamo/create-table.ts is the local/test form of it.
 * docs/data-model.md describes what each key and index holds.
 */
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
      purpose: "sessions by status (sharded, queue order); allocations by agent",
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
      purpose:
        "sessions by creation time (sharded); the rosters of agents, queues, retry policies, deployments and jobs with a run-time limit",
    },
  ],
} as const satisfies {
  partitionKey: KeyAttribute;
  sortKey: KeyAttribute;
  billingMode: "PAY_PER_REQUEST";
  timeToLiveAttribute: string;
  globalSecondaryIndexes: readonly IndexSchema[];
};
