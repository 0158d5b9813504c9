/**
 * Whether a failed session runs again, how soon and where: a pure function of the failed run, the
 * policies that apply, the session's retry state, the global config and the session's explicit
 * budgets. How a policy and the budgets compose:
 *
 * - No policy applies (none resolved, or policies disabled): the two budgets decide alone.
 * - A policy applies: its rules decide whether and when (Armada's retry-policy proposal); a budget the session sets
 *   explicitly in its spec still caps retries of its kind; the budget defaults do not (the
 *   failure default of 0 would otherwise veto every rule that retries a failure).
 * - A run preempted before it started costs nothing: no budget, rule or total count. Under
 *   policies it is retried without consulting the rules, but the global cap still applies to it,
 *   so `globalMaxRetries: 0` stops every retry as Armada's kill switch promises.
 * - KILLED runs (cancellation, the per-task timeout) are never retried by the budgets, nor by a
 *   policy's default action. The one exception: a run its run-time limit killed (condition
 *   DeadlineExceeded) is retried when a rule that matches it says Retry — how an operator has
 *   timeouts retried (Iris never retries them; Armada retries what its rules say). The run's
 *   outcome is that of its first failed kernel, so a session with a cancel request must not be
 *   judged at all (its first failure may predate the cancel): the caller checks that first.
 *
 * Policy semantics (Armada's retry-policy proposal, with the decisions it leaves open):
 * - First match wins over the policies' rules concatenated in order.
 * - No rule matches: the first policy's `defaultAction` applies, with its retryLimit, backoff and
 *   antiAffinity (as Armada's engine does), counted under the key `<policy>#default`.
 * - Each rule counts its own retries; effective limit = rule ?? policy ?? globalMaxRetries; a
 *   retry needs the rule's count under that limit and the session's total under the global cap,
 *   read from the config given to this evaluation (so a lowered cap applies at once).
 * - Backoff is Armada's `min(initialDelay * multiplier^(failureCount-1), maxDelay)` with the
 *   session's failure count (this failure included; sessionFailureCount), not the matched rule's
 *   retry number: the level (rule, policy, global) only chooses the three parameters.
 * - Anti-affinity `node` avoids the agent of the kernel whose failure decided, in this (the most
 *   recent failed) run only.
 */
import { AttemptOutcome, TerminationCondition } from "../status.ts";
import {
  retryWait,
  backoffDelayMs,
  sessionFailureCount,
  effectiveBackoff,
  type RetryWait,
  type BackoffOverride,
} from "./backoff.ts";
import {
  BUDGET_DEFAULTS,
  budgetKindOf,
  chargeRun,
  isFreePreemption,
  judgeBudget,
  type BudgetCounters,
  type RunOutcome,
} from "./budgets.ts";
import type { RetryConfig } from "./config.ts";
import type { RetryState } from "./state.ts";
import { formatDuration } from "./duration.ts";
import { RetryInputError } from "./errors.ts";
import { describeEvidence, failedKernels, findMatchingRule, type RunKernel } from "./match.ts";
import { MAX_COUNTED_RETRIES } from "./history-budget.ts";
import { isPermanentFailure } from "./permanent-failures.ts";
import { couldNotStart, judgeStartFailure } from "./start-failures.ts";
import type { AntiAffinityMode, RetryPolicy } from "./policy.ts";

export type { RetryState };

export const INITIAL_RETRY_STATE: RetryState = Object.freeze({
  failureCount: 0,
  preemptionCount: 0,
  totalRetries: 0,
  ruleRetries: Object.freeze({}),
});

/** A rule of a policy, or (`"default"`) the policy's default action. */
export interface RuleRef {
  readonly policy: string;
  readonly index: number | "default";
}

/** The counter key of a rule: `infra#0`, `ml-training#default`. */
export function ruleKey(ref: RuleRef): string {
  return `${ref.policy}#${ref.index}`;
}

/** The budgets a session's spec sets explicitly; an absent field was not written by the user. */
export interface SessionBudgets {
  readonly maxRetriesFailure?: number;
  readonly maxRetriesPreemption?: number;
  /** Runs that could not start, retried automatically (start-failures.ts; default 3). */
  readonly maxRetriesStart?: number;
}

export interface FailedRun {
  /** Whether any kernel of the run reached RUNNING. */
  readonly startedRunning: boolean;
  /** The run's kernels; at least one must have ended other than SUCCEEDED. */
  readonly kernels: readonly RunKernel[];
}

