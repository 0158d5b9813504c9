/**
 * ECS's own events as kernel reports. A Fargate kernel has no agent to report it: the
 * `ECS Task State Change` events of Cairn's cluster come to the coordinator with the agents'
 * reports, and each becomes the report an agent would have sent (core/ecs-task-events.ts),
 * applied the same way.
 *
 * Such a report is not signed: what vouches for it is its source. Only AWS puts `aws.*` events
 * on a bus (the embedded runtime's bus refuses them from callers too), and the rule forwards
 * those of Cairn's cluster alone; an event naming another cluster is refused here all the same.
 * What it may change is checked as for an agent: the kernel must be on Fargate (its queue's
 * pool), of the current run and placement (the task's identity carries both), and the task must
 * be the kernel's (a late event of an earlier task is refused, and so is the end of a task that
 * was never recorded as a kernel's while the kernel waits to be started).
 */
import { identityOfTask, kernelReportOfTask, parseEcsTaskStateChangeDetail } from "../ecs-task-events.ts";
import { isFargatePool } from "../fargate-pool.ts";
import type { KernelReport } from "../kernel-reports.ts";
import type { SessionWithKernels } from "../model.ts";
import { sessionPlacement } from "../sessions.ts";
import { KernelStatus } from "../status.ts";

/** The envelope of ECS's task events (the topology's rule matches the same). */
export const ECS_EVENT_SOURCE = "aws.ecs";
export const ECS_TASK_STATE_CHANGE = "ECS Task State Change";

/** One task event, as the kernel report it makes and the kernel it names. */
export interface TaskStateReport {
  readonly eventId: string | undefined;
  readonly detailType: string;
  readonly taskArn: string;
  readonly sessionId: string;
  readonly kernelIndex: number;
  readonly runIndex: number;
  /** Absent counts as 0, as for an agent's report. */
  readonly placement?: number;
  readonly report: KernelReport;
}

/** What a task event comes to before anything is read. */
export type TaskEventParse =
  | { readonly kind: "task-report"; readonly report: TaskStateReport }
  /** A state that reports nothing (PROVISIONING, STOPPING…): applied as nothing, not refused. */
  | { readonly kind: "ignored" }
  | {
      readonly kind: "invalid";
      readonly eventId: string | undefined;
      readonly detailType: string | undefined;
      readonly message: string;
    };

/**
 * The task event in `envelope`, or undefined when it is not one (another parser's). `clusterArn`
 * is the Fargate executor's cluster; undefined when the stack has none.
 */
export function parseTaskEvent(
  envelope: unknown,
  clusterArn: string | undefined,
): TaskEventParse | undefined {
  if (typeof envelope !== "object" || envelope === null) return undefined;
  const e = envelope as Record<string, unknown>;
  if (e["source"] !== ECS_EVENT_SOURCE || e["detail-type"] !== ECS_TASK_STATE_CHANGE) return undefined;
  const eventId = typeof e["id"] === "string" ? e["id"] : undefined;
  const detailType = ECS_TASK_STATE_CHANGE;
  const invalid = (message: string): TaskEventParse => ({ kind: "invalid", eventId, detailType, message });
  if (clusterArn === undefined) {
    return invalid("source: aws.ecs events report Fargate kernels, and this stack has no Fargate executor");
  }
  const eventTimeMs = typeof e["time"] === "string" ? Date.parse(e["time"]) : Number.NaN;
  if (Number.isNaN(eventTimeMs)) return invalid("time: must be an ISO 8601 time");
  const parsed = parseEcsTaskStateChangeDetail(e["detail"]);
  if (!parsed.ok) {
    return invalid(parsed.issues.map((issue) => `detail.${issue.path}: ${issue.message}`).join("; "));
  }
  const { detail } = parsed;
  if (detail.clusterArn !== clusterArn) {
    return invalid(`detail.clusterArn: ${detail.clusterArn} is not Cairn's Fargate cluster (${clusterArn})`);
  }
  const identity = identityOfTask(detail);
  if (!identity.ok)
    return invalid(`detail: task ${detail.taskArn} is not a Cairn kernel's: ${identity.reason}`);
  const out = kernelReportOfTask(detail, { eventTimeMs });
  if (out.kind === "none") return { kind: "ignored" };
  const { sessionId, kernelIndex, runIndex, placement } = identity.identity;
  return {
    kind: "task-report",
    report: {
      eventId,
      detailType,
      taskArn: detail.taskArn,
      sessionId,
      kernelIndex,
      runIndex,
      ...(placement !== undefined ? { placement } : {}),
      report: out.report,
    },
  };
}

/**
 * Why a task's report does not apply to the session as read: the kernel must be on Fargate, of
 * the run and placement the task was started for, and running this task (when it has one yet:
 * the start records it right after RunTask, and an early event must not be lost to that race).
 */
export function taskReportRefusal(t: TaskStateReport, s: SessionWithKernels): string | undefined {
  const kernel = s.kernels.find((k) => k.index === t.kernelIndex);
  const named = `kernel ${t.kernelIndex} of session ${t.sessionId}`;
  if (!kernel)
    return `detail.overrides: CAIRN_KERNEL_INDEX: session ${t.sessionId} has no kernel ${t.kernelIndex}`;
  if (kernel.agentId === undefined || !isFargatePool(kernel.agentId)) {
    return (
      `detail.taskArn: ${named} is ` +
      (kernel.agentId === undefined ? "not placed" : `placed on agent ${kernel.agentId}`) +
      `, not on Fargate: task ${t.taskArn} does not run it`
    );
  }
  if (t.runIndex !== s.session.runIndex) {
    return `detail.overrides: CAIRN_RUN_INDEX: run ${t.runIndex} of session ${t.sessionId} has ended (the session is on run ${s.session.runIndex})`;
  }
  const placement = t.placement ?? 0;
  const current = sessionPlacement(s.session);
  if (placement !== current) {
    return `detail.overrides: CAIRN_PLACEMENT: placement ${placement} of run ${t.runIndex} of session ${t.sessionId} has ended (the session is on placement ${current})`;
  }
  if (kernel.taskArn !== undefined && kernel.taskArn !== t.taskArn) {
    return `detail.taskArn: ${named} runs task ${kernel.taskArn}, not ${t.taskArn} (a late event of an earlier task)`;
  }
  // A gang that could not start has its started members stopped (runGang's rollback) and
  // records none of them: their ends must not end kernels that are still to be started.
  if (kernel.taskArn === undefined && t.report.status !== "RUNNING" && NOT_STARTED.has(kernel.status)) {
    return `detail.taskArn: ${named} is ${kernel.status} and has no task: task ${t.taskArn} was stopped before it was the kernel's (a gang that could not start)`;
  }
  return undefined;
}

/** Kernel statuses before a start: a kernel's task is recorded right after RunTask, before CREATING. */
const NOT_STARTED: ReadonlySet<KernelStatus> = new Set([
  KernelStatus.PENDING,
  KernelStatus.SCHEDULED,
  KernelStatus.PREPARING,
  KernelStatus.PULLING,
  KernelStatus.PREPARED,
]);
