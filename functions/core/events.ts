/**
 * EventBridge contracts (docs/events.md): every event Cairn receives or emits, as a source, a
 * detail-type and a zod schema for its `detail`. The detail schemas live by family
 * (session-events.ts, agent-events.ts, deployment-events.ts); this file is the table that joins
 * them to their source and direction, and the edge that parses inbound envelopes and builds
 * outbound entries. A bad inbound envelope becomes a rejection with a reason (never a crash,
 * never silently dropped). Every type below is derived from its schema.
 */
import { CoreError } from "./errors.ts";
import * as z from "zod";
import { ID_PATTERN, safeParseWithIssues, type ValidationIssue } from "./spec.ts";
import {
  EventRejectedDetailSchema,
  JobDraftDeletedDetailSchema,
  JobDraftSavedDetailSchema,
  JobDraftSubmittedDetailSchema,
  JobStateChangedDetailSchema,
  SessionCancelRequestedDetailSchema,
  SessionRequeuedDetailSchema,
  SessionStatusChangedDetailSchema,
  SessionSubmittedDetailSchema,
} from "./session-events.ts";
import {
  AgentHeartbeatDetailSchema,
  AgentRegistrationRequestedDetailSchema,
  KernelStatusChangedDetailSchema,
} from "./agent-events.ts";
import {
  DeploymentCreatedDetailSchema,
  DeploymentDestroyRequestedDetailSchema,
  DeploymentScaledDetailSchema,
  DeploymentStatusChangedDetailSchema,
  RouteHealthReportedDetailSchema,
  RouteStatusChangedDetailSchema,
} from "./deployment-events.ts";

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

export abstract class EventError extends CoreError {
  abstract override readonly code: string;
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
