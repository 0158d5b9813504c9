/**
 * Kernel reports from ECS's own events: a Fargate kernel has no agent to report for
 * it, so the `ECS Task State Change` events EventBridge delivers for its task are turned into the
 * same `KernelReport`s an agent sends, and the coordinator judges them identically.
 *
 * - The event detail is parsed at the edge (`parseEcsTaskStateChangeDetail`): lenient on fields
 *   Cairn does not read (ECS adds fields over time and says so), strict on those it does.
 * - Two tables decide: `ECS_LAST_STATUS_TABLE` by the task's `lastStatus`, and once it is STOPPED,
 *   `ECS_STOP_CODE_TABLE` by its `stopCode`. They are data so the docs can show them as they are.
 * - A task names its kernel through `startedBy` and the kernel container's environment, written
 *   by `ecsTaskIdentity` when the task is started and read back by `identityOfTask`.
 *
 * Sources (AWS documentation):
 * - [events]    https://docs.aws.amazon.com/AmazonECS/latest/developerguide/ecs_task_events.html
 * - [lifecycle] https://docs.aws.amazon.com/AmazonECS/latest/developerguide/task-lifecycle.html
 * - [spot]      https://docs.aws.amazon.com/AmazonECS/latest/developerguide/fargate-capacity-providers.html
 *               (a Spot interruption's warning: `stopCode` TerminationNotice while still RUNNING)
 * - [stopcodes] https://docs.aws.amazon.com/AmazonECS/latest/APIReference/API_Task.html (`stopCode`)
 * - [startedby] https://docs.aws.amazon.com/AmazonECS/latest/APIReference/API_StartTask.html and
 *               API_RunTask.html: `startedBy` is letters, digits, `-`, `/`, `_`; StartTask takes up to
 *               36 of them, RunTask up to 128
 * - [stoptask]  https://docs.aws.amazon.com/AmazonECS/latest/APIReference/API_StopTask.html
 *               ("Any tags associated with the task will be deleted": tags cannot identify a stopped task)
 * - [oom]       https://repost.aws/knowledge-center/ecs-resolve-outofmemory-errors
 *               ("OutOfMemoryError: Container killed due to memory usage")
 */
import * as z from "zod";
import {
  kernelIndexSchema,
  MAX_MESSAGE_LENGTH,
  placementSchema,
  runIndexSchema,
  sessionIdSchema,
} from "./event-fields.ts";
import type { KernelReport } from "./kernel-reports.ts";
import { safeParseWithIssues } from "./spec.ts";
import { TerminationCondition } from "./status.ts";
import type { ValidationIssue } from "./validation-issue.ts";
import { fnv1a32 } from "./hash.ts";
import { PermanentFailureCategory } from "./retry/permanent-failures.ts";
import { taskIdentityEnv } from "./task-env.ts";

// ---------------------------------------------------------------------------------------------
// The event detail, as Cairn reads it.

/** ECS writes times in events as ISO strings ([events]); DescribeTasks' epoch seconds are not accepted. */
const isoTimeSchema = z.string().refine((s) => !Number.isNaN(Date.parse(s)), {
  error: "must be an ISO 8601 time",
});

const containerSchema = z.looseObject({
  name: z.string().min(1),
  /** Absent (or null) until the container has exited. */
  exitCode: z.number().int().nullish(),
  lastStatus: z.string().optional(),
  /** Why the container stopped, e.g. `OutOfMemoryError: …` ([oom]). */
  reason: z.string().optional(),
});

const containerOverrideSchema = z.looseObject({
  name: z.string().min(1),
  environment: z.array(z.looseObject({ name: z.string(), value: z.string() })).optional(),
});

