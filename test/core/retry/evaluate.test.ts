/**
 * Policy evaluation: rule matching, limits, the global cap, backoff, anti-affinity, graceful
 * shutdown, and how policies compose with the budgets.
 */
import { describe, expect, test } from "vitest";
import { RetryInputError } from "../../../functions/core/retry/errors.ts";
import {
  evaluateRetry,
  INITIAL_RETRY_STATE,
  type FailedRun,
  type RetryDecision,
  type RetryInput,
  type RetryState,
} from "../../../functions/core/retry/evaluate.ts";
import { failedKernels } from "../../../functions/core/retry/match.ts";
import type { RetryPolicy } from "../../../functions/core/retry/policy.ts";
import type { Kernel } from "../../../functions/core/model.ts";
import { config, examplePolicy, kernels, notStarted, NOW_MS, policy, run } from "./fixtures.ts";

function evaluate(input: Partial<RetryInput> & Pick<RetryInput, "run">): RetryDecision {
  return evaluateRetry({ policies: [], state: INITIAL_RETRY_STATE, config: config(), ...input });
}

/** Evaluates failures one after another, carrying the state; returns every decision. */
function sequence(
  runs: readonly FailedRun[],
  input: Omit<RetryInput, "run" | "state"> & { state?: RetryState },
): RetryDecision[] {
  let state = input.state ?? INITIAL_RETRY_STATE;
  return runs.map((r) => {
    const decision = evaluateRetry({ ...input, state, run: r });
    state = decision.state;
    return decision;
  });
}

const retryOn = (
  name: string,
  rule: Record<string, unknown>,
  spec: Record<string, unknown> = {},
): RetryPolicy => policy(name, { ...spec, rules: [{ action: "Retry", ...rule }] });

