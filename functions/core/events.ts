/**
 * EventBridge contracts (DESIGN.md §4): every event Cairn receives or emits, as a source, a
 * detail-type and a zod schema for its `detail`. Inbound envelopes are parsed here, at the edge;
 * a bad one becomes a rejection with a reason (never a crash, never silently dropped).
 * Every type below is derived from its schema.
 */
import * as z from "zod";
import { LifecycleHandlerName, PromotionHandlerName } from "./handlers.ts";
import type { HistoryRecord, HistoryResult } from "./model.ts";
import { SchedulingResult } from "./scheduling.ts";
import {
  agentIdSchema,
  capacitySchema,
  epochMsSchema,
  incarnationSchema,
  kernelIndexSchema,
  labelsSchema,
  messageSchema,
  placementSchema,
  reportedConditionSchema,
  runIndexSchema,
  sessionIdSchema,
  signatureSchema,
} from "./event-fields.ts";
import {
  SessionSpecSchema,
  ID_PATTERN,
  safeParseWithIssues,
  strictObject,
  type ValidationIssue,
} from "./spec.ts";
import { JobState, KernelStatus, SessionStatus, TaskState } from "./status.ts";
import { HPC_STATES } from "./hpc-view.ts";
import {
  DEPLOYMENT_STATUSES,
  DeploymentHandlerName,
  DeploymentResult,
  ROUTE_STATUSES,
  RouteHandlerName,
  RouteResult,
} from "./deployments/tables.ts";
import { DeploymentSpecSchema, DEPLOYMENT_LIMITS } from "./deployments/spec.ts";
import {
  deploymentIdSchema,
  routeIdSchema,
  ServiceBindingSchema,
  servicePortSchema,
} from "./service-binding.ts";

export const EventSource = {
  Client: "cairn.client",
  Agent: "cairn.agent",
  ControlPlane: "cairn.control-plane",
} as const;
export type EventSource = (typeof EventSource)[keyof typeof EventSource];

export const DetailType = {
  SessionSubmitted: "Session Submitted",
  SessionCancelRequested: "Session Cancel Requested",
  KernelStatusChanged: "Kernel Status Changed",
  AgentHeartbeat: "Agent Heartbeat",
  AgentRegistrationRequested: "Agent Registration Requested",
  SessionStatusChanged: "Session Status Changed",
  EventRejected: "Event Rejected",
  SessionRequeued: "Session Requeued",
  JobStateChanged: "Job State Changed",
  DeploymentCreated: "Deployment Created",
  DeploymentScaled: "Deployment Scaled",
  DeploymentDestroyRequested: "Deployment Destroy Requested",
  RouteHealthReported: "Route Health Reported",
  DeploymentStatusChanged: "Deployment Status Changed",
  RouteStatusChanged: "Route Status Changed",
  JobDraftSaved: "Job Draft Saved",
  JobDraftSubmitted: "Job Draft Submitted",
  JobDraftDeleted: "Job Draft Deleted",
} as const;
export type DetailType = (typeof DetailType)[keyof typeof DetailType];

/** EventBridge's limit on one PutEvents entry (source + detail-type + detail, UTF-8). */
export const MAX_ENTRY_BYTES = 256 * 1024;
export { MAX_MESSAGE_LENGTH } from "./event-fields.ts";

/** Client-chosen or generated session ids: also the lifecycle execution name. */
export const SESSION_ID_PATTERN = ID_PATTERN;

// ---------------------------------------------------------------------------------------------
// Field schemas.

const signalSchema = z.string().regex(/^SIG[A-Z0-9]+$/, { error: 'must be a signal name such as "SIGKILL"' });

const sessionStatusSchema = z.enum(SessionStatus);
const historyResultSchema = z.enum({
  ...SchedulingResult,
  CANCELLED: "CANCELLED",
  SUBMITTED: "SUBMITTED",
  REQUEUED: "REQUEUED",
  PREEMPTED: "PREEMPTED",
  AGENT_LOST: "AGENT_LOST",
  FAILED: "FAILED",
});
const historyHandlerSchema = z.enum({
  ...LifecycleHandlerName,
  ...PromotionHandlerName,
  Lifecycle: "Lifecycle",
  Cancel: "Cancel",
  Submit: "Submit",
  Retry: "Retry",
  Preempt: "Preempt",
  Liveness: "Liveness",
});