export const EcsTaskStateChangeDetailSchema = z.looseObject({
  clusterArn: z.string().min(1),
  taskArn: z.string().min(1),
  taskDefinitionArn: z.string().min(1).optional(),
  lastStatus: z.string().min(1),
  desiredStatus: z.string().min(1),
  stopCode: z.string().optional(),
  stoppedReason: z.string().optional(),
  startedBy: z.string().optional(),
  group: z.string().optional(),
  containers: z.array(containerSchema).optional(),
  overrides: z.looseObject({ containerOverrides: z.array(containerOverrideSchema).optional() }).optional(),
  /** Only while the task lives: StopTask deletes them ([stoptask]). */
  tags: z.array(z.looseObject({ key: z.string(), value: z.string() })).optional(),
  /** Increases with every change of the task; a duplicate event repeats it ([events]). */
  version: z.number().int().min(0).optional(),
  createdAt: isoTimeSchema.optional(),
  startedAt: isoTimeSchema.optional(),
  stoppingAt: isoTimeSchema.optional(),
  executionStoppedAt: isoTimeSchema.optional(),
  stoppedAt: isoTimeSchema.optional(),
  updatedAt: isoTimeSchema.optional(),
});

export type EcsTaskStateChangeDetail = z.output<typeof EcsTaskStateChangeDetailSchema>;

export type ParsedEcsTaskStateChange =
  | { readonly ok: true; readonly detail: EcsTaskStateChangeDetail }
  | { readonly ok: false; readonly issues: readonly ValidationIssue[] };

/** Parses an event's `detail`; every problem is returned, named by its path in the detail. */
export function parseEcsTaskStateChangeDetail(input: unknown): ParsedEcsTaskStateChange {
  const result = safeParseWithIssues(EcsTaskStateChangeDetailSchema, input);
  return result.success ? { ok: true, detail: result.data } : { ok: false, issues: result.issues };
}

// ---------------------------------------------------------------------------------------------
// The mapping tables.

/** A task's lifecycle states, in order ([lifecycle]). */
export const EcsLastStatus = {
  PROVISIONING: "PROVISIONING",
  PENDING: "PENDING",
  ACTIVATING: "ACTIVATING",
  RUNNING: "RUNNING",
  DEACTIVATING: "DEACTIVATING",
  STOPPING: "STOPPING",
  DEPROVISIONING: "DEPROVISIONING",
  STOPPED: "STOPPED",
} as const;
export type EcsLastStatus = (typeof EcsLastStatus)[keyof typeof EcsLastStatus];

export interface LastStatusRow {
  /**
   * What the status means for the kernel. `PREPARING` and `unchanged` report nothing: the kernel
   * is already CREATING when its task exists, and reports only move a kernel forward.
   */
  readonly kernel: "PREPARING" | "RUNNING" | "unchanged" | "ended";
  readonly why: string;
}

export const ECS_LAST_STATUS_TABLE = {
  PROVISIONING: { kernel: "PREPARING", why: "ECS is attaching the task's network interface" },
  PENDING: { kernel: "PREPARING", why: "the task waits for Fargate capacity or its image" },
  ACTIVATING: { kernel: "PREPARING", why: "the containers are being started" },
  RUNNING: { kernel: "RUNNING", why: "the command runs" },
  DEACTIVATING: { kernel: "unchanged", why: "the task is stopping: its end comes with STOPPED" },
  STOPPING: { kernel: "unchanged", why: "the task is stopping: its end comes with STOPPED" },
  DEPROVISIONING: { kernel: "unchanged", why: "the task is stopping: its end comes with STOPPED" },
  STOPPED: { kernel: "ended", why: "how it ended is the stop code's row" },
} as const satisfies Record<EcsLastStatus, LastStatusRow>;

/** ECS's stop codes ([stopcodes]). */
export const EcsStopCode = {
  TaskFailedToStart: "TaskFailedToStart",
  EssentialContainerExited: "EssentialContainerExited",
  UserInitiated: "UserInitiated",
  ServiceSchedulerInitiated: "ServiceSchedulerInitiated",
  SpotInterruption: "SpotInterruption",
  TerminationNotice: "TerminationNotice",
  InfrastructureHealth: "InfrastructureHealth",
} as const;
export type EcsStopCode = (typeof EcsStopCode)[keyof typeof EcsStopCode];