describe("rule matching", () => {
  test("first match wins over the concatenated rules of the policies, in order", () => {
    const first = policy("first", {
      rules: [
        { action: "Retry", onConditions: ["Evicted"] },
        { action: "Fail", onExitCodes: { operator: "In", values: [137] } },
      ],
    });
    const second = retryOn("second", { onConditions: ["OOMKilled"] });
    const oom = run(kernels.oomKilled());
    expect(evaluate({ run: oom, policies: [first, second] })).toMatchObject({
      action: "fail",
      basis: "rule",
      matchedRule: { policy: "first", index: 1 },
      reason: "first rule 1 (Fail) matched kernel 0 (exit code 137)",
    });
    expect(evaluate({ run: oom, policies: [second, first] })).toMatchObject({
      action: "retry",
      matchedRule: { policy: "second", index: 0 },
    });
  });

  describe("exit codes", () => {
    const onIn = retryOn("codes", { onExitCodes: { operator: "In", values: [137, 143] } });
    const onNotIn = retryOn("codes", { onExitCodes: { operator: "NotIn", values: [1] } });
    test.each([
      ["In, listed code", onIn, kernels.exited(143), true],
      ["In, unlisted code", onIn, kernels.exited(2), false],
      ["NotIn, unlisted code", onNotIn, kernels.exited(2), true],
      ["NotIn, listed code", onNotIn, kernels.exited(1), false],
      ["NotIn, exit code 0 (not set) never matches", onNotIn, kernels.evicted({ exitCode: 0 }), false],
      ["NotIn, no exit code never matches", onNotIn, kernels.preempted(), false],
      [
        "In, negative codes are codes too",
        retryOn("n", { onExitCodes: { operator: "In", values: [-9] } }),
        kernels.exited(-9),
        true,
      ],
    ] as const)("%s", (_name, p, kernel, matched) => {
      expect(evaluate({ run: run(kernel), policies: [p] }).basis).toBe(matched ? "rule" : "default-action");
    });
  });

  test("conditions match any listed condition, and only those", () => {
    const p = retryOn("c", { onConditions: ["Preempted", "Evicted"] });
    expect(evaluate({ run: run(kernels.evicted()), policies: [p] }).basis).toBe("rule");
    expect(evaluate({ run: run(kernels.preempted()), policies: [p] }).basis).toBe("rule");
    expect(evaluate({ run: run(kernels.oomKilled()), policies: [p] }).basis).toBe("default-action");
    expect(evaluate({ run: run(kernels.exited(1)), policies: [p] }).basis).toBe("default-action");
  });

  test("a kernel can signal a transient failure in its termination message (seed: .*TRANSIENT.*)", () => {
    const p = retryOn("msg", { containerName: 0, onTerminationMessage: { pattern: ".*TRANSIENT.*" } });
    const transient = run(kernels.exited(3, { message: "fetch failed: TRANSIENT (503 from store)" }));
    expect(evaluate({ run: transient, policies: [p] })).toMatchObject({
      action: "retry",
      reason: expect.stringContaining(
        "matched kernel 0 (termination message matches /.*TRANSIENT.*/)",
      ) as string,
    });
    expect(
      evaluate({ run: run(kernels.exited(3, { message: "transient, lower case" })), policies: [p] }).basis,
    ).toBe("default-action");
    expect(evaluate({ run: run(kernels.exited(3)), policies: [p] }).basis).toBe("default-action");
  });

  test("failure categories match the category the agent assigned", () => {
    const p = retryOn("cat", { onFailureCategory: ["cuda_error", "infiniband_error"] });
    expect(
      evaluate({ run: run(kernels.exited(1, { failureCategory: "cuda_error" })), policies: [p] }).basis,
    ).toBe("rule");
    expect(
      evaluate({ run: run(kernels.exited(1, { failureCategory: "disk_full" })), policies: [p] }).basis,
    ).toBe("default-action");
    expect(evaluate({ run: run(kernels.exited(1)), policies: [p] }).basis).toBe("default-action");
  });

  describe("which kernel a rule looks at", () => {
    // Kernel 0 failed first (exit 1); kernel 1 was OOM-killed a second later on another agent.
    const gang = run(
      kernels.exited(1, { index: 0, finishedAtMs: NOW_MS, agentId: "agent-a" }),
      kernels.oomKilled({ index: 1, finishedAtMs: NOW_MS + 1000, agentId: "agent-b", message: "TRANSIENT" }),
    );
    const oomRule = (containerName?: string | number) =>
      retryOn("p", {
        ...(containerName !== undefined ? { containerName } : {}),
        onConditions: ["OOMKilled"],
      });

    test("no selector: the first failed kernel only (seed: 'the first failed container')", () => {
      expect(evaluate({ run: gang, policies: [oomRule()] })).toMatchObject({
        basis: "default-action",
        kernelIndex: 0,
      });
    });

    test('a kernel index selects that kernel ("1" and 1 alike)', () => {
      for (const selector of ["1", 1]) {
        expect(evaluate({ run: gang, policies: [oomRule(selector)] })).toMatchObject({
          basis: "rule",
          kernelIndex: 1,
        });
      }
      expect(evaluate({ run: gang, policies: [oomRule(0)] }).basis).toBe("default-action");
      expect(evaluate({ run: gang, policies: [oomRule(5)] }).basis).toBe("default-action");
    });

    test('"*" matches any failed kernel', () => {
      expect(evaluate({ run: gang, policies: [oomRule("*")] })).toMatchObject({
        basis: "rule",
        kernelIndex: 1,
      });
    });

    test("termination-message rules without a selector check every failed kernel (seed)", () => {
      const p = retryOn("p", { onTerminationMessage: { pattern: "TRANSIENT" } });
      expect(evaluate({ run: gang, policies: [p] })).toMatchObject({ basis: "rule", kernelIndex: 1 });
    });

    test("a kernel that succeeded is never a failed kernel", () => {
      const mixed = run(
        kernels.succeeded({ index: 0 }),
        kernels.exited(2, { index: 1, finishedAtMs: NOW_MS + 5 }),
      );
      const p = retryOn("p", { containerName: 0, onExitCodes: { operator: "NotIn", values: [1] } });
      expect(evaluate({ run: mixed, policies: [p] })).toMatchObject({
        basis: "default-action",
        kernelIndex: 1,
      });
    });

    test("first failed = earliest to end, then lowest index; kernels still running are not failed", () => {
      const order = failedKernels([
        { index: 0, outcome: "FAILED", finishedAtMs: 30 },
        { index: 1, outcome: "KILLED", finishedAtMs: 10 },
        { index: 2, outcome: "FAILED", finishedAtMs: 10 },
        { index: 3 },
        { index: 4, outcome: "SUCCEEDED", finishedAtMs: 1 },
        { index: 5, outcome: "PREEMPTED" },
      ]).map((k) => k.index);
      expect(order).toEqual([1, 2, 0, 5]);
    });

    test("the model's Kernel can be passed as a run kernel as it is", () => {
      const kernel: Kernel = {
        sessionId: "s-1",
        index: 0,
        status: "TERMINATED",
        resources: { cpu: 1, memoryMiB: 64 },
        agentId: "agent-a",
        exitCode: 137,
        condition: "OOMKilled",
        outcome: "FAILED",
        statusChangedAtMs: NOW_MS,
      };
      const decision = evaluate({ run: { startedRunning: true, kernels: [kernel] }, policies: [oomRule()] });
      expect(decision.basis).toBe("rule");
    });
  });

  test("a run with no failed kernel is not judged", () => {
    expect(() => evaluate({ run: run(kernels.succeeded()) })).toThrow(
      new RetryInputError("the run has no failed kernel: only failed runs are judged"),
    );
  });
});