/**
 * Kernel statuses an agent reports; the others are the control plane's to set. PULLING (Backend.AI's BEP-1030,
 * between PREPARING and PREPARED) says preparation has begun: informational, it never moves a
 * kernel back (kernel-reports.ts).
 */
export const REPORTED_KERNEL_STATUSES = [
  KernelStatus.PULLING,
  KernelStatus.PREPARED,
  KernelStatus.RUNNING,
  KernelStatus.TERMINATED,
  KernelStatus.ERROR,
] as const;
const ENDED_STATUSES: readonly string[] = [KernelStatus.TERMINATED, KernelStatus.ERROR];
/** The order in which a kernel's reported statuses follow each other within one placement. */
const REPORT_ORDER: Readonly<Record<(typeof REPORTED_KERNEL_STATUSES)[number], number>> = {
  PULLING: 0,
  PREPARED: 1,
  RUNNING: 2,
  TERMINATED: 3,
  ERROR: 3,
};
/** Statuses a report may say its kernel passed through since the agent's previous report. */
export const PASSED_KERNEL_STATUSES = [KernelStatus.PULLING, KernelStatus.RUNNING] as const;
/** At most one of each. */
const MAX_PASSED = PASSED_KERNEL_STATUSES.length;

// ---------------------------------------------------------------------------------------------
// Detail schemas.

/** A client submits a session: Cairn starts its lifecycle execution, named by the session id. */
export const SessionSubmittedDetailSchema = strictObject({
  /** The session's id, unique in the deployment; without one Cairn uses `s-<event id>`. */
  sessionId: sessionIdSchema.optional(),
  /** The session spec, as a user writes it (README, "A session's spec"); defaults apply on receipt. */
  spec: SessionSpecSchema,
  /** Set by a deployment submitting one of its replicas: the route the session backs. */
  service: ServiceBindingSchema.optional(),
}).readonly();

/** A client cancels a session (or a job, by its id): one not yet running ends CANCELLED, a running one TERMINATED. */
export const SessionCancelRequestedDetailSchema = strictObject({
  sessionId: sessionIdSchema,
  /** Recorded in the session's history. */
  reason: messageSchema.optional(),
  /**
   * HPC Pack's Force Cancel (its job and task states): the run's end is not waited for. Its kernels are killed
   * without a grace period and ended at once, even when their agents cannot confirm it (an agent
   * that stopped answering); their capacity is given back. May follow a plain cancel.
   */
  force: z.boolean().optional(),
}).readonly();

/** A draft's version (HPC Pack's Configuring): 1 when created, one more at every change. */
const draftVersionSchema = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER);

/**
 * A client stores a job's spec as a draft (HPC Pack's Configuring): not queued, no sessions. Without
 * `expectedVersion` it creates the draft; with it, it replaces the spec of the draft at that version.
 */
export const JobDraftSavedDetailSchema = strictObject({
  /** The job's id once submitted; no job or other draft may hold it. */
  jobId: sessionIdSchema,
  /** The session spec, as a user writes it (README, "A session's spec"); defaults apply on receipt. */
  spec: SessionSpecSchema,
  /** The version the edit was made from (`cairn job edit` reads it); absent: create the draft. */
  expectedVersion: draftVersionSchema.optional(),
}).readonly();

/** A client submits a draft: from then on it is the job a `Session Submitted` under its id makes. */
export const JobDraftSubmittedDetailSchema = strictObject({
  jobId: sessionIdSchema,
}).readonly();

/** A client deletes a draft (only a draft: a submitted job is cancelled instead). */
export const JobDraftDeletedDetailSchema = strictObject({
  jobId: sessionIdSchema,
  /** When given, the draft is deleted only if it is still at this version. */
  expectedVersion: draftVersionSchema.optional(),
}).readonly();

