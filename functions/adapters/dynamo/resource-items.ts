/**
 * Operator-managed resources as items: retry policies, queues and the retry configuration.
 * Policies and the configuration are stored in their document form (what an operator writes, with
 * durations as strings) and decoded with the core's parsers, so whatever a reader gets back has
 * passed the same validation as a document written from the CLI. A write is checked the same way
 * before it is sent, so nothing undecodable is ever stored.
 */
import type { Queue } from "../../core/model.ts";
import { InvalidStoreRequestError } from "../../core/ports/errors.ts";
import { parseQueueFargateSettings } from "../../core/queue-settings.ts";
import {
  parseRetryConfig,
  retryConfigToDocument,
  type RetryConfig,
  type RetryConfigInput,
} from "../../core/retry/config.ts";
import { parseRetryPolicy, retryPolicyToDocument, type RetryPolicy } from "../../core/retry/policy.ts";
import { NAME_PATTERN, SPEC_LIMITS } from "../../core/spec.ts";
import { Fields, fromItem, ItemType, toItem, type Item } from "./item-codec.ts";
import {
  CONFIG_SK,
  configPk,
  QUEUE_SK,
  queuePk,
  QUEUES_PK,
  RETRY_POLICIES_PK,
  RETRY_POLICY_SK,
  retryPolicyPk,
} from "./keys.ts";

/** Policies one queue attaches: each is one more item in the queue's transactions. */
export const MAX_QUEUE_POLICIES = 16;

/** A queue as the store writes it (the port's input). */
export type QueueInput = Omit<Queue, "createdAtMs" | "updatedAtMs">;

// ---- retry policies

export const retryPolicyKey = (name: string): Item => ({
  pk: { S: retryPolicyPk(name) },
  sk: { S: RETRY_POLICY_SK },
});

/**
 * The document of a policy, checked to read back as the same policy. A RetryPolicy built by hand
 * (not by the parser) could hold something the parser refuses; that is refused here, by field.
 */
export function retryPolicyDocument(policy: RetryPolicy): Record<string, unknown> {
  requireName("policy.name", policy.name);
  const document = retryPolicyToDocument(policy);
  try {
    parseRetryPolicy(document);
  } catch (error) {
    const issues = (error as { issues?: readonly { path: string; message: string }[] }).issues;
    const first = issues?.[0];
    if (first === undefined) throw error;
    throw new InvalidStoreRequestError(`policy.${first.path}`, first.message);
  }
  return document;
}

/** A new policy item (version 1), listed in the listings index under RETRY_POLICIES. */
export function retryPolicyItem(policy: RetryPolicy, nowMs: number): Item {
  return toItem({
    pk: retryPolicyPk(policy.name),
    sk: RETRY_POLICY_SK,
    type: ItemType.RETRY_POLICY,
    name: policy.name,
    document: retryPolicyDocument(policy),
    version: 1,
    createdAtMs: nowMs,
    updatedAtMs: nowMs,
    gsi3pk: RETRY_POLICIES_PK,
    gsi3sk: policy.name,
  });
}

export function retryPolicyFromItem(item: Item): RetryPolicy {
  const r = new Fields(fromItem(item), "retry policy");
  const document = r.object("document");
  try {
    return parseRetryPolicy(document);
  } catch (error) {
    throw new Error(`stored retry policy ${r.string("name")} does not validate: ${(error as Error).message}`);
  }
}

/** The queues that attach a policy (its reverse references), sorted. */
export function policyUsers(item: Item): string[] {
  return new Fields(fromItem(item), "retry policy").stringSet("usedBy");
}

// ---- queues

export const queueKey = (name: string): Item => ({ pk: { S: queuePk(name) }, sk: { S: QUEUE_SK } });

