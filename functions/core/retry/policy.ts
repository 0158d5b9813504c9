/**
 * The RetryPolicy resource operators write (YAML shape of Armada's retry-policy proposal), validated once when written:
 * every problem is reported at once as `<path>: <reason>` naming the field, and the document is
 * normalised to the `RetryPolicy` the evaluator reads (durations in ms, a rule's matchers as a list).
 *
 * Decisions where Armada's proposal is open:
 * - `apiVersion` is `cairn.dev/v1`; Armada's `armadaproject.io/v1` is accepted too, so a policy
 *   copied from Armada parses unchanged. Both normalise to the same policy.
 * - `containerName` selects a Cairn kernel: its index (`0`, or the string `"0"`) or `"*"` for any
 *   failed kernel. Omitted: the first failed kernel (termination messages: every failed kernel).
 * - `includeInitContainers` (Armada's proposal: "false (default) skips init containers. Set to true to also
 *   consider init container failures") is accepted on any rule, must be a boolean, and is kept
 *   and shown as written. Cairn's kernels have no init containers: a kernel is one process (its
 *   preparation — image pull, work directory — is the agent's, and a preparation failure is not
 *   a kernel failure a rule sees), so there is never an init-container failure to add and the
 *   flag matches nothing extra: true or false, a rule considers the same kernels.
 * - A rule has one or more matchers (onExitCodes, onConditions, onTerminationMessage,
 *   onFailureCategory), and all of them must match, as Armada ANDs a rule's conditions: "OOMKilled
 *   with exit code 137 in kernel 1" is one rule. They all look at the same kernel: the one
 *   `containerName` names, else the first failed kernel; a rule whose only matcher is
 *   onTerminationMessage checks every failed kernel (Armada's proposal: "all … messages are checked"). Two
 *   rules are an OR: the first that matches wins.
 * - Exit code 0 never matches (Armada's proposal), so a rule listing it is rejected rather than silently inert.
 * - retryLimit, backoff and antiAffinity on a Fail rule would never apply: rejected.
 * - Backoff fields are inherited one by one (rule → policy → global default), so `initialDelay: 0s`
 *   alone is a complete policy-level backoff.
 * - Termination-message patterns are RE2 regular expressions, Go's syntax as Armada compiles
 *   them, matched anywhere in the message (`MatchString`); an empty message matches none
 *   (pattern.ts).
 */
import * as z from "zod";
import { nameSchema, safeParseWithIssues, SPEC_LIMITS, strictObject } from "../spec.ts";
import { TerminationCondition } from "../status.ts";
import type { BackoffOverride } from "./backoff.ts";
import { DURATION_HINT, formatDuration, parseDurationMs } from "./duration.ts";
import { RetryPolicyValidationError } from "./errors.ts";
import { HISTORY_LIMIT_REASON, MAX_COUNTED_RETRIES } from "./history-budget.ts";
import { patternProblem } from "./pattern.ts";

export const RETRY_POLICY_API_VERSION = "cairn.dev/v1";
/** Armada's apiVersion, accepted so Armada policies parse as written. */
export const ARMADA_API_VERSION = "armadaproject.io/v1";
export const RETRY_POLICY_KIND = "RetryPolicy";

export const RETRY_POLICY_LIMITS = {
  /** A session's counted retries all run in one execution (history-budget.ts). */
  retryLimit: { min: 0, max: MAX_COUNTED_RETRIES },
  rules: { max: 100 },
  exitCodes: { max: 256 },
  patternMaxLength: 1024,
  multiplier: { min: 1, max: 100 },
  kernelIndex: { min: 0, max: SPEC_LIMITS.replicas.max - 1 },
} as const;

export const RetryAction = { Retry: "Retry", Fail: "Fail" } as const;
export type RetryAction = (typeof RetryAction)[keyof typeof RetryAction];

export const AntiAffinityMode = { none: "none", node: "node" } as const;
export type AntiAffinityMode = (typeof AntiAffinityMode)[keyof typeof AntiAffinityMode];

export const ExitCodeOperator = { In: "In", NotIn: "NotIn" } as const;
export type ExitCodeOperator = (typeof ExitCodeOperator)[keyof typeof ExitCodeOperator];

/** A kernel index, or `"*"` for any failed kernel. */
export type KernelSelector = number | "*";

export type RuleMatcher =
  | { readonly kind: "exitCodes"; readonly operator: ExitCodeOperator; readonly values: readonly number[] }
  | { readonly kind: "conditions"; readonly conditions: readonly TerminationCondition[] }
  | { readonly kind: "terminationMessage"; readonly pattern: string }
  | { readonly kind: "failureCategory"; readonly categories: readonly string[] };

