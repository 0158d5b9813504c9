/**
 * The operator's global retry settings (Armada's `scheduling.retryPolicy`): not policies, only
 * the switches around them. Validated like a policy, every problem as `<path>: <reason>`.
 *
 * `enabled` defaults to true (Armada's proposal ships it off for backward compatibility; Cairn
 * has no older behaviour to protect, and with no policy written the budgets decide alone anyway).
 */
import * as z from "zod";
import { nameSchema, safeParseWithIssues, strictObject } from "../spec.ts";
import type { Backoff } from "./backoff.ts";
import { formatDuration } from "./duration.ts";
import { RetryConfigValidationError } from "./errors.ts";
import { durationSchema, multiplierSchema, retryLimitSchema } from "./policy.ts";

export interface RetryConfig {
  /** Off: policies are ignored and the two budgets decide alone. */
  readonly enabled: boolean;
  /** Cap on a session's counted retries under policies; 0 stops every retry (kill switch). */
  readonly globalMaxRetries: number;
  /** Applies when neither the queue nor the session names a policy, if it exists. */
  readonly defaultPolicyName: string;
  /** The least specific backoff level. */
  readonly defaultBackoff: Backoff;
}

export const RETRY_CONFIG_DEFAULTS: RetryConfig = Object.freeze({
  enabled: true,
  globalMaxRetries: 20,
  defaultPolicyName: "default",
  defaultBackoff: Object.freeze({ initialDelayMs: 0, maxDelayMs: 600_000, multiplier: 2 }),
});

const defaults = RETRY_CONFIG_DEFAULTS;

export const RetryConfigSchema = strictObject({
  /** false: policies are not consulted, and the session's budgets decide alone. */
  enabled: z.boolean().default(defaults.enabled),
  /** Every retry of a session counts against it, whatever rule allowed it; 0 stops every retry. */
  globalMaxRetries: retryLimitSchema.default(defaults.globalMaxRetries),
  /** The policy that applies when neither the queue nor the session names one, if it exists. */
  defaultPolicyName: nameSchema.default(defaults.defaultPolicyName),
  /** The backoff of a retry whose rule and policy set none. */
  defaultBackoff: strictObject({
    /** The first retry's wait, a duration such as `10s` (default 0). */
    initialDelay: durationSchema.default(defaults.defaultBackoff.initialDelayMs),
    /** The longest wait (default 10m). */
    maxDelay: durationSchema.default(defaults.defaultBackoff.maxDelayMs),
    /** Each further failure's wait is the last one times this. */
    multiplier: multiplierSchema.default(defaults.defaultBackoff.multiplier),
  })
    .superRefine(({ initialDelay, maxDelay }, ctx) => {
      if (maxDelay < initialDelay) {
        ctx.addIssue({
          code: "custom",
          path: ["maxDelay"],
          message: `must be at least initialDelay (${formatDuration(initialDelay)})`,
        });
      }
    })
    .prefault({}),
});

/** What an operator writes, in Armada's shape (durations as strings such as "10m"). */
export type RetryConfigInput = z.input<typeof RetryConfigSchema>;

export function parseRetryConfig(input: unknown): RetryConfig {
  const result = safeParseWithIssues(RetryConfigSchema, input ?? {});
  if (!result.success) throw new RetryConfigValidationError(result.issues);
  const { defaultBackoff: b, ...rest } = result.data;
  return {
    ...rest,
    defaultBackoff: { initialDelayMs: b.initialDelay, maxDelayMs: b.maxDelay, multiplier: b.multiplier },
  };
}

/** The operator's form of a configuration: what `parseRetryConfig` reads back to the same value. */
export interface RetryConfigDocument {
  readonly enabled: boolean;
  readonly globalMaxRetries: number;
  readonly defaultPolicyName: string;
  readonly defaultBackoff: {
    readonly initialDelay: string;
    readonly maxDelay: string;
    readonly multiplier: number;
  };
}

export function retryConfigToDocument(config: RetryConfig): RetryConfigDocument {
  return {
    enabled: config.enabled,
    globalMaxRetries: config.globalMaxRetries,
    defaultPolicyName: config.defaultPolicyName,
    defaultBackoff: {
      initialDelay: formatDuration(config.defaultBackoff.initialDelayMs),
      maxDelay: formatDuration(config.defaultBackoff.maxDelayMs),
      multiplier: config.defaultBackoff.multiplier,
    },
  };
}
