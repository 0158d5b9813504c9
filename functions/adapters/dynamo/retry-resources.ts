/**
 * Retry policies, queues and the retry configuration: small, rarely written, operator-managed
 * items (docs/data-model.md, "Retry policies and queues").
 *
 * A queue's policies are references, and a policy in use must not be deleted. Every policy item
 * therefore carries its reverse references, `usedBy` (a string set of queue names), moved in the
 * same transaction that writes the queue: attaching a policy requires it to exist, and deleting a
 * policy requires `usedBy` to be empty. Both checks are conditions of the writes themselves, so a
 * queue created while its policy is being deleted cannot slip between a read and a write.
 */
import type { Queue } from "../../core/model.ts";
import {
  AlreadyExistsError,
  InUseError,
  NotFoundError,
  StoreUnavailableError,
} from "../../core/ports/errors.ts";
import type { RetryCatalogRepository } from "../../core/ports/retry-catalog.ts";
import type { RetryConfig } from "../../core/retry/config.ts";
import type { RetryPolicy } from "../../core/retry/policy.ts";
import { itemAbsent, itemExists, notReferenced, versionIs } from "./conditions.ts";
import type { ConditionFailure, DynamoRequests } from "./dynamo-requests.ts";
import { all } from "./expressions.ts";
import { QUEUE_SK, QUEUES_PK, queuePk, RETRY_POLICIES_PK, RETRY_POLICY_SK, retryPolicyPk } from "./keys.ts";
import {
  policyUsers,
  queueFromItem,
  queueItem,
  queueKey,
  retryConfigFromItem,
  retryConfigItem,
  retryConfigKey,
  retryPolicyDocument,
  retryPolicyFromItem,
  retryPolicyItem,
  retryPolicyKey,
  validateQueue,
  withoutVersion,
  type QueueInput,
} from "./resource-items.ts";
import {
  guarded,
  updateRequest,
  type ItemRole,
  type PlannedTransaction,
  type StoreLayout,
  type UpdateRequest,
} from "./transaction-plan.ts";
import { requireId, requireTime } from "./validation.ts";

const POLICY = "retry policy";
const QUEUE = "queue";

export class DynamoRetryCatalog implements RetryCatalogRepository {
  private readonly requests: DynamoRequests;
  private readonly layout: StoreLayout;
  private readonly maxAttempts: number;

  constructor(requests: DynamoRequests, layout: StoreLayout, maxAttempts: number) {
    this.requests = requests;
    this.layout = layout;
    this.maxAttempts = maxAttempts;
  }

  // ------------------------------------------------------------------------------ policies

  async createRetryPolicy(policy: RetryPolicy, nowMs: number): Promise<void> {
    requireTime("nowMs", nowMs);
    const created = await this.requests.putItem(
      "createRetryPolicy",
      { Item: retryPolicyItem(policy, nowMs) },
      itemAbsent,
    );
    if (!created) throw new AlreadyExistsError(POLICY, policy.name);
  }

  async updateRetryPolicy(policy: RetryPolicy, nowMs: number): Promise<void> {
    requireTime("nowMs", nowMs);
    const document = retryPolicyDocument(policy);
    // An update replaces the document only: usedBy and createdAtMs stay as they are.
    const updated = await this.requests.updateItem(
      "updateRetryPolicy",
      retryPolicyKey(policy.name),
      (u) => u.set("document", document).set("updatedAtMs", nowMs).increment("version", 1),
      itemExists,
    );
    if (!updated.ok) throw new NotFoundError(POLICY, policy.name);
  }

  async getRetryPolicy(name: string): Promise<RetryPolicy | undefined> {
    requireId("name", name);
    const item = await this.requests.getItem("getRetryPolicy", retryPolicyKey(name));
    return item === undefined ? undefined : retryPolicyFromItem(item);
  }