export interface RetryInput {
  readonly run: FailedRun;
  /** The policies that apply, in order (see resolvePolicies). */
  readonly policies: readonly RetryPolicy[];
  readonly state: RetryState;
  readonly config: RetryConfig;
  readonly budgets?: SessionBudgets;
  /**
   * How long the old run may still be shutting down; 0 when every kernel is confirmed
   * terminated already. @default 0
   */
  readonly gracePeriodMs?: number;
}

export type RetryBasis =
  /** No policy applies: the budgets decided. */
  | "budget"
  /** Preempted before it started: retried at no cost. */
  | "free-preemption"
  /** Could not start because of the cluster: retried on its own count (start-failures.ts). */
  | "start-failure"
  /** KILLED, or (without policies) SUCCEEDED/UNSCHEDULABLE: never retried. */
  | "not-retriable"
  /** A rule matched and its action decided. */
  | "rule"
  /** No rule matched: the first policy's default action decided. */
  | "default-action"
  /** The matched rule (or default action) has used its effective retry limit. */
  | "rule-limit"
  /** The session's counted retries reached globalMaxRetries. */
  | "global-cap"
  /** A budget the session set explicitly is exhausted. */
  | "session-budget";

interface DecisionBase {
  readonly basis: RetryBasis;
  /** For history and `cairn get`: what decided, and the counts it read. */
  readonly reason: string;
  /** The run's outcome: that of its first failed kernel. */
  readonly outcome: AttemptOutcome;
  /** The failed kernel whose failure decided. */
  readonly kernelIndex: number;
  readonly matchedRule?: RuleRef;
  /** The state to store, with this run charged. */
  readonly state: RetryState;
}

export interface RetryVerdict extends DecisionBase, RetryWait {
  readonly action: "retry";
  /** Anti-affinity `node`: place the next run anywhere but here. */
  readonly avoidAgentId?: string;
}

export interface FailVerdict extends DecisionBase {
  readonly action: "fail";
}

export type RetryDecision = RetryVerdict | FailVerdict;

