/** Builders for retry tests: kernels that failed the way Armada's conditions describe. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { RETRY_CONFIG_DEFAULTS, type RetryConfig } from "../../../functions/core/retry/config.ts";
import type { FailedRun } from "../../../functions/core/retry/evaluate.ts";
import type { RunKernel } from "../../../functions/core/retry/match.ts";
import { parseRetryPolicyText } from "../../../functions/core/retry/policy-text.ts";
import { parseRetryPolicy, type RetryPolicy } from "../../../functions/core/retry/policy.ts";

export const NOW_MS = 1_800_000_000_000;

export const EXAMPLES_DIR = join(import.meta.dirname, "../../../examples/retry-policies");

export function examplePolicy(name: "infra" | "ml-training"): RetryPolicy {
  return parseRetryPolicyText(readFileSync(join(EXAMPLES_DIR, `${name}.yaml`), "utf8"));
}

/** A policy from just its spec (the document around it is boilerplate). */
export function policy(name: string, spec: Record<string, unknown>): RetryPolicy {
  return parseRetryPolicy({ apiVersion: "cairn.dev/v1", kind: "RetryPolicy", metadata: { name }, spec });
}

export function config(overrides: Partial<RetryConfig> = {}): RetryConfig {
  return { ...RETRY_CONFIG_DEFAULTS, ...overrides };
}

type KernelOverrides = Partial<RunKernel>;

const base = (overrides: KernelOverrides): Pick<RunKernel, "index" | "agentId" | "finishedAtMs"> => ({
  index: 0,
  agentId: "agent-a",
  finishedAtMs: NOW_MS,
  ...overrides,
});

/** How Cairn's kernel reports map Armada's conditions to Iris outcomes (kernel-reports.ts). */
export const kernels = {
  preempted: (o: KernelOverrides = {}): RunKernel => ({
    ...base(o),
    outcome: "PREEMPTED",
    condition: "Preempted",
    ...o,
  }),
  evicted: (o: KernelOverrides = {}): RunKernel => ({
    ...base(o),
    outcome: "WORKER_FAILED",
    condition: "Evicted",
    ...o,
  }),
  oomKilled: (o: KernelOverrides = {}): RunKernel => ({
    ...base(o),
    outcome: "FAILED",
    exitCode: 137,
    condition: "OOMKilled",
    ...o,
  }),
  exited: (exitCode: number, o: KernelOverrides = {}): RunKernel => ({
    ...base(o),
    outcome: "FAILED",
    exitCode,
    ...o,
  }),
  succeeded: (o: KernelOverrides = {}): RunKernel => ({
    ...base(o),
    outcome: "SUCCEEDED",
    exitCode: 0,
    ...o,
  }),
  killed: (o: KernelOverrides = {}): RunKernel => ({ ...base(o), outcome: "KILLED", exitCode: 143, ...o }),
  unschedulable: (o: KernelOverrides = {}): RunKernel => ({
    index: 0,
    outcome: "UNSCHEDULABLE",
    condition: "Unschedulable",
    ...o,
  }),
};

/** A run that got as far as running, unless told otherwise. */
export function run(...runKernels: RunKernel[]): FailedRun {
  return { startedRunning: true, kernels: runKernels };
}

export function notStarted(...runKernels: RunKernel[]): FailedRun {
  return { startedRunning: false, kernels: runKernels };
}
