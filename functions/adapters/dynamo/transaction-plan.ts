/**
 * The shape every transactional write is planned in: its items plus what each item stands for,
 * so a cancellation reason (reported per item, in order) can be mapped back to a domain error.
 */
import type { TransactWriteItem } from "@aws-sdk/client-dynamodb";
import type { ResourceRequest } from "../../core/model.ts";
import type { EntityState } from "../../core/ports/errors.ts";
import { Expressions, UpdateBuilder, type Clause } from "./expressions.ts";
import type { Item } from "./item-codec.ts";

/** DynamoDB's limit on actions in one TransactWriteItems. Atomic writes are never split. */
export const MAX_TRANSACTION_ITEMS = 100;

export interface StoreLayout {
  readonly tableName: string;
  readonly shards: number;
  readonly historyRetentionDays: number;
  /** Ended sessions, their runs, finished jobs and lost agents expire this long after their end (retention.ts). */
  readonly retentionDays: number;
}

export type ItemRole =
  | { readonly kind: "session" }
  | { readonly kind: "kernel"; readonly index: number }
  | { readonly kind: "history"; readonly seq: number }
  | { readonly kind: "agent"; readonly agentId: string; readonly requested: ResourceRequest }
  | { readonly kind: "allocation"; readonly agentId: string }
  | { readonly kind: "run"; readonly runIndex: number }
  | { readonly kind: "job"; readonly jobId: string }
  | { readonly kind: "queue"; readonly name: string }
  | { readonly kind: "retryPolicy"; readonly name: string; readonly change: "attach" | "detach" }
  | { readonly kind: "deployment" | "route"; readonly id: string; readonly expected: "absent" | EntityState }
  | { readonly kind: "deploymentHistory" };

export interface PlannedTransaction {
  readonly items: TransactWriteItem[];
  readonly roles: ItemRole[];
}

/** What a session item's condition checks of one kernel it holds (kernelsChecked). */
export interface KernelCheck {
  readonly index: number;
  /** The version the kernel was read at. */
  readonly version?: number;
  /** The kernel has no placement (a reservation). */
  readonly unplaced?: boolean;
}

/**
 * A session's write: its first item is the session item's update, whose one condition covers
 * the kernels too. DynamoDB reports that condition failed as a whole; `kernelChecks` lets the
 * failure be told apart again (sessionFailures, failures.ts).
 */
export interface SessionPlan extends PlannedTransaction {
  readonly kernelChecks: readonly KernelCheck[];
  /** The update is guarded by the session's status and version too. */
  readonly checksSession: boolean;
}

export type UpdateRequest = NonNullable<TransactWriteItem["Update"]>;

/** An update guarded by `condition`; on failure DynamoDB reports the item as it was. */
export function updateRequest(
  tableName: string,
  key: Item,
  build: (u: UpdateBuilder) => void,
  condition: Clause,
): UpdateRequest {
  const e = new Expressions();
  const u = new UpdateBuilder(e);
  build(u);
  const UpdateExpression = u.expression();
  const ConditionExpression = condition(e);
  return {
    TableName: tableName,
    Key: key,
    UpdateExpression,
    ConditionExpression,
    ...e.attributes(),
    ReturnValuesOnConditionCheckFailure: "ALL_OLD",
  };
}

/** A condition-only request (ConditionCheck, Put, Delete) with its placeholders. */
export function guarded(condition: Clause): {
  ConditionExpression: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Item;
  ReturnValuesOnConditionCheckFailure: "ALL_OLD";
} {
  const e = new Expressions();
  const ConditionExpression = condition(e);
  return { ConditionExpression, ...e.attributes(), ReturnValuesOnConditionCheckFailure: "ALL_OLD" };
}
