/**
 * SessionCensus over the status index (docs/data-model.md, pattern 13): one `Select: COUNT`
 * Query per shard of `gsi1` `STATUS#<status>#<shard>`, in parallel, each followed through its
 * pages (1 MB of index entries each: about 10,000 sessions). No item is read.
 */
import { QueryCommand, type AttributeValue, type DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { CensusCount, SessionCensus } from "../../core/ports/session-census.ts";
import { InvalidStoreRequestError } from "../../core/ports/errors.ts";
import { SESSION_STATUSES, type SessionStatus } from "../../core/status.ts";
import { STATUS_INDEX } from "../../topology/table-schema.ts";
import { sessionStatusPk } from "./keys.ts";

export interface DynamoSessionCensusOptions {
  /** Built with `...storeRetryConfig()` (retry.ts), as the store's. */
  readonly client: DynamoDBClient;
  readonly tableName: string;
  /** Partitions per status: the store's (default 4). */
  readonly shards?: number;
}

export class DynamoSessionCensus implements SessionCensus {
  private readonly client: DynamoDBClient;
  private readonly tableName: string;
  private readonly shards: number;

  constructor(options: DynamoSessionCensusOptions) {
    const shards = options.shards ?? 4;
    if (!Number.isInteger(shards) || shards < 1) {
      throw new InvalidStoreRequestError("shards", `must be a whole number of at least 1, got ${shards}`);
    }
    this.client = options.client;
    this.tableName = options.tableName;
    this.shards = shards;
  }

  async countSessions(status: SessionStatus, atMost?: number): Promise<CensusCount> {
    if (!SESSION_STATUSES.includes(status)) {
      throw new InvalidStoreRequestError(
        "status",
        `must be one of ${SESSION_STATUSES.join(", ")}, got "${status}"`,
      );
    }
    if (atMost !== undefined && (!Number.isInteger(atMost) || atMost < 1)) {
      throw new InvalidStoreRequestError("atMost", `must be a whole number of at least 1, got ${atMost}`);
    }
    // Sessions spread evenly over the shards (by hash): each counts its share of the cap.
    const share = atMost === undefined ? undefined : Math.ceil(atMost / this.shards);
    const shards = Array.from({ length: this.shards }, (_, shard) => sessionStatusPk(status, shard));
    const counts = await Promise.all(shards.map((pk) => this.countPartition(pk, share)));
    return {
      count: counts.reduce((a, c) => a + c.count, 0),
      exact: counts.every((c) => c.exact),
    };
  }

  private async countPartition(pk: string, atMost: number | undefined): Promise<CensusCount> {
    let total = 0;
    let startKey: Record<string, AttributeValue> | undefined;
    do {
      const remaining = atMost === undefined ? undefined : atMost - total;
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: STATUS_INDEX,
          KeyConditionExpression: "#pk = :pk",
          ExpressionAttributeNames: { "#pk": "gsi1pk" },
          ExpressionAttributeValues: { ":pk": { S: pk } },
          Select: "COUNT",
          ...(remaining === undefined ? {} : { Limit: remaining }),
          ...(startKey === undefined ? {} : { ExclusiveStartKey: startKey }),
        }),
      );
      total += page.Count ?? 0;
      startKey = page.LastEvaluatedKey;
    } while (startKey !== undefined && (atMost === undefined || total < atMost));
    return { count: total, exact: startKey === undefined };
  }
}
