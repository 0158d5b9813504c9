/**
 * Properties of the retry core over random policies, configs and failure sequences: limits and
 * the global cap always hold, waits never exceed maxDelay, budgets agree with `isFinished`, and
 * policies survive a round trip through their document form.
 */
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { backoffDelayMs } from "../../../functions/core/retry/backoff.ts";
import { isFinished, isFreePreemption, judgeBudget } from "../../../functions/core/retry/budgets.ts";
import { formatDuration, parseDurationMs } from "../../../functions/core/retry/duration.ts";
import {
  evaluateRetry,
  INITIAL_RETRY_STATE,
  ruleKey,
  type FailedRun,
} from "../../../functions/core/retry/evaluate.ts";
import {
  parseRetryPolicy,
  retryPolicyToDocument,
  type RetryPolicy,
} from "../../../functions/core/retry/policy.ts";
import type { AttemptOutcome } from "../../../functions/core/status.ts";
import { kernels, notStarted, run } from "./fixtures.ts";

// ---- Arbitraries ----------------------------------------------------------------------------

const delayMsArb = fc.constantFrom(0, 1, 250, 1000, 10_000, 90_500, 300_000, 3_600_000);

const backoffArb = fc
  .record(
    { a: delayMsArb, b: delayMsArb, multiplier: fc.constantFrom(1, 1.5, 2, 3, 100) },
    { requiredKeys: [] },
  )
  .map(({ a, b, multiplier }) => ({
    ...(a !== undefined ? { initialDelay: formatDuration(b !== undefined ? Math.min(a, b) : a) } : {}),
    ...(b !== undefined ? { maxDelay: formatDuration(a !== undefined ? Math.max(a, b) : b) } : {}),
    ...(multiplier !== undefined ? { multiplier } : {}),
  }));

const matcherArb = fc.oneof(
  fc.record({
    onConditions: fc.uniqueArray(fc.constantFrom("OOMKilled", "Evicted", "Preempted", "DeadlineExceeded"), {
      minLength: 1,
    }),
  }),
  fc.record({
    onExitCodes: fc.record({
      operator: fc.constantFrom("In", "NotIn"),
      values: fc.uniqueArray(fc.constantFrom(1, 2, 137, 143), { minLength: 1 }),
    }),
  }),
  fc.record({
    onTerminationMessage: fc.record({ pattern: fc.constantFrom("TRANSIENT", "^retry", "(a|b)+c") }),
  }),
  fc.record({
    onFailureCategory: fc.uniqueArray(fc.constantFrom("cuda_error", "infiniband_error"), { minLength: 1 }),
  }),
);

const ruleArb = fc
  .tuple(
    fc.constantFrom("Retry", "Fail"),
    matcherArb,
    fc.record(
      {
        containerName: fc.constantFrom(0, 1, "*"),
        retryLimit: fc.nat(6),
        backoff: backoffArb,
        antiAffinity: fc.record({ mode: fc.constantFrom("none", "node") }),
      },
      { requiredKeys: [] },
    ),
  )
  .map(([action, matcher, extras]) => {
    const { containerName, ...retryOnly } = extras;
    return {
      action,
      ...(containerName !== undefined ? { containerName } : {}),
      ...matcher,
      ...(action === "Retry" ? retryOnly : {}),
    };
  });

const policyArb = (name: string) =>
  fc
    .record(
      {
        retryLimit: fc.nat(8),
        defaultAction: fc.constantFrom("Retry", "Fail"),
        backoff: backoffArb,
        antiAffinity: fc.record({ mode: fc.constantFrom("none", "node") }),
        rules: fc.array(ruleArb, { maxLength: 5 }),
      },
      { requiredKeys: [] },
    )
    .map((spec) =>
      parseRetryPolicy({ apiVersion: "cairn.dev/v1", kind: "RetryPolicy", metadata: { name }, spec }),
    );

const policiesArb = fc
  .tuple(policyArb("queue"), policyArb("session"))
  .chain(([a, b]) => fc.constantFrom<RetryPolicy[]>([], [a], [a, b]));

const failureArb: fc.Arbitrary<FailedRun> = fc.oneof(
  fc.constant(run(kernels.preempted({ agentId: "agent-a" }))),
  fc.constant(notStarted(kernels.preempted())),
  fc.constant(run(kernels.evicted({ agentId: "agent-b" }))),
  fc.constant(run(kernels.oomKilled({ message: "TRANSIENT" }))),
  fc.constant(run(kernels.exited(1, { failureCategory: "cuda_error" }))),
  fc.constant(run(kernels.exited(137), kernels.exited(2, { index: 1, finishedAtMs: 1 }))),
  fc.constant(notStarted(kernels.unschedulable())),
);

