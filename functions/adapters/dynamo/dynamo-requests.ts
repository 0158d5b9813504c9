/**
 * Every request the store sends goes through here, once: the client's own retry strategy
 * retries throttling and transaction conflicts (retry.ts, StoreRetryStrategy), and what
 * outlasted it becomes StoreUnavailableError here. Writes are reported to the metrics hook (each
 * try the SDK made), reads are consistent, and a cancelled transaction comes back as the list
 * of items whose condition failed (with the role each item plays) instead of an exception.
 */
import {
  BatchGetItemCommand,
  DeleteItemCommand,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  ProvisionedThroughputExceededException,
  TransactWriteItemsCommand,
  UpdateItemCommand,
  type BatchGetItemCommandInput,
  type ConsumedCapacity,
  type DeleteItemCommandInput,
  type DynamoDBClient,
  type PutItemCommandInput,
  type QueryCommandInput,
  type TransactWriteItem,
  type UpdateItemCommandInput,
} from "@aws-sdk/client-dynamodb";
import type { RetryErrorInfo, RetryStrategy, RetryStrategyV2, RetryToken } from "@smithy/types";
import { StoreUnavailableError } from "../../core/ports/errors.ts";
import { Expressions, UpdateBuilder, type Clause } from "./expressions.ts";
import type { Item } from "./item-codec.ts";
import { LISTING_INDEX } from "../../topology/table-schema.ts";
import type { StoreMetricsSink, WriteOperation } from "./metrics.ts";
import { afterRetries, attemptsOf, cancellationReasons, type CancellationReason } from "./retry.ts";
import { MAX_TRANSACTION_ITEMS, type ItemRole, type PlannedTransaction } from "./transaction-plan.ts";

/** The items a roster of the listings index lists: their partition key prefix and sort key. */
export interface RosterItems {
  readonly pkPrefix: string;
  readonly sk: string;
}

const BATCH_GET_MAX = 100;

/** An item of a cancelled transaction whose condition failed. */
export interface ConditionFailure {
  readonly role: ItemRole;
  readonly reason: CancellationReason;
}

export class DynamoRequests {
  readonly tableName: string;
  private readonly client: DynamoDBClient;
  private readonly metrics: StoreMetricsSink | undefined;
  constructor(client: DynamoDBClient, tableName: string, metrics: StoreMetricsSink | undefined) {
    this.client = client;
    this.tableName = tableName;
    this.metrics = metrics;
  }

  /** Spread into each write: consumed capacity is asked for only while the sink sums it. */
  private get capacity(): { ReturnConsumedCapacity?: "INDEXES" } {
    return this.metrics?.capacity === true ? { ReturnConsumedCapacity: "INDEXES" } : {};
  }

  /** Spread into each read, likewise (a read's units: the table's and any index's together). */
  private get readCapacity(): { ReturnConsumedCapacity?: "TOTAL" } {
    return this.metrics?.capacity === true ? { ReturnConsumedCapacity: "TOTAL" } : {};
  }

  /** One request, retried only by the client's strategy; a retryable failure left over is StoreUnavailableError. */
  private async request<T>(operation: string, send: () => Promise<T>): Promise<T> {
    try {
      return await send();
    } catch (error) {
      throw afterRetries(operation, error);
    }
  }

  /**
   * Runs a planned transaction; returns the items whose condition failed if it was cancelled. A
   * plan of one item is sent as that item's own conditional write (UpdateItem, PutItem,
   * DeleteItem): the same guarantee for one item, at a fraction of a transaction's cost (a
   * transaction reads and writes every item twice, docs/data-model.md).
   */
  async transact(operation: string, plan: PlannedTransaction): Promise<ConditionFailure[] | undefined> {
    // Plans check their size with a domain error; this only guards against a planning bug.
    if (plan.items.length > MAX_TRANSACTION_ITEMS)
      throw new Error(`${operation}: ${plan.items.length} items planned`);
    const [only, ...more] = plan.items;
    if (only !== undefined && more.length === 0 && only.ConditionCheck === undefined) {
      return this.writeOne(operation, only, plan.roles[0]!);
    }
    try {
      await this.write(operation, "TransactWriteItems", plan.items.length, () =>
        this.client.send(
          new TransactWriteItemsCommand({
            TransactItems: plan.items,
            ...this.capacity,
          }),
        ),
      );
      return undefined;
    } catch (error) {
      const reasons = cancellationReasons(error);
      if (reasons === undefined || !reasons.some((r) => r.Code === "ConditionalCheckFailed")) throw error;
      return plan.roles
        .map((role, i) => ({ role, reason: reasons[i] ?? {} }))
        .filter((f) => f.reason.Code === "ConditionalCheckFailed");
    }
  }

