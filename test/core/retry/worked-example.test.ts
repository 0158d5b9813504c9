/**
 * Armada's worked example, failure by failure. The queue has policies `infra` (retryLimit 10,
 * rules for Preempted and Evicted) and `ml-training` (retryLimit 5, an OOMKilled rule limited to
 * 3), and globalMaxRetries is 20:
 *
 * | Failure   | Matched rule     | Effective limit   | Check                                   |
 * | Preempted | infra/Preempted  | 10 (from policy)  | preemption count < 10 AND total < 20    |
 * | OOMKilled | ml/OOMKilled     | 3 (from rule)     | OOM count < 3 AND total < 20            |
 *
 * The wait column is the seed's `min(initialDelay * multiplier^(failureCount-1), maxDelay)` with
 * the session's failure count (the total column): infra's 10s, 20s, 40s … 5m; ml-training's 0s.
 *
 * The policies are the files in examples/retry-policies/. Each failure happens on its own agent
 * (`agent-<row>`), so the anti-affinity column also shows that only the latest agent is avoided.
 */
import { describe, expect, test } from "vitest";
import {
  evaluateRetry,
  INITIAL_RETRY_STATE,
  type RetryState,
} from "../../../functions/core/retry/evaluate.ts";
import type { RunKernel } from "../../../functions/core/retry/match.ts";
import { config, examplePolicy, kernels, run } from "./fixtures.ts";

const POLICIES = [examplePolicy("infra"), examplePolicy("ml-training")];
const CONFIG = config({ globalMaxRetries: 20 });

type Failure = "Preempted" | "Evicted" | "OOMKilled";
const FAILED_KERNEL: Record<Failure, (agentId: string) => RunKernel> = {
  Preempted: (agentId) => kernels.preempted({ agentId }),
  Evicted: (agentId) => kernels.evicted({ agentId }),
  OOMKilled: (agentId) => kernels.oomKilled({ agentId }),
};

/** What one failure led to: the rule, its count and the total after it, the wait, the avoided agent. */
type Row = [
  failure: Failure,
  action: "retry" | "fail",
  rule: string,
  ruleRetries: number,
  totalRetries: number,
  delay: string,
  avoid: string,
];

const S = 1000;
const DELAY: Record<string, number> = {
  "-": 0,
  "0s": 0,
  "10s": 10 * S,
  "20s": 20 * S,
  "40s": 40 * S,
  "80s": 80 * S,
};
DELAY["160s"] = 160 * S;
DELAY["5m"] = 300 * S;

function replay(rows: readonly Row[]): void {
  let state: RetryState = INITIAL_RETRY_STATE;
  rows.forEach(([failure, action, rule, ruleRetries, totalRetries, delay, avoid], i) => {
    const agentId = `agent-${i + 1}`;
    const decision = evaluateRetry({
      run: run(FAILED_KERNEL[failure](agentId)),
      policies: POLICIES,
      state,
      config: CONFIG,
    });
    const ruleKey = decision.matchedRule
      ? `${decision.matchedRule.policy}#${decision.matchedRule.index}`
      : "-";
    const observed = [
      failure,
      decision.action,
      ruleKey,
      decision.state.ruleRetries[ruleKey] ?? 0,
      decision.state.totalRetries,
      decision.action === "retry" ? decision.delayMs : 0,
      decision.action === "retry" ? (decision.avoidAgentId ?? "-") : "-",
    ];
    const expected = [
      failure,
      action,
      rule,
      ruleRetries,
      totalRetries,
      DELAY[delay],
      avoid === "this" ? agentId : avoid,
    ];
    expect(observed, `failure ${i + 1} (${failure}): ${decision.reason}`).toEqual(expected);
    if (i < rows.length - 1)
      expect(decision.action, "only the last failure may end the session").toBe("retry");
    state = decision.state;
  });
}