/** An agent reports that one of its kernels changed status (preparing, prepared, running, ended). */
export const KernelStatusChangedDetailSchema = strictObject({
  agentId: agentIdSchema,
  /** The reporting agent's registration; reports of an earlier one are refused. */
  incarnation: incarnationSchema,
  sessionId: sessionIdSchema,
  kernelIndex: kernelIndexSchema,
  runIndex: runIndexSchema,
  /**
   * The command's `placement`, echoed; a report of another placement is refused. Optional for
   * agents of the previous version: absent counts as 0, refused once the run is placed again.
   */
  placement: placementSchema.optional(),
  status: z.enum(REPORTED_KERNEL_STATUSES),
  exitCode: z.number().int().optional(),
  signal: signalSchema.optional(),
  condition: reportedConditionSchema.optional(),
  message: messageSchema.optional(),
  /**
   * How the agent classified the failure (Armada's error categories), for retry rules: the
   * local agent's table is core/retry/failure-categories.ts (oom, killed, user_error…).
   */
  failureCategory: z
    .string()
    .regex(/^[a-z0-9][a-z0-9_.-]{0,63}$/, { error: "must be 1 to 64 of a-z, 0-9, '_', '.', '-'" })
    .optional(),
  atMs: epochMsSchema,
  /**
   * Statuses the kernel passed through since the agent's previous report, oldest first: sent
   * with this one, each is applied before `status` as if reported on its own.
   */
  passed: z
    .array(strictObject({ status: z.enum(PASSED_KERNEL_STATUSES), atMs: epochMsSchema }).readonly())
    .min(1)
    .max(MAX_PASSED)
    .readonly()
    .optional(),
  /** HMAC-SHA256 of the signing payload with the key the agent got at registration (agent-protocol.ts). */
  signature: signatureSchema,
})
  .superRefine((detail, ctx) => {
    // What a kernel passed through comes before where it is now, in order and in time.
    let previous: { readonly status: keyof typeof REPORT_ORDER; readonly atMs: number } | undefined;
    for (const [i, passed] of (detail.passed ?? []).entries()) {
      if (
        previous &&
        (REPORT_ORDER[passed.status] <= REPORT_ORDER[previous.status] || passed.atMs < previous.atMs)
      ) {
        ctx.addIssue({
          code: "custom",
          path: ["passed", i],
          message: `must come after ${previous.status}, in order and in time`,
        });
      }
      previous = passed;
    }
    if (
      previous &&
      (REPORT_ORDER[detail.status] <= REPORT_ORDER[previous.status] || detail.atMs < previous.atMs)
    ) {
      ctx.addIssue({
        code: "custom",
        path: ["passed"],
        message: `a kernel reported ${detail.status} cannot have passed through ${previous.status} after it (the last one must come before status, and not later than atMs)`,
      });
    }
    // How a kernel ended only makes sense once it has.
    if (ENDED_STATUSES.includes(detail.status)) return;
    for (const field of ["exitCode", "signal", "condition", "failureCategory"] as const) {
      if (detail[field] !== undefined) {
        ctx.addIssue({
          code: "custom",
          path: [field],
          message: "only allowed when status is TERMINATED or ERROR",
        });
      }
    }
  })
  .readonly();

/** Most runs one heartbeat lists (a PutEvents entry stays far below 256 KiB). */
export const MAX_HEARTBEAT_RUNS = 1000;

/** One kernel process an agent runs, as its heartbeat names it. */
export const heartbeatRunSchema = strictObject({
  sessionId: sessionIdSchema,
  kernelIndex: kernelIndexSchema,
  runIndex: runIndexSchema,
  placement: placementSchema,
}).readonly();
export type HeartbeatRun = z.output<typeof heartbeatRunSchema>;

/** An agent is alive and offers this capacity; an agent silent past the agent timeout is lost. */
export const AgentHeartbeatDetailSchema = strictObject({
  agentId: agentIdSchema,
  incarnation: incarnationSchema,
  /** What the agent offers now: at most what it registered with (a heartbeat cannot raise it). */
  capacity: capacitySchema.readonly(),
  /** Shutting down: no new work is placed on it. */
  draining: z.boolean().optional(),
  /** Kernel runs the agent holds, so the control plane can tell what it lost. */
  running: z.number().int().min(0).optional(),
  /**
   * The processes the agent runs, each by run and placement: the control plane answers with the
   * ones it considers ended (`ended` on the agent's queue), which the agent then stops, so a
   * process can outlive its session in Cairn's view only until the next heartbeat.
   */
  runs: z.array(heartbeatRunSchema).max(MAX_HEARTBEAT_RUNS).optional(),
  atMs: epochMsSchema,
  signature: signatureSchema,
}).readonly();

