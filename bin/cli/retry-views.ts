/**
 * The JSON shapes of retry policies, queues and the retry configuration (`--output json`), and
 * their text blocks and tables. A policy is shown as its document (what `create -f` reads back);
 * the configuration in the operator's shape (durations as strings). Pure.
 */
import type { Queue, QueueFargateSettings } from "../../functions/core/model.ts";
import {
  retryConfigToDocument,
  type RetryConfig,
  type RetryConfigDocument,
} from "../../functions/core/retry/config.ts";
import { formatDuration } from "../../functions/core/retry/duration.ts";
import {
  retryPolicyToDocument,
  type RetryPolicy,
  type RetryPolicyDocument,
  type RetryRule,
  type RuleMatcher,
} from "../../functions/core/retry/policy.ts";
import type { BackoffOverride } from "../../functions/core/retry/backoff.ts";
import { renderBlockRows, renderTable } from "./table.ts";
import { iso } from "./views.ts";

const NONE = "-";

// ---- policies

export function policyView(policy: RetryPolicy): RetryPolicyDocument {
  return retryPolicyToDocument(policy);
}

export interface PolicyListView {
  readonly policies: readonly RetryPolicyDocument[];
}

export function policyListView(policies: readonly RetryPolicy[]): PolicyListView {
  return { policies: policies.map(policyView) };
}

export function renderPolicy(policy: RetryPolicy): string {
  const rows: [string, string][] = [
    ["retryLimit", policy.retryLimit === undefined ? "- (the global cap)" : String(policy.retryLimit)],
    ["defaultAction", policy.defaultAction],
    ["backoff", backoffText(policy.backoff)],
    ["antiAffinity", policy.antiAffinity ?? NONE],
  ];
  const rules =
    policy.rules.length === 0
      ? ["  no rules: every failure gets the default action"]
      : renderTable(
          ["RULE", "ACTION", "KERNEL", "MATCH", "LIMIT", "BACKOFF", "ANTI-AFFINITY"],
          policy.rules.map((rule, i) => ruleRow(i, rule)),
        )
          .split("\n")
          .map((line) => `  ${line}`);
  return [
    `retry policy ${policy.name}`,
    ...renderBlockRows(rows),
    ...rules,
    ...initContainersNote(policy.rules),
  ].join("\n");
}

/** The rules that write includeInitContainers, and what it does here (nothing: no init containers). */
function initContainersNote(rules: readonly RetryRule[]): string[] {
  const written = [...rules.entries()].filter(([, rule]) => rule.includeInitContainers !== undefined);
  if (written.length === 0) return [];
  const list = written.map(([i, rule]) => `rule ${i}: ${String(rule.includeInitContainers)}`).join(", ");
  return [
    `  includeInitContainers (${list}): Cairn kernels have no init containers, so it matches nothing extra`,
  ];
}

function ruleRow(index: number, rule: RetryRule): string[] {
  return [
    String(index),
    rule.action,
    rule.kernel === undefined ? "first failed" : String(rule.kernel),
    rule.matchers.map(matcherText).join(" and "),
    rule.retryLimit === undefined ? NONE : String(rule.retryLimit),
    rule.backoff === undefined ? NONE : backoffText(rule.backoff),
    rule.antiAffinity ?? NONE,
  ];
}

export function matcherText(match: RuleMatcher): string {
  switch (match.kind) {
    case "exitCodes":
      return `exit code ${match.operator === "In" ? "in" : "not in"} ${match.values.join(", ")}`;
    case "conditions":
      return `condition ${match.conditions.join(", ")}`;
    case "terminationMessage":
      return `message /${match.pattern}/`;
    case "failureCategory":
      return `category ${match.categories.join(", ")}`;
  }
}

function backoffText(backoff: BackoffOverride | undefined): string {
  if (backoff === undefined) return NONE;
  const parts = [
    backoff.initialDelayMs === undefined ? undefined : `initial ${formatDuration(backoff.initialDelayMs)}`,
    backoff.maxDelayMs === undefined ? undefined : `max ${formatDuration(backoff.maxDelayMs)}`,
    backoff.multiplier === undefined ? undefined : `x${backoff.multiplier}`,
  ].filter((part) => part !== undefined);
  return parts.length === 0 ? NONE : parts.join(", ");
}