export function evaluateRetry(input: RetryInput): RetryDecision {
  checkInput(input);
  const { run, state, config } = input;
  const gracePeriodMs = input.gracePeriodMs ?? 0;
  const failed = failedKernels(run.kernels);
  const first = failed[0];
  if (!first?.outcome) throw new RetryInputError("the run has no failed kernel: only failed runs are judged");
  const outcome = first.outcome;
  const budgetRun: RunOutcome = { outcome, startedRunning: run.startedRunning };
  const charged: RetryState = { ...state, ...chargeRun(state, budgetRun) };
  const base = { outcome, kernelIndex: first.index };

  if (outcome === AttemptOutcome.KILLED && !timeoutRetriedByRule(input, failed, first)) {
    return {
      ...base,
      action: "fail",
      basis: "not-retriable",
      reason:
        first.condition === TerminationCondition.DeadlineExceeded
          ? "KILLED by its run-time limit: not retried (only a rule matching DeadlineExceeded with action Retry retries it)"
          : "KILLED runs are never retried",
      state: charged,
    };
  }
  // Each mode is bounded on its own (spec.ts, config.ts); this holds when a session's runs were
  // judged under both (a policy attached or removed mid-session).
  if (state.totalRetries >= MAX_COUNTED_RETRIES) {
    return {
      ...base,
      action: "fail",
      basis: "global-cap",
      reason: `${state.totalRetries} retries used, all that fit in one lifecycle execution's history: not retried`,
      state: charged,
    };
  }
  // Whatever a policy or budget allows: the same spec would fail the same way on every run.
  const permanent = failed.find((k) => isPermanentFailure(k.failureCategory));
  if (permanent) {
    return {
      ...base,
      kernelIndex: permanent.index,
      action: "fail",
      basis: "not-retriable",
      reason: `kernel ${permanent.index} failed with ${permanent.failureCategory ?? ""}, which no retry can clear: not retried`,
      state: charged,
    };
  }

  const policies = config.enabled ? input.policies : [];
  // HPC Pack: a run that could not start because of the cluster is retried on its own count.
  if (couldNotStart(first)) {
    const judged = judgeStartFailure(first, state.startRetries ?? 0, input.budgets?.maxRetriesStart);
    const startState: RetryState = { ...state, startRetries: judged.startRetries };
    // The global cap is the kill switch of every retry under policies, as for a free preemption.
    const capped = policies.length > 0 && state.totalRetries >= config.globalMaxRetries;
    if (!judged.retry || capped) {
      return {
        ...base,
        action: "fail",
        basis: judged.retry ? "global-cap" : "start-failure",
        reason: capped
          ? `${judged.reason}, but the global retry cap is reached (${state.totalRetries} of ${config.globalMaxRetries} retries used)`
          : judged.reason,
        state: startState,
      };
    }
    const wait = retryWait(0, gracePeriodMs);
    return {
      ...base,
      ...wait,
      action: "retry",
      basis: "start-failure",
      reason: `${judged.reason}; wait ${formatDuration(wait.delayMs)}`,
      state: startState,
    };
  }
  if (policies.length === 0) return decideByBudgets(input, budgetRun, base, gracePeriodMs);

  const cap = config.globalMaxRetries;
  const capReached = state.totalRetries >= cap;
  const capText = `the global retry cap is reached (${state.totalRetries} of ${cap} retries used)`;

  if (isFreePreemption(budgetRun)) {
    const subject = "preempted before it started running";
    if (capReached) {
      return {
        ...base,
        action: "fail",
        basis: "global-cap",
        reason: `${subject}, but ${capText}`,
        state: charged,
      };
    }
    const wait = retryWait(0, gracePeriodMs);
    return {
      ...base,
      ...wait,
      action: "retry",
      basis: "free-preemption",
      reason: `${subject}: retried at no cost; wait ${formatDuration(wait.delayMs)}`,
      state: charged,
    };
  }

  const decider = decidingRule(policies, failed, first, cap);
  const { ref, kernel } = decider;
  const subject = decider.subject;
  const withRule = { ...base, kernelIndex: kernel.index, matchedRule: ref };

  if (decider.action === "Fail") {
    return { ...withRule, action: "fail", basis: decider.basis, reason: subject, state: charged };
  }
  if (capReached) {
    return {
      ...withRule,
      action: "fail",
      basis: "global-cap",
      reason: `${subject}, but ${capText}`,
      state: charged,
    };
  }

  const key = ruleKey(ref);
  const used = state.ruleRetries[key] ?? 0;
  const { limit, limitSource } = decider;
  if (used >= limit) {
    return {
      ...withRule,
      action: "fail",
      basis: "rule-limit",
      reason: `${subject}, but its ${limit} ${limit === 1 ? "retry is" : "retries are"} used up (${limitSource} limit)`,
      state: charged,
    };
  }

  const exhausted = explicitBudgetExhausted(input, budgetRun, charged);
  if (exhausted) {
    return {
      ...withRule,
      action: "fail",
      basis: "session-budget",
      reason: `${subject}, but ${exhausted}`,
      state: charged,
    };
  }

  const n = used + 1;
  const total = state.totalRetries + 1;
  const backoffMs = backoffDelayMs(
    effectiveBackoff(decider.backoffLevels, config.defaultBackoff),
    sessionFailureCount(state.totalRetries),
  );
  const wait = retryWait(backoffMs, gracePeriodMs);
  return {
    ...withRule,
    ...wait,
    action: "retry",
    basis: decider.basis,
    reason:
      `${subject}: retry ${n} of ${limit} (${limitSource} limit), ${total} of ${cap} in total; ` +
      `wait ${formatDuration(wait.delayMs)}`,
    ...(decider.antiAffinity === "node" && kernel.agentId !== undefined
      ? { avoidAgentId: kernel.agentId }
      : {}),
    state: { ...charged, totalRetries: total, ruleRetries: { ...state.ruleRetries, [key]: n } },
  };
}

// ---------------------------------------------------------------------------------------------

/** A run killed by its run-time limit that a rule of the policies matches with action Retry. */
function timeoutRetriedByRule(input: RetryInput, failed: readonly RunKernel[], first: RunKernel): boolean {
  if (first.condition !== TerminationCondition.DeadlineExceeded || !input.config.enabled) return false;
  return findMatchingRule(input.policies, failed)?.rule.action === "Retry";
}

function decideByBudgets(
  input: RetryInput,
  run: RunOutcome,
  base: { outcome: AttemptOutcome; kernelIndex: number },
  gracePeriodMs: number,
): RetryDecision {
  const limits = {
    maxRetriesFailure: input.budgets?.maxRetriesFailure ?? BUDGET_DEFAULTS.maxRetriesFailure,
    maxRetriesPreemption: input.budgets?.maxRetriesPreemption ?? BUDGET_DEFAULTS.maxRetriesPreemption,
  };
  const judged = judgeBudget(input.state, limits, run);
  const free = isFreePreemption(run);
  const state = { ...input.state, ...judged.counters };
  if (judged.decision === "finished") {
    const basis = judged.budget === "none" ? "not-retriable" : "budget";
    return { ...base, action: "fail", basis, reason: judged.reason, state };
  }
  const wait = retryWait(0, gracePeriodMs);
  return {
    ...base,
    ...wait,
    action: "retry",
    basis: free ? "free-preemption" : "budget",
    reason: `${judged.reason}; wait ${formatDuration(wait.delayMs)}`,
    state: free ? state : { ...state, totalRetries: state.totalRetries + 1 },
  };
}