/** The row for a STOPPED task without a stop code, or with one newer than this table. */
export const UNKNOWN_STOP_CODE = "(none or unknown)";

export interface StopCodeRow {
  /** ERROR is how an agent reports a kernel that could not be started; TERMINATED, one that ran. */
  readonly status: "TERMINATED" | "ERROR";
  /**
   * The termination condition: a fixed one, or `fromStopReason` for Cairn's own StopTask, whose
   * reason carries the condition of the stop command (`ecsStopReason`), as an agent reports it.
   */
  readonly condition?:
    typeof TerminationCondition.Preempted | typeof TerminationCondition.Evicted | "fromStopReason";
  /** Whether the kernel container's exit code (and an OOM kill in its reason) is reported. */
  readonly exitCode: boolean;
  /** The report's message: ECS's `stoppedReason`, or the kernel container's own `reason`. */
  readonly message: "stoppedReason" | "containerReason";
  readonly why: string;
}

export const ECS_STOP_CODE_TABLE = {
  TaskFailedToStart: {
    status: "ERROR",
    exitCode: false,
    message: "stoppedReason",
    why: "a start failure (image pull, network, resources), reported as an agent reports a failed start, with ECS's reason",
  },
  EssentialContainerExited: {
    status: "TERMINATED",
    exitCode: true,
    message: "containerReason",
    why: "the command ended: its exit code decides (0 succeeded); an OutOfMemoryError is OOMKilled",
  },
  UserInitiated: {
    status: "TERMINATED",
    condition: "fromStopReason",
    exitCode: true,
    message: "stoppedReason",
    why: "StopTask (Cairn's cancel, preemption or deadline): as an agent's stop, with the stop command's condition",
  },
  SpotInterruption: {
    status: "TERMINATED",
    condition: TerminationCondition.Preempted,
    exitCode: true,
    message: "stoppedReason",
    why: "Fargate Spot took the capacity back: a preemption, retried under the preemption budget",
  },
  TerminationNotice: {
    status: "TERMINATED",
    condition: TerminationCondition.Preempted,
    exitCode: true,
    message: "stoppedReason",
    why: "Fargate Spot's two-minute warning ([spot]), if it is still the code when the task stops: a preemption",
  },
  ServiceSchedulerInitiated: {
    status: "TERMINATED",
    condition: TerminationCondition.Evicted,
    exitCode: true,
    message: "stoppedReason",
    why: "an ECS service stopped it, neither Cairn nor the command: a worker failure, retried under the preemption budget",
  },
  InfrastructureHealth: {
    status: "TERMINATED",
    condition: TerminationCondition.Evicted,
    exitCode: true,
    message: "stoppedReason",
    why: "ECS stopped it for the health of the infrastructure underneath: a worker failure",
  },
  [UNKNOWN_STOP_CODE]: {
    status: "TERMINATED",
    exitCode: true,
    message: "stoppedReason",
    why: "ended without a stop code Cairn knows: the exit code decides, as for an agent's kernel",
  },
} as const satisfies Record<EcsStopCode | typeof UNKNOWN_STOP_CODE, StopCodeRow>;

/** Container `reason` prefixes that name a condition ([oom]). */
export const CONTAINER_REASON_CONDITIONS: readonly {
  readonly prefix: string;
  readonly condition: TerminationCondition;
}[] = [{ prefix: "OutOfMemoryError", condition: TerminationCondition.OOMKilled }];

// ---------------------------------------------------------------------------------------------
// Events to reports.

/** The container Cairn's task definitions run the command in. */
export const KERNEL_CONTAINER_NAME = "kernel";

export type EcsTaskReport =
  /** The report an agent would have sent; `row` is the table row that decided it. */
  | { readonly kind: "report"; readonly report: KernelReport; readonly row: string }
  /** Nothing to report; `kernelStatus` says what the task's state means for the kernel, for people. */
  | {
      readonly kind: "none";
      readonly kernelStatus?: "PREPARING";
      readonly reason: string;
      readonly row: string;
    };

