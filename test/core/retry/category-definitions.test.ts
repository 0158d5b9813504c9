/**
 * Failure categories that operators define (core/retry/category-definitions.ts), as Armada's
 * retry-policy proposal uses them: "Error Category Matching. Uses categories from #4713. The
 * executor classifies failures into named categories; retry policies can match on them.
 *   rules:
 *   - action: Retry
 *     onFailureCategory: [cuda_error, infiniband_error]"
 * The document validated once with exact messages; the precedence (permanent, then the operators'
 * definitions in order, then the built-in category); and a run judged where it ends, its record
 * showing the category and a retry rule matching it.
 */
import { describe, expect, test } from "vitest";
import { judgeFinishedRun } from "../../../functions/core/coordinator/finished-run.ts";
import type { SessionWithKernels, StageTransition } from "../../../functions/core/model.ts";
import {
  classifyRunKernels,
  failureCategoryToDocument,
  inPrecedenceOrder,
  operatorCategory,
  parseFailureCategory,
  type FailureCategoryDefinition,
} from "../../../functions/core/retry/category-definitions.ts";
import { RETRY_CONFIG_DEFAULTS } from "../../../functions/core/retry/config.ts";
import type { RunKernel } from "../../../functions/core/retry/match.ts";
import { parseRetryPolicy } from "../../../functions/core/retry/policy.ts";
import { newSession, T0 } from "../../store-fixtures.ts";

const category = (name: string, spec: Record<string, unknown>): FailureCategoryDefinition =>
  parseFailureCategory({ apiVersion: "cairn.dev/v1", kind: "FailureCategory", metadata: { name }, spec });

const cudaError = category("cuda_error", {
  rules: [
    { onTerminationMessage: { pattern: "(?i)cuda error" } },
    { onExitCodes: { operator: "In", values: [74] } },
  ],
});
const infinibandError = category("infiniband_error", {
  rules: [{ onTerminationMessage: { pattern: "mlx5|ibv_" } }],
});
/** Armada's "OOMKilled with exit code 137": both matchers of one rule must match. */
const oomSigkill = category("oom_sigkill", {
  precedence: 5,
  rules: [{ onConditions: ["OOMKilled"], onExitCodes: { operator: "In", values: [137] } }],
});

const failed = (over: Partial<RunKernel> = {}): RunKernel => ({
  index: 0,
  outcome: "FAILED",
  exitCode: 1,
  failureCategory: "user_error",
  finishedAtMs: T0,
  ...over,
});

describe("the FailureCategory document", () => {
  test("a category with rules parses and reads back as the same document", () => {
    expect(cudaError).toEqual({
      name: "cuda_error",
      precedence: 0,
      rules: [
        { matchers: [{ kind: "terminationMessage", pattern: "(?i)cuda error" }] },
        { matchers: [{ kind: "exitCodes", operator: "In", values: [74] }] },
      ],
    });
    for (const d of [cudaError, infinibandError, oomSigkill]) {
      expect(parseFailureCategory(failureCategoryToDocument(d))).toEqual(d);
    }
  });

  test("every problem is reported with its field and reason", () => {
    expect(() =>
      parseFailureCategory({
        apiVersion: "cairn.dev/v1",
        kind: "FailureCategory",
        metadata: { name: "executable_not_found" },
        spec: {
          precedence: -1,
          rules: [
            {},
            { onExitCodes: { operator: "In", values: [0] } },
            { onTerminationMessage: { pattern: "(" } },
            { onFailureCategory: ["oom"] },
          ],
        },
      }),
    ).toThrow(
      [
        "invalid failure category (7 problems):",
        "  metadata.name: must not be executable_not_found or arguments_too_large: those failures are never retried and keep their category",
        "  spec.precedence: must be at least 0",
        "  spec.rules[0]: must have a matcher: one or more of onExitCodes, onConditions, onTerminationMessage",
        "  spec.rules[1].onExitCodes.values[0]: exit code 0 never matches (it means success)",
        "  spec.rules[2].onTerminationMessage.pattern: is not a valid RE2 regular expression: missing closing ): `(`",
        "  spec.rules[3].onFailureCategory: unknown field (expected one of onExitCodes, onConditions, onTerminationMessage)",
        "  spec.rules[3]: must have a matcher: one or more of onExitCodes, onConditions, onTerminationMessage",
      ].join("\n"),
    );
  });

  test("a category needs at least one rule", () => {
    expect(() => category("empty", { rules: [] })).toThrow(/spec\.rules: must not be empty/);
  });
});