export interface RetryRule {
  readonly action: RetryAction;
  /** Absent: the first failed kernel (for termination messages: every failed kernel). */
  readonly kernel?: KernelSelector;
  /**
   * Armada's `includeInitContainers`, as written (absent: not written, Armada's false).
   * Accepted for policy compatibility; Cairn's kernels have no init containers, so it changes
   * no match (see the decisions above).
   */
  readonly includeInitContainers?: boolean;
  /** Every one must match the same kernel (at most one of each kind, in the document's order). */
  readonly matchers: readonly [RuleMatcher, ...RuleMatcher[]];
  readonly retryLimit?: number;
  readonly backoff?: BackoffOverride;
  readonly antiAffinity?: AntiAffinityMode;
}

/** A validated, normalised RetryPolicy: what the store keeps and the evaluator reads. */
export interface RetryPolicy {
  readonly name: string;
  readonly retryLimit?: number;
  readonly defaultAction: RetryAction;
  readonly backoff?: BackoffOverride;
  readonly antiAffinity?: AntiAffinityMode;
  readonly rules: readonly RetryRule[];
}

// ---------------------------------------------------------------------------------------------
// Schema building blocks (shared with config.ts).

export const durationSchema = z
  .string({ error: (issue) => (issue.input === undefined ? undefined : DURATION_HINT) })
  .transform((text, ctx) => {
    const parsed = parseDurationMs(text);
    if (parsed.ok) return parsed.ms;
    ctx.addIssue({ code: "custom", message: parsed.reason });
    return z.NEVER;
  });

export const multiplierSchema = z
  .number()
  .min(RETRY_POLICY_LIMITS.multiplier.min)
  .max(RETRY_POLICY_LIMITS.multiplier.max);

/**
 * An integer. Not zod's `.int()`: that check aborts the whole parse, which would hide the rule-level
 * problems (a rule with no matcher) reported alongside it.
 */
const integerSchema = z.number().refine(Number.isSafeInteger, { error: "must be an integer" });

export const retryLimitSchema = integerSchema
  .min(RETRY_POLICY_LIMITS.retryLimit.min)
  .max(RETRY_POLICY_LIMITS.retryLimit.max, {
    error: `must be at most ${RETRY_POLICY_LIMITS.retryLimit.max}: ${HISTORY_LIMIT_REASON}`,
  });

/** maxDelay below initialDelay (both at the same level) can only be a mistake. */
function checkDelayOrder(
  backoff: { initialDelay?: number; maxDelay?: number },
  ctx: z.RefinementCtx<unknown>,
): void {
  const { initialDelay, maxDelay } = backoff;
  if (initialDelay !== undefined && maxDelay !== undefined && maxDelay < initialDelay) {
    ctx.addIssue({
      code: "custom",
      path: ["maxDelay"],
      message: `must be at least initialDelay (${formatDuration(initialDelay)})`,
    });
  }
}

/** A retry's wait: `min(initialDelay * multiplier^(failureCount-1), maxDelay)`. */
const backoffSchema = strictObject({
  /** The first retry's wait, a duration such as `10s`. */
  initialDelay: durationSchema.optional(),
  /** The longest wait, a duration such as `5m`. */
  maxDelay: durationSchema.optional(),
  /** Each further failure's wait is the last one times this. */
  multiplier: multiplierSchema.optional(),
}).superRefine(checkDelayOrder);

/** `node`: the retried run is placed away from the agent of the run that failed. */
const antiAffinitySchema = strictObject({ mode: z.enum(AntiAffinityMode) });

const KERNEL_SELECTOR_HINT = `must be a kernel index (${RETRY_POLICY_LIMITS.kernelIndex.min} to ${RETRY_POLICY_LIMITS.kernelIndex.max}) or "*"`;

const kernelSelectorSchema = z
  .union([z.string(), z.number()], { error: KERNEL_SELECTOR_HINT })
  .transform((value, ctx): KernelSelector => {
    if (value === "*") return "*";
    const index = typeof value === "number" ? value : /^\d+$/.test(value) ? Number(value) : Number.NaN;
    const { min, max } = RETRY_POLICY_LIMITS.kernelIndex;
    if (Number.isInteger(index) && index >= min && index <= max) return index;
    ctx.addIssue({ code: "custom", message: KERNEL_SELECTOR_HINT });
    return z.NEVER;
  });

export const exitCodeSchema = integerSchema.refine((code) => code !== 0, {
  error: "exit code 0 never matches (it means success)",
});

export const patternSchema = z
  .string()
  .min(1)
  .max(RETRY_POLICY_LIMITS.patternMaxLength)
  .superRefine((pattern, ctx) => {
    const problem = patternProblem(pattern);
    if (problem)
      ctx.addIssue({ code: "custom", message: `is not a valid RE2 regular expression: ${problem}` });
  });