describe("default action", () => {
  test("Fail (the default): an unmatched failure ends the session", () => {
    const p = retryOn("p", { onConditions: ["Evicted"] });
    expect(evaluate({ run: run(kernels.exited(1)), policies: [p] })).toMatchObject({
      action: "fail",
      basis: "default-action",
      reason: "no rule matched kernel 0 (FAILED, exit code 1); p default action Fail",
    });
  });

  test("Retry: unmatched failures retry, counted under <policy>#default against the policy's limit", () => {
    const p = policy("batch", { defaultAction: "Retry", retryLimit: 2 });
    const decisions = sequence([run(kernels.exited(1)), run(kernels.evicted()), run(kernels.exited(2))], {
      policies: [p],
      config: config(),
    });
    expect(decisions.map((d) => [d.action, d.state.ruleRetries["batch#default"]])).toEqual([
      ["retry", 1],
      ["retry", 2],
      ["fail", 2],
    ]);
    expect(decisions[2]?.reason).toBe(
      "no rule matched kernel 0 (FAILED, exit code 2); batch default action Retry, but its 2 retries are used up (policy limit)",
    );
  });

  test("with several policies, the first policy's default action decides", () => {
    const failing = policy("strict", { defaultAction: "Fail" });
    const lenient = policy("lenient", { defaultAction: "Retry" });
    expect(evaluate({ run: run(kernels.exited(1)), policies: [failing, lenient] }).action).toBe("fail");
    expect(evaluate({ run: run(kernels.exited(1)), policies: [lenient, failing] })).toMatchObject({
      action: "retry",
      matchedRule: { policy: "lenient", index: "default" },
    });
  });

  test("KILLED is never retried, whatever the policy says", () => {
    const p = policy("everything", { defaultAction: "Retry" });
    expect(evaluate({ run: run(kernels.killed()), policies: [p] })).toMatchObject({
      action: "fail",
      basis: "not-retriable",
      reason: "KILLED runs are never retried",
    });
  });
});

describe("limits", () => {
  const preemptions = (n: number) => Array.from({ length: n }, () => run(kernels.preempted()));

  test("effective limit = rule ?? policy ?? globalMaxRetries", () => {
    const actionsWith = (
      rule: Record<string, unknown>,
      spec: Record<string, unknown>,
      globalMaxRetries: number,
    ) =>
      sequence(preemptions(6), {
        policies: [retryOn("p", { onConditions: ["Preempted"], ...rule }, spec)],
        config: config({ globalMaxRetries }),
      }).filter((d) => d.action === "retry").length;
    expect(actionsWith({ retryLimit: 2 }, { retryLimit: 4 }, 5)).toBe(2);
    expect(actionsWith({}, { retryLimit: 4 }, 5)).toBe(4);
    expect(actionsWith({}, {}, 5)).toBe(5);
    expect(actionsWith({ retryLimit: 0 }, { retryLimit: 4 }, 5)).toBe(0);
  });

  test("each rule counts its own retries", () => {
    const p = policy("p", {
      rules: [
        { action: "Retry", onConditions: ["Preempted"], retryLimit: 1 },
        { action: "Retry", onConditions: ["Evicted"], retryLimit: 1 },
      ],
    });
    const decisions = sequence([run(kernels.preempted()), run(kernels.evicted()), run(kernels.preempted())], {
      policies: [p],
      config: config(),
    });
    expect(decisions.map((d) => d.action)).toEqual(["retry", "retry", "fail"]);
    expect(decisions[2]?.state.ruleRetries).toEqual({ "p#0": 1, "p#1": 1 });
  });

  test("lowering globalMaxRetries applies at the next evaluation; a session already over it fails", () => {
    const p = retryOn("p", { onConditions: ["Preempted"] });
    const first = sequence(preemptions(5), { policies: [p], config: config({ globalMaxRetries: 20 }) });
    const state = first[4]?.state;
    expect(state?.totalRetries).toBe(5);
    for (const globalMaxRetries of [5, 3]) {
      expect(
        evaluate({
          run: run(kernels.preempted()),
          policies: [p],
          state,
          config: config({ globalMaxRetries }),
        }),
      ).toMatchObject({
        action: "fail",
        basis: "global-cap",
        reason: `p rule 0 (Retry) matched kernel 0 (condition Preempted), but the global retry cap is reached (5 of ${globalMaxRetries} retries used)`,
      });
    }
    expect(
      evaluate({
        run: run(kernels.preempted()),
        policies: [p],
        state,
        config: config({ globalMaxRetries: 6 }),
      }).action,
    ).toBe("retry");
  });

  test("globalMaxRetries 0 stops every retry, free ones included", () => {
    const p = policy("p", {
      defaultAction: "Retry",
      rules: [{ action: "Retry", onConditions: ["Preempted"] }],
    });
    const off = config({ globalMaxRetries: 0 });
    for (const r of [run(kernels.preempted()), run(kernels.exited(1)), notStarted(kernels.preempted())]) {
      expect(evaluate({ run: r, policies: [p], config: off })).toMatchObject({
        action: "fail",
        basis: "global-cap",
      });
    }
  });
});

