/**
 * The retry catalog: retry policies, queues and the retry configuration, operator-managed
 * resources. Errors are StoreError (errors.ts), branched on by `code`.
 */
import type { Queue } from "../model.ts";
import type { RetryConfig } from "../retry/config.ts";
import type { RetryPolicy } from "../retry/policy.ts";

/**
 * Retry policies, queues and the retry configuration: operator-managed resources. Documents are
 * validated (core/retry) before they reach the store.
 */
export interface RetryCatalogRepository {
  /** Throws AlreadyExistsError when the name is taken. */
  createRetryPolicy(policy: RetryPolicy, nowMs: number): Promise<void>;
  /** Throws NotFoundError when absent. */
  updateRetryPolicy(policy: RetryPolicy, nowMs: number): Promise<void>;
  getRetryPolicy(name: string): Promise<RetryPolicy | undefined>;
  listRetryPolicies(): Promise<RetryPolicy[]>;
  /** Throws NotFoundError, or InUseError naming the queues that attach it. */
  deleteRetryPolicy(name: string): Promise<void>;

  /** Throws AlreadyExistsError when the name is taken. */
  createQueue(queue: Omit<Queue, "createdAtMs" | "updatedAtMs">, nowMs: number): Promise<Queue>;
  /** Throws NotFoundError when absent. */
  updateQueue(queue: Omit<Queue, "createdAtMs" | "updatedAtMs">, nowMs: number): Promise<Queue>;
  getQueue(name: string): Promise<Queue | undefined>;
  listQueues(): Promise<Queue[]>;
  /** Throws NotFoundError when absent. */
  deleteQueue(name: string): Promise<void>;

  /** The retry configuration operators set at run time; undefined means the defaults. */
  getRetryConfig(): Promise<RetryConfig | undefined>;
  putRetryConfig(config: RetryConfig, nowMs: number): Promise<void>;
}
