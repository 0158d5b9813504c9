/**
 * A rule may combine matchers, and all of them must match, as Armada ANDs a rule's conditions.
 * Armada: "Every rule can optionally specify containerName … When set, the rule only considers
 * that container's exit code, termination reason, and message", and its example rule
 * `{ action: Retry, containerName: "main", onExitCodes: { operator: In, values: [137] } }`
 * combines a container with an exit code. "OOMKilled with exit code 137 in kernel 1" is one rule;
 * two rules are an OR, the first that matches winning ("Rules are evaluated in order. First match
 * wins. No match = defaultAction").
 */
import { describe, expect, test } from "vitest";
import {
  evaluateRetry,
  INITIAL_RETRY_STATE,
  type FailedRun,
  type RetryDecision,
} from "../../../functions/core/retry/evaluate.ts";
import {
  parseRetryPolicy,
  retryPolicyToDocument,
  type RetryPolicy,
} from "../../../functions/core/retry/policy.ts";
import { config, kernels, NOW_MS, policy, run } from "./fixtures.ts";

function decide(p: RetryPolicy, failed: FailedRun): RetryDecision {
  return evaluateRetry({ run: failed, policies: [p], state: INITIAL_RETRY_STATE, config: config() });
}

/** "OOMKilled with exit code 137 in kernel 1", as one rule. */
const OOM_137_IN_1 = policy("oom-137-in-1", {
  retryLimit: 3,
  rules: [
    {
      action: "Retry",
      containerName: 1,
      onConditions: ["OOMKilled"],
      onExitCodes: { operator: "In", values: [137] },
    },
  ],
});

describe("a rule's matchers are ANDed", () => {
  test("the document's matchers normalise to a list, and back to the same document", () => {
    expect(OOM_137_IN_1.rules[0]).toEqual({
      action: "Retry",
      kernel: 1,
      matchers: [
        { kind: "exitCodes", operator: "In", values: [137] },
        { kind: "conditions", conditions: ["OOMKilled"] },
      ],
    });
    expect(parseRetryPolicy(retryPolicyToDocument(OOM_137_IN_1))).toEqual(OOM_137_IN_1);
    expect(retryPolicyToDocument(OOM_137_IN_1).spec.rules?.[0]).toEqual({
      action: "Retry",
      containerName: 1,
      onExitCodes: { operator: "In", values: [137] },
      onConditions: ["OOMKilled"],
    });
  });

  test("OOMKilled with exit code 137 in kernel 1 matches, and the reason names both", () => {
    const failed = run(kernels.succeeded({ index: 0 }), kernels.oomKilled({ index: 1 }));
    expect(decide(OOM_137_IN_1, failed)).toMatchObject({
      action: "retry",
      basis: "rule",
      reason: expect.stringContaining(
        "oom-137-in-1 rule 0 (Retry) matched kernel 1 (exit code 137 and condition OOMKilled)",
      ) as string,
    });
  });

  test.each([
    ["OOMKilled with another exit code", kernels.oomKilled({ index: 1, exitCode: 9 })],
    ["exit code 137 without OOMKilled", kernels.exited(137, { index: 1 })],
    ["OOMKilled with 137, but in kernel 0", kernels.oomKilled({ index: 0 })],
  ])("%s does not match", (_what, kernel) => {
    expect(decide(OOM_137_IN_1, run(kernel)).basis).toBe("default-action");
  });

  test("all matchers look at the same kernel: one kernel's condition and another's exit code are no match", () => {
    const p = policy("same-kernel", {
      rules: [
        {
          action: "Retry",
          containerName: "*",
          onConditions: ["OOMKilled"],
          onExitCodes: { operator: "In", values: [3] },
        },
      ],
    });
    const split = run(
      kernels.oomKilled({ index: 0, exitCode: 1 }),
      kernels.exited(3, { index: 1, finishedAtMs: NOW_MS + 1 }),
    );
    expect(decide(p, split).basis).toBe("default-action");
    const together = run(
      kernels.exited(1, { index: 0 }),
      kernels.oomKilled({ index: 1, exitCode: 3, finishedAtMs: NOW_MS + 1 }),
    );
    expect(decide(p, together)).toMatchObject({
      basis: "rule",
      matchedRule: { policy: "same-kernel", index: 0 },
    });
  });

  test("a message combined with an exit code looks at the first failed kernel, as the exit code does", () => {
    const p = policy("msg-and-code", {
      rules: [
        {
          action: "Retry",
          onExitCodes: { operator: "In", values: [1] },
          onTerminationMessage: { pattern: "TRANSIENT" },
        },
      ],
    });
    expect(decide(p, run(kernels.exited(1, { message: "upstream TRANSIENT" }))).basis).toBe("rule");
    expect(decide(p, run(kernels.exited(1, { message: "bad input" }))).basis).toBe("default-action");
    expect(decide(p, run(kernels.exited(2, { message: "upstream TRANSIENT" }))).basis).toBe("default-action");
    // The second kernel's message is not the first failed kernel's.
    const second = run(
      kernels.exited(1, { index: 0, message: "bad input" }),
      kernels.exited(1, { index: 1, message: "upstream TRANSIENT", finishedAtMs: NOW_MS + 1 }),
    );
    expect(decide(p, second).basis).toBe("default-action");
  });

  test("a failure category with a condition: both must hold", () => {
    const p = policy("cat-and-cond", {
      rules: [{ action: "Retry", onConditions: ["Evicted"], onFailureCategory: ["evicted"] }],
    });
    expect(decide(p, run(kernels.evicted({ failureCategory: "evicted" }))).basis).toBe("rule");
    expect(decide(p, run(kernels.evicted())).basis).toBe("default-action");
  });

  test("two rules are an OR, the first that matches winning", () => {
    const p = policy("or", {
      rules: [
        { action: "Fail", onConditions: ["OOMKilled"], onExitCodes: { operator: "In", values: [137] } },
        { action: "Retry", onExitCodes: { operator: "In", values: [137] } },
      ],
    });
    expect(decide(p, run(kernels.oomKilled()))).toMatchObject({ action: "fail", matchedRule: { index: 0 } });
    expect(decide(p, run(kernels.exited(137)))).toMatchObject({ action: "retry", matchedRule: { index: 1 } });
  });
});