const MATCHER_FIELDS = ["onExitCodes", "onConditions", "onTerminationMessage", "onFailureCategory"] as const;
const RETRY_ONLY_FIELDS = ["retryLimit", "backoff", "antiAffinity"] as const;

const ruleSchema = strictObject({
  /** What a failure the rule matches does: Retry (within the rule's limit) or Fail. */
  action: z.enum(RetryAction),
  /** The kernel the matchers look at (its index), or `*` for any; without it, any kernel. */
  containerName: kernelSelectorSchema.optional(),
  /** Accepted for compatibility with Armada's documents; Cairn's kernels have no init containers. */
  includeInitContainers: z.boolean({ error: "must be true or false" }).optional(),
  /** Exit codes, `In` or `NotIn` the list (exit 0 never matches). */
  onExitCodes: strictObject({
    operator: z.enum(ExitCodeOperator),
    values: z.array(exitCodeSchema).min(1).max(RETRY_POLICY_LIMITS.exitCodes.max),
  }).optional(),
  /** Conditions the kernel ended with (OOMKilled, Evicted, …). */
  onConditions: z.array(z.enum(TerminationCondition)).min(1).optional(),
  /** An RE2 pattern matched anywhere in the kernel's termination message. */
  onTerminationMessage: strictObject({ pattern: patternSchema }).optional(),
  /** Failure categories: the built-in ones and those operators define. */
  onFailureCategory: z.array(nameSchema).min(1).optional(),
  /** Retries this rule allows (default: the policy's, then the global cap). */
  retryLimit: retryLimitSchema.optional(),
  /** This rule's backoff, over the policy's and the global default. */
  backoff: backoffSchema.optional(),
  antiAffinity: antiAffinitySchema.optional(),
}).superRefine(
  (rule, ctx) => {
    // Runs even when a field is invalid, so structural mistakes are reported with the others.
    if (typeof rule !== "object" || rule === null) return;
    const present = (field: string): boolean => (rule as Record<string, unknown>)[field] !== undefined;
    const matchers = MATCHER_FIELDS.filter(present);
    if (matchers.length === 0) {
      ctx.addIssue({
        code: "custom",
        message: `must have a matcher: one or more of ${MATCHER_FIELDS.join(", ")}`,
      });
    }
    if ((rule as { action?: unknown }).action === RetryAction.Fail) {
      for (const field of RETRY_ONLY_FIELDS.filter(present)) {
        ctx.addIssue({ code: "custom", path: [field], message: "applies only to rules with action Retry" });
      }
    }
  },
  { when: () => true },
);

const policySpecSchema = strictObject({
  /** Retries each rule allows unless it sets its own (default: the global cap). */
  retryLimit: retryLimitSchema.optional(),
  /** What a failure no rule matches does. */
  defaultAction: z.enum(RetryAction).default(RetryAction.Fail),
  /** The policy's backoff, over the global default. */
  backoff: backoffSchema.optional(),
  antiAffinity: antiAffinitySchema.optional(),
  /** Checked in order; the first that matches decides. */
  rules: z.array(ruleSchema).max(RETRY_POLICY_LIMITS.rules.max).default([]),
});

export const RetryPolicyDocumentSchema = strictObject({
  /** `cairn.dev/v1`, or Armada's `armadaproject.io/v1`. */
  apiVersion: z.enum([RETRY_POLICY_API_VERSION, ARMADA_API_VERSION]),
  kind: z.literal(RETRY_POLICY_KIND),
  /** `name`: what queues and sessions name the policy by. */
  metadata: strictObject({ name: nameSchema }),
  spec: policySpecSchema,
});

/** What an operator writes (YAML or JSON), before validation. */
export type RetryPolicyDocument = z.input<typeof RetryPolicyDocumentSchema>;
type DocumentRule = NonNullable<RetryPolicyDocument["spec"]["rules"]>[number];
type ParsedDocument = z.output<typeof RetryPolicyDocumentSchema>;
type ParsedRule = ParsedDocument["spec"]["rules"][number];
type ParsedBackoff = z.output<typeof backoffSchema>;

// ---------------------------------------------------------------------------------------------
// Parsing and normalisation.

export function parseRetryPolicy(input: unknown): RetryPolicy {
  const result = safeParseWithIssues(RetryPolicyDocumentSchema, input);
  if (!result.success) throw new RetryPolicyValidationError(result.issues);
  return normalisePolicy(result.data);
}

function normalisePolicy(doc: ParsedDocument): RetryPolicy {
  const { spec } = doc;
  return {
    name: doc.metadata.name,
    ...(spec.retryLimit !== undefined ? { retryLimit: spec.retryLimit } : {}),
    defaultAction: spec.defaultAction,
    ...(spec.backoff ? { backoff: normaliseBackoff(spec.backoff) } : {}),
    ...(spec.antiAffinity ? { antiAffinity: spec.antiAffinity.mode } : {}),
    rules: spec.rules.map(normaliseRule),
  };
}