describe("includeInitContainers matches nothing extra: Cairn kernels have no init containers", () => {
  const failures: [string, FailedRun][] = [
    ["exit 137 on the first failed kernel", run(kernels.exited(137))],
    ["exit 2 (no rule matches)", run(kernels.exited(2))],
    ["OOMKilled", run(kernels.oomKilled())],
    [
      "a gang: kernel 1 failed first, kernel 0 later",
      run(
        kernels.exited(137, { index: 0, finishedAtMs: NOW_MS + 5 }),
        kernels.evicted({ index: 1, finishedAtMs: NOW_MS }),
      ),
    ],
  ];
  const withFlag = (flag: boolean | undefined) =>
    policy("p", {
      rules: [
        {
          action: "Retry",
          ...(flag === undefined ? {} : { includeInitContainers: flag }),
          onExitCodes: { operator: "In", values: [137] },
        },
      ],
    });
  test.each(failures)("%s: true, false and absent decide alike", (_, failed) => {
    const [absent, yes, no] = [undefined, true, false].map((flag) =>
      evaluate({ run: failed, policies: [withFlag(flag)] }),
    );
    expect(yes).toEqual(absent);
    expect(no).toEqual(absent);
  });
});

describe("backoff: min(initialDelay * multiplier^(failureCount-1), maxDelay), failureCount = the session's", () => {
  const delays = (p: RetryPolicy, failures: readonly FailedRun[], globalBackoff = config().defaultBackoff) =>
    sequence(failures, { policies: [p], config: config({ defaultBackoff: globalBackoff }) }).map((d) =>
      d.action === "retry" ? d.delayMs / 1000 : "fail",
    );
  const evictions = (n: number) => Array.from({ length: n }, () => run(kernels.evicted()));

  test("global default level (operator config)", () => {
    const p = retryOn("p", { onConditions: ["Evicted"] });
    expect(delays(p, evictions(5), { initialDelayMs: 1000, maxDelayMs: 10_000, multiplier: 3 })).toEqual([
      1, 3, 9, 10, 10,
    ]);
    expect(delays(p, evictions(3))).toEqual([0, 0, 0]);
  });

  test("policy level overrides the global default (seed: 10s, 5m, 2.0)", () => {
    const p = retryOn(
      "p",
      { onConditions: ["Evicted"] },
      { backoff: { initialDelay: "10s", maxDelay: "5m", multiplier: 2 } },
    );
    expect(delays(p, evictions(7))).toEqual([10, 20, 40, 80, 160, 300, 300]);
  });

  test("rule level overrides the policy (seed: 30s, 10m, 3.0)", () => {
    const p = retryOn(
      "p",
      { onConditions: ["Evicted"], backoff: { initialDelay: "30s", maxDelay: "10m", multiplier: 3.0 } },
      { backoff: { initialDelay: "10s", maxDelay: "5m", multiplier: 2.0 } },
    );
    expect(delays(p, evictions(5))).toEqual([30, 90, 270, 600, 600]);
  });

  test("fields are inherited one by one: a rule's initialDelay with the policy's multiplier and the global maxDelay", () => {
    const p = retryOn(
      "p",
      { onConditions: ["Evicted"], backoff: { initialDelay: "1m" } },
      { backoff: { multiplier: 4 } },
    );
    expect(delays(p, evictions(4))).toEqual([60, 240, 600, 600]);
  });

  test("the exponent is the session's failure count, whichever rule matched: a rule first matching at the 4th failure waits the 4th delay", () => {
    const p = policy("p", {
      backoff: { initialDelay: "1s", multiplier: 2 },
      rules: [
        { action: "Retry", onConditions: ["Preempted"] },
        { action: "Retry", onConditions: ["Evicted"] },
      ],
    });
    const failures = [
      run(kernels.preempted()),
      run(kernels.preempted()),
      run(kernels.preempted()),
      run(kernels.evicted()),
    ];
    expect(delays(p, failures)).toEqual([1, 2, 4, 8]);
  });

  test("failure counts 1..12 against the seed's formula, verbatim, with the cap (10s, 5m, 2.0)", () => {
    const p = retryOn(
      "p",
      { onConditions: ["Evicted"] },
      { backoff: { initialDelay: "10s", maxDelay: "5m", multiplier: 2 } },
    );
    const seed = (failureCount: number) => Math.min(10 * 2 ** (failureCount - 1), 300);
    const expected: [failureCount: number, seconds: number][] = [
      [1, 10],
      [2, 20],
      [3, 40],
      [4, 80],
      [5, 160],
      [6, 300],
      [7, 300],
      [8, 300],
      [9, 300],
      [10, 300],
      [11, 300],
      [12, 300],
    ];
    expect(expected.map(([n]) => seed(n))).toEqual(expected.map(([, s]) => s));
    expect(delays(p, evictions(12))).toEqual(expected.map(([, s]) => s));
  });

  test("a free retry (preempted before it started) is not a failure: the next failure's count is unchanged", () => {
    const p = policy("p", {
      backoff: { initialDelay: "1s", multiplier: 3 },
      rules: [{ action: "Retry", onConditions: ["Preempted", "Evicted"] }],
    });
    const failures = [run(kernels.evicted()), notStarted(kernels.preempted()), run(kernels.evicted())];
    expect(delays(p, failures)).toEqual([1, 0, 3]);
  });

  test("counted retries judged by the budgets before a policy applied still count", () => {
    const p = retryOn("p", { onConditions: ["Evicted"] }, { backoff: { initialDelay: "1s", multiplier: 2 } });
    const state: RetryState = { ...INITIAL_RETRY_STATE, preemptionCount: 3, totalRetries: 3 };
    const decision = evaluate({ run: run(kernels.evicted()), policies: [p], state });
    expect(decision).toMatchObject({ action: "retry", backoffMs: 8000 });
  });
});