  /**
   * A plan of one Update, sent as UpdateItem returning the item as written (ALL_NEW: strongly
   * consistent, and it consumes no read capacity), or, refused, its failure as `transact` reports it.
   */
  async updateReturningItem(
    operation: string,
    plan: PlannedTransaction,
  ): Promise<{ readonly item: Item } | { readonly failures: ConditionFailure[] }> {
    const [only, ...more] = plan.items;
    if (only?.Update === undefined || more.length > 0) {
      throw new Error(`${operation}: a plan of one Update was expected, not ${plan.items.length} items`);
    }
    const sent = await this.updateReturningNew(operation, only.Update);
    return "item" in sent ? sent : { failures: [refusal(plan.roles[0]!, sent.old)] };
  }

  /** A conditional UpdateItem returning the new item (ALL_NEW), or the old one (ALL_OLD) when the guard failed. */
  private async updateReturningNew(
    operation: string,
    update: Omit<UpdateItemCommandInput, "ReturnValues" | "ReturnValuesOnConditionCheckFailure">,
  ): Promise<{ readonly item: Item } | { readonly old: Item | undefined }> {
    const input: UpdateItemCommandInput = {
      ...update,
      ReturnValues: "ALL_NEW",
      ReturnValuesOnConditionCheckFailure: "ALL_OLD",
      ...this.capacity,
    };
    try {
      const out = await this.write(operation, "UpdateItem", 1, () =>
        this.client.send(new UpdateItemCommand(input)),
      );
      return { item: out.Attributes ?? {} };
    } catch (error) {
      if (error instanceof Error && error.name === "ConditionalCheckFailedException") {
        return { old: (error as { Item?: Item }).Item };
      }
      throw error;
    }
  }

  /** One planned item as a single-item write; its condition failure comes back like a transaction's. */
  private async writeOne(
    operation: string,
    item: TransactWriteItem,
    role: ItemRole,
  ): Promise<ConditionFailure[] | undefined> {
    try {
      if (item.Update !== undefined) {
        const input: UpdateItemCommandInput = { ...item.Update, ...this.capacity };
        await this.write(operation, "UpdateItem", 1, () => this.client.send(new UpdateItemCommand(input)));
      } else if (item.Put !== undefined) {
        const input: PutItemCommandInput = { ...item.Put, ...this.capacity };
        await this.write(operation, "PutItem", 1, () => this.client.send(new PutItemCommand(input)));
      } else if (item.Delete !== undefined) {
        const input: DeleteItemCommandInput = { ...item.Delete, ...this.capacity };
        await this.write(operation, "DeleteItem", 1, () => this.client.send(new DeleteItemCommand(input)));
      } else {
        throw new Error(`${operation}: an empty item was planned`);
      }
      return undefined;
    } catch (error) {
      return refusedOne(error, role);
    }
  }

  /** A conditional UpdateItem returning the new item, or the old one when the guard failed. */
  async updateItem(
    operation: string,
    key: Item,
    build: (u: UpdateBuilder) => void,
    condition: Clause,
  ): Promise<{ ok: true; item: Item } | { ok: false; old: Item | undefined }> {
    const e = new Expressions();
    const u = new UpdateBuilder(e);
    build(u);
    const sent = await this.updateReturningNew(operation, {
      TableName: this.tableName,
      Key: key,
      UpdateExpression: u.expression(),
      ConditionExpression: condition(e),
      ...e.attributes(),
    });
    return "item" in sent ? { ok: true, item: sent.item } : { ok: false, old: sent.old };
  }

  /** A PutItem (conditional unless `condition` is undefined): true if written, false if the guard failed. */
  async putItem(
    operation: string,
    input: Pick<PutItemCommandInput, "Item">,
    condition: Clause | undefined,
  ): Promise<boolean> {
    const e = new Expressions();
    const request: PutItemCommandInput = {
      TableName: this.tableName,
      ...input,
      ...(condition !== undefined ? { ConditionExpression: condition(e) } : {}),
      ...e.attributes(),
      ...this.capacity,
    };
    try {
      await this.write(operation, "PutItem", 1, () => this.client.send(new PutItemCommand(request)));
      return true;
    } catch (error) {
      if (error instanceof Error && error.name === "ConditionalCheckFailedException") return false;
      throw error;
    }
  }

  /** A conditional DeleteItem; when the guard failed, the item as it was (undefined if absent). */
  async deleteItem(
    operation: string,
    key: Item,
    condition: Clause,
  ): Promise<{ ok: true } | { ok: false; old: Item | undefined }> {
    const e = new Expressions();
    const input: DeleteItemCommandInput = {
      TableName: this.tableName,
      Key: key,
      ConditionExpression: condition(e),
      ...e.attributes(),
      ReturnValuesOnConditionCheckFailure: "ALL_OLD",
      ...this.capacity,
    };
    try {
      await this.write(operation, "DeleteItem", 1, () => this.client.send(new DeleteItemCommand(input)));
      return { ok: true };
    } catch (error) {
      if (error instanceof Error && error.name === "ConditionalCheckFailedException") {
        return { ok: false, old: (error as { Item?: Item }).Item };
      }
      throw error;
    }
  }