interface Decider {
  readonly ref: RuleRef;
  readonly kernel: RunKernel;
  readonly action: "Retry" | "Fail";
  readonly basis: "rule" | "default-action";
  /** What matched (or that nothing did), in words. */
  readonly subject: string;
  /** Effective limit: rule ?? policy ?? globalMaxRetries. */
  readonly limit: number;
  readonly limitSource: "rule" | "policy" | "global";
  readonly backoffLevels: readonly (BackoffOverride | undefined)[];
  readonly antiAffinity?: AntiAffinityMode;
}

function decidingRule(
  policies: readonly RetryPolicy[],
  failed: readonly RunKernel[],
  first: RunKernel,
  cap: number,
): Decider {
  const match = findMatchingRule(policies, failed);
  if (match) {
    const { policy, index, rule, kernel } = match;
    return {
      ref: { policy: policy.name, index },
      kernel,
      action: rule.action,
      basis: "rule",
      subject: `${policy.name} rule ${index} (${rule.action}) matched kernel ${kernel.index} (${describeEvidence(rule.matchers, kernel)})`,
      ...effectiveLimit(rule.retryLimit, policy.retryLimit, cap),
      backoffLevels: [rule.backoff, policy.backoff],
      antiAffinity: rule.antiAffinity ?? policy.antiAffinity,
    };
  }
  // Non-empty: the caller returned early without policies.
  const policy = policies[0] as RetryPolicy;
  return {
    ref: { policy: policy.name, index: "default" },
    kernel: first,
    action: policy.defaultAction,
    basis: "default-action",
    subject: `no rule matched kernel ${first.index} (${describeEvidence(undefined, first)}); ${policy.name} default action ${policy.defaultAction}`,
    ...effectiveLimit(undefined, policy.retryLimit, cap),
    backoffLevels: [policy.backoff],
    antiAffinity: policy.antiAffinity,
  };
}

function effectiveLimit(
  ruleLimit: number | undefined,
  policyLimit: number | undefined,
  cap: number,
): Pick<Decider, "limit" | "limitSource"> {
  if (ruleLimit !== undefined) return { limit: ruleLimit, limitSource: "rule" };
  if (policyLimit !== undefined) return { limit: policyLimit, limitSource: "policy" };
  return { limit: cap, limitSource: "global" };
}

/** Why a budget the session set explicitly forbids this retry, or undefined. */
function explicitBudgetExhausted(
  input: RetryInput,
  run: RunOutcome,
  charged: BudgetCounters,
): string | undefined {
  const kind = budgetKindOf(run);
  const limit =
    kind === "failure"
      ? input.budgets?.maxRetriesFailure
      : kind === "preemption"
        ? input.budgets?.maxRetriesPreemption
        : undefined;
  if (limit === undefined) return undefined;
  const [count, limitName, countName] =
    kind === "failure"
      ? [charged.failureCount, "maxRetriesFailure", "failure count"]
      : [charged.preemptionCount, "maxRetriesPreemption", "preemption count"];
  return count > limit
    ? `the session's ${limitName} ${limit} is exhausted (${countName} ${count})`
    : undefined;
}

function checkInput(input: RetryInput): void {
  const { state } = input;
  const counts: [string, unknown][] = [
    ["state.failureCount", state.failureCount],
    ["state.preemptionCount", state.preemptionCount],
    ["state.totalRetries", state.totalRetries],
    ["state.pendingReturns", state.pendingReturns ?? 0],
    ["state.freeReturns", state.freeReturns ?? 0],
    ["state.startRetries", state.startRetries ?? 0],
    ["budgets.maxRetriesStart", input.budgets?.maxRetriesStart ?? 0],
    ["gracePeriodMs", input.gracePeriodMs ?? 0],
    ["budgets.maxRetriesFailure", input.budgets?.maxRetriesFailure ?? 0],
    ["budgets.maxRetriesPreemption", input.budgets?.maxRetriesPreemption ?? 0],
    ...Object.entries(state.ruleRetries).map(([key, n]): [string, unknown] => [
      `state.ruleRetries[${key}]`,
      n,
    ]),
  ];
  for (const [field, value] of counts) {
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
      throw new RetryInputError(`${field} must be a non-negative integer, got ${String(value)}`);
    }
  }
}