describe("anti-affinity", () => {
  test("mode node avoids the agent of the most recent failed run only", () => {
    const decisions = sequence(
      [
        run(kernels.preempted({ agentId: "agent-a" })),
        run(kernels.oomKilled({ agentId: "agent-b" })),
        run(kernels.evicted({ agentId: "agent-c" })),
      ],
      { policies: [examplePolicy("ml-training")], config: config() },
    );
    expect(decisions.map((d) => (d.action === "retry" ? (d.avoidAgentId ?? "-") : "fail"))).toEqual([
      "agent-a",
      "-",
      "agent-c",
    ]);
  });

  test("a rule's mode overrides the policy's, and the avoided agent is that of the matched kernel", () => {
    const p = policy("p", {
      antiAffinity: { mode: "node" },
      rules: [
        { action: "Retry", containerName: 1, onConditions: ["Evicted"] },
        { action: "Retry", onConditions: ["OOMKilled"], antiAffinity: { mode: "none" } },
      ],
    });
    const gang = run(
      kernels.exited(143, { index: 0, agentId: "agent-a", finishedAtMs: NOW_MS + 10 }),
      kernels.evicted({ index: 1, agentId: "agent-b", finishedAtMs: NOW_MS }),
    );
    expect(evaluate({ run: gang, policies: [p] })).toMatchObject({
      action: "retry",
      avoidAgentId: "agent-b",
    });
    const oom = evaluate({ run: run(kernels.oomKilled({ agentId: "agent-a" })), policies: [p] });
    expect(oom.action).toBe("retry");
    expect(oom).not.toHaveProperty("avoidAgentId");
  });

  test("no anti-affinity when no level sets a mode", () => {
    const decision = evaluate({
      run: run(kernels.evicted()),
      policies: [retryOn("p", { onConditions: ["Evicted"] })],
    });
    expect(decision.action).toBe("retry");
    expect(decision).not.toHaveProperty("avoidAgentId");
  });

  test("no anti-affinity without policies", () => {
    const decision = evaluate({ run: run(kernels.evicted()) });
    expect(decision.action).toBe("retry");
    expect(decision).not.toHaveProperty("avoidAgentId");
  });
});

