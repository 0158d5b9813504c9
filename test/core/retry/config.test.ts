/** The global retry config, durations, backoff arithmetic and the graceful-shutdown clock. */
import { describe, expect, test } from "vitest";
import {
  backoffDelayMs,
  effectiveBackoff,
  retryEligibleAtMs,
  retryWait,
  sessionFailureCount,
} from "../../../functions/core/retry/backoff.ts";
import { parseRetryConfig, RETRY_CONFIG_DEFAULTS } from "../../../functions/core/retry/config.ts";
import { formatDuration, parseDurationMs } from "../../../functions/core/retry/duration.ts";
import { RetryConfigValidationError } from "../../../functions/core/retry/errors.ts";
import { NOW_MS } from "./fixtures.ts";

describe("RetryConfig", () => {
  test("defaults: enabled, globalMaxRetries 20, default policy 'default', backoff 0s / 10m / 2", () => {
    expect(parseRetryConfig({})).toEqual({
      enabled: true,
      globalMaxRetries: 20,
      defaultPolicyName: "default",
      defaultBackoff: { initialDelayMs: 0, maxDelayMs: 600_000, multiplier: 2 },
    });
    expect(parseRetryConfig(undefined)).toEqual(RETRY_CONFIG_DEFAULTS);
    expect(Object.isFrozen(RETRY_CONFIG_DEFAULTS.defaultBackoff)).toBe(true);
  });

  test("the seed's scheduler config block parses to the same values", () => {
    expect(
      parseRetryConfig({
        enabled: true,
        globalMaxRetries: 20,
        defaultPolicyName: "default",
        defaultBackoff: { initialDelay: "0s", maxDelay: "10m", multiplier: 2.0 },
      }),
    ).toEqual(RETRY_CONFIG_DEFAULTS);
  });

  test("a partial backoff keeps the defaults of the fields it omits", () => {
    expect(parseRetryConfig({ globalMaxRetries: 0, defaultBackoff: { initialDelay: "1s" } })).toMatchObject({
      globalMaxRetries: 0,
      defaultBackoff: { initialDelayMs: 1000, maxDelayMs: 600_000, multiplier: 2 },
    });
  });

  test("invalid settings are rejected with every field named", () => {
    let error: unknown;
    try {
      parseRetryConfig({
        enabled: "yes",
        globalMaxRetries: -1,
        defaultPolicyName: "",
        defaultBackoff: { initialDelay: "20m", multiplier: 0 },
        policies: [],
      });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(RetryConfigValidationError);
    expect(error).toMatchObject({ code: "INVALID_RETRY_CONFIG" });
    expect((error as Error).message).toBe(
      [
        "invalid retry configuration (6 problems):",
        "  enabled: expected a boolean, got a string",
        "  globalMaxRetries: must be at least 0",
        "  defaultPolicyName: must not be empty",
        "  defaultBackoff.multiplier: must be at least 1",
        "  defaultBackoff.maxDelay: must be at least initialDelay (20m)",
        "  policies: unknown field (expected one of enabled, globalMaxRetries, defaultPolicyName, defaultBackoff)",
      ].join("\n"),
    );
  });

  test("the default backoff's maxDelay must not be below its initialDelay (default maxDelay included)", () => {
    expect(() => parseRetryConfig({ defaultBackoff: { initialDelay: "20m" } })).toThrow(
      "defaultBackoff.maxDelay: must be at least initialDelay (20m)",
    );
  });
});

describe("durations", () => {
  test.each([
    ["0", 0],
    ["0s", 0],
    ["250ms", 250],
    ["30s", 30_000],
    ["5m", 300_000],
    ["1h30m", 5_400_000],
    ["1.5h", 5_400_000],
    ["1m30s500ms", 90_500],
    ["0.1s", 100],
    ["+2s", 2000],
    ["8760h", 31_536_000_000],
  ])("%s = %d ms", (text, ms) => {
    expect(parseDurationMs(text)).toEqual({ ok: true, ms });
  });

  test.each([
    ["", 'must be a duration such as "30s", "5m" or "1h30m"'],
    ["5", 'must be a duration such as "30s", "5m" or "1h30m"'],
    ["5 m", 'must be a duration such as "30s", "5m" or "1h30m"'],
    ["1m30", 'must be a duration such as "30s", "5m" or "1h30m"'],
    ["s", 'must be a duration such as "30s", "5m" or "1h30m"'],
    ["1d", 'unknown unit "d" (use h, m, s or ms)'],
    ["10us", 'unknown unit "us" (use h, m, s or ms)'],
    ["-1s", "must not be negative"],
    ["1.5ms", "must be a whole number of milliseconds"],
    ["8761h", "must be at most 8760h (1 year)"],
  ])("%j is rejected: %s", (text, reason) => {
    expect(parseDurationMs(text)).toEqual({ ok: false, reason });
  });

  test.each([
    [0, "0s"],
    [250, "250ms"],
    [1500, "1s500ms"],
    [300_000, "5m"],
    [5_400_000, "1h30m"],
    [90_061_001, "25h1m1s1ms"],
  ])("formatDuration(%d) = %s", (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
    expect(parseDurationMs(text)).toEqual({ ok: true, ms });
  });
});

describe("backoff arithmetic", () => {
  const b = { initialDelayMs: 1000, maxDelayMs: 60_000, multiplier: 2 };

  // Armada: "compute delay: min(initialDelay * multiplier^(failureCount-1), maxDelay)".
  test.each([
    [1, 1000],
    [2, 2000],
    [3, 4000],
    [4, 8000],
    [5, 16_000],
    [6, 32_000],
    [7, 60_000],
    [8, 60_000],
    [20, 60_000],
  ])("failureCount %d: min(1s × 2^(failureCount−1), 60s) = %d ms", (failureCount, delayMs) => {
    expect(backoffDelayMs(b, failureCount)).toBe(delayMs);
    expect(delayMs).toBe(Math.min(b.initialDelayMs * b.multiplier ** (failureCount - 1), b.maxDelayMs));
  });

  test("fractional multipliers round to whole milliseconds; huge powers land on maxDelay", () => {
    expect([1, 2, 3].map((n) => backoffDelayMs({ ...b, multiplier: 1.5 }, n))).toEqual([1000, 1500, 2250]);
    expect(backoffDelayMs({ ...b, multiplier: 100 }, 10_000)).toBe(60_000);
    expect(backoffDelayMs({ ...b, initialDelayMs: 0, multiplier: 100 }, 10_000)).toBe(0);
  });

  test("an initialDelay above maxDelay is capped from the first retry", () => {
    expect(backoffDelayMs({ initialDelayMs: 120_000, maxDelayMs: 60_000, multiplier: 2 }, 1)).toBe(60_000);
  });

  test("the failure count starts at 1", () => {
    expect(() => backoffDelayMs(b, 0)).toThrow(
      new RangeError("failure count must be an integer >= 1, got 0"),
    );
    expect(() => backoffDelayMs(b, 1.5)).toThrow(
      new RangeError("failure count must be an integer >= 1, got 1.5"),
    );
  });

  test("a session's failure count is its counted retries plus this failure", () => {
    expect([0, 1, 2, 19].map(sessionFailureCount)).toEqual([1, 2, 3, 20]);
  });

  test("each field comes from the most specific level that sets it", () => {
    expect(
      effectiveBackoff([{ initialDelayMs: 5 }, undefined, { initialDelayMs: 7, multiplier: 3 }], b),
    ).toEqual({
      initialDelayMs: 5,
      maxDelayMs: 60_000,
      multiplier: 3,
    });
    expect(effectiveBackoff([], b)).toEqual(b);
  });
});

describe("graceful shutdown: eligible at max(backoff, grace), or on termination confirmation after backoff", () => {
  const wait = retryWait(10_000, 30_000);

  test("the wait is the longer of the two, and only a grace-driven wait ends early", () => {
    expect(wait).toEqual({
      delayMs: 30_000,
      backoffMs: 10_000,
      gracePeriodMs: 30_000,
      endsEarlyOnTermination: true,
    });
    expect(retryWait(10_000, 10_000).endsEarlyOnTermination).toBe(false);
    expect(retryWait(10_000, 0)).toMatchObject({ delayMs: 10_000, endsEarlyOnTermination: false });
  });

  test.each([
    ["no confirmation: the timer", undefined, 30_000],
    ["confirmed during the backoff: when the backoff ends", 5000, 10_000],
    ["confirmed already before the decision: when the backoff ends", -1000, 10_000],
    ["confirmed after the backoff: at once", 15_000, 15_000],
    ["confirmed after the timer: the timer", 45_000, 30_000],
  ])("%s", (_name, confirmedAfterMs, eligibleAfterMs) => {
    const confirmedAt = confirmedAfterMs === undefined ? undefined : NOW_MS + confirmedAfterMs;
    expect(retryEligibleAtMs(NOW_MS, wait, confirmedAt)).toBe(NOW_MS + eligibleAfterMs);
  });
});
