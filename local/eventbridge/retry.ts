/**
 * Target retry policy (AWS `RetryPolicy`: MaximumRetryAttempts 0–185, MaximumEventAgeInSeconds
 * 60–86400, defaults 185 and 86400) and the exponential back-off with jitter between attempts.
 * Validated once, when the rule is put; the bus then only reads normalised numbers.
 */
import { ValidationError } from "./errors.ts";

export interface RetryPolicy {
  /** @default 185 */
  readonly maximumRetryAttempts?: number;
  /** @default 86400 (24 h) */
  readonly maximumEventAgeSeconds?: number;
}

export interface NormalizedRetryPolicy {
  readonly maximumRetryAttempts: number;
  readonly maximumEventAgeSeconds: number;
}

export const DEFAULT_RETRY_POLICY: NormalizedRetryPolicy = {
  maximumRetryAttempts: 185,
  maximumEventAgeSeconds: 86_400,
};

/** `where` names the policy in messages, e.g. `rule "r1" target "t1"`. */
export function normalizeRetryPolicy(policy: RetryPolicy | undefined, where: string): NormalizedRetryPolicy {
  if (policy === undefined) return DEFAULT_RETRY_POLICY;
  const maximumRetryAttempts = policy.maximumRetryAttempts ?? DEFAULT_RETRY_POLICY.maximumRetryAttempts;
  const maximumEventAgeSeconds = policy.maximumEventAgeSeconds ?? DEFAULT_RETRY_POLICY.maximumEventAgeSeconds;
  if (!Number.isInteger(maximumRetryAttempts) || maximumRetryAttempts < 0 || maximumRetryAttempts > 185) {
    throw new ValidationError(
      `${where}: retryPolicy.maximumRetryAttempts must be an integer between 0 and 185, got ${maximumRetryAttempts}`,
    );
  }
  if (
    !Number.isInteger(maximumEventAgeSeconds) ||
    maximumEventAgeSeconds < 60 ||
    maximumEventAgeSeconds > 86_400
  ) {
    throw new ValidationError(
      `${where}: retryPolicy.maximumEventAgeSeconds must be an integer between 60 and 86400, got ${maximumEventAgeSeconds}`,
    );
  }
  return { maximumRetryAttempts, maximumEventAgeSeconds };
}

export interface BackoffOptions {
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
}

/**
 * Delay before retry number `retry` (1 = first retry): base·2^(retry−1), capped, with "equal
 * jitter" (half fixed, half random) so retries of many events do not fire in lockstep and a
 * retry never comes back immediately.
 */
export function retryDelayMs(retry: number, backoff: BackoffOptions, random: () => number): number {
  const exponentialMs = Math.min(backoff.maxDelayMs, backoff.baseDelayMs * 2 ** Math.min(retry - 1, 52));
  return exponentialMs / 2 + random() * (exponentialMs / 2);
}
