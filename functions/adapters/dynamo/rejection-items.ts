/**
 * Rejected submissions as items: `REJECTION#<id>` / `EVENT#<eventId>`, one per refused
 * event, with the reason and a TTL. Keyed by the id the submission asked for, so a client that
 * submitted it finds its own event's verdict, and `cairn get` of the id finds why it is missing.
 */
import type { SubmissionRejection } from "../../core/ports/jobs.ts";
import type { DynamoRequests } from "./dynamo-requests.ts";
import { Fields, fromItem, ItemType, toItem, type Item } from "./item-codec.ts";
import { REJECTION_EVENT_SK_PREFIX, rejectionPk, rejectionSk } from "./keys.ts";
import { requireId, requireLimit, requireTime } from "./validation.ts";

/** The newest this many are listed: enough for any client to find its own event (ids are chosen per submission). */
const MAX_LISTED = 100;
/** EventBridge event ids are UUIDs; the limit only keeps the key bounded. */
const MAX_EVENT_ID = 256;
const MAX_REASON = 4096;

export class RejectionItems {
  readonly #requests: DynamoRequests;
  readonly #clock: () => number;

  constructor(requests: DynamoRequests, clock: () => number) {
    this.#requests = requests;
    this.#clock = clock;
  }

  async record(rejection: SubmissionRejection, ttlSeconds: number): Promise<void> {
    requireId("rejection.id", rejection.id);
    requireId("rejection.eventId", rejection.eventId);
    requireLimit("rejection.eventId length", rejection.eventId.length, MAX_EVENT_ID);
    requireTime("rejection.atMs", rejection.atMs);
    requireLimit("ttlSeconds", ttlSeconds, 366 * 86_400);
    await this.#requests.putItem(
      "recordRejection",
      {
        Item: toItem({
          pk: rejectionPk(rejection.id),
          sk: rejectionSk(rejection.eventId),
          type: ItemType.REJECTION,
          id: rejection.id,
          eventId: rejection.eventId,
          reason: rejection.reason.slice(0, MAX_REASON),
          atMs: rejection.atMs,
          expiresAtEpochSec: Math.floor(rejection.atMs / 1000) + ttlSeconds,
        }),
      },
      undefined,
    );
  }

  async list(id: string): Promise<SubmissionRejection[]> {
    requireId("id", id);
    const nowSec = Math.floor(this.#clock() / 1000);
    // Every page: the items sort by event id, not by time, and a Query page ends at 1 MB (100
    // reasons of 4,096 characters of three bytes each would not fit one), so the newest can be
    // anywhere. They are few: one per refused event, each gone with its TTL.
    const items = await this.#requests.queryAll("listRejections", {
      TableName: this.#requests.tableName,
      KeyConditionExpression: "#pk = :pk AND begins_with(#sk, :prefix)",
      ExpressionAttributeNames: { "#pk": "pk", "#sk": "sk" },
      ExpressionAttributeValues: {
        ":pk": { S: rejectionPk(id) },
        ":prefix": { S: REJECTION_EVENT_SK_PREFIX },
      },
      ConsistentRead: true,
    });
    return (
      items
        // TTL deletes lazily: an expired rejection is gone as far as readers are concerned.
        .filter((item) => Number(item["expiresAtEpochSec"]?.N ?? Infinity) >= nowSec)
        .map(rejectionFromItem)
        .sort((a, b) => b.atMs - a.atMs)
        .slice(0, MAX_LISTED)
    );
  }
}

export function rejectionFromItem(item: Item): SubmissionRejection {
  const r = new Fields(fromItem(item), "rejection");
  return {
    id: r.string("id"),
    eventId: r.string("eventId"),
    reason: r.string("reason"),
    atMs: r.number("atMs"),
  };
}