describe("Armada's worked example: queue policies [infra, ml-training], globalMaxRetries 20", () => {
  test("OOMKilled is retried 3 times (rule limit), independently of preemptions; the 4th OOM fails", () => {
    replay([
      ["Preempted", "retry", "infra#0", 1, 1, "10s", "this"],
      ["OOMKilled", "retry", "ml-training#1", 1, 2, "0s", "-"],
      ["Preempted", "retry", "infra#0", 2, 3, "40s", "this"],
      ["OOMKilled", "retry", "ml-training#1", 2, 4, "0s", "-"],
      ["OOMKilled", "retry", "ml-training#1", 3, 5, "0s", "-"],
      ["OOMKilled", "fail", "ml-training#1", 3, 5, "-", "-"],
    ]);
  });

  test("Preempted is retried 10 times (policy limit) while OOMs interleave; the 11th preemption fails", () => {
    replay([
      ["Preempted", "retry", "infra#0", 1, 1, "10s", "this"],
      ["Preempted", "retry", "infra#0", 2, 2, "20s", "this"],
      ["OOMKilled", "retry", "ml-training#1", 1, 3, "0s", "-"],
      ["Preempted", "retry", "infra#0", 3, 4, "80s", "this"],
      ["Preempted", "retry", "infra#0", 4, 5, "160s", "this"],
      ["OOMKilled", "retry", "ml-training#1", 2, 6, "0s", "-"],
      ["Preempted", "retry", "infra#0", 5, 7, "5m", "this"],
      ["Preempted", "retry", "infra#0", 6, 8, "5m", "this"],
      ["OOMKilled", "retry", "ml-training#1", 3, 9, "0s", "-"],
      ["Preempted", "retry", "infra#0", 7, 10, "5m", "this"],
      ["Preempted", "retry", "infra#0", 8, 11, "5m", "this"],
      ["Preempted", "retry", "infra#0", 9, 12, "5m", "this"],
      ["Preempted", "retry", "infra#0", 10, 13, "5m", "this"],
      ["Preempted", "fail", "infra#0", 10, 13, "-", "-"],
    ]);
  });

  test("globalMaxRetries 20 caps the total: 10 preemptions + 3 OOMs + 7 evictions, then an eviction fails", () => {
    replay([
      ["Preempted", "retry", "infra#0", 1, 1, "10s", "this"],
      ["Evicted", "retry", "infra#1", 1, 2, "20s", "this"],
      ["OOMKilled", "retry", "ml-training#1", 1, 3, "0s", "-"],
      ["Preempted", "retry", "infra#0", 2, 4, "80s", "this"],
      ["Evicted", "retry", "infra#1", 2, 5, "160s", "this"],
      ["OOMKilled", "retry", "ml-training#1", 2, 6, "0s", "-"],
      ["Preempted", "retry", "infra#0", 3, 7, "5m", "this"],
      ["Evicted", "retry", "infra#1", 3, 8, "5m", "this"],
      ["OOMKilled", "retry", "ml-training#1", 3, 9, "0s", "-"],
      ["Preempted", "retry", "infra#0", 4, 10, "5m", "this"],
      ["Preempted", "retry", "infra#0", 5, 11, "5m", "this"],
      ["Preempted", "retry", "infra#0", 6, 12, "5m", "this"],
      ["Preempted", "retry", "infra#0", 7, 13, "5m", "this"],
      ["Preempted", "retry", "infra#0", 8, 14, "5m", "this"],
      ["Preempted", "retry", "infra#0", 9, 15, "5m", "this"],
      ["Preempted", "retry", "infra#0", 10, 16, "5m", "this"],
      ["Evicted", "retry", "infra#1", 4, 17, "5m", "this"],
      ["Evicted", "retry", "infra#1", 5, 18, "5m", "this"],
      ["Evicted", "retry", "infra#1", 6, 19, "5m", "this"],
      ["Evicted", "retry", "infra#1", 7, 20, "5m", "this"],
      ["Evicted", "fail", "infra#1", 7, 20, "-", "-"],
    ]);
  });

  test("the reasons name the rule, the limit and where it comes from, and the totals", () => {
    let state: RetryState = INITIAL_RETRY_STATE;
    const reasons: string[] = [];
    for (const kernel of [
      kernels.preempted(),
      kernels.oomKilled({ index: 1 }),
      kernels.oomKilled(),
      kernels.oomKilled(),
      kernels.oomKilled(),
    ]) {
      const decision = evaluateRetry({ run: run(kernel), policies: POLICIES, state, config: CONFIG });
      reasons.push(decision.reason);
      state = decision.state;
    }
    expect(reasons).toEqual([
      "infra rule 0 (Retry) matched kernel 0 (condition Preempted): retry 1 of 10 (policy limit), 1 of 20 in total; wait 10s",
      "ml-training rule 1 (Retry) matched kernel 1 (condition OOMKilled): retry 1 of 3 (rule limit), 2 of 20 in total; wait 0s",
      "ml-training rule 1 (Retry) matched kernel 0 (condition OOMKilled): retry 2 of 3 (rule limit), 3 of 20 in total; wait 0s",
      "ml-training rule 1 (Retry) matched kernel 0 (condition OOMKilled): retry 3 of 3 (rule limit), 4 of 20 in total; wait 0s",
      "ml-training rule 1 (Retry) matched kernel 0 (condition OOMKilled), but its 3 retries are used up (rule limit)",
    ]);
  });

  test("an OOM-killed kernel (exit code 137) past its rule limit fails: first match wins, no fall-through to the exit-code rule", () => {
    const state: RetryState = { ...INITIAL_RETRY_STATE, ruleRetries: { "ml-training#1": 3 } };
    const decision = evaluateRetry({
      run: run(kernels.oomKilled()),
      policies: POLICIES,
      state,
      config: CONFIG,
    });
    expect(decision).toMatchObject({
      action: "fail",
      basis: "rule-limit",
      matchedRule: { policy: "ml-training", index: 1 },
    });
  });

  test("a kernel SIGKILLed without OOM (exit code 137) falls to ml-training's exit-code rule, limited by the policy's 5", () => {
    let state: RetryState = INITIAL_RETRY_STATE;
    const actions: string[] = [];
    for (let i = 0; i < 6; i++) {
      const decision = evaluateRetry({
        run: run(kernels.exited(137)),
        policies: POLICIES,
        state,
        config: CONFIG,
      });
      actions.push(`${decision.action} ${decision.state.ruleRetries["ml-training#2"] ?? 0}`);
      state = decision.state;
    }
    expect(actions).toEqual(["retry 1", "retry 2", "retry 3", "retry 4", "retry 5", "fail 5"]);
  });

  test("any other failure takes infra's default action, Fail", () => {
    const decision = evaluateRetry({
      run: run(kernels.exited(1)),
      policies: POLICIES,
      state: INITIAL_RETRY_STATE,
      config: CONFIG,
    });
    expect(decision).toMatchObject({
      action: "fail",
      basis: "default-action",
      matchedRule: { policy: "infra", index: "default" },
      reason: "no rule matched kernel 0 (FAILED, exit code 1); infra default action Fail",
    });
  });
});