function normaliseRule(rule: ParsedRule): RetryRule {
  return {
    action: rule.action,
    ...(rule.containerName !== undefined ? { kernel: rule.containerName } : {}),
    ...(rule.includeInitContainers !== undefined
      ? { includeInitContainers: rule.includeInitContainers }
      : {}),
    matchers: normaliseMatchers(rule),
    ...(rule.retryLimit !== undefined ? { retryLimit: rule.retryLimit } : {}),
    ...(rule.backoff ? { backoff: normaliseBackoff(rule.backoff) } : {}),
    ...(rule.antiAffinity ? { antiAffinity: rule.antiAffinity.mode } : {}),
  };
}

function normaliseMatchers(rule: ParsedRule): [RuleMatcher, ...RuleMatcher[]] {
  const matchers: RuleMatcher[] = [];
  if (rule.onExitCodes) matchers.push({ kind: "exitCodes", ...rule.onExitCodes });
  if (rule.onConditions) matchers.push({ kind: "conditions", conditions: rule.onConditions });
  if (rule.onTerminationMessage) matchers.push({ kind: "terminationMessage", ...rule.onTerminationMessage });
  if (rule.onFailureCategory) matchers.push({ kind: "failureCategory", categories: rule.onFailureCategory });
  const [first, ...rest] = matchers;
  // The schema's must-have-a-matcher check makes this unreachable.
  if (!first)
    throw new RetryPolicyValidationError([{ path: "spec.rules", message: "rule without a matcher" }]);
  return [first, ...rest];
}

function normaliseBackoff(backoff: ParsedBackoff): BackoffOverride {
  return {
    ...(backoff.initialDelay !== undefined ? { initialDelayMs: backoff.initialDelay } : {}),
    ...(backoff.maxDelay !== undefined ? { maxDelayMs: backoff.maxDelay } : {}),
    ...(backoff.multiplier !== undefined ? { multiplier: backoff.multiplier } : {}),
  };
}

// ---------------------------------------------------------------------------------------------
// Back to a document (for `get -o yaml` and round trips): parseRetryPolicy(toDocument(p)) ≡ p.

export function retryPolicyToDocument(policy: RetryPolicy): RetryPolicyDocument {
  return {
    apiVersion: RETRY_POLICY_API_VERSION,
    kind: RETRY_POLICY_KIND,
    metadata: { name: policy.name },
    spec: {
      ...(policy.retryLimit !== undefined ? { retryLimit: policy.retryLimit } : {}),
      defaultAction: policy.defaultAction,
      ...(policy.backoff ? { backoff: backoffToDocument(policy.backoff) } : {}),
      ...(policy.antiAffinity ? { antiAffinity: { mode: policy.antiAffinity } } : {}),
      rules: policy.rules.map((rule) => ({
        action: rule.action,
        ...(rule.kernel !== undefined ? { containerName: rule.kernel } : {}),
        ...(rule.includeInitContainers !== undefined
          ? { includeInitContainers: rule.includeInitContainers }
          : {}),
        ...rule.matchers.reduce<Partial<DocumentRule>>((d, m) => ({ ...d, ...matcherToDocument(m) }), {}),
        ...(rule.retryLimit !== undefined ? { retryLimit: rule.retryLimit } : {}),
        ...(rule.backoff ? { backoff: backoffToDocument(rule.backoff) } : {}),
        ...(rule.antiAffinity ? { antiAffinity: { mode: rule.antiAffinity } } : {}),
      })),
    },
  };
}

function matcherToDocument(match: RuleMatcher): Partial<DocumentRule> {
  switch (match.kind) {
    case "exitCodes":
      return { onExitCodes: { operator: match.operator, values: [...match.values] } };
    case "conditions":
      return { onConditions: [...match.conditions] };
    case "terminationMessage":
      return { onTerminationMessage: { pattern: match.pattern } };
    case "failureCategory":
      return { onFailureCategory: [...match.categories] };
  }
}

function backoffToDocument(backoff: BackoffOverride): {
  initialDelay?: string;
  maxDelay?: string;
  multiplier?: number;
} {
  return {
    ...(backoff.initialDelayMs !== undefined ? { initialDelay: formatDuration(backoff.initialDelayMs) } : {}),
    ...(backoff.maxDelayMs !== undefined ? { maxDelay: formatDuration(backoff.maxDelayMs) } : {}),
    ...(backoff.multiplier !== undefined ? { multiplier: backoff.multiplier } : {}),
  };
}
