/**
 * Termination-message patterns read as Armada reads them. Its proposal: "Jobs can signal retry
 * intent by writing to /dev/termination-log. … onTerminationMessage: pattern: ".*TRANSIENT.*"".
 * Armada compiles that pattern with Go's regexp (RE2 syntax, matched anywhere), so a policy copied
 * from Armada parses and matches the same here; what RE2 refuses is refused when the policy is
 * written.
 */
import { describe, expect, test } from "vitest";
import { RetryPolicyValidationError } from "../../../functions/core/retry/errors.ts";
import {
  evaluateRetry,
  INITIAL_RETRY_STATE,
  type RetryDecision,
} from "../../../functions/core/retry/evaluate.ts";
import { patternMatches, patternProblem } from "../../../functions/core/retry/pattern.ts";
import { parseRetryPolicy } from "../../../functions/core/retry/policy.ts";
import { config, kernels, policy, run } from "./fixtures.ts";

/** A policy copied from Armada as its users write it: a leading (?i) on the message pattern. */
const ARMADA_POLICY = {
  apiVersion: "armadaproject.io/v1",
  kind: "RetryPolicy",
  metadata: { name: "transient" },
  spec: {
    retryLimit: 3,
    rules: [
      { action: "Retry", containerName: "main", onTerminationMessage: { pattern: "(?i).*transient.*" } },
    ],
  },
};

function decide(pattern: string, message: string | undefined): RetryDecision {
  const p = policy("p", { rules: [{ action: "Retry", onTerminationMessage: { pattern } }] });
  return evaluateRetry({
    run: run(kernels.exited(3, message === undefined ? {} : { message })),
    policies: [p],
    state: INITIAL_RETRY_STATE,
    config: config(),
  });
}

describe("RE2 syntax, as Armada compiles the seed's patterns", () => {
  test("a policy copied from Armada with a leading (?i) parses (its containerName aside) and matches any case", () => {
    // containerName names a Kubernetes container in Armada; in Cairn it is a kernel index.
    const copied = {
      ...ARMADA_POLICY,
      spec: { ...ARMADA_POLICY.spec, rules: [{ ...ARMADA_POLICY.spec.rules[0], containerName: 0 }] },
    };
    const parsed = parseRetryPolicy(copied);
    expect(parsed.rules[0]?.matchers).toEqual([{ kind: "terminationMessage", pattern: "(?i).*transient.*" }]);
    expect(decide("(?i).*transient.*", "fetch failed: TRANSIENT (503)").basis).toBe("rule");
    expect(decide("(?i).*transient.*", "transient, lower case").basis).toBe("rule");
    expect(decide("(?i).*transient.*", "permanent").basis).toBe("default-action");
  });

  test.each([
    ["(?i)cuda error", "CUDA ERROR: out of memory", true],
    ["(?s)begin.*end", "begin\nmiddle\nend", true],
    ["begin.*end", "begin\nmiddle\nend", false],
    ["(?m)^TRANSIENT$", "attempt 3\nTRANSIENT\n", true],
    ["^TRANSIENT$", "attempt 3\nTRANSIENT\n", false],
    ["(?i:nccl) timeout", "NCCL timeout", true],
    ["(?i:nccl) timeout", "NCCL TIMEOUT", false],
    ["(?P<code>\\d+) retries", "after 3 retries", true],
    ["[[:digit:]]{3} from store", "fetch failed: 503 from store", true],
    ["\\pN+ bytes", "wrote 42 bytes", true],
    ["TRANSIENT\\z", "x TRANSIENT", true],
    ["TRANSIENT", "x TRANSIENT y", true],
  ])("%s on %j → %s (matched anywhere, Go's MatchString)", (pattern, message, expected) => {
    expect(patternProblem(pattern)).toBeUndefined();
    expect(patternMatches(pattern, message)).toBe(expected);
  });

  test("what RE2 refuses is refused when the policy is written, in RE2's words", () => {
    const rules = [
      "(?<=a)b", // lookbehind: JavaScript has it, RE2 does not
      "(a)\\1", // backreference
      "a++", // possessive repetition
      "(TRANSIENT",
    ].map((pattern) => ({ action: "Retry", onTerminationMessage: { pattern } }));
    let error: unknown;
    try {
      parseRetryPolicy({ ...ARMADA_POLICY, spec: { rules } });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(RetryPolicyValidationError);
    expect((error as Error).message).toBe(
      [
        "invalid retry policy (4 problems):",
        "  spec.rules[0].onTerminationMessage.pattern: is not a valid RE2 regular expression: invalid named capture: `(?<=a)b`",
        "  spec.rules[1].onTerminationMessage.pattern: is not a valid RE2 regular expression: invalid escape sequence: `\\1`",
        "  spec.rules[2].onTerminationMessage.pattern: is not a valid RE2 regular expression: invalid nested repetition operator: `++`",
        "  spec.rules[3].onTerminationMessage.pattern: is not a valid RE2 regular expression: missing closing ): `(TRANSIENT`",
      ].join("\n"),
    );
  });
});

describe("an empty termination message never matches a pattern (as in Armada)", () => {
  test("not even one that matches the empty string", () => {
    expect(patternMatches(".*", "")).toBe(false);
    expect(patternMatches(".*", undefined)).toBe(false);
    expect(decide(".*", "").basis).toBe("default-action");
    expect(decide("^$", "").basis).toBe("default-action");
    expect(decide(".*", undefined).basis).toBe("default-action");
  });

  test("a kernel that wrote a message is matched by .*", () => {
    expect(decide(".*", "anything").basis).toBe("rule");
  });
});
