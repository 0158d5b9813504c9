/**
 * Which policies apply to a session (Armada's retry-policy proposal, "Policy Resolution and Composition"): the queue's
 * policies first, then those the session adds (it cannot remove the queue's); when neither names
 * any, the configured default policy if it exists; otherwise none, and the budgets decide alone.
 *
 * A named policy that does not exist (deleted since) is skipped and reported in `missing`, so the
 * caller can record it; it does not bring in the default policy, which is only for sessions and
 * queues that name nothing.
 */
import type { RetryConfig } from "./config.ts";
import type { RetryPolicy } from "./policy.ts";

export interface PolicyResolution {
  /** In evaluation order: queue policies, then session policies, each name once. */
  readonly policies: readonly RetryPolicy[];
  readonly source: "disabled" | "named" | "default" | "none";
  /** Named policies that do not exist. */
  readonly missing: readonly string[];
}

export interface PolicyNames {
  readonly queuePolicies?: readonly string[];
  readonly sessionPolicies?: readonly string[];
}

export function resolvePolicies(
  names: PolicyNames,
  config: Pick<RetryConfig, "enabled" | "defaultPolicyName">,
  known: ReadonlyMap<string, RetryPolicy>,
): PolicyResolution {
  if (!config.enabled) return { policies: [], source: "disabled", missing: [] };
  const named = [...new Set([...(names.queuePolicies ?? []), ...(names.sessionPolicies ?? [])])];
  if (named.length === 0) {
    const fallback = known.get(config.defaultPolicyName);
    return fallback
      ? { policies: [fallback], source: "default", missing: [] }
      : { policies: [], source: "none", missing: [] };
  }
  const policies: RetryPolicy[] = [];
  const missing: string[] = [];
  for (const name of named) {
    const policy = known.get(name);
    if (policy) policies.push(policy);
    else missing.push(name);
  }
  return { policies, source: "named", missing };
}
