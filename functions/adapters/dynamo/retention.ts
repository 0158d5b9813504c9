/**
 * How long what has ended stays in the table. Ended sessions (with their kernels and runs),
 * finished jobs and lost agents get an expiry (TABLE_SCHEMA.timeToLiveAttribute, epoch seconds)
 * when they reach their end, and DynamoDB's TTL deletes them some time after it (typically within
 * days; never before). Nothing that is still under way expires.
 *
 * A session's execution is named by its id, and Step Functions refuses a closed execution's name
 * for 90 days. While a session's item is in the table its id is taken (creation is guarded by the
 * item's absence), so the retention is at least 90 days (lib/props.ts, functions/config.ts), and
 * the expiry is an hour past it: the execution closes moments after its session ends, so by the
 * time the item can be deleted and the id used again, Step Functions takes the name again too.
 */
import type { Clause } from "./expressions.ts";
import { TABLE_SCHEMA } from "../../topology/table-schema.ts";
import type { StoreLayout } from "./transaction-plan.ts";

export const EXPIRY_ATTRIBUTE = TABLE_SCHEMA.timeToLiveAttribute;

/** Step Functions keeps a closed execution's name this long (StartExecution's `name`). */
export const EXECUTION_NAME_RESERVED_DAYS = 90;

/** The expiry's margin over the retention: an execution closes moments after its session ends. */
export const EXECUTION_CLOSE_MARGIN_SEC = 3_600;

/** The expiry, in epoch seconds, of an item that reached its end at `endedAtMs`. */
export function retainedUntil(endedAtMs: number, layout: Pick<StoreLayout, "retentionDays">): number {
  return Math.ceil(endedAtMs / 1000) + layout.retentionDays * 86_400 + EXECUTION_CLOSE_MARGIN_SEC;
}

/** The item's expiry as an attribute value, to spread into a put item. */
export function expiryAttribute(epochSec: number): { [EXPIRY_ATTRIBUTE]: { N: string } } {
  return { [EXPIRY_ATTRIBUTE]: { N: String(epochSec) } };
}

/**
 * The item is absent, or past its expiry and not deleted yet (TTL deletes lazily): either way it
 * is gone as far as a write that records something once is concerned.
 */
export const absentOrExpired =
  (nowMs: number): Clause =>
  (e) =>
    `(attribute_not_exists(${e.path("pk")}) OR ${e.path(EXPIRY_ATTRIBUTE)} < ${e.value(Math.floor(nowMs / 1000))})`;

/** Whether an item read is past its expiry (and so, to a reader, gone). */
export function isExpired(
  item: { readonly [EXPIRY_ATTRIBUTE]?: { readonly N?: string } },
  nowMs: number,
): boolean {
  const expiry = Number(item[EXPIRY_ATTRIBUTE]?.N ?? Infinity);
  return expiry < Math.floor(nowMs / 1000);
}