describe("graceful shutdown: wait max(backoff, grace), ended early by termination confirmation", () => {
  const p = retryOn("p", { onConditions: ["Preempted"] }, { backoff: { initialDelay: "10s" } });

  test("grace longer than backoff: the grace period decides and confirmation may end it", () => {
    expect(evaluate({ run: run(kernels.preempted()), policies: [p], gracePeriodMs: 30_000 })).toMatchObject({
      action: "retry",
      delayMs: 30_000,
      backoffMs: 10_000,
      gracePeriodMs: 30_000,
      endsEarlyOnTermination: true,
    });
  });

  test("grace shorter than backoff: the backoff decides, confirmation changes nothing", () => {
    expect(evaluate({ run: run(kernels.preempted()), policies: [p], gracePeriodMs: 5000 })).toMatchObject({
      delayMs: 10_000,
      backoffMs: 10_000,
      endsEarlyOnTermination: false,
    });
  });

  test("without policies the grace period is the whole wait", () => {
    expect(evaluate({ run: run(kernels.evicted()), gracePeriodMs: 20_000 })).toMatchObject({
      action: "retry",
      delayMs: 20_000,
      backoffMs: 0,
      endsEarlyOnTermination: true,
    });
  });
});

describe("composition of policies and budgets", () => {
  const infra = examplePolicy("infra");
  const ml = examplePolicy("ml-training");

  test("no policy applies: the budgets decide alone (failure default 0, preemption default 100)", () => {
    expect(evaluate({ run: run(kernels.oomKilled()) })).toMatchObject({
      action: "fail",
      basis: "budget",
      reason: "FAILED: failure count 1 > maxRetriesFailure 0",
      state: { failureCount: 1, preemptionCount: 0, totalRetries: 0 },
    });
    expect(evaluate({ run: run(kernels.evicted()) })).toMatchObject({
      action: "retry",
      basis: "budget",
      reason: "WORKER_FAILED: preemption count 1 <= maxRetriesPreemption 100; wait 0s",
      state: { failureCount: 0, preemptionCount: 1, totalRetries: 1 },
    });
  });

  test("no policy applies: the session's explicit budgets replace the defaults", () => {
    const decisions = sequence([run(kernels.exited(1)), run(kernels.exited(1)), run(kernels.exited(1))], {
      policies: [],
      config: config(),
      budgets: { maxRetriesFailure: 2 },
    });
    expect(decisions.map((d) => d.action)).toEqual(["retry", "retry", "fail"]);
  });

  test("no policy applies: UNSCHEDULABLE is never retried", () => {
    expect(evaluate({ run: notStarted(kernels.unschedulable()) })).toMatchObject({
      action: "fail",
      basis: "not-retriable",
      reason: "UNSCHEDULABLE runs are never retried",
    });
  });

  test("policies disabled in the config: the budgets decide alone, whatever the policies say", () => {
    const decision = evaluate({
      run: run(kernels.oomKilled()),
      policies: [ml],
      config: config({ enabled: false }),
    });
    expect(decision).toMatchObject({ action: "fail", basis: "budget" });
  });

  test("a policy applies: its rules retry a FAILED run although the default failure budget is 0", () => {
    expect(evaluate({ run: run(kernels.oomKilled()), policies: [ml] })).toMatchObject({
      action: "retry",
      basis: "rule",
      state: { failureCount: 1, totalRetries: 1 },
    });
  });

  test("a policy applies: the default preemption budget does not cap its rules either", () => {
    const state = { ...INITIAL_RETRY_STATE, preemptionCount: 100 };
    expect(evaluate({ run: run(kernels.preempted()), policies: [infra], state }).action).toBe("retry");
  });

  test("a policy applies: a budget the session set explicitly still caps retries of its kind", () => {
    const decisions = sequence([run(kernels.preempted()), run(kernels.evicted()), run(kernels.preempted())], {
      policies: [infra],
      config: config(),
      budgets: { maxRetriesPreemption: 2 },
    });
    expect(decisions.map((d) => d.action)).toEqual(["retry", "retry", "fail"]);
    expect(decisions[2]).toMatchObject({
      basis: "session-budget",
      reason:
        "infra rule 0 (Retry) matched kernel 0 (condition Preempted), but the session's maxRetriesPreemption 2 is exhausted (preemption count 3)",
    });
  });

  test("a policy applies: an explicit budget caps only its own kind", () => {
    const budgets = { maxRetriesPreemption: 0 };
    expect(evaluate({ run: run(kernels.oomKilled()), policies: [ml], budgets }).action).toBe("retry");
    expect(
      evaluate({ run: run(kernels.oomKilled()), policies: [ml], budgets: { maxRetriesFailure: 0 } }),
    ).toMatchObject({
      action: "fail",
      basis: "session-budget",
    });
  });

  test("a policy applies: its rules may retry UNSCHEDULABLE (an outcome the budgets never retry)", () => {
    const p = retryOn("p", { onConditions: ["Unschedulable"], retryLimit: 1 });
    const decisions = sequence([notStarted(kernels.unschedulable()), notStarted(kernels.unschedulable())], {
      policies: [p],
      config: config(),
    });
    expect(decisions.map((d) => d.action)).toEqual(["retry", "fail"]);
  });

  describe("a run preempted before it started never counts", () => {
    const state: RetryState = {
      failureCount: 1,
      preemptionCount: 2,
      totalRetries: 5,
      ruleRetries: { "infra#0": 10 },
    };

    test("without policies: retried at no cost, even with the preemption budget exhausted", () => {
      const decision = evaluate({
        run: notStarted(kernels.preempted()),
        state,
        budgets: { maxRetriesPreemption: 2 },
      });
      expect(decision).toMatchObject({
        action: "retry",
        basis: "free-preemption",
        reason: "preempted before it started running: retried at no cost; wait 0s",
        state,
      });
    });

    test("with policies: retried at no cost without consulting the rules or their used-up limits", () => {
      const failPreempted = policy("p", { rules: [{ action: "Fail", onConditions: ["Preempted"] }] });
      for (const policies of [[infra], [failPreempted]]) {
        const decision = evaluate({
          run: notStarted(kernels.preempted()),
          policies,
          state,
          gracePeriodMs: 1000,
        });
        expect(decision).toMatchObject({ action: "retry", basis: "free-preemption", delayMs: 1000, state });
        expect(decision).not.toHaveProperty("matchedRule");
      }
    });

    test("a run preempted after it started counts against the preemption budget and the rule", () => {
      const decision = evaluate({ run: run(kernels.preempted()), policies: [infra], state });
      expect(decision).toMatchObject({ action: "fail", basis: "rule-limit", state: { preemptionCount: 3 } });
    });
  });

  test("a failing decision still charges the run to its budget, and nothing else", () => {
    const decision = evaluate({ run: run(kernels.exited(1)), policies: [infra] });
    expect(decision).toMatchObject({
      action: "fail",
      state: { failureCount: 1, totalRetries: 0, ruleRetries: {} },
    });
  });
});

describe("contract", () => {
  test("the state passed in is not modified", () => {
    const state: RetryState = Object.freeze({
      ...INITIAL_RETRY_STATE,
      ruleRetries: Object.freeze({ "infra#0": 1 }),
    });
    const decision = evaluate({ run: run(kernels.preempted()), policies: [examplePolicy("infra")], state });
    expect(state.ruleRetries).toEqual({ "infra#0": 1 });
    expect(decision.state.ruleRetries).toEqual({ "infra#0": 2 });
  });

  test("negative counters or grace periods are contract violations", () => {
    expect(() => evaluate({ run: run(kernels.evicted()), gracePeriodMs: -1 })).toThrow(
      new RetryInputError("gracePeriodMs must be a non-negative integer, got -1"),
    );
    expect(() =>
      evaluate({
        run: run(kernels.evicted()),
        state: { ...INITIAL_RETRY_STATE, ruleRetries: { "p#0": -2 } },
      }),
    ).toThrow(new RetryInputError("state.ruleRetries[p#0] must be a non-negative integer, got -2"));
  });
});
