/**
 * RetryPolicy documents: the examples and the seed's YAML parse; bad documents are rejected with
 * every problem named, verbatim.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { RetryPolicySyntaxError, RetryPolicyValidationError } from "../../../functions/core/retry/errors.ts";
import { parseRetryPolicyText } from "../../../functions/core/retry/policy-text.ts";
import {
  parseRetryPolicy,
  retryPolicyToDocument,
  type RetryPolicy,
} from "../../../functions/core/retry/policy.ts";
import { EXAMPLES_DIR, examplePolicy } from "./fixtures.ts";

/** Armada's policy, exactly as its retry-policy proposal writes it (Armada's apiVersion). */
const SEED_YAML = `apiVersion: armadaproject.io/v1
kind: RetryPolicy
metadata:
  name: ml-training
spec:
  retryLimit: 5
  defaultAction: Fail
  backoff:
    initialDelay: 0s
  antiAffinity:
    mode: none
  rules:
    - action: Retry
      onConditions:
        - Preempted
        - Evicted
      antiAffinity:
        mode: node
    - action: Retry
      onConditions:
        - OOMKilled
      retryLimit: 3
    - action: Retry
      onExitCodes:
        operator: In
        values: [137]
    - action: Retry
      onFailureCategory: [cuda_error, infiniband_error]
`;

const doc = (spec: unknown, name = "p") => ({
  apiVersion: "cairn.dev/v1",
  kind: "RetryPolicy",
  metadata: { name },
  spec,
});

/** The validation error a document produces, as printed (fails the test if it parses). */
function rejection(input: unknown): string {
  try {
    parseRetryPolicy(input);
  } catch (error) {
    expect(error).toBeInstanceOf(RetryPolicyValidationError);
    expect(error).toMatchObject({ name: "RetryPolicyValidationError", code: "INVALID_RETRY_POLICY" });
    return (error as Error).message;
  }
  throw new Error(`expected ${JSON.stringify(input)} to be rejected`);
}

describe("examples and the seed", () => {
  test("every file in examples/retry-policies parses, and is named after its file", () => {
    const files = readdirSync(EXAMPLES_DIR).filter((f) => f.endsWith(".yaml"));
    expect(files.sort()).toEqual(["infra.yaml", "ml-training.yaml"]);
    for (const file of files) {
      expect(parseRetryPolicyText(readFileSync(join(EXAMPLES_DIR, file), "utf8")).name).toBe(
        file.replace(".yaml", ""),
      );
    }
  });

  test("the seed's YAML (apiVersion armadaproject.io/v1) parses to the normalised policy", () => {
    const expected: RetryPolicy = {
      name: "ml-training",
      retryLimit: 5,
      defaultAction: "Fail",
      backoff: { initialDelayMs: 0 },
      antiAffinity: "none",
      rules: [
        {
          action: "Retry",
          matchers: [{ kind: "conditions", conditions: ["Preempted", "Evicted"] }],
          antiAffinity: "node",
        },
        { action: "Retry", matchers: [{ kind: "conditions", conditions: ["OOMKilled"] }], retryLimit: 3 },
        { action: "Retry", matchers: [{ kind: "exitCodes", operator: "In", values: [137] }] },
        {
          action: "Retry",
          matchers: [{ kind: "failureCategory", categories: ["cuda_error", "infiniband_error"] }],
        },
      ],
    };
    expect(parseRetryPolicyText(SEED_YAML)).toEqual(expected);
    expect(examplePolicy("ml-training")).toEqual(expected);
  });

  test("infra: limit 10 for Preempted and Evicted, anti-affinity node, backoff 10s × 2 up to 5m", () => {
    expect(examplePolicy("infra")).toEqual({
      name: "infra",
      retryLimit: 10,
      defaultAction: "Fail",
      backoff: { initialDelayMs: 10_000, maxDelayMs: 300_000, multiplier: 2 },
      antiAffinity: "node",
      rules: [
        { action: "Retry", matchers: [{ kind: "conditions", conditions: ["Preempted"] }] },
        { action: "Retry", matchers: [{ kind: "conditions", conditions: ["Evicted"] }] },
      ],
    });
  });

  test("JSON text parses too", () => {
    const json = JSON.stringify(retryPolicyToDocument(examplePolicy("infra")), null, 2);
    expect(parseRetryPolicyText(json)).toEqual(examplePolicy("infra"));
  });

  test("a minimal policy: defaultAction Fail, no rules", () => {
    expect(parseRetryPolicy(doc({}))).toEqual({ name: "p", defaultAction: "Fail", rules: [] });
  });

  test("containerName selects a kernel: an index (number or digits) or *", () => {
    const rule = (containerName: unknown) =>
      parseRetryPolicy(doc({ rules: [{ action: "Retry", containerName, onConditions: ["OOMKilled"] }] }))
        .rules[0]?.kernel;
    expect([rule(0), rule("1"), rule(63), rule("*")]).toEqual([0, 1, 63, "*"]);
  });

  test("to a document and back is the identity, and the document uses Cairn's apiVersion", () => {
    for (const p of [examplePolicy("infra"), parseRetryPolicyText(SEED_YAML)]) {
      const document = retryPolicyToDocument(p);
      expect(document.apiVersion).toBe("cairn.dev/v1");
      expect(parseRetryPolicy(document)).toEqual(p);
    }
    expect(retryPolicyToDocument(examplePolicy("infra")).spec.backoff).toEqual({
      initialDelay: "10s",
      maxDelay: "5m",
      multiplier: 2,
    });
  });
});

