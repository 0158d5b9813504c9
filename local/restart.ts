/**
 * What a restart with a kept table (`npm start -- --data-dir DIR`) finds. The table survives;
 * the Step Functions engine is in memory, so every session that was mid-lifecycle lost its
 * execution. Such a session is not resumed (the state machine has no entry point per stage):
 * the sweep's repair of sessions without a live execution ends it with the reason, as it would
 * on AWS after a failed or stopped execution. The runtime only names them at start-up.
 */
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoSessionStore } from "../functions/adapters/dynamo/dynamo-session-store.ts";
import { WAITING_SESSION_STATUSES } from "../functions/core/status.ts";

/** Ids of the sessions in the table that are not terminal (at most `limit`), and whether there are more. */
export async function sessionsMidLifecycle(
  client: DynamoDBClient,
  tableName: string,
  limit = 20,
): Promise<{ ids: string[]; more: boolean }> {
  const store = new DynamoSessionStore({ client, tableName });
  const ids: string[] = [];
  for (const status of WAITING_SESSION_STATUSES) {
    const page = await store.listSessionsByStatus(status, { limit: limit + 1 - ids.length });
    ids.push(...page.items.map((s) => s.id));
    if (ids.length > limit || page.cursor !== undefined) return { ids: ids.slice(0, limit), more: true };
  }
  return { ids, more: false };
}
