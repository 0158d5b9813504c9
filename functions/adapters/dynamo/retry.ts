/**
 * Which DynamoDB failures are worth retrying, and the capped exponential backoff with full
 * jitter between tries. A condition failure is never retried here: it is an answer, not a fault.
 */
import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import { StoreUnavailableError } from "../../core/ports/session-store.ts";

/** Error names DynamoDB uses for throttling and contention on single requests. */
const RETRYABLE_ERROR_NAMES: ReadonlySet<string> = new Set([
  "ProvisionedThroughputExceededException",
  "ThrottlingException",
  "RequestLimitExceeded",
  // A single-item write that hit an item inside an ongoing transaction.
  "TransactionConflictException",
]);

/** Cancellation reason codes of a TransactWriteItems that are worth retrying. */
const RETRYABLE_REASON_CODES: ReadonlySet<string> = new Set([
  "TransactionConflict",
  "ThrottlingError",
  "ProvisionedThroughputExceeded",
]);

export interface CancellationReason {
  readonly Code?: string;
  readonly Message?: string;
  readonly Item?: Record<string, AttributeValue>;
}

export function cancellationReasons(error: unknown): readonly CancellationReason[] | undefined {
  if (!(error instanceof Error) || error.name !== "TransactionCanceledException") return undefined;
  const reasons = (error as { CancellationReasons?: CancellationReason[] }).CancellationReasons;
  return reasons ?? [];
}

/**
 * Retryable: throttling, or a cancelled transaction whose only failures are conflicts or
 * throttling. A transaction with any ConditionalCheckFailed reason is an answer for the caller.
 */
export function isRetryable(error: unknown): boolean {
  const reasons = cancellationReasons(error);
  if (reasons !== undefined) {
    if (reasons.some((r) => r.Code === "ConditionalCheckFailed")) return false;
    return reasons.some((r) => r.Code !== undefined && RETRYABLE_REASON_CODES.has(r.Code));
  }
  return error instanceof Error && RETRYABLE_ERROR_NAMES.has(error.name);
}

export interface RetryOptions {
  /** Total tries, the first included. */
  readonly maxAttempts: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  readonly sleep: (ms: number) => Promise<void>;
  /** In [0, 1); injectable so tests are deterministic. */
  readonly random: () => number;
}

/** Delay before try `attempt + 1` (attempt counts from 1): full jitter under a capped doubling. */
export function backoffDelayMs(
  attempt: number,
  options: Pick<RetryOptions, "baseDelayMs" | "maxDelayMs" | "random">,
): number {
  const ceiling = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** (attempt - 1));
  return Math.floor(options.random() * ceiling);
}

export async function withRetries<T>(
  operation: string,
  options: RetryOptions,
  run: () => Promise<T>,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      if (!isRetryable(error)) throw error;
      if (attempt >= options.maxAttempts) throw new StoreUnavailableError(operation, attempt, error);
      await options.sleep(backoffDelayMs(attempt, options));
    }
  }
}