// Armada: "includeInitContainers: false (default) skips init containers. Set to true to also
// consider init container failures." Cairn kernels have none: accepted, kept, shown, inert.
describe("includeInitContainers: accepted on a rule, a boolean, kept as written", () => {
  const ruleWith = (extra: Record<string, unknown>) =>
    doc({ rules: [{ action: "Retry", ...extra, onExitCodes: { operator: "In", values: [137] } }] });

  test.each([
    ["true", { includeInitContainers: true }, { includeInitContainers: true }],
    ["false", { includeInitContainers: false }, { includeInitContainers: false }],
    ["absent (the seed's default, false, not written)", {}, {}],
    [
      "true with containerName",
      { containerName: 1, includeInitContainers: true },
      { kernel: 1, includeInitContainers: true },
    ],
  ])("%s", (_, written, kept) => {
    const policy = parseRetryPolicy(ruleWith(written));
    expect(policy.rules[0]).toEqual({
      action: "Retry",
      ...kept,
      matchers: [{ kind: "exitCodes", operator: "In", values: [137] }],
    });
    expect(parseRetryPolicy(retryPolicyToDocument(policy))).toEqual(policy);
    expect(retryPolicyToDocument(policy).spec.rules?.[0]).toEqual({
      action: "Retry",
      ...written,
      onExitCodes: { operator: "In", values: [137] },
    });
  });

  test("on a Fail rule too: it targets kernels, it is not a retry setting", () => {
    const policy = parseRetryPolicy(
      doc({ rules: [{ action: "Fail", includeInitContainers: true, onConditions: ["OOMKilled"] }] }),
    );
    expect(policy.rules[0]?.includeInitContainers).toBe(true);
  });

  test("the seed's YAML with the flag on a rule parses", () => {
    const yaml = SEED_YAML.replace(
      "      retryLimit: 3\n",
      "      retryLimit: 3\n      includeInitContainers: true\n",
    );
    expect(parseRetryPolicyText(yaml).rules[1]).toEqual({
      action: "Retry",
      includeInitContainers: true,
      matchers: [{ kind: "conditions", conditions: ["OOMKilled"] }],
      retryLimit: 3,
    });
  });

  test.each([
    ["a string", "true"],
    ["YAML 1.1's yes, which YAML 1.2 reads as a string", "yes"],
    ["a number", 1],
    ["null", null],
    ["a list", [true]],
  ])("%s is rejected", (_, value) => {
    expect(rejection(ruleWith({ includeInitContainers: value }))).toBe(
      "invalid retry policy (1 problem):\n  spec.rules[0].includeInitContainers: must be true or false",
    );
  });

  test("at the policy level it is an unknown field (the seed puts it on rules)", () => {
    expect(rejection(doc({ includeInitContainers: true }))).toBe(
      [
        "invalid retry policy (1 problem):",
        "  spec.includeInitContainers: unknown field (expected one of retryLimit, defaultAction, backoff, antiAffinity, rules)",
      ].join("\n"),
    );
  });
});