/**
 * First contact of an agent process (a new incarnation). The control plane creates the agent's
 * queue and answers on it with the key the incarnation signs with; the registration's capacity
 * is the most the agent can ever offer until it registers again. Allowed only to principals
 * with the agent policy (events:source = cairn.agent).
 */
export const AgentRegistrationRequestedDetailSchema = strictObject({
  agentId: agentIdSchema,
  incarnation: incarnationSchema,
  capacity: capacitySchema.readonly(),
  labels: labelsSchema.optional(),
  atMs: epochMsSchema,
}).readonly();

/** A session entered a status: published by the lifecycle execution's stage entry, with the history record's result. */
export const SessionStatusChangedDetailSchema = strictObject({
  sessionId: sessionIdSchema,
  executionName: z.string().min(1).max(80),
  from: sessionStatusSchema,
  to: sessionStatusSchema,
  result: historyResultSchema,
  handler: historyHandlerSchema,
  message: messageSchema.optional(),
  /** The session's HPC Pack state once it has entered `to` (HPC Pack's job and task states; functions/core/hpc-view.ts). */
  hpcState: z.enum(HPC_STATES).optional(),
  /** The deployment whose replica the session is: its changes wake the deployment. */
  deploymentId: deploymentIdSchema.optional(),
  atMs: epochMsSchema,
}).readonly();

/** A finished run is retried: the session goes back to PENDING as run `runIndex`. */
export const SessionRequeuedDetailSchema = strictObject({
  sessionId: sessionIdSchema,
  executionName: z.string().min(1).max(80),
  /** The new run's index (the failed one was runIndex − 1). */
  runIndex: runIndexSchema,
  runName: z.string().min(1).max(128),
  reason: messageSchema,
  delayMs: z.number().int().min(0),
  avoidAgentId: agentIdSchema.optional(),
  atMs: epochMsSchema,
}).readonly();

/** A job reached its final state (Iris's job state, derived from its tasks): published once, after its cascades ran. */
export const JobStateChangedDetailSchema = strictObject({
  jobId: sessionIdSchema,
  state: z.enum(JobState),
  reason: messageSchema,
  /** Task counts by state when the job ended. */
  tasks: z.partialRecord(z.enum(TaskState), z.number().int().min(0)),
  parentId: sessionIdSchema.optional(),
  atMs: epochMsSchema,
}).readonly();

/** An inbound event the control plane refused, with the field and reason: recorded, never silent. */
export const EventRejectedDetailSchema = strictObject({
  eventId: z.string().max(256).optional(),
  detailType: z.string().max(256).optional(),
  source: z.string().max(256).optional(),
  reason: messageSchema,
  atMs: epochMsSchema,
}).readonly();

// Deployments and routes (Backend.AI's BEP-1030 deployment and route lifecycles).

/** A client creates a deployment: N replicas of a service, each a route backed by a session. */
export const DeploymentCreatedDetailSchema = strictObject({
  /** Unique among deployments; names the lifecycle execution and prefixes its routes' ids. */
  deploymentId: deploymentIdSchema,
  /** The deployment spec, as a user writes it (docs/deployments.md); defaults apply on receipt. */
  spec: DeploymentSpecSchema,
}).readonly();

/** A client asks for another replica count. */
export const DeploymentScaledDetailSchema = strictObject({
  deploymentId: deploymentIdSchema,
  replicas: z.number().int().min(DEPLOYMENT_LIMITS.replicas.min).max(DEPLOYMENT_LIMITS.replicas.max),
}).readonly();

/** A client destroys a deployment: its routes are terminated, then it is DESTROYED. */
export const DeploymentDestroyRequestedDetailSchema = strictObject({
  deploymentId: deploymentIdSchema,
  reason: messageSchema.optional(),
}).readonly();

/** One HTTP probe of a replica, as its agent ran it. */
export const ProbeReportSchema = strictObject({
  /** A 2xx or 3xx answer within the timeout. */
  ok: z.boolean(),
  atMs: epochMsSchema,
  httpStatus: z.number().int().min(100).max(599).optional(),
  message: messageSchema.optional(),
}).readonly();