/**
 * The kernel report one task state change makes. `eventTimeMs` (the envelope's `time`) dates the
 * report when the detail carries no time of its own for the change.
 */
export function kernelReportOfTask(
  detail: EcsTaskStateChangeDetail,
  context: { readonly eventTimeMs: number },
): EcsTaskReport {
  const statusRow = (ECS_LAST_STATUS_TABLE as Record<string, LastStatusRow>)[detail.lastStatus];
  if (statusRow === undefined) {
    return {
      kind: "none",
      reason: `lastStatus ${detail.lastStatus} is not one Cairn knows`,
      row: detail.lastStatus,
    };
  }
  const row = detail.lastStatus;
  switch (statusRow.kernel) {
    case "PREPARING":
      return { kind: "none", kernelStatus: "PREPARING", reason: statusRow.why, row };
    case "unchanged":
      return { kind: "none", reason: statusRow.why, row };
    case "RUNNING":
      return {
        kind: "report",
        report: { status: "RUNNING", atMs: timeMs(detail.startedAt) ?? context.eventTimeMs },
        row,
      };
    case "ended":
      return stoppedReport(detail, context.eventTimeMs);
  }
}

function stoppedReport(detail: EcsTaskStateChangeDetail, eventTimeMs: number): EcsTaskReport {
  const code =
    detail.stopCode !== undefined && Object.hasOwn(ECS_STOP_CODE_TABLE, detail.stopCode)
      ? (detail.stopCode as EcsStopCode)
      : UNKNOWN_STOP_CODE;
  const row: StopCodeRow = ECS_STOP_CODE_TABLE[code];
  const container = kernelContainer(detail);
  const exitCode = row.exitCode ? (container?.exitCode ?? undefined) : undefined;
  const fromContainer = row.exitCode ? containerCondition(container?.reason) : undefined;
  const stop = row.condition === "fromStopReason" ? parseEcsStopReason(detail.stoppedReason) : undefined;
  const condition =
    row.condition === "fromStopReason"
      ? (stop?.condition ?? fromContainer)
      : (row.condition ?? fromContainer);
  const text =
    row.message === "stoppedReason"
      ? stop !== undefined
        ? stop.reason
        : detail.stoppedReason
      : container?.reason;
  const atMs =
    timeMs(detail.stoppedAt) ??
    timeMs(detail.executionStoppedAt) ??
    timeMs(detail.stoppingAt) ??
    timeMs(detail.updatedAt) ??
    eventTimeMs;
  // A start the image can never make (its command is not in it) is no cluster failure: no
  // automatic retry could clear it (retry/start-failures.ts), as an agent reports it.
  const permanent =
    row.status === "ERROR" && text !== undefined && EXECUTABLE_NOT_FOUND.test(text)
      ? PermanentFailureCategory.ExecutableNotFound
      : undefined;
  const report: KernelReport = {
    status: row.status,
    ...(exitCode !== undefined ? { exitCode } : {}),
    ...(condition !== undefined ? { condition } : {}),
    ...(text !== undefined && text !== "" ? { message: text.slice(0, MAX_MESSAGE_LENGTH) } : {}),
    ...(permanent !== undefined ? { failureCategory: permanent } : {}),
    atMs,
  };
  return { kind: "report", report, row: `${EcsLastStatus.STOPPED} ${code}` };
}

/** How a container runtime says the command's executable is not in the image (runc, ECS). */
const EXECUTABLE_NOT_FOUND = /executable file not found|exec: "[^"]*": no such file or directory/;

/** The container named for the kernel, or the task's only container. */
function kernelContainer(detail: EcsTaskStateChangeDetail): z.output<typeof containerSchema> | undefined {
  const containers = detail.containers ?? [];
  return (
    containers.find((c) => c.name === KERNEL_CONTAINER_NAME) ??
    (containers.length === 1 ? containers[0] : undefined)
  );
}