export function renderPolicyList(policies: readonly RetryPolicy[]): string {
  if (policies.length === 0) return "no retry policies";
  return renderTable(
    ["NAME", "RETRY-LIMIT", "DEFAULT", "RULES"],
    policies.map((p) => [
      p.name,
      p.retryLimit === undefined ? NONE : String(p.retryLimit),
      p.defaultAction,
      String(p.rules.length),
    ]),
  );
}

// ---- queues

export interface QueueView {
  readonly name: string;
  readonly priority: number;
  readonly retryPolicies: readonly string[];
  /** Absent: the queue has no Fargate settings. */
  readonly fargate?: QueueFargateSettings;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export function queueView(queue: Queue): QueueView {
  return {
    name: queue.name,
    priority: queue.priority,
    retryPolicies: [...queue.retryPolicies],
    ...(queue.fargate === undefined
      ? {}
      : {
          fargate: {
            capacityProvider: queue.fargate.capacityProvider,
            vcpuQuota: queue.fargate.vcpuQuota,
          },
        }),
    createdAt: iso(queue.createdAtMs),
    updatedAt: iso(queue.updatedAtMs),
  };
}

export function queueListView(queues: readonly Queue[]): { readonly queues: readonly QueueView[] } {
  return { queues: queues.map(queueView) };
}

export function renderQueue(view: QueueView): string {
  const rows: [string, string][] = [
    ["priority", String(view.priority)],
    ["retry policies", view.retryPolicies.length === 0 ? NONE : view.retryPolicies.join(", ")],
    ["fargate", fargateText(view.fargate)],
    ["created", view.createdAt],
    ["updated", view.updatedAt],
  ];
  return [`queue ${view.name}`, ...renderBlockRows(rows)].join("\n");
}

export function renderQueueList(views: readonly QueueView[]): string {
  if (views.length === 0) return "no queues";
  // The FARGATE column only once some queue has Fargate settings: agent-only setups keep theirs.
  const fargate = views.some((q) => q.fargate !== undefined);
  return renderTable(
    ["NAME", "PRIORITY", "RETRY-POLICIES", ...(fargate ? ["FARGATE"] : []), "UPDATED"],
    views.map((q) => [
      q.name,
      String(q.priority),
      q.retryPolicies.length === 0 ? NONE : q.retryPolicies.join(","),
      ...(fargate ? [fargateText(q.fargate)] : []),
      q.updatedAt,
    ]),
  );
}

/** `FARGATE_SPOT, 16 vCPU`; `-` for a queue without Fargate settings. */
function fargateText(fargate: QueueFargateSettings | undefined): string {
  return fargate === undefined ? NONE : `${fargate.capacityProvider}, ${fargate.vcpuQuota} vCPU`;
}

// ---- the retry configuration

/** The operator's shape of the configuration, as `parseRetryConfig` reads it. */
export type { RetryConfigDocument };
export const retryConfigDocument = retryConfigToDocument;

export interface RetryConfigView extends RetryConfigDocument {
  /** False while nothing has been set: the defaults apply. */
  readonly stored: boolean;
}

export function retryConfigView(config: RetryConfig, stored: boolean): RetryConfigView {
  return { ...retryConfigDocument(config), stored };
}

export function renderRetryConfig(view: RetryConfigView): string {
  const b = view.defaultBackoff;
  const rows: [string, string][] = [
    ["enabled", view.enabled ? "true" : "false (policies ignored; the spec's budgets decide)"],
    ["globalMaxRetries", String(view.globalMaxRetries)],
    ["defaultPolicy", `${view.defaultPolicyName} (used when it exists)`],
    ["defaultBackoff", `initial ${b.initialDelay}, max ${b.maxDelay}, x${b.multiplier}`],
  ];
  return [
    view.stored ? "retry configuration" : "retry configuration (defaults: nothing set yet)",
    ...renderBlockRows(rows),
  ].join("\n");
}