/** An agent reports the probes of one replica it hosts; signed like its kernel reports. */
export const RouteHealthReportedDetailSchema = strictObject({
  agentId: agentIdSchema,
  incarnation: incarnationSchema,
  deploymentId: deploymentIdSchema,
  routeId: routeIdSchema,
  sessionId: sessionIdSchema,
  runIndex: runIndexSchema,
  /** Where the replica listens on the agent's host. */
  port: servicePortSchema,
  /** The probes since the last report, oldest first (more than one when a report was late). */
  probes: z.array(ProbeReportSchema).min(1).max(20),
  atMs: epochMsSchema,
  signature: signatureSchema,
}).readonly();

const familyHistoryResult = z.enum({ ...RouteResult, ...DeploymentResult, CREATED: "CREATED" });

/** A deployment entered a status (recorded by its lifecycle execution's stage entry). */
export const DeploymentStatusChangedDetailSchema = strictObject({
  deploymentId: deploymentIdSchema,
  executionName: z.string().min(1).max(80),
  from: z.enum(DEPLOYMENT_STATUSES),
  to: z.enum(DEPLOYMENT_STATUSES),
  result: familyHistoryResult,
  handler: z.enum({ ...DeploymentHandlerName, Create: "Create", Destroy: "Destroy", Lifecycle: "Lifecycle" }),
  message: messageSchema.optional(),
  /** Replicas asked for. */
  replicas: z.number().int().min(0),
  atMs: epochMsSchema,
}).readonly();

/** A route entered a status (recorded by its lifecycle execution's stage entry). */
export const RouteStatusChangedDetailSchema = strictObject({
  deploymentId: deploymentIdSchema,
  routeId: routeIdSchema,
  sessionId: sessionIdSchema,
  executionName: z.string().min(1).max(80),
  from: z.enum(ROUTE_STATUSES),
  to: z.enum(ROUTE_STATUSES),
  result: familyHistoryResult,
  handler: z.enum({ ...RouteHandlerName, Create: "Create", Remove: "Remove", Lifecycle: "Lifecycle" }),
  message: messageSchema.optional(),
  /** Where the replica listens, once known (service discovery). */
  agentId: agentIdSchema.optional(),
  port: servicePortSchema.optional(),
  atMs: epochMsSchema,
}).readonly();

export type SessionSubmittedDetail = z.output<typeof SessionSubmittedDetailSchema>;
/** What a client sends: the spec before defaults. */
export type SessionSubmittedDetailInput = z.input<typeof SessionSubmittedDetailSchema>;
export type SessionCancelRequestedDetail = z.output<typeof SessionCancelRequestedDetailSchema>;
export type KernelStatusChangedDetail = z.output<typeof KernelStatusChangedDetailSchema>;

/**
 * One report saying what two of one kernel's placement say, when the earlier only passed on the
 * way to the later (KernelStatusChangedDetail.passed): the later with the earlier's status and
 * time (and what the earlier had passed) in `passed`, unsigned. Undefined when the earlier says
 * more than a status passed through, or the two are of different kernels or placements.
 */
export function withPassed<D extends Omit<KernelStatusChangedDetail, "signature">>(
  earlier: Omit<KernelStatusChangedDetail, "signature">,
  later: D,
): D | undefined {
  const same = (
    ["sessionId", "kernelIndex", "runIndex", "placement", "agentId", "incarnation"] as const
  ).every((f) => earlier[f] === later[f]);
  if (!same) return undefined;
  const passedStatus = PASSED_KERNEL_STATUSES.find((s) => s === earlier.status);
  if (passedStatus === undefined || REPORT_ORDER[later.status] <= REPORT_ORDER[passedStatus])
    return undefined;
  if (earlier.message !== undefined || later.atMs < earlier.atMs) return undefined;
  const passed = [...(earlier.passed ?? []), { status: passedStatus, atMs: earlier.atMs }];
  return { ...later, passed };
}
export type ReportedKernelStatus = KernelStatusChangedDetail["status"];
export type AgentHeartbeatDetail = z.output<typeof AgentHeartbeatDetailSchema>;
export type AgentRegistrationRequestedDetail = z.output<typeof AgentRegistrationRequestedDetailSchema>;
export type SessionStatusChangedDetail = z.output<typeof SessionStatusChangedDetailSchema>;
export type EventRejectedDetail = z.output<typeof EventRejectedDetailSchema>;

