/**
 * Retries used of each budget, for people: the two budgets of Iris's task states, the global cap on
 * counted retries, each rule's retries and the returns to PENDING of the current run. A budget
 * the spec does not set is shown with its default and what it means (core/retry/budgets.ts: an
 * unwritten budget caps retries only when no retry policy applies).
 */
import type { Session } from "../functions/core/model.ts";
import { BUDGET_DEFAULTS } from "../functions/core/retry/budgets.ts";
import type { RetryConfig } from "../functions/core/retry/config.ts";
import { SPEC_DEFAULTS } from "../functions/core/spec.ts";
import { html, type Html } from "./html.ts";

export interface BudgetLine {
  readonly budget: string;
  readonly used: number;
  readonly limit: string;
}

export function budgetLines(session: Session, config: RetryConfig): BudgetLine[] {
  const retry = session.retry;
  const spec = session.spec.retry;
  const written = (value: number | undefined, fallback: number) =>
    value !== undefined ? `${value} (spec)` : `${fallback} (default; applies when no retry policy does)`;
  const lines: BudgetLine[] = [
    {
      budget: "failure (FAILED runs)",
      used: retry?.failureCount ?? 0,
      limit: written(spec?.maxRetriesFailure, BUDGET_DEFAULTS.maxRetriesFailure),
    },
    {
      budget: "preemption (WORKER_FAILED, PREEMPTED runs)",
      used: retry?.preemptionCount ?? 0,
      limit: written(spec?.maxRetriesPreemption, BUDGET_DEFAULTS.maxRetriesPreemption),
    },
    {
      budget: "counted retries (global cap under policies)",
      used: retry?.totalRetries ?? 0,
      limit: `${config.globalMaxRetries} (globalMaxRetries)`,
    },
    ...Object.entries(retry?.ruleRetries ?? {}).map(([rule, used]) => ({
      budget: `rule ${rule}`,
      used,
      limit: "the rule's retryLimit",
    })),
    {
      budget: "returns to PENDING in this run",
      used: retry?.pendingReturns ?? 0,
      limit: `${session.spec.maxPendingReturns ?? SPEC_DEFAULTS.maxPendingReturns} (maxPendingReturns)`,
    },
  ];
  return lines;
}

export function budgetTable(session: Session, config: RetryConfig): Html {
  return html`<table class="budgets">
    <thead>
      <tr>
        <th>budget</th>
        <th class="num">used</th>
        <th>limit</th>
      </tr>
    </thead>
    <tbody>
      ${budgetLines(session, config).map(
        (l) =>
          html`<tr>
            <td>${l.budget}</td>
            <td class="num">${l.used}</td>
            <td>${l.limit}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

/** "1/0 failures, 0/100 preemptions": a task row's compact form. */
export function budgetSummary(session: Session): string {
  const spec = session.spec.retry;
  const failures = `${session.retry?.failureCount ?? 0}/${spec?.maxRetriesFailure ?? BUDGET_DEFAULTS.maxRetriesFailure}`;
  const preemptions = `${session.retry?.preemptionCount ?? 0}/${spec?.maxRetriesPreemption ?? BUDGET_DEFAULTS.maxRetriesPreemption}`;
  return `${failures} failures, ${preemptions} preemptions`;
}
