/** Which policies apply to a session, and what its runs are called. */
import { describe, expect, test } from "vitest";
import { RetryInputError } from "../../../functions/core/retry/errors.ts";
import { parseRunName, runName } from "../../../functions/core/retry/naming.ts";
import type { RetryPolicy } from "../../../functions/core/retry/policy.ts";
import { resolvePolicies } from "../../../functions/core/retry/resolve.ts";
import { config, examplePolicy, policy } from "./fixtures.ts";

const extra = policy("extra-retry", { defaultAction: "Retry" });
const fallback = policy("default", { defaultAction: "Retry", retryLimit: 1 });
const known = (...policies: RetryPolicy[]) => new Map(policies.map((p) => [p.name, p]));
const ALL = known(examplePolicy("infra"), examplePolicy("ml-training"), extra, fallback);
const names = (r: ReturnType<typeof resolvePolicies>) => r.policies.map((p) => p.name);

describe("resolvePolicies (Armada: queue policies always apply, sessions add)", () => {
  test("queue policies then session policies, in order (seed: [infra, ml-training, extra-retry])", () => {
    const r = resolvePolicies(
      { queuePolicies: ["infra", "ml-training"], sessionPolicies: ["extra-retry"] },
      config(),
      ALL,
    );
    expect(names(r)).toEqual(["infra", "ml-training", "extra-retry"]);
    expect(r).toMatchObject({ source: "named", missing: [] });
  });

  test("a session naming a queue policy again cannot move it: each name once, at its first place", () => {
    const r = resolvePolicies(
      { queuePolicies: ["infra"], sessionPolicies: ["extra-retry", "infra"] },
      config(),
      ALL,
    );
    expect(names(r)).toEqual(["infra", "extra-retry"]);
  });

  test("neither names a policy: the configured default policy, if it exists", () => {
    expect(resolvePolicies({}, config(), ALL)).toMatchObject({ source: "default", policies: [fallback] });
    const renamed = config({ defaultPolicyName: "infra" });
    expect(names(resolvePolicies({ queuePolicies: [], sessionPolicies: [] }, renamed, ALL))).toEqual([
      "infra",
    ]);
    expect(resolvePolicies({}, config(), known(extra))).toEqual({
      policies: [],
      source: "none",
      missing: [],
    });
  });

  test("named policies that do not exist are reported, and do not bring in the default", () => {
    const r = resolvePolicies({ queuePolicies: ["gone", "infra"], sessionPolicies: ["typo"] }, config(), ALL);
    expect(r).toMatchObject({ source: "named", missing: ["gone", "typo"] });
    expect(names(r)).toEqual(["infra"]);
    expect(resolvePolicies({ sessionPolicies: ["gone"] }, config(), ALL)).toEqual({
      policies: [],
      source: "named",
      missing: ["gone"],
    });
  });

  test("policies disabled: none apply", () => {
    const off = config({ enabled: false });
    expect(resolvePolicies({ queuePolicies: ["infra"] }, off, ALL)).toEqual({
      policies: [],
      source: "disabled",
      missing: [],
    });
  });
});

describe("run names (Armada's pod naming, with '.' since session ids contain '-')", () => {
  test("the first run keeps the legacy name, the session id; retries are suffixed with their index", () => {
    expect([0, 1, 2, 17].map((i) => runName("train-42", i))).toEqual([
      "train-42",
      "train-42.1",
      "train-42.2",
      "train-42.17",
    ]);
  });

  test("names never collide: a retry of 'train' is not the first run of 'train-1'", () => {
    expect(runName("train", 1)).not.toBe(runName("train-1", 0));
  });

  test("every name parses back to its session and run", () => {
    for (const [sessionId, runIndex] of [
      ["train-42", 0],
      ["train-42", 3],
      ["a-1", 1],
    ] as const) {
      expect(parseRunName(runName(sessionId, runIndex))).toEqual({ sessionId, runIndex });
    }
  });

  test.each(["train.0", "train.01", "train.", ".1", "Train.1", "tr", "train.x", "a.b.1"])(
    "%j is not a run name",
    (name) => {
      expect(parseRunName(name)).toBeUndefined();
    },
  );

  test("bad input is a contract violation", () => {
    expect(() => runName("Bad_Id", 1)).toThrow(new RetryInputError('not a session id: "Bad_Id"'));
    expect(() => runName("train", -1)).toThrow(
      new RetryInputError("runIndex must be a non-negative integer, got -1"),
    );
  });
});