export function validateQueue(queue: QueueInput): void {
  requireName("queue.name", queue.name);
  const { min, max } = SPEC_LIMITS.priority;
  if (!Number.isInteger(queue.priority) || queue.priority < min || queue.priority > max) {
    throw new InvalidStoreRequestError(
      "queue.priority",
      `must be an integer from ${min} to ${max}, got ${queue.priority}`,
    );
  }
  if (queue.retryPolicies.length > MAX_QUEUE_POLICIES) {
    throw new InvalidStoreRequestError(
      "queue.retryPolicies",
      `at most ${MAX_QUEUE_POLICIES} policies, got ${queue.retryPolicies.length}`,
    );
  }
  const seen = new Set<string>();
  queue.retryPolicies.forEach((name, i) => {
    requireName(`queue.retryPolicies[${i}]`, name);
    if (seen.has(name)) {
      throw new InvalidStoreRequestError(`queue.retryPolicies[${i}]`, `${name} is listed twice`);
    }
    seen.add(name);
  });
  if (queue.fargate !== undefined) {
    const parsed = parseQueueFargateSettings(queue.fargate);
    if (!parsed.ok) {
      const [first] = parsed.issues;
      throw new InvalidStoreRequestError(`queue.${first!.path}`, first!.message);
    }
  }
}

/** A queue item; `version` guards read-modify-write updates (its policies' references move with it). */
export function queueItem(queue: Queue, version: number): Item {
  return toItem({
    pk: queuePk(queue.name),
    sk: QUEUE_SK,
    type: ItemType.QUEUE,
    name: queue.name,
    priority: queue.priority,
    retryPolicies: [...queue.retryPolicies],
    ...(queue.fargate !== undefined ? { fargate: { ...queue.fargate } } : {}),
    createdAtMs: queue.createdAtMs,
    updatedAtMs: queue.updatedAtMs,
    version,
    gsi3pk: QUEUES_PK,
    gsi3sk: queue.name,
  });
}

export function queueFromItem(item: Item): Queue & { readonly version: number } {
  const record = fromItem(item);
  const r = new Fields(record, "queue");
  // Decoded with the core's parser, like policies: what a reader gets passed the write's checks.
  let fargate: Queue["fargate"];
  if (record["fargate"] !== undefined) {
    const parsed = parseQueueFargateSettings(record["fargate"]);
    if (!parsed.ok) return r.fail(parsed.issues[0]!.path, `valid (${parsed.issues[0]!.message})`);
    fargate = parsed.settings;
  }
  return {
    name: r.string("name"),
    priority: r.number("priority"),
    retryPolicies: r.strings("retryPolicies"),
    ...(fargate !== undefined ? { fargate } : {}),
    createdAtMs: r.number("createdAtMs"),
    updatedAtMs: r.number("updatedAtMs"),
    version: r.number("version"),
  };
}

/** The domain queue, without the store's version. */
export function withoutVersion({ version: _version, ...queue }: Queue & { version: number }): Queue {
  return queue;
}

// ---- the retry configuration

export const retryConfigKey: Item = { pk: { S: configPk("retry") }, sk: { S: CONFIG_SK } };

/** The configuration in the operator's shape (durations as strings), as `parseRetryConfig` reads it. */

export function retryConfigItem(config: RetryConfig, nowMs: number): Item {
  let document: RetryConfigInput;
  try {
    document = retryConfigToDocument(config);
    parseRetryConfig(document);
  } catch (error) {
    const issues = (error as { issues?: readonly { path: string; message: string }[] }).issues;
    const first = issues?.[0];
    if (first !== undefined) throw new InvalidStoreRequestError(`config.${first.path}`, first.message);
    throw new InvalidStoreRequestError("config", (error as Error).message);
  }
  return toItem({
    pk: configPk("retry"),
    sk: CONFIG_SK,
    type: ItemType.CONFIG,
    document,
    updatedAtMs: nowMs,
  });
}

export function retryConfigFromItem(item: Item): RetryConfig {
  const r = new Fields(fromItem(item), "retry config");
  try {
    return parseRetryConfig(r.object("document"));
  } catch (error) {
    throw new Error(`stored retry configuration does not validate: ${(error as Error).message}`);
  }
}

// ---- helpers

function requireName(field: string, name: string): void {
  if (typeof name !== "string" || name.length === 0 || name.length > SPEC_LIMITS.nameMaxLength) {
    throw new InvalidStoreRequestError(field, `must be 1 to ${SPEC_LIMITS.nameMaxLength} characters`);
  }
  if (!NAME_PATTERN.test(name)) {
    throw new InvalidStoreRequestError(
      field,
      "must start with a letter or digit and contain only letters, digits, '.', '_' and '-'",
    );
  }
}
