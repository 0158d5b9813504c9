/**
 * The submission filter's contract (HPC Pack's job and task states: "During validation, the job might
 * also pass through a custom submission filter application that is defined by the cluster
 * administrator"). The filter sees each submission after it passed its template and answers
 * accept, reject with a reason, or modify (the spec it returns is validated again). An answer
 * that does not parse, an error or a timeout is a failure, settled by the configured
 * `onFailure`: `accept` (fail-open) or `reject` (fail-closed).
 */
import * as z from "zod";
import type { SessionSpec } from "./model.ts";
import { safeParseWithIssues, strictObject } from "./spec.ts";

export const FILTER_FAILURE_MODES = ["accept", "reject"] as const;
export type FilterFailureMode = (typeof FILTER_FAILURE_MODES)[number];

/** What the filter is given. */
export interface SubmissionFilterRequest {
  readonly jobId: string;
  /** The spec as validated: the template's defaults applied. */
  readonly spec: SessionSpec;
  readonly template: string;
}

export const FilterAnswerSchema = z.discriminatedUnion(
  "decision",
  [
    strictObject({ decision: z.literal("accept") }),
    strictObject({ decision: z.literal("reject"), reason: z.string().min(1).max(1024) }),
    /** The whole spec to submit instead, as a user would write it; validated again. */
    strictObject({ decision: z.literal("modify"), spec: z.record(z.string(), z.unknown()) }),
  ],
  { error: (issue) => (issue.code === "invalid_union" ? "must be accept, reject or modify" : undefined) },
);
export type FilterAnswer = z.output<typeof FilterAnswerSchema>;

/** What the coordinator does with the filter's outcome. */
export type FilterVerdict =
  | { readonly kind: "accept" }
  | { readonly kind: "reject"; readonly reason: string }
  | { readonly kind: "modify"; readonly spec: Readonly<Record<string, unknown>> };

/**
 * The verdict for what came back: `{ answer }` the filter's reply (parsed here), `{ failure }`
 * why there was none (an error, a timeout).
 */
export function filterVerdict(
  outcome: { readonly answer: unknown } | { readonly failure: string },
  onFailure: FilterFailureMode,
): FilterVerdict {
  let failure: string;
  if ("answer" in outcome) {
    const parsed = safeParseWithIssues(FilterAnswerSchema, outcome.answer);
    if (parsed.success) {
      const a = parsed.data;
      if (a.decision === "accept") return { kind: "accept" };
      if (a.decision === "reject")
        return { kind: "reject", reason: `rejected by the submission filter: ${a.reason}` };
      return { kind: "modify", spec: a.spec };
    }
    failure = `malformed answer (${parsed.issues.map((i) => `${i.path}: ${i.message}`).join("; ")})`;
  } else failure = outcome.failure;
  return onFailure === "accept"
    ? { kind: "accept" }
    : { kind: "reject", reason: `the submission filter failed (${failure}) and fails closed` };
}
