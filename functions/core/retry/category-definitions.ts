/**
 * Failure categories that operators define: the FailureCategory resource, and the classification
 * of a failed run's kernels with it when the run ends.
 *
 * Armada's retry-policy proposal matches `onFailureCategory: [cuda_error, infiniband_error]`
 * against categories "the executor classifies" with rules operators write (Armada's error
 * categorization): a category is a name and matchers on exit code, condition and termination
 * message; "a GPU cluster defines `cuda_error` and `infiniband_error`; a CPU cluster doesn't need
 * them". Here a category is stored and managed like a retry policy (`cairn failure-category`),
 * and applied by the control plane where a run ends, before its retry rules are read, so a
 * definition written now applies to the next run that ends, on every agent and on Fargate alike.
 *
 * A definition has one or more rules; a rule's matchers (onExitCodes, onConditions,
 * onTerminationMessage) are ANDed, as a retry rule's are, and the rules are ORed. Patterns are
 * RE2, as in retry rules (pattern.ts).
 *
 * Precedence, per failed kernel:
 * 1. A category no retry can clear (permanent-failures.ts: `executable_not_found`,
 *    `arguments_too_large`) stays as reported: no definition may rename it, so it is never retried.
 * 2. Operator definitions, in ascending `precedence`, then by name: the first with a rule that
 *    matches names the category (first match wins, as in Armada's categorizer).
 * 3. Otherwise the built-in category the agent reported stays (failure-categories.ts): the
 *    built-in table is the default.
 *
 * Only a failed kernel is classified, as the built-in table classifies only failures: one that
 * succeeded, has not ended, or was stopped on the control plane's request without a condition (a
 * cancel, a gang sibling's failure: KILLED, no condition) keeps what it has.
 */
import * as z from "zod";
import { nameSchema, safeParseWithIssues, strictObject } from "../spec.ts";
import { AttemptOutcome, TerminationCondition } from "../status.ts";
import { invalidMessage, type ValidationIssue } from "../validation-issue.ts";
import { RetryError } from "./errors.ts";
import { matches, type RunKernel } from "./match.ts";
import { isPermanentFailure, PermanentFailureCategory } from "./permanent-failures.ts";
import {
  exitCodeSchema,
  ExitCodeOperator,
  patternSchema,
  RETRY_POLICY_API_VERSION,
  type RuleMatcher,
} from "./policy.ts";

export const FAILURE_CATEGORY_KIND = "FailureCategory";

export const FAILURE_CATEGORY_LIMITS = {
  rules: { max: 20 },
  exitCodes: { max: 256 },
  precedence: { min: 0, max: 1000 },
} as const;

/** What a category rule may match on: a retry rule's matchers, less the category itself. */
export type CategoryMatcher = Exclude<RuleMatcher, { readonly kind: "failureCategory" }>;

export interface CategoryRule {
  /** Every one must match the kernel (at most one of each kind, in the document's order). */
  readonly matchers: readonly [CategoryMatcher, ...CategoryMatcher[]];
}

/** A validated FailureCategory: what the store keeps and the classification reads. */
export interface FailureCategoryDefinition {
  readonly name: string;
  /** Lower is checked first; ties are broken by name. */
  readonly precedence: number;
  readonly rules: readonly CategoryRule[];
}

/** A FailureCategory document breaks the schema; `issues` holds every problem. */
export class FailureCategoryValidationError extends RetryError {
  override readonly name = "FailureCategoryValidationError";
  readonly code = "INVALID_FAILURE_CATEGORY";
  readonly issues: readonly ValidationIssue[];

  constructor(issues: readonly ValidationIssue[]) {
    super(invalidMessage("failure category", issues));
    this.issues = issues;
  }
}

const CATEGORY_MATCHER_FIELDS = ["onExitCodes", "onConditions", "onTerminationMessage"] as const;

const categoryRuleSchema = strictObject({
  onExitCodes: strictObject({
    operator: z.enum(ExitCodeOperator),
    values: z.array(exitCodeSchema).min(1).max(FAILURE_CATEGORY_LIMITS.exitCodes.max),
  }).optional(),
  onConditions: z.array(z.enum(TerminationCondition)).min(1).optional(),
  onTerminationMessage: strictObject({ pattern: patternSchema }).optional(),
}).superRefine(
  (rule, ctx) => {
    if (typeof rule !== "object" || rule === null) return;
    const present = CATEGORY_MATCHER_FIELDS.filter(
      (field) => (rule as Record<string, unknown>)[field] !== undefined,
    );
    if (present.length === 0) {
      ctx.addIssue({
        code: "custom",
        message: `must have a matcher: one or more of ${CATEGORY_MATCHER_FIELDS.join(", ")}`,
      });
    }
  },
  { when: () => true },
);

const PERMANENT_NAMES: readonly string[] = Object.values(PermanentFailureCategory);