function containerCondition(reason: string | undefined): TerminationCondition | undefined {
  if (reason === undefined) return undefined;
  return CONTAINER_REASON_CONDITIONS.find((c) => reason.startsWith(c.prefix))?.condition;
}

function timeMs(iso: string | undefined): number | undefined {
  return iso === undefined ? undefined : Date.parse(iso);
}

// ---------------------------------------------------------------------------------------------
// Stop reasons: the condition of a stop command, carried through StopTask's `reason`.

const STOP_REASON_PREFIX = "cairn:";
/** Conditions a stop command may carry, as an agent reports them (AgentLost, Unschedulable are the control plane's). */
const STOP_CONDITIONS: ReadonlySet<string> = new Set(
  Object.values(TerminationCondition).filter(
    (c) => c !== TerminationCondition.AgentLost && c !== TerminationCondition.Unschedulable,
  ),
);

/**
 * StopTask's `reason` for a stop command: `cairn:<condition>: <reason>` when the command names a
 * condition (a preemption, a deadline), so the STOPPED event reports it as an agent would;
 * otherwise the reason alone. ECS returns it as the task's `stoppedReason`.
 */
export function ecsStopReason(stop: {
  readonly condition?: TerminationCondition;
  readonly reason?: string;
}): string {
  const reason = stop.reason ?? "stopped by Cairn";
  if (stop.condition === undefined || !STOP_CONDITIONS.has(stop.condition)) return reason;
  return `${STOP_REASON_PREFIX}${stop.condition}: ${reason}`;
}

/** The condition and reason `ecsStopReason` wrote; a reason it did not write is the reason alone. */
export function parseEcsStopReason(stoppedReason: string | undefined): {
  readonly condition?: TerminationCondition;
  readonly reason?: string;
} {
  if (stoppedReason === undefined) return {};
  const match = /^cairn:([A-Za-z]+): ([\s\S]*)$/.exec(stoppedReason);
  if (match && STOP_CONDITIONS.has(match[1]!)) {
    return { condition: match[1] as TerminationCondition, reason: match[2]! };
  }
  return { reason: stoppedReason };
}

// ---------------------------------------------------------------------------------------------
// Which kernel a task runs.

export interface EcsKernelIdentity {
  readonly sessionId: string;
  readonly kernelIndex: number;
  readonly runIndex: number;
  /** The command's placement; absent counts as 0, as for an agent's report. */
  readonly placement?: number;
}

/** StartTask's limit on `startedBy`, the smaller of the two ([startedby]): either API takes Cairn's. */
export const ECS_STARTED_BY_MAX_LENGTH = 36;
export const ECS_STARTED_BY_PREFIX = "cairn/";

/**
 * Where each part of the identity travels: the kernel container's environment (in the task's
 * `overrides`, which every event carries, stopped or not) and the task's tags (for people and
 * ListTasks; StopTask deletes them, so they are only a fallback).
 */
export const ECS_IDENTITY_FIELDS = [
  { field: "sessionId", env: "CAIRN_SESSION_ID", tag: "cairn:session-id" },
  { field: "kernelIndex", env: "CAIRN_KERNEL_INDEX", tag: "cairn:kernel-index" },
  { field: "runIndex", env: "CAIRN_RUN_INDEX", tag: "cairn:run-index" },
  { field: "placement", env: "CAIRN_PLACEMENT", tag: "cairn:placement" },
] as const satisfies readonly {
  readonly field: keyof EcsKernelIdentity;
  readonly env: string;
  readonly tag: string;
}[];

export interface EcsTaskIdentity {
  /** `cairn/<session>`, shortened with a hash when the id is too long: ListTasks finds a session's tasks by it. */
  readonly startedBy: string;
  readonly tags: readonly { readonly key: string; readonly value: string }[];
  /** For the kernel container's override, after the spec's env so a spec cannot impersonate another kernel. */
  readonly environment: readonly { readonly name: string; readonly value: string }[];
}