describe("invalid documents are rejected with every problem named", () => {
  test("the envelope", () => {
    expect(rejection({ apiVersion: "v1", kind: "Policy", metadata: { name: "-x", labels: {} } })).toBe(
      [
        "invalid retry policy (5 problems):",
        "  apiVersion: must be one of cairn.dev/v1, armadaproject.io/v1",
        '  kind: must be "RetryPolicy"',
        "  metadata.name: must start with a letter or digit and contain only letters, digits, '.', '_' and '-'",
        "  metadata.labels: unknown field (expected one of name)",
        "  spec: required",
      ].join("\n"),
    );
    expect(rejection("retry everything")).toBe(
      "invalid retry policy (1 problem):\n  (root): expected an object, got a string",
    );
  });

  test("policy-level limits, action and backoff", () => {
    expect(
      rejection(
        doc({
          retryLimit: -1,
          defaultAction: "Maybe",
          backoff: { initialDelay: "30s", maxDelay: "10s", multiplier: 0.5 },
          antiAffinity: { mode: "rack" },
          rule: [],
        }),
      ),
    ).toBe(
      [
        "invalid retry policy (6 problems):",
        "  spec.retryLimit: must be at least 0",
        "  spec.defaultAction: must be one of Retry, Fail",
        "  spec.backoff.multiplier: must be at least 1",
        "  spec.backoff.maxDelay: must be at least initialDelay (30s)",
        "  spec.antiAffinity.mode: must be one of none, node",
        "  spec.rule: unknown field (expected one of retryLimit, defaultAction, backoff, antiAffinity, rules)",
      ].join("\n"),
    );
  });

  test("rules: matchers, exit codes, regular expressions, selectors, Fail-only fields", () => {
    expect(
      rejection(
        doc({
          rules: [
            { action: "Retry" },
            {
              action: "Retry",
              onConditions: ["OOMKilled"],
              onExitCodes: { operator: "In", values: [0, 1.5] },
            },
            { action: "Fail", onTerminationMessage: { pattern: "(TRANSIENT" }, retryLimit: 3 },
            {
              action: "Retry",
              containerName: "main",
              onConditions: ["OOMKiled"],
              backoff: { initialDelay: "5" },
            },
            { action: "retry", onFailureCategory: [] },
            { action: "Retry", onExitCodes: { operator: "Equals", values: [] } },
          ],
        }),
      ),
    ).toBe(
      [
        "invalid retry policy (12 problems):",
        "  spec.rules[0]: must have a matcher: one or more of onExitCodes, onConditions, onTerminationMessage, onFailureCategory",
        "  spec.rules[1].onExitCodes.values[0]: exit code 0 never matches (it means success)",
        "  spec.rules[1].onExitCodes.values[1]: must be an integer",
        "  spec.rules[2].onTerminationMessage.pattern: is not a valid RE2 regular expression: missing closing ): `(TRANSIENT`",
        "  spec.rules[2].retryLimit: applies only to rules with action Retry",
        '  spec.rules[3].containerName: must be a kernel index (0 to 63) or "*"',
        "  spec.rules[3].onConditions[0]: must be one of OOMKilled, Evicted, Preempted, DeadlineExceeded, Unschedulable, AgentLost",
        '  spec.rules[3].backoff.initialDelay: must be a duration such as "30s", "5m" or "1h30m"',
        "  spec.rules[4].action: must be one of Retry, Fail",
        "  spec.rules[4].onFailureCategory: must not be empty",
        "  spec.rules[5].onExitCodes.operator: must be one of In, NotIn",
        "  spec.rules[5].onExitCodes.values: must not be empty",
      ].join("\n"),
    );
  });

  test("durations: units, negatives, precision, size, type", () => {
    const backoff = (initialDelay: unknown) => rejection(doc({ backoff: { initialDelay } })).split("\n")[1];
    expect(backoff("1d")).toBe('  spec.backoff.initialDelay: unknown unit "d" (use h, m, s or ms)');
    expect(backoff("-5s")).toBe("  spec.backoff.initialDelay: must not be negative");
    expect(backoff("0.5ms")).toBe("  spec.backoff.initialDelay: must be a whole number of milliseconds");
    expect(backoff("9000h")).toBe("  spec.backoff.initialDelay: must be at most 8760h (1 year)");
    expect(backoff(30)).toBe(
      '  spec.backoff.initialDelay: must be a duration such as "30s", "5m" or "1h30m"',
    );
  });

  test("the error lists the issues as data too", () => {
    try {
      parseRetryPolicy(doc({ retryLimit: 201 }));
      expect.unreachable();
    } catch (error) {
      expect((error as RetryPolicyValidationError).issues).toEqual([
        {
          path: "spec.retryLimit",
          message:
            "must be at most 200: a session lives in one lifecycle execution, which holds 25,000 history events (up to 80 a run)",
        },
      ]);
    }
  });
});

describe("policy text", () => {
  function syntaxError(text: string): RetryPolicySyntaxError {
    try {
      parseRetryPolicyText(text);
    } catch (error) {
      expect(error).toBeInstanceOf(RetryPolicySyntaxError);
      return error as RetryPolicySyntaxError;
    }
    throw new Error(`expected ${JSON.stringify(text)} to be rejected`);
  }

  test("YAML errors carry line and column", () => {
    const error = syntaxError("apiVersion: cairn.dev/v1\nkind: RetryPolicy\nkind: RetryPolicy\n");
    expect(error).toMatchObject({ code: "RETRY_POLICY_SYNTAX", line: 3, column: 1 });
    expect(error.message).toBe(
      "invalid retry policy: syntax error at line 3, column 1: Map keys must be unique",
    );
  });

  test("one policy per text", () => {
    expect(syntaxError(`${SEED_YAML}---\n${SEED_YAML}`).message).toContain("multiple documents");
  });

  test("JSON syntax errors are located too", () => {
    expect(syntaxError('{"apiVersion": "cairn.dev/v1",\n  "kind": }')).toMatchObject({ line: 2, column: 11 });
  });

  test("well-formed text that breaks the schema is a validation error", () => {
    expect(() => parseRetryPolicyText(SEED_YAML.replace("retryLimit: 3", "retryLimit: three"))).toThrow(
      "spec.rules[1].retryLimit: expected a number, got a string",
    );
    expect(() => parseRetryPolicyText("")).toThrow("(root): expected an object, got null");
  });
});