// The event's vocabulary must be the model's (a new handler or result fails to compile here).
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Assert<T extends true> = T;
type _HandlerMatchesModel = Assert<Same<SessionStatusChangedDetail["handler"], HistoryRecord["handler"]>>;
type _ResultMatchesModel = Assert<Same<SessionStatusChangedDetail["result"], HistoryResult>>;
type _StatusMatchesModel = Assert<Same<SessionStatusChangedDetail["from"], SessionStatus>>;

// ---------------------------------------------------------------------------------------------
// The contract table: one row per detail-type. A new event is one row.

type Direction = "inbound" | "outbound";

interface Contract<S extends EventSource, Dir extends Direction, D extends z.ZodType> {
  readonly source: S;
  readonly direction: Dir;
  readonly detail: D;
}

function contract<S extends EventSource, Dir extends Direction, D extends z.ZodType>(
  source: S,
  direction: Dir,
  detail: D,
): Contract<S, Dir, D> {
  return { source, direction, detail };
}

export const EVENT_CONTRACTS = {
  [DetailType.SessionSubmitted]: contract(EventSource.Client, "inbound", SessionSubmittedDetailSchema),
  [DetailType.SessionCancelRequested]: contract(
    EventSource.Client,
    "inbound",
    SessionCancelRequestedDetailSchema,
  ),
  [DetailType.KernelStatusChanged]: contract(EventSource.Agent, "inbound", KernelStatusChangedDetailSchema),
  [DetailType.AgentHeartbeat]: contract(EventSource.Agent, "inbound", AgentHeartbeatDetailSchema),
  [DetailType.AgentRegistrationRequested]: contract(
    EventSource.Agent,
    "inbound",
    AgentRegistrationRequestedDetailSchema,
  ),
  [DetailType.SessionStatusChanged]: contract(
    EventSource.ControlPlane,
    "outbound",
    SessionStatusChangedDetailSchema,
  ),
  [DetailType.EventRejected]: contract(EventSource.ControlPlane, "outbound", EventRejectedDetailSchema),
  [DetailType.SessionRequeued]: contract(EventSource.ControlPlane, "outbound", SessionRequeuedDetailSchema),
  [DetailType.JobStateChanged]: contract(EventSource.ControlPlane, "outbound", JobStateChangedDetailSchema),
  [DetailType.DeploymentCreated]: contract(EventSource.Client, "inbound", DeploymentCreatedDetailSchema),
  [DetailType.DeploymentScaled]: contract(EventSource.Client, "inbound", DeploymentScaledDetailSchema),
  [DetailType.DeploymentDestroyRequested]: contract(
    EventSource.Client,
    "inbound",
    DeploymentDestroyRequestedDetailSchema,
  ),
  [DetailType.RouteHealthReported]: contract(EventSource.Agent, "inbound", RouteHealthReportedDetailSchema),
  [DetailType.DeploymentStatusChanged]: contract(
    EventSource.ControlPlane,
    "outbound",
    DeploymentStatusChangedDetailSchema,
  ),
  [DetailType.RouteStatusChanged]: contract(
    EventSource.ControlPlane,
    "outbound",
    RouteStatusChangedDetailSchema,
  ),
  [DetailType.JobDraftSaved]: contract(EventSource.Client, "inbound", JobDraftSavedDetailSchema),
  [DetailType.JobDraftSubmitted]: contract(EventSource.Client, "inbound", JobDraftSubmittedDetailSchema),
  [DetailType.JobDraftDeleted]: contract(EventSource.Client, "inbound", JobDraftDeletedDetailSchema),
} as const satisfies Record<DetailType, Contract<EventSource, Direction, z.ZodType>>;

type Contracts = typeof EVENT_CONTRACTS;
export type InboundDetailType = {
  [K in DetailType]: Contracts[K]["direction"] extends "inbound" ? K : never;
}[DetailType];
export type OutboundDetailType = Exclude<DetailType, InboundDetailType>;