const configArb = fc.record({
  enabled: fc.boolean(),
  globalMaxRetries: fc.nat(12),
  defaultPolicyName: fc.constant("default"),
  defaultBackoff: fc.tuple(delayMsArb, delayMsArb, fc.constantFrom(1, 2, 3)).map(([a, b, multiplier]) => ({
    initialDelayMs: Math.min(a, b),
    maxDelayMs: Math.max(a, b),
    multiplier,
  })),
});

// ---- Properties -----------------------------------------------------------------------------

describe("backoff", () => {
  test("the delay is a whole number of ms between 0 and maxDelay, and never shrinks as n grows", () => {
    fc.assert(
      fc.property(
        delayMsArb,
        delayMsArb,
        fc.double({ min: 1, max: 1000, noNaN: true }),
        fc.integer({ min: 1, max: 5000 }),
        (a, b, multiplier, n) => {
          const backoff = { initialDelayMs: Math.min(a, b), maxDelayMs: Math.max(a, b), multiplier };
          const delay = backoffDelayMs(backoff, n);
          expect(Number.isSafeInteger(delay)).toBe(true);
          expect(delay).toBeGreaterThanOrEqual(0);
          expect(delay).toBeLessThanOrEqual(backoff.maxDelayMs);
          expect(backoffDelayMs(backoff, n + 1)).toBeGreaterThanOrEqual(delay);
        },
      ),
    );
  });
});

describe("evaluateRetry over random failure sequences", () => {
  test("rule limits, the global cap and maxDelay always hold; counts add up", () => {
    fc.assert(
      fc.property(
        policiesArb,
        configArb,
        fc.array(failureArb, { minLength: 1, maxLength: 40 }),
        (policies, cfg, failures) => {
          const maxDelays = [
            cfg.defaultBackoff.maxDelayMs,
            ...policies.flatMap((p) => [p.backoff?.maxDelayMs, ...p.rules.map((r) => r.backoff?.maxDelayMs)]),
          ].filter((d) => d !== undefined);
          const policyPath = cfg.enabled && policies.length > 0;
          let state = INITIAL_RETRY_STATE;
          let countedRetries = 0;
          for (const failure of failures) {
            const decision = evaluateRetry({ run: failure, policies, state, config: cfg });
            const free = isFreePreemption({
              outcome: decision.outcome,
              startedRunning: failure.startedRunning,
            });
            if (decision.action === "retry") {
              if (!free) countedRetries++;
              expect(decision.delayMs).toBeLessThanOrEqual(Math.max(...maxDelays));
              if (policyPath) {
                // Armada: a retry needs the total under the cap — free retries included.
                expect(state.totalRetries).toBeLessThan(cfg.globalMaxRetries);
                const ref = decision.matchedRule;
                if (ref) {
                  const p = policies.find((x) => x.name === ref.policy);
                  const limit =
                    (ref.index === "default" ? undefined : p?.rules[ref.index]?.retryLimit) ??
                    p?.retryLimit ??
                    cfg.globalMaxRetries;
                  expect(decision.state.ruleRetries[ruleKey(ref)]).toBeLessThanOrEqual(limit);
                }
              }
            }
            state = decision.state;
            expect(state.totalRetries).toBe(countedRetries);
            if (policyPath) expect(state.totalRetries).toBeLessThanOrEqual(cfg.globalMaxRetries);
            const ruleSum = Object.values(state.ruleRetries).reduce((sum, n) => sum + n, 0);
            expect(ruleSum).toBeLessThanOrEqual(state.totalRetries);
            if (decision.action === "fail") break;
          }
        },
      ),
    );
  });
});

describe("budgets", () => {
  const outcomes: AttemptOutcome[] = [
    "SUCCEEDED",
    "FAILED",
    "KILLED",
    "WORKER_FAILED",
    "UNSCHEDULABLE",
    "PREEMPTED",
  ];

  test("a charged run is finished exactly when judgeBudget says so (free preemptions aside)", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...outcomes),
        fc.boolean(),
        fc.record({ maxRetriesFailure: fc.nat(5), maxRetriesPreemption: fc.nat(5) }),
        fc.nat(5),
        fc.nat(5),
        (outcome, startedRunning, limits, f, p) => {
          // Reachable states: a session whose counters already exceed its limits would be finished.
          const counters = {
            failureCount: Math.min(f, limits.maxRetriesFailure),
            preemptionCount: Math.min(p, limits.maxRetriesPreemption),
          };
          const judged = judgeBudget(counters, limits, { outcome, startedRunning });
          expect(judged.decision === "finished").toBe(isFinished(outcome, judged.counters, limits));
        },
      ),
    );
  });
});

describe("documents", () => {
  test("parseRetryPolicy(retryPolicyToDocument(p)) is p", () => {
    fc.assert(
      fc.property(policyArb("p"), (p) => {
        expect(parseRetryPolicy(retryPolicyToDocument(p))).toEqual(p);
      }),
    );
  });

  test("durations format and parse back", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 31_536_000_000 }), (ms) => {
        expect(parseDurationMs(formatDuration(ms))).toEqual({ ok: true, ms });
      }),
    );
  });
});