  async listRetryPolicies(): Promise<RetryPolicy[]> {
    return (
      await this.requests.readRoster("listRetryPolicies", RETRY_POLICIES_PK, {
        pkPrefix: retryPolicyPk(""),
        sk: RETRY_POLICY_SK,
      })
    ).map(retryPolicyFromItem);
  }

  async deleteRetryPolicy(name: string): Promise<void> {
    requireId("name", name);
    const deleted = await this.requests.deleteItem(
      "deleteRetryPolicy",
      retryPolicyKey(name),
      all(itemExists, notReferenced),
    );
    if (deleted.ok) return;
    if (deleted.old === undefined) throw new NotFoundError(POLICY, name);
    throw new InUseError(POLICY, name, policyUsers(deleted.old));
  }

  // -------------------------------------------------------------------------------- queues

  async createQueue(input: QueueInput, nowMs: number): Promise<Queue> {
    validateQueue(input);
    requireTime("nowMs", nowMs);
    const queue: Queue = {
      name: input.name,
      priority: input.priority,
      retryPolicies: [...input.retryPolicies],
      ...(input.fargate !== undefined ? { fargate: input.fargate } : {}),
      createdAtMs: nowMs,
      updatedAtMs: nowMs,
    };
    const items: PlannedTransaction["items"] = [
      { Put: { TableName: this.layout.tableName, Item: queueItem(queue, 1), ...guarded(itemAbsent) } },
    ];
    const roles: ItemRole[] = [{ kind: "queue", name: queue.name }];
    for (const name of queue.retryPolicies) {
      items.push({ Update: this.referenceUpdate(name, queue.name, "attach") });
      roles.push({ kind: "retryPolicy", name, change: "attach" });
    }
    const failures = await this.requests.transact("createQueue", { items, roles });
    if (failures === undefined) return queue;
    if (failures.some((f) => f.role.kind === "queue")) throw new AlreadyExistsError(QUEUE, queue.name);
    throw missingPolicies(failures) ?? unexpected("createQueue", failures);
  }

  async updateQueue(input: QueueInput, nowMs: number): Promise<Queue> {
    validateQueue(input);
    requireTime("nowMs", nowMs);
    // Policies found gone while detaching (only possible if an item was removed by hand).
    const gone = new Set<string>();
    for (let attempt = 1; attempt <= this.maxAttempts; attempt++) {
      const current = await this.readQueue(input.name);
      if (current === undefined) throw new NotFoundError(QUEUE, input.name);
      const queue: Queue = {
        name: input.name,
        priority: input.priority,
        retryPolicies: [...input.retryPolicies],
        ...(input.fargate !== undefined ? { fargate: input.fargate } : {}),
        createdAtMs: current.createdAtMs,
        updatedAtMs: nowMs,
      };
      const before = new Set(current.retryPolicies);
      const after = new Set(queue.retryPolicies);
      const attach = [...after].filter((name) => !before.has(name));
      const detach = [...before].filter((name) => !after.has(name) && !gone.has(name));
      const plan = this.queueWrite(queue.name, current.version, { queue, attach, detach });
      const failures = await this.requests.transact("updateQueue", plan);
      if (failures === undefined) return queue;
      const missing = missingPolicies(failures);
      if (missing !== undefined) throw missing;
      markGone(failures, gone);
      // Otherwise the queue changed (or vanished) since it was read: read it again.
    }
    throw new StoreUnavailableError("updateQueue", this.maxAttempts, `queue ${input.name} kept changing`);
  }

  async getQueue(name: string): Promise<Queue | undefined> {
    const queue = await this.readQueue(name);
    return queue === undefined ? undefined : withoutVersion(queue);
  }

  async listQueues(): Promise<Queue[]> {
    return (
      await this.requests.readRoster("listQueues", QUEUES_PK, { pkPrefix: queuePk(""), sk: QUEUE_SK })
    ).map((item) => withoutVersion(queueFromItem(item)));
  }