export const INBOUND_DETAIL_TYPES = (Object.keys(EVENT_CONTRACTS) as DetailType[]).filter(
  (type) => EVENT_CONTRACTS[type].direction === "inbound",
) as InboundDetailType[];

/** The detail of an event, as parsed (defaults applied). */
export type EventDetail<T extends DetailType> = z.output<Contracts[T]["detail"]>;
/** The detail of an event, as a producer may write it. */
export type EventDetailInput<T extends DetailType> = z.input<Contracts[T]["detail"]>;

/** A validated inbound event, discriminated on `detailType`. */
export type InboundEvent = {
  [K in InboundDetailType]: {
    readonly id: string;
    readonly source: Contracts[K]["source"];
    readonly detailType: K;
    /** The envelope's `time` (ISO 8601). */
    readonly time: string;
    readonly detail: EventDetail<K>;
  };
}[InboundDetailType];

// ---------------------------------------------------------------------------------------------
// Errors.

export abstract class EventError extends Error {
  abstract readonly code: string;
}

/** An envelope or detail broke its contract; carries what a consumer needs to record it. */
export class EventValidationError extends EventError {
  override readonly name = "EventValidationError";
  readonly code = "INVALID_EVENT";
  /** The envelope's id, when it had a string one. */
  readonly eventId: string | undefined;
  readonly detailType: string | undefined;
  readonly issues: readonly ValidationIssue[];

  constructor(
    eventId: string | undefined,
    detailType: string | undefined,
    issues: readonly ValidationIssue[],
  ) {
    super(
      `rejected event ${eventId ?? "<no id>"} (${detailType ?? "<no detail-type>"}): ` +
        issues.map((issue) => `${issue.path}: ${issue.message}`).join("; "),
    );
    this.eventId = eventId;
    this.detailType = detailType;
    this.issues = issues;
  }
}

/** An outbound entry larger than EventBridge accepts. */
export class EventTooLargeError extends EventError {
  override readonly name = "EventTooLargeError";
  readonly code = "EVENT_TOO_LARGE";
  readonly detailType: string;
  readonly sizeBytes: number;

  constructor(detailType: string, sizeBytes: number) {
    super(
      `${detailType} event is ${sizeBytes} bytes; EventBridge accepts at most ${MAX_ENTRY_BYTES} per entry`,
    );
    this.detailType = detailType;
    this.sizeBytes = sizeBytes;
  }
}

// ---------------------------------------------------------------------------------------------
// Inbound: parse an EventBridge envelope.

export type ParsedInboundEvent =
  | { readonly ok: true; readonly event: InboundEvent }
  | { readonly ok: false; readonly error: EventValidationError };

const envelopeFields = {
  id: z.string().min(1),
  time: z.iso.datetime({
    offset: true,
    error: (issue) => (issue.input === undefined ? undefined : "must be an ISO 8601 timestamp"),
  }),
  "detail-type": z.string(),
  source: z.string(),
};

/** For envelopes whose detail-type is missing or unknown: reports the envelope's other problems. */
const baseEnvelopeSchema = z.object({
  ...envelopeFields,
  "detail-type": z.string().refine((type) => isInbound(type), {
    error: (issue) => unknownDetailTypeReason(issue.input as string),
  }),
  detail: z.unknown(),
});

interface ParsedEnvelope {
  readonly id: string;
  readonly time: string;
  readonly source: string;
  readonly detail: unknown;
}

const inboundEnvelopeSchemas = Object.fromEntries(
  INBOUND_DETAIL_TYPES.map((type) => {
    const { source, detail } = EVENT_CONTRACTS[type];
    const schema: z.ZodType<ParsedEnvelope> = z.object({
      ...envelopeFields,
      source: z.literal(source, {
        error: (issue) =>
          issue.input === undefined
            ? undefined
            : `must be "${source}" for detail-type "${type}", got ${JSON.stringify(issue.input)}`,
      }),
      detail,
    });
    return [type, schema];
  }),
) as Record<InboundDetailType, z.ZodType<ParsedEnvelope>>;

