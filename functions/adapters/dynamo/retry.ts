/**
 * The store's transport retries are the AWS SDK's own: the DynamoDB client is built with a
 * `StoreRetryStrategy` (`storeRetryConfig()`), the SDK's `ConfiguredRetryStrategy` (attempt
 * limit, retry quota, the sleep between tries) with a capped exponential backoff with full
 * jitter, told which DynamoDB failures are worth another try. Nothing retries on top of it:
 * dynamo-requests.ts sends each request once and turns a retryable failure that outlasted the
 * strategy into StoreUnavailableError. A condition failure is never retried: it is an answer,
 * not a fault.
 */
import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import { ConfiguredRetryStrategy } from "@smithy/core/retry";
import type { RetryErrorInfo, RetryStrategyV2, StandardRetryToken } from "@smithy/types";
import { StoreUnavailableError } from "../../core/ports/errors.ts";

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

/** A failed guard: a single write's ConditionalCheckFailedException, or a transaction cancelled by one. */
export function isConditionFailure(error: unknown): boolean {
  if (error instanceof Error && error.name === "ConditionalCheckFailedException") return true;
  return cancellationReasons(error)?.some((r) => r.Code === "ConditionalCheckFailed") ?? false;
}

/**
 * Retryable, from the error's name and its cancellation reason codes (never its message):
 * throttling, a single write's TransactionConflictException, or a cancelled transaction whose
 * every failed item failed on a conflict or throttling ("None" marks the items that were fine).
 * A transaction with any ConditionalCheckFailed reason is an answer for the caller.
 */
export function isRetryable(error: unknown): boolean {
  const reasons = cancellationReasons(error);
  if (reasons !== undefined) {
    const failed = reasons.filter((r) => r.Code !== undefined && r.Code !== "None");
    return failed.length > 0 && failed.every((r) => RETRYABLE_REASON_CODES.has(r.Code!));
  }
  return error instanceof Error && RETRYABLE_ERROR_NAMES.has(error.name);
}

/** Tries a request took, as the SDK's retry middleware records them on its output or error. */
export function attemptsOf(outcome: unknown): number {
  const attempts = (outcome as { $metadata?: { attempts?: number } } | undefined)?.$metadata?.attempts;
  return typeof attempts === "number" && attempts > 0 ? attempts : 1;
}

/**
 * What a failed request throws: a retryable failure reached it only once the strategy gave up
 * (attempts or retry quota spent), so it becomes StoreUnavailableError with the SDK error as
 * its cause; anything else (a condition failure, a validation error) is passed on as it is.
 */
export function afterRetries(operation: string, error: unknown): unknown {
  return isRetryable(error) ? new StoreUnavailableError(operation, attemptsOf(error), error) : error;
}

export interface StoreRetryOptions {
  /** Total tries, the first included. Default 6. */
  readonly maxAttempts?: number;
  /** Ceiling of the first retry's delay; it doubles per retry. Default 25 ms. */
  readonly baseDelayMs?: number;
  /** Cap of the ceiling. Default 1 s. */
  readonly maxDelayMs?: number;
  /** Jitter in [0, 1); injectable so tests are deterministic. Default Math.random. */
  readonly random?: () => number;
}

/** Delay before try `attempt + 1` (attempt counts from 1): full jitter under a capped doubling. */
export function backoffDelayMs(
  attempt: number,
  options: { readonly baseDelayMs: number; readonly maxDelayMs: number; readonly random: () => number },
): number {
  const ceiling = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** (attempt - 1));
  return Math.floor(options.random() * ceiling);
}

/**
 * The SDK's ConfiguredRetryStrategy, with DynamoDB's own retryable failures classified for it.
 * The SDK's default retries throttling and transient faults (network errors, 5xx) but treats
 * TransactionConflictException and TransactionCanceledException as client errors; here a
 * retryable one (isRetryable) is handed to the SDK as THROTTLING (contention, as the SDK
 * classifies TransactionInProgressException), a condition failure as CLIENT_ERROR (which the
 * SDK never retries), and anything else keeps the SDK's own classification.
 */
export class StoreRetryStrategy implements RetryStrategyV2 {
  readonly attempts: number;
  private readonly sdk: ConfiguredRetryStrategy;
  private readonly backoff: { baseDelayMs: number; maxDelayMs: number; random: () => number };

  constructor(options: StoreRetryOptions = {}) {
    this.attempts = options.maxAttempts ?? 6;
    if (!Number.isInteger(this.attempts) || this.attempts < 1)
      throw new RangeError(`maxAttempts must be an integer >= 1, got ${this.attempts}`);
    this.backoff = {
      baseDelayMs: options.baseDelayMs ?? 25,
      maxDelayMs: options.maxDelayMs ?? 1_000,
      random: options.random ?? Math.random,
    };
    this.sdk = new ConfiguredRetryStrategy(this.attempts, (attempt) => this.delayBeforeRetryMs(attempt));
  }

  /** The SDK asks this before retry number `attempt` (from 1); the SDK sleeps that long. */
  delayBeforeRetryMs(attempt: number): number {
    return backoffDelayMs(attempt, this.backoff);
  }

  /** The error class the SDK decides on: DynamoDB's retryable failures and condition failures set. */
  classify(errorInfo: RetryErrorInfo): RetryErrorInfo {
    if (isConditionFailure(errorInfo.error)) return { ...errorInfo, errorType: "CLIENT_ERROR" };
    if (isRetryable(errorInfo.error)) return { ...errorInfo, errorType: "THROTTLING" };
    return errorInfo;
  }

  acquireInitialRetryToken(retryTokenScope: string): Promise<StandardRetryToken> {
    return this.sdk.acquireInitialRetryToken(retryTokenScope);
  }

  refreshRetryTokenForRetry(
    token: StandardRetryToken,
    errorInfo: RetryErrorInfo,
  ): Promise<StandardRetryToken> {
    return this.sdk.refreshRetryTokenForRetry(token, this.classify(errorInfo));
  }

  recordSuccess(token: StandardRetryToken): void {
    this.sdk.recordSuccess(token);
  }
}

/** What a DynamoDBClient the store uses is built with: `new DynamoDBClient({ ...storeRetryConfig(), … })`. */
export function storeRetryConfig(options: StoreRetryOptions = {}): {
  maxAttempts: number;
  retryStrategy: StoreRetryStrategy;
} {
  const retryStrategy = new StoreRetryStrategy(options);
  return { maxAttempts: retryStrategy.attempts, retryStrategy };
}