const categoryNameSchema = nameSchema.refine((name) => !PERMANENT_NAMES.includes(name), {
  error: `must not be ${PERMANENT_NAMES.join(" or ")}: those failures are never retried and keep their category`,
});

const { min: PRECEDENCE_MIN, max: PRECEDENCE_MAX } = FAILURE_CATEGORY_LIMITS.precedence;

export const FailureCategoryDocumentSchema = strictObject({
  apiVersion: z.literal(RETRY_POLICY_API_VERSION),
  kind: z.literal(FAILURE_CATEGORY_KIND),
  metadata: strictObject({ name: categoryNameSchema }),
  spec: strictObject({
    precedence: z
      .number()
      .refine(Number.isSafeInteger, { error: "must be an integer" })
      .min(PRECEDENCE_MIN)
      .max(PRECEDENCE_MAX)
      .default(0),
    rules: z.array(categoryRuleSchema).min(1).max(FAILURE_CATEGORY_LIMITS.rules.max),
  }),
});

/** What an operator writes (YAML or JSON), before validation. */
export type FailureCategoryDocument = z.input<typeof FailureCategoryDocumentSchema>;
type ParsedRule = z.output<typeof categoryRuleSchema>;

export function parseFailureCategory(input: unknown): FailureCategoryDefinition {
  const result = safeParseWithIssues(FailureCategoryDocumentSchema, input);
  if (!result.success) throw new FailureCategoryValidationError(result.issues);
  const { metadata, spec } = result.data;
  return { name: metadata.name, precedence: spec.precedence, rules: spec.rules.map(normaliseRule) };
}

function normaliseRule(rule: ParsedRule): CategoryRule {
  const matchers: CategoryMatcher[] = [];
  if (rule.onExitCodes) matchers.push({ kind: "exitCodes", ...rule.onExitCodes });
  if (rule.onConditions) matchers.push({ kind: "conditions", conditions: rule.onConditions });
  if (rule.onTerminationMessage) matchers.push({ kind: "terminationMessage", ...rule.onTerminationMessage });
  const [first, ...rest] = matchers;
  // The schema's must-have-a-matcher check makes this unreachable.
  if (!first)
    throw new FailureCategoryValidationError([{ path: "spec.rules", message: "rule without a matcher" }]);
  return { matchers: [first, ...rest] };
}

/** Back to a document (`get -o yaml`, the store): parseFailureCategory(toDocument(d)) ≡ d. */
export function failureCategoryToDocument(definition: FailureCategoryDefinition): FailureCategoryDocument {
  return {
    apiVersion: RETRY_POLICY_API_VERSION,
    kind: FAILURE_CATEGORY_KIND,
    metadata: { name: definition.name },
    spec: {
      precedence: definition.precedence,
      rules: definition.rules.map((rule) => Object.fromEntries(rule.matchers.map(matcherToDocument))),
    },
  };
}

function matcherToDocument(m: CategoryMatcher): [string, unknown] {
  switch (m.kind) {
    case "exitCodes":
      return ["onExitCodes", { operator: m.operator, values: [...m.values] }];
    case "conditions":
      return ["onConditions", [...m.conditions]];
    case "terminationMessage":
      return ["onTerminationMessage", { pattern: m.pattern }];
  }
}

// ---------------------------------------------------------------------------------------------
// Classification.

/** The definitions in the order they are checked: ascending precedence, then name. */
export function inPrecedenceOrder(
  definitions: readonly FailureCategoryDefinition[],
): FailureCategoryDefinition[] {
  return [...definitions].sort(
    (a, b) => a.precedence - b.precedence || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
  );
}

/** Whether a kernel's end is a failure a category describes (see the decisions above). */
function classifiable(kernel: RunKernel): boolean {
  const { outcome } = kernel;
  if (outcome === undefined || outcome === AttemptOutcome.SUCCEEDED) return false;
  if (outcome === AttemptOutcome.KILLED && kernel.condition === undefined) return false;
  return !isPermanentFailure(kernel.failureCategory);
}

/** The operator category of one kernel, or undefined when none applies (the built-in stays). */
export function operatorCategory(
  kernel: RunKernel,
  definitions: readonly FailureCategoryDefinition[],
): string | undefined {
  if (!classifiable(kernel)) return undefined;
  return inPrecedenceOrder(definitions).find((d) =>
    d.rules.some((rule) => rule.matchers.every((m) => matches(m, kernel))),
  )?.name;
}

/**
 * A run's kernels with their failure categories as the operator's definitions name them: each
 * failed kernel a definition matches takes that category; every other kernel is returned as it was.
 */
export function classifyRunKernels<K extends RunKernel>(
  kernels: readonly K[],
  definitions: readonly FailureCategoryDefinition[],
): K[] {
  if (definitions.length === 0) return [...kernels];
  return kernels.map((k) => {
    const category = operatorCategory(k, definitions);
    return category === undefined || category === k.failureCategory ? k : { ...k, failureCategory: category };
  });
}