/** What RunTask is given so that the task's events name its kernel. */
export function ecsTaskIdentity(identity: EcsKernelIdentity): EcsTaskIdentity {
  const present = ECS_IDENTITY_FIELDS.flatMap(({ field, env, tag }) => {
    const value = identity[field];
    return value === undefined ? [] : [{ env, tag, value: String(value) }];
  });
  return {
    startedBy: ecsStartedBy(identity.sessionId),
    tags: present.map(({ tag, value }) => ({ key: tag, value })),
    environment: present.map(({ env, value }) => ({ name: env, value })),
  };
}

/**
 * `cairn/` and the session id when it fits in 36 characters; a longer id keeps its first 21
 * characters and adds 8 hex digits of its FNV-1a hash, so different long ids stay apart.
 */
export function ecsStartedBy(sessionId: string): string {
  const room = ECS_STARTED_BY_MAX_LENGTH - ECS_STARTED_BY_PREFIX.length;
  if (sessionId.length <= room) return `${ECS_STARTED_BY_PREFIX}${sessionId}`;
  const hash = fnv1a32(sessionId).toString(16).padStart(8, "0");
  return `${ECS_STARTED_BY_PREFIX}${sessionId.slice(0, room - hash.length - 1)}-${hash}`;
}

/** RunTask's limit on `clientToken`: up to 64 ASCII characters from 33 to 126 ([idempotency]). */
export const ECS_CLIENT_TOKEN_MAX_LENGTH = 64;

/**
 * RunTask's `clientToken` for one kernel's task: ECS runs a request at most once per token (per
 * cluster, for 24 hours) and answers a repeat of it with the task it started. The token names the
 * session, the run, the placement, the kernel and the start try (`Session.tries`, which counts
 * only recorded failures): a start repeated after its answer was lost (the SDK's retry, or the
 * handler run again because it ended before recording the task) sends the same token and gets
 * back the same task instead of a second one; a start after a failure that stopped the gang
 * (runGang's rollback) is a new try with new tokens, so it is not answered with stopped tasks.
 * An id too long to fit keeps its head and adds 8 hex digits of the FNV-1a hash of the whole.
 *
 * [idempotency]: https://docs.aws.amazon.com/AmazonECS/latest/APIReference/ECS_Idempotency.html
 */
export function ecsClientToken(identity: EcsKernelIdentity & { readonly startTry: number }): string {
  const tail = `/r${identity.runIndex}/p${identity.placement ?? 0}/t${identity.startTry}/k${identity.kernelIndex}`;
  const whole = `${ECS_STARTED_BY_PREFIX}${identity.sessionId}${tail}`;
  if (whole.length <= ECS_CLIENT_TOKEN_MAX_LENGTH) return whole;
  const hash = fnv1a32(whole).toString(16).padStart(8, "0");
  const room = ECS_CLIENT_TOKEN_MAX_LENGTH - ECS_STARTED_BY_PREFIX.length - tail.length - hash.length - 1;
  return `${ECS_STARTED_BY_PREFIX}${identity.sessionId.slice(0, room)}-${hash}${tail}`;
}

export type IdentityOfTask =
  | { readonly ok: true; readonly identity: EcsKernelIdentity }
  | { readonly ok: false; readonly reason: string };

const IDENTITY_SCHEMAS = {
  sessionId: sessionIdSchema,
  kernelIndex: z.coerce.number().pipe(kernelIndexSchema),
  runIndex: z.coerce.number().pipe(runIndexSchema),
  placement: z.coerce.number().pipe(placementSchema),
} as const;

