/**
 * Matching a failed run's kernels against policy rules (Armada's retry-policy proposal): first match wins over the
 * concatenated rules of the policies, in order.
 *
 * Which kernel a rule looks at:
 * - `containerName` set to an index: that kernel only, if it failed;
 * - `"*"`: every failed kernel (the rule matches if any does);
 * - omitted: the first failed kernel — the one that ended first (earliest `finishedAtMs`, then
 *   lowest index), because in a gang the first failure is the cause and the siblings' ends are
 *   its consequence. Rules on the termination message alone check every failed kernel (Armada's proposal:
 *   "all … messages are checked").
 * A rule's matchers are ANDed, as Armada ANDs a rule's conditions: all of them must match one and
 * the same kernel.
 * - `includeInitContainers` changes none of this: a Cairn kernel has no init containers, so
 *   there is no init-container failure to add (policy.ts).
 */
import type { AttemptOutcome, KernelStatus, TerminationCondition } from "../status.ts";
import { patternMatches } from "./pattern.ts";
import type { RetryPolicy, RetryRule, RuleMatcher } from "./policy.ts";

/**
 * One kernel of the failed run. Field names follow the model's `Kernel`, so a stored kernel can
 * be passed as it is.
 */
export interface RunKernel {
  readonly index: number;
  /** Absent while the kernel has not ended: such a kernel is not a failed kernel. */
  readonly outcome?: AttemptOutcome;
  readonly exitCode?: number;
  readonly condition?: TerminationCondition;
  /** The termination message. */
  readonly message?: string;
  /** The category the agent classified the failure into, if any. */
  readonly failureCategory?: string;
  readonly agentId?: string;
  readonly finishedAtMs?: number;
  /** The stored kernel's status: ERROR for one that could not start (start-failures.ts). */
  readonly status?: KernelStatus;
}

/** Kernels that ended other than SUCCEEDED, the first failed kernel first. */
export function failedKernels<K extends RunKernel>(kernels: readonly K[]): K[] {
  return kernels
    .filter((k) => k.outcome !== undefined && k.outcome !== "SUCCEEDED")
    .sort(
      (a, b) =>
        (a.finishedAtMs ?? Number.POSITIVE_INFINITY) - (b.finishedAtMs ?? Number.POSITIVE_INFINITY) ||
        a.index - b.index,
    );
}

export interface RuleMatch {
  readonly policy: RetryPolicy;
  readonly index: number;
  readonly rule: RetryRule;
  /** The failed kernel whose failure the rule matched. */
  readonly kernel: RunKernel;
}

/** The first rule, over the policies' rules in order, that matches one of the failed kernels. */
export function findMatchingRule(
  policies: readonly RetryPolicy[],
  failed: readonly RunKernel[],
): RuleMatch | undefined {
  for (const policy of policies) {
    for (const [index, rule] of policy.rules.entries()) {
      const kernel = candidates(rule, failed).find((k) => rule.matchers.every((m) => matches(m, k)));
      if (kernel) return { policy, index, rule, kernel };
    }
  }
  return undefined;
}

function candidates(rule: RetryRule, failed: readonly RunKernel[]): readonly RunKernel[] {
  if (rule.kernel === "*") return failed;
  if (rule.kernel !== undefined) return failed.filter((k) => k.index === rule.kernel);
  return rule.matchers.every((m) => m.kind === "terminationMessage") ? failed : failed.slice(0, 1);
}

export function matches(matcher: RuleMatcher, kernel: RunKernel): boolean {
  switch (matcher.kind) {
    case "exitCodes": {
      // Exit code 0 (success, or "not set") never matches, whatever the operator.
      const code = kernel.exitCode;
      if (code === undefined || code === 0) return false;
      return matcher.values.includes(code) === (matcher.operator === "In");
    }
    case "conditions":
      return kernel.condition !== undefined && matcher.conditions.includes(kernel.condition);
    case "terminationMessage":
      return patternMatches(matcher.pattern, kernel.message);
    case "failureCategory":
      return kernel.failureCategory !== undefined && matcher.categories.includes(kernel.failureCategory);
  }
}

/**
 * What about a kernel a rule's matchers looked at, in words: "exit code 137", "condition OOMKilled
 * and exit code 137"; no matchers: the kernel's outcome and what it reported.
 */
export function describeEvidence(matchers: readonly RuleMatcher[] | undefined, kernel: RunKernel): string {
  if (matchers !== undefined && matchers.length > 0) {
    return matchers.map((m) => describeOne(m, kernel)).join(" and ");
  }
  return describeOne(undefined, kernel);
}

function describeOne(matcher: RuleMatcher | undefined, kernel: RunKernel): string {
  const outcome = kernel.outcome ?? "unknown outcome";
  switch (matcher?.kind) {
    case "exitCodes":
      return `exit code ${kernel.exitCode}`;
    case "conditions":
      return `condition ${kernel.condition}`;
    case "terminationMessage":
      return `termination message matches /${matcher.pattern}/`;
    case "failureCategory":
      return `failure category ${kernel.failureCategory}`;
    case undefined: {
      const details = [
        kernel.exitCode !== undefined ? `exit code ${kernel.exitCode}` : undefined,
        kernel.condition !== undefined ? `condition ${kernel.condition}` : undefined,
      ].filter((d) => d !== undefined);
      return [outcome, ...details].join(", ");
    }
  }
}