  async deleteQueue(name: string): Promise<void> {
    const gone = new Set<string>();
    for (let attempt = 1; attempt <= this.maxAttempts; attempt++) {
      const current = await this.readQueue(name);
      if (current === undefined) throw new NotFoundError(QUEUE, name);
      const detach = current.retryPolicies.filter((policy) => !gone.has(policy));
      const failures = await this.requests.transact(
        "deleteQueue",
        this.queueWrite(name, current.version, { attach: [], detach }),
      );
      if (failures === undefined) return;
      markGone(failures, gone);
    }
    throw new StoreUnavailableError("deleteQueue", this.maxAttempts, `queue ${name} kept changing`);
  }

  // ------------------------------------------------------------------------ retry config

  async getRetryConfig(): Promise<RetryConfig | undefined> {
    const item = await this.requests.getItem("getRetryConfig", retryConfigKey);
    return item === undefined ? undefined : retryConfigFromItem(item);
  }

  async putRetryConfig(config: RetryConfig, nowMs: number): Promise<void> {
    requireTime("nowMs", nowMs);
    // One item, replaced whole: the last writer wins (the CLI merges its flags into what it read).
    await this.requests.putItem("putRetryConfig", { Item: retryConfigItem(config, nowMs) }, undefined);
  }

  // ------------------------------------------------------------------------------ internals

  private async readQueue(name: string): Promise<(Queue & { version: number }) | undefined> {
    requireId("name", name);
    const item = await this.requests.getItem("getQueue", queueKey(name));
    return item === undefined ? undefined : queueFromItem(item);
  }

  /**
   * Updates (with `queue`) or deletes (without) a queue read at `version`, moving its policies'
   * reverse references in the same transaction.
   */
  private queueWrite(
    name: string,
    version: number,
    change: { queue?: Queue; attach: readonly string[]; detach: readonly string[] },
  ): PlannedTransaction {
    const { tableName } = this.layout;
    const guard = guarded(all(itemExists, versionIs(version)));
    const items: PlannedTransaction["items"] = [
      change.queue === undefined
        ? { Delete: { TableName: tableName, Key: queueKey(name), ...guard } }
        : { Put: { TableName: tableName, Item: queueItem(change.queue, version + 1), ...guard } },
    ];
    const roles: ItemRole[] = [{ kind: "queue", name }];
    for (const [names, kind] of [
      [change.attach, "attach"],
      [change.detach, "detach"],
    ] as const) {
      for (const policy of names) {
        items.push({ Update: this.referenceUpdate(policy, name, kind) });
        roles.push({ kind: "retryPolicy", name: policy, change: kind });
      }
    }
    return { items, roles };
  }

  /** Adds or removes a queue in a policy's `usedBy`; the policy must exist (never created here). */
  private referenceUpdate(policy: string, queue: string, change: "attach" | "detach"): UpdateRequest {
    return updateRequest(
      this.layout.tableName,
      retryPolicyKey(policy),
      (u) =>
        change === "attach"
          ? u.addToSet("usedBy", new Set([queue]))
          : u.deleteFromSet("usedBy", new Set([queue])),
      itemExists,
    );
  }
}

/** Attaching a policy that does not exist: NotFoundError naming the first such policy. */
function missingPolicies(failures: readonly ConditionFailure[]): NotFoundError | undefined {
  const missing = failures.find((f) => f.role.kind === "retryPolicy" && f.role.change === "attach");
  return missing?.role.kind === "retryPolicy" ? new NotFoundError(POLICY, missing.role.name) : undefined;
}

function markGone(failures: readonly ConditionFailure[], gone: Set<string>): void {
  for (const { role } of failures) {
    if (role.kind === "retryPolicy" && role.change === "detach") gone.add(role.name);
  }
}

function unexpected(operation: string, failures: readonly ConditionFailure[]): Error {
  const codes = failures.map((f) => `${f.role.kind}: ${f.reason.Code ?? "?"}`).join(", ");
  return new Error(`${operation} was cancelled (${codes})`);
}