export function parseInboundEvent(envelope: unknown): ParsedInboundEvent {
  const eventId = stringField(envelope, "id");
  const detailType = stringField(envelope, "detail-type");
  const reject = (issues: readonly ValidationIssue[]): ParsedInboundEvent => ({
    ok: false,
    error: new EventValidationError(eventId, detailType, issues),
  });

  if (detailType === undefined || !isInbound(detailType)) {
    const base = safeParseWithIssues(baseEnvelopeSchema, envelope);
    // The base schema always fails here (detail-type is missing or unknown).
    return reject(base.success ? [{ path: "detail-type", message: "required" }] : base.issues);
  }
  const parsed = safeParseWithIssues(inboundEnvelopeSchemas[detailType], envelope);
  if (!parsed.success) return reject(parsed.issues);
  const { id, time, source, detail } = parsed.data;
  return { ok: true, event: { id, time, source, detailType, detail } as InboundEvent };
}

/** Parses a batch: good envelopes parse, each bad one gets its own rejection; order is kept. */
export function parseInboundEvents(envelopes: readonly unknown[]): {
  readonly events: InboundEvent[];
  readonly rejections: EventValidationError[];
} {
  const events: InboundEvent[] = [];
  const rejections: EventValidationError[] = [];
  for (const envelope of envelopes) {
    const result = parseInboundEvent(envelope);
    if (result.ok) events.push(result.event);
    else rejections.push(result.error);
  }
  return { events, rejections };
}

function isInbound(type: string): type is InboundDetailType {
  return (INBOUND_DETAIL_TYPES as string[]).includes(type);
}

function unknownDetailTypeReason(type: string): string {
  if (Object.hasOwn(EVENT_CONTRACTS, type)) {
    const { source } = EVENT_CONTRACTS[type as DetailType];
    return `"${type}" is emitted by ${source}, not accepted as inbound`;
  }
  return `unknown detail-type "${type}" (expected one of ${INBOUND_DETAIL_TYPES.join(", ")})`;
}

function stringField(value: unknown, key: string): string | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const field = (value as Record<string, unknown>)[key];
  return typeof field === "string" ? field : undefined;
}

// ---------------------------------------------------------------------------------------------
// Outbound: build PutEvents entries (plain objects; the adapter owns the SDK).

export interface PutEventsEntry {
  readonly Source: EventSource;
  readonly DetailType: DetailType;
  /** The detail as JSON. */
  readonly Detail: string;
  readonly EventBusName: string;
}

/**
 * Validates `detail` against its contract and returns the entry to put. Producers of inbound
 * events (the CLI, agents) use this too. The detail is sent as written (defaults are the
 * receiver's to apply). Throws EventValidationError or EventTooLargeError.
 */
export function toPutEventsEntry<T extends DetailType>(
  busName: string,
  detailType: T,
  detail: EventDetailInput<T>,
): PutEventsEntry {
  const contractRow: Contract<EventSource, Direction, z.ZodType> | undefined = Object.hasOwn(
    EVENT_CONTRACTS,
    detailType,
  )
    ? EVENT_CONTRACTS[detailType]
    : undefined;
  if (!contractRow) {
    throw new EventValidationError(undefined, detailType, [
      { path: "detail-type", message: `unknown detail-type "${detailType}"` },
    ]);
  }
  if (busName.length === 0) {
    throw new EventValidationError(undefined, detailType, [
      { path: "EventBusName", message: "must not be empty" },
    ]);
  }
  const parsed = safeParseWithIssues(contractRow.detail, detail);
  if (!parsed.success) {
    throw new EventValidationError(
      undefined,
      detailType,
      parsed.issues.map((issue) => ({ ...issue, path: prefixPath("detail", issue.path) })),
    );
  }
  const entry: PutEventsEntry = {
    Source: contractRow.source,
    DetailType: detailType,
    Detail: JSON.stringify(detail),
    EventBusName: busName,
  };
  const sizeBytes = utf8Length(entry.Source) + utf8Length(entry.DetailType) + utf8Length(entry.Detail);
  if (sizeBytes > MAX_ENTRY_BYTES) throw new EventTooLargeError(detailType, sizeBytes);
  return entry;
}

function prefixPath(prefix: string, path: string): string {
  if (path === "(root)") return prefix;
  return path.startsWith("[") ? `${prefix}${path}` : `${prefix}.${path}`;
}

const encoder = new TextEncoder();
function utf8Length(text: string): number {
  return encoder.encode(text).length;
}