  private async write<T extends { ConsumedCapacity?: ConsumedCapacity | ConsumedCapacity[] }>(
    operation: string,
    kind: WriteOperation,
    items: number,
    send: () => Promise<T>,
  ): Promise<T> {
    const failed = (tries: number): void => {
      for (let i = 0; i < tries; i++)
        this.metrics?.recordWrite({ operation: kind, purpose: operation, items, succeeded: false });
    };
    return this.request(operation, async () => {
      try {
        const out = await send();
        // Every try is a request sent (and billed): the ones the SDK retried failed.
        failed(attemptsOf(out) - 1);
        this.metrics?.recordWrite({
          operation: kind,
          purpose: operation,
          items,
          succeeded: true,
          capacityUnits: unitsOf(out.ConsumedCapacity),
        });
        return out;
      } catch (error) {
        failed(attemptsOf(error));
        throw error;
      }
    });
  }

  async getItem(operation: string, key: Item): Promise<Item | undefined> {
    const out = await this.request(operation, () =>
      this.client.send(
        new GetItemCommand({
          TableName: this.tableName,
          Key: key,
          ConsistentRead: true,
          ...this.readCapacity,
        }),
      ),
    );
    this.metrics?.recordRead({
      operation: "GetItem",
      purpose: operation,
      items: out.Item ? 1 : 0,
      capacityUnits: unitsOf(out.ConsumedCapacity),
    });
    return out.Item;
  }

  async query(
    operation: string,
    input: QueryCommandInput,
  ): Promise<{ items: Item[]; lastKey: Item | undefined }> {
    const out = await this.request(operation, () =>
      this.client.send(new QueryCommand({ ...input, ...this.readCapacity })),
    );
    this.metrics?.recordRead({
      operation: "Query",
      purpose: operation,
      items: out.Items?.length ?? 0,
      capacityUnits: unitsOf(out.ConsumedCapacity),
    });
    return { items: out.Items ?? [], lastKey: out.LastEvaluatedKey };
  }

  /**
   * A roster of the listings index (its keys), then its items read consistently, in the roster's
   * order. An entry may outlive its item for a moment (the index is eventually consistent): such
   * an entry is left out. So is an entry of another kind than the roster `lists`: operators write
   * the listings key of their own items (client-access.ts), so an operator's queue item may name
   * the agents' roster, and must not be read as an agent. `attributes`: read only these of each
   * item (see batchGet).
   */
  async readRoster(
    operation: string,
    rosterPk: string,
    lists: RosterItems,
    attributes?: readonly string[],
  ): Promise<Item[]> {
    const entries = await this.queryAll(operation, {
      TableName: this.tableName,
      IndexName: LISTING_INDEX,
      KeyConditionExpression: "#pk = :pk",
      ExpressionAttributeNames: { "#pk": "gsi3pk" },
      ExpressionAttributeValues: { ":pk": { S: rosterPk } },
    });
    const keys = entries.filter((k) => k["pk"]?.S?.startsWith(lists.pkPrefix) && k["sk"]?.S === lists.sk);
    const items = await this.batchGet(
      operation,
      keys.map((k) => tableKey(k)),
      attributes,
    );
    return items.filter((item): item is Item => item !== undefined);
  }

  async queryAll(operation: string, input: QueryCommandInput): Promise<Item[]> {
    const items: Item[] = [];
    let startKey: Item | undefined;
    do {
      const page = await this.query(operation, {
        ...input,
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      });
      items.push(...page.items);
      startKey = page.lastKey;
    } while (startKey !== undefined);
    return items;
  }