/** The kernel a task runs, or why the task is not one of Cairn's kernels. */
export function identityOfTask(detail: EcsTaskStateChangeDetail): IdentityOfTask {
  const startedBy = detail.startedBy;
  if (startedBy === undefined || !startedBy.startsWith(ECS_STARTED_BY_PREFIX)) {
    return {
      ok: false,
      reason: `not started by Cairn: startedBy is ${startedBy === undefined ? "absent" : JSON.stringify(startedBy)}, not ${ECS_STARTED_BY_PREFIX}…`,
    };
  }
  const overrides = detail.overrides?.containerOverrides ?? [];
  const override =
    overrides.find((o) => o.name === KERNEL_CONTAINER_NAME) ??
    (overrides.length === 1 ? overrides[0] : undefined);
  const env = new Map((override?.environment ?? []).map((e) => [e.name, e.value]));
  const tags = new Map((detail.tags ?? []).map((t) => [t.key, t.value]));
  const values: Partial<Record<keyof EcsKernelIdentity, number | string>> = {};
  for (const { field, env: name, tag } of ECS_IDENTITY_FIELDS) {
    const raw = env.get(name) ?? tags.get(tag);
    if (raw === undefined) {
      if (field === "placement") continue;
      return {
        ok: false,
        reason: `the task names no ${field}: neither ${name} in the kernel container's environment nor the tag ${tag}`,
      };
    }
    const parsed = IDENTITY_SCHEMAS[field].safeParse(raw);
    if (!parsed.success) {
      return { ok: false, reason: `${name} ${JSON.stringify(raw)} is not a valid ${field}` };
    }
    values[field] = parsed.data;
  }
  const identity = values as unknown as EcsKernelIdentity;
  if (ecsStartedBy(identity.sessionId) !== startedBy) {
    return {
      ok: false,
      reason: `startedBy ${JSON.stringify(startedBy)} is not session ${identity.sessionId}'s (${ecsStartedBy(identity.sessionId)})`,
    };
  }
  return { ok: true, identity };
}

// ---------------------------------------------------------------------------------------------
// What a task's container override holds, and its limit.

/**
 * The CAIRN_* (and Iris's IRIS_TASK_*, task-env.ts) a kernel's task gets besides its identity:
 * what an agent gives its kernels (agent/environment.ts) as far as a task has them. An
 * independent task's identity is its job's; a gang's kernels are the tasks of their session.
 */
export function fargateKernelEnvironment(kernel: {
  readonly sessionId: string;
  readonly kernelIndex: number;
  readonly numKernels: number;
  readonly task?: { readonly jobId: string; readonly index: number; readonly count: number };
}): { name: string; value: string }[] {
  return taskIdentityEnv({
    jobId: kernel.task?.jobId ?? kernel.sessionId,
    taskIndex: kernel.task?.index ?? kernel.kernelIndex,
    numTasks: kernel.task?.count ?? kernel.numKernels,
  }).map(([name, value]) => ({ name, value }));
}

/**
 * RunTask's `overrides` may hold at most 8,192 characters, JSON formatting included (ECS API
 * reference, TaskOverride / ContainerOverride): a spec whose command and env make a larger one
 * could never start, so the edge refuses it (submission-size.ts).
 */
export const MAX_TASK_OVERRIDE_CHARS = 8_192;

/**
 * The largest `overrides` a Fargate kernel of this spec can cause, in characters, as the ECS
 * adapter shapes it (functions/adapters/ecs/fargate-tasks.ts): the kernel container's command
 * and environment (the spec's, the CAIRN_* above, the identity) and the task size, every id and
 * index at its longest.
 */
export function fargateOverrideChars(spec: {
  readonly command: readonly string[];
  readonly env: Readonly<Record<string, string>>;
}): number {
  const id = "s".repeat(63);
  const index = 99_999;
  const environment = [
    ...Object.entries(spec.env).map(([name, value]) => ({ name, value })),
    ...fargateKernelEnvironment({
      sessionId: id,
      kernelIndex: index,
      numKernels: index,
      task: { jobId: id, index, count: index },
    }),
    ...ecsTaskIdentity({ sessionId: id, kernelIndex: index, runIndex: 9_999_999, placement: 9_999_999 })
      .environment,
  ];
  return JSON.stringify({
    containerOverrides: [{ name: KERNEL_CONTAINER_NAME, command: spec.command, environment }],
    cpu: "16384",
    memory: "122880",
  }).length;
}
