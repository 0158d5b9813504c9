/**
 * The coordinator's inbound envelopes, parsed at its Lambda entry point: each EventBridge event
 * by its schema (core/events.ts, zod; the control plane's own status changes by theirs; a Fargate
 * task's state change by core/coordinator/task-reports.ts), one that does not parse kept as an
 * `invalid` event to reject with its reason, never dropped. The application layer receives the
 * parsed batch (ParsedBatch) and never reads a raw envelope.
 */
import type { ParsedBatch } from "../app/coordinator-core.ts";
import type { BatchEvent } from "../core/coordinator/inbound.ts";
import { parseTaskEvent } from "../core/coordinator/task-reports.ts";
import { DetailType, EventSource, parseInboundEvent } from "../core/events.ts";
import { SessionStatusChangedDetailSchema } from "../core/session-events.ts";
import type { SessionStatus } from "../core/status.ts";

/** A batch of EventBridge envelopes, parsed; `clusterArn`: the Fargate executor's cluster, if any. */
export function parseBatch(envelopes: readonly unknown[], clusterArn?: string): ParsedBatch {
  const events = envelopes.map((e) => parseBatchEvent(e, clusterArn));
  return {
    events,
    written: writtenSpecs(envelopes, events),
    sessionIds: envelopes.flatMap(namedSession),
  };
}

/** The id and event id of a submission that did not parse, as far as they can be read. */
function submissionOf(envelope: unknown): { id?: unknown; eventId?: unknown } {
  if (typeof envelope !== "object" || envelope === null) return {};
  const e = envelope as Record<string, unknown>;
  const detail = e["detail"];
  // A submission names its id `sessionId`; a draft's events name it `jobId`.
  const fields = typeof detail === "object" && detail !== null ? (detail as Record<string, unknown>) : {};
  const id = fields["sessionId"] ?? fields["jobId"];
  return { id, eventId: e["id"] };
}

/**
 * Each submission's spec as its submitter wrote it, by event id: a job template's
 * defaults apply to the fields it left unset, which the parsed spec no longer tells apart. A
 * submission made by the control plane (a draft's) is its parsed spec. A saved draft keeps its
 * spec as written too.
 */
function writtenSpecs(envelopes: readonly unknown[], events: readonly BatchEvent[]): Map<string, unknown> {
  const written = new Map<string, unknown>();
  const drafts = new Set<string>();
  for (const e of events) {
    if (e.kind === "inbound" && e.event.detailType === DetailType.SessionSubmitted) {
      written.set(e.event.id, e.event.detail.spec);
    }
    if (e.kind === "inbound" && e.event.detailType === DetailType.JobDraftSaved) drafts.add(e.event.id);
  }
  for (const envelope of envelopes) {
    if (typeof envelope !== "object" || envelope === null) continue;
    const { id, detail } = envelope as { id?: unknown; detail?: unknown };
    const spec =
      typeof detail === "object" && detail !== null ? (detail as { spec?: unknown }).spec : undefined;
    if (typeof id !== "string" || spec === undefined) continue;
    if (written.has(id) || drafts.has(id)) written.set(id, spec);
  }
  return written;
}

/**
 * An envelope as the step reads it: the control plane's own status change, a Fargate task's
 * event (`clusterArn`: the Fargate executor's cluster, if any), an inbound event (its schema in
 * core/events.ts), or why not.
 */
function parseBatchEvent(envelope: unknown, clusterArn: string | undefined): BatchEvent {
  const own = ownStatusChange(envelope);
  if (own) return { kind: "status-changed", ...own };
  const task = parseTaskEvent(envelope, clusterArn);
  if (task) return task;
  const parsed = parseInboundEvent(envelope);
  if (parsed.ok) return { kind: "inbound", event: parsed.event };
  const { eventId, detailType, message } = parsed.error;
  return { kind: "invalid", eventId, detailType, message, submission: submissionOf(envelope) };
}

/** The control plane's own "Session Status Changed" events only wake passes. */
function ownStatusChange(
  envelope: unknown,
): { sessionId: string; from: SessionStatus; to: SessionStatus } | undefined {
  if (typeof envelope !== "object" || envelope === null) return undefined;
  const e = envelope as Record<string, unknown>;
  if (e["source"] !== EventSource.ControlPlane || e["detail-type"] !== DetailType.SessionStatusChanged) {
    return undefined;
  }
  const detail = SessionStatusChangedDetailSchema.safeParse(e["detail"]);
  return detail.success
    ? { sessionId: detail.data.sessionId, from: detail.data.from, to: detail.data.to }
    : undefined;
}

/** The session an event names, for reading the batch's sessions together (submissions: none yet). */
function namedSession(envelope: unknown): string[] {
  if (typeof envelope !== "object" || envelope === null) return [];
  const e = envelope as Record<string, unknown>;
  const type = e["detail-type"];
  if (
    type !== DetailType.KernelStatusChanged &&
    type !== DetailType.SessionStatusChanged &&
    type !== DetailType.SessionCancelRequested
  ) {
    return [];
  }
  const detail = e["detail"];
  const id =
    typeof detail === "object" && detail !== null
      ? (detail as Record<string, unknown>)["sessionId"]
      : undefined;
  return typeof id === "string" && id.length > 0 && id.length <= 256 ? [id] : [];
}