describe("classifying a failed kernel", () => {
  test("a termination message names the category, matched as RE2 (inline flags)", () => {
    const k = failed({ message: "RuntimeError: CUDA error: GPU has fallen off the bus" });
    expect(operatorCategory(k, [cudaError, infinibandError])).toBe("cuda_error");
  });

  test("a rule's matchers are ANDed: OOMKilled alone is not oom_sigkill, OOMKilled with exit 137 is", () => {
    const oomOnly = failed({ condition: "OOMKilled", exitCode: 1, failureCategory: "oom" });
    const both = failed({ condition: "OOMKilled", exitCode: 137, failureCategory: "oom" });
    expect(operatorCategory(oomOnly, [oomSigkill])).toBeUndefined();
    expect(operatorCategory(both, [oomSigkill])).toBe("oom_sigkill");
  });

  test("precedence: lower first, then by name; the first definition that matches wins", () => {
    const k = failed({ exitCode: 74, message: "ibv_post_send failed" });
    expect(operatorCategory(k, [infinibandError, cudaError])).toBe("cuda_error");
    const infinibandFirst = { ...infinibandError, precedence: -1 };
    expect(inPrecedenceOrder([cudaError, infinibandFirst]).map((d) => d.name)).toEqual([
      "infiniband_error",
      "cuda_error",
    ]);
    expect(operatorCategory(k, [cudaError, infinibandFirst])).toBe("infiniband_error");
  });

  test("no definition matches: the agent's built-in category stays (the defaults)", () => {
    const [k] = classifyRunKernels([failed()], [cudaError]);
    expect(k?.failureCategory).toBe("user_error");
  });

  test("a category no retry can clear is never renamed", () => {
    const k = failed({ status: "ERROR", exitCode: 74, failureCategory: "executable_not_found" });
    expect(operatorCategory(k, [cudaError])).toBeUndefined();
  });

  test("only failures are classified: success, a kernel still running, a stop on request", () => {
    const pattern = category("any_message", { rules: [{ onTerminationMessage: { pattern: "." } }] });
    const message = "CUDA error";
    expect(operatorCategory(failed({ outcome: "SUCCEEDED", message }), [pattern])).toBeUndefined();
    expect(operatorCategory(failed({ outcome: undefined, message }), [pattern])).toBeUndefined();
    // A cancel or a gang sibling's failure: KILLED without a condition, the control plane's decision.
    expect(operatorCategory(failed({ outcome: "KILLED", message }), [pattern])).toBeUndefined();
    // Its run-time limit killed it: a condition, so a category may describe it.
    const timedOut = failed({ outcome: "KILLED", condition: "DeadlineExceeded", message });
    expect(operatorCategory(timedOut, [pattern])).toBe("any_message");
    // The agent was lost: the control plane's condition, which a definition may name.
    const lost = category("node_loss", { rules: [{ onConditions: ["AgentLost"] }] });
    expect(operatorCategory(failed({ outcome: "WORKER_FAILED", condition: "AgentLost" }), [lost])).toBe(
      "node_loss",
    );
  });
});

describe("where the run ends: classified, then judged by its rules", () => {
  const ended: StageTransition = {
    from: "TERMINATING",
    to: "TERMINATED",
    result: "SUCCESS",
    handler: "TerminateSessions",
  };

  function ranAndFailed(message: string): SessionWithKernels {
    const s = newSession("s-gpu", { status: "TERMINATING", replicas: 2, kernelStatus: "TERMINATED" });
    return {
      session: s.session,
      kernels: s.kernels.map((k) => ({
        ...k,
        agentId: "agent-a",
        startedAtMs: T0,
        finishedAtMs: T0 + 1_000 + k.index,
        ...(k.index === 0
          ? { exitCode: 1, outcome: "FAILED" as const, message, failureCategory: "user_error" }
          : { exitCode: 0, outcome: "SUCCEEDED" as const }),
      })),
    };
  }

  // Armada's example rule, as written there.
  const gpu = parseRetryPolicy({
    apiVersion: "armadaproject.io/v1",
    kind: "RetryPolicy",
    metadata: { name: "gpu" },
    spec: {
      retryLimit: 2,
      rules: [{ action: "Retry", onFailureCategory: ["cuda_error", "infiniband_error"] }],
    },
  });
  const catalog = {
    config: RETRY_CONFIG_DEFAULTS,
    policies: [gpu],
    categories: [cudaError, infinibandError],
  };

  test("a CUDA failure is cuda_error in the run's record, and the rule on it retries the run", () => {
    const t = judgeFinishedRun(
      ranAndFailed("CUDA error: an illegal memory access"),
      ended,
      T0 + 5_000,
      catalog,
    );
    expect(t).toMatchObject({ to: "PENDING", result: "REQUEUED" });
    expect(t.message).toMatch(/^gpu rule 0 \(Retry\) matched kernel 0 \(failure category cuda_error\)/);
    expect(t.run?.kernels.map((k) => k.failureCategory)).toEqual(["cuda_error", undefined]);
  });

  test("the same failure without the definitions keeps its built-in category and is not retried", () => {
    const t = judgeFinishedRun(ranAndFailed("CUDA error: an illegal memory access"), ended, T0 + 5_000, {
      ...catalog,
      categories: [],
    });
    expect(t).toMatchObject({ to: "TERMINATED" });
    expect(t.message).toMatch(/no rule matched kernel 0/);
    expect(t.run?.kernels[0]?.failureCategory).toBe("user_error");
  });

  test("a failure no definition matches is recorded with its built-in category", () => {
    const t = judgeFinishedRun(ranAndFailed("ValueError: bad input"), ended, T0 + 5_000, catalog);
    expect(t).toMatchObject({ to: "TERMINATED" });
    expect(t.run?.kernels[0]?.failureCategory).toBe("user_error");
  });
});
