/**
 * Whether a submission could ever run where it would be placed, told when it is submitted, as
 * Slurm's `sbatch` refuses "Requested node configuration is not available" and Kubernetes
 * records FailedScheduling at once rather than after an hour in the queue. Only a warning: the
 * session is still accepted (an agent that fits may register later, a queue's quota may be
 * raised), and its pending reason says the same while it waits.
 *
 * "Ever" means against whole capacities, not what is free now: the kernels are placed by the
 * scheduler's own rule (placement.ts placeKernels) on every registered agent as if it were
 * idle. A gang (co-scheduled) needs all its kernels placed at once, at most `perAgent` per agent;
 * independent tasks are each one kernel. A Fargate session needs its queue's vCPU quota to hold
 * its kernels (each its own task, so a gang needs the sum). Pure.
 */
import { executorOf, Executor } from "./fargate.ts";
import { jobSettings } from "./jobs.ts";
import type { ResourceRequest, SessionSpec } from "./model.ts";
import { placeKernels } from "./placement.ts";

export interface RegisteredAgent {
  readonly id: string;
  readonly capacity: ResourceRequest;
  readonly labels?: Readonly<Record<string, string>>;
}

export interface FitContext {
  /** Agents registered and taking work (not lost, not draining; no Fargate pool). */
  readonly agents: readonly RegisteredAgent[];
  /** The spec's queue's Fargate vCPU quota; undefined when the queue has no Fargate settings. */
  readonly fargateVcpuQuota?: number;
}

/** Why the submission can never be placed as things stand, or undefined when it can. */
export function submissionFitWarning(spec: SessionSpec, context: FitContext): string | undefined {
  const { coscheduled, perAgent } = jobSettings(spec);
  const kernels = coscheduled ? spec.replicas : 1;
  const what =
    kernels === 1
      ? `a task of ${spec.resources.cpu} cpu and ${spec.resources.memoryMiB} MiB`
      : `a gang of ${kernels} tasks of ${spec.resources.cpu} cpu and ${spec.resources.memoryMiB} MiB each`;
  if (executorOf(spec) === Executor.fargate) {
    const queue = spec.queue;
    if (context.fargateVcpuQuota === undefined) {
      return `queue "${queue}" has no Fargate capacity, so ${what} waits: set one with \`cairn queue update ${queue} --vcpu-quota N\``;
    }
    const vcpu = kernels * spec.resources.cpu;
    if (vcpu > context.fargateVcpuQuota) {
      return (
        `${what} needs ${vcpu} vCPU at once; queue ${queue}'s Fargate quota is ${context.fargateVcpuQuota} vCPU: ` +
        `raise it with \`cairn queue update ${queue} --vcpu-quota N\``
      );
    }
    return undefined;
  }
  if (context.agents.length === 0) {
    return `no agent is registered: ${what} waits until one that fits registers (\`cairn agent\`)`;
  }
  const placed = placeKernels(
    Array.from({ length: kernels }, (_, index) => ({ index, resources: spec.resources })),
    context.agents.map((a) => ({
      id: a.id,
      free: a.capacity,
      capacity: a.capacity,
      ...(a.labels !== undefined ? { labels: a.labels } : {}),
    })),
    {
      ...(kernels > 1 ? { maxPerAgent: perAgent } : {}),
      ...(spec.nodeSelector !== undefined ? { nodeSelector: spec.nodeSelector } : {}),
    },
  );
  if (placed.ok) return undefined;
  return `no registered agent could ever run ${what}, even idle: ${placed.reason}`;
}