  /**
   * Consistent BatchGetItem, in the order of `keys` (undefined where absent). Unprocessed keys
   * are DynamoDB shedding load in a successful response, which the SDK does not retry: they are
   * asked again under the client's retry strategy, as a throttle (same limit, same backoff).
   * `attributes`: top-level attributes to read (a projection, which must name `pk` and `sk`), for
   * readers allowed only those (functions/topology/client-access.ts); @default the whole items.
   */
  async batchGet(
    operation: string,
    keys: readonly Item[],
    attributes?: readonly string[],
  ): Promise<(Item | undefined)[]> {
    const byKey = new Map<string, Item>();
    const projection = attributes === undefined ? {} : projectionOf(attributes);
    for (let start = 0; start < keys.length; start += BATCH_GET_MAX) {
      let pending: Item[] = keys.slice(start, start + BATCH_GET_MAX);
      let retry: { strategy: RetryStrategyV2; token: RetryToken } | undefined;
      while (pending.length > 0) {
        const input: BatchGetItemCommandInput = {
          RequestItems: { [this.tableName]: { Keys: pending, ConsistentRead: true, ...projection } },
          ...this.readCapacity,
        };
        const out = await this.request(operation, () => this.client.send(new BatchGetItemCommand(input)));
        this.metrics?.recordRead({
          operation: "BatchGetItem",
          purpose: operation,
          items: out.Responses?.[this.tableName]?.length ?? 0,
          capacityUnits: unitsOf(out.ConsumedCapacity),
        });
        for (const item of out.Responses?.[this.tableName] ?? []) byKey.set(keyString(item), item);
        pending = out.UnprocessedKeys?.[this.tableName]?.Keys ?? [];
        if (pending.length > 0) retry = await this.retryUnprocessed(operation, pending.length, retry);
        else retry?.strategy.recordSuccess(retry.token);
      }
    }
    return keys.map((k) => byKey.get(keyString(k)));
  }

  /** A retry token for the keys left unprocessed, or StoreUnavailableError when the strategy refuses one. */
  private async retryUnprocessed(
    operation: string,
    unprocessed: number,
    retry: { strategy: RetryStrategyV2; token: RetryToken } | undefined,
  ): Promise<{ strategy: RetryStrategyV2; token: RetryToken }> {
    const tries = (retry?.token.getRetryCount() ?? 0) + 1;
    const shed = new ProvisionedThroughputExceededException({
      $metadata: { attempts: tries },
      message: `${unprocessed} keys left unprocessed`,
    });
    const strategy = retry?.strategy ?? (await this.client.config.retryStrategy());
    if (!isRetryStrategyV2(strategy)) throw new StoreUnavailableError(operation, tries, shed);
    const token = retry?.token ?? (await strategy.acquireInitialRetryToken(""));
    let next: RetryToken;
    try {
      // SdkError types `cause` as Error where ES2022's Error has unknown; the SDK passes its errors as they are.
      const error = shed as RetryErrorInfo["error"];
      next = await strategy.refreshRetryTokenForRetry(token, { error, errorType: "THROTTLING" });
    } catch {
      throw new StoreUnavailableError(operation, tries, shed);
    }
    // The SDK's strategies sleep while refreshing; one that leaves it to its caller sets a delay.
    const delay = next.getRetryDelay();
    if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
    return { strategy, token: next };
  }
}

/** Capacity units a response reports (0 when it reports none). */
function unitsOf(consumed: ConsumedCapacity | ConsumedCapacity[] | undefined): number {
  return (Array.isArray(consumed) ? consumed : consumed ? [consumed] : []).reduce(
    (sum, c) => sum + (c.CapacityUnits ?? 0),
    0,
  );
}

function isRetryStrategyV2(strategy: RetryStrategy | RetryStrategyV2): strategy is RetryStrategyV2 {
  return "acquireInitialRetryToken" in strategy && "refreshRetryTokenForRetry" in strategy;
}

export function tableKey(item: Item): Item {
  const pk = item["pk"];
  const sk = item["sk"];
  if (pk === undefined || sk === undefined) throw new Error("index entry without table keys");
  return { pk, sk };
}

/** `#a0, #a1, …` for the attributes, named apart (a name may be a reserved word). */
function projectionOf(attributes: readonly string[]): {
  ProjectionExpression: string;
  ExpressionAttributeNames: Record<string, string>;
} {
  if (!attributes.includes("pk") || !attributes.includes("sk")) {
    throw new Error(`a projection must read the keys pk and sk, got [${attributes.join(", ")}]`);
  }
  const names = attributes.map((_, i) => `#a${i}`);
  return {
    ProjectionExpression: names.join(", "),
    ExpressionAttributeNames: Object.fromEntries(names.map((n, i) => [n, attributes[i]!])),
  };
}

function keyString(item: Item): string {
  return `${item["pk"]?.S ?? ""}\u0000${item["sk"]?.S ?? ""}`;
}

/** A single-item write's failed condition as a transaction reports it (with the item as it was); any other error is thrown on. */
function refusedOne(error: unknown, role: ItemRole): ConditionFailure[] {
  if (!(error instanceof Error) || error.name !== "ConditionalCheckFailedException") throw error;
  return [refusal(role, (error as { Item?: Item }).Item)];
}

/** An item's failed condition, as a transaction's cancellation reason names it. */
function refusal(role: ItemRole, old: Item | undefined): ConditionFailure {
  return { role, reason: { Code: "ConditionalCheckFailed", ...(old ? { Item: old } : {}) } };
}
