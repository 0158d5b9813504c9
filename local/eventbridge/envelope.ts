/**
 * PutEvents request and entry validation, and the EventBridge event envelope, as AWS builds
 * them. Limits and messages follow the EventBridge API reference and User Guide ("Calculating
 * PutEvents event entry size"); the per-entry error codes are those the real service returns.
 */
import type { PutEventsRequestEntry } from "@aws-sdk/client-eventbridge";
import {
  entrySizeBytes,
  MAX_ENTRIES_PER_REQUEST,
  MAX_REQUEST_BYTES,
} from "../../functions/topology/put-events.ts";
import { ValidationError } from "./errors.ts";
import { isPlainObject } from "./pattern-leaf.ts";

export type { PutEventsRequestEntry };

export const MAX_ENTRIES_PER_PUT_EVENTS = MAX_ENTRIES_PER_REQUEST;
/** 256 KiB for the entries of one request, measured as AWS measures them (entrySizeBytes). */
export const MAX_PUT_EVENTS_SIZE_BYTES = MAX_REQUEST_BYTES;
export { entrySizeBytes };

/** The event every target receives. */
export interface EventBridgeEvent<TDetail = unknown> {
  readonly version: "0";
  readonly id: string;
  readonly "detail-type": string;
  readonly source: string;
  readonly account: string;
  /** ISO 8601, second precision, UTC: `2017-12-22T18:43:48Z`. */
  readonly time: string;
  readonly region: string;
  readonly resources: readonly string[];
  readonly detail: TDetail;
}

export interface PutEventsSuccessEntry {
  readonly EventId: string;
}
export interface PutEventsFailureEntry {
  readonly ErrorCode: string;
  readonly ErrorMessage: string;
}
export type PutEventsResultEntry = PutEventsSuccessEntry | PutEventsFailureEntry;

export interface PutEventsResult {
  readonly FailedEntryCount: number;
  readonly Entries: readonly PutEventsResultEntry[];
}

export function isFailureEntry(entry: PutEventsResultEntry): entry is PutEventsFailureEntry {
  return "ErrorCode" in entry;
}

/** Request-level checks: AWS rejects the whole call (ValidationException) when these fail. */
export function validatePutEventsRequest(
  entries: unknown,
): asserts entries is readonly PutEventsRequestEntry[] {
  if (!Array.isArray(entries)) {
    throw new ValidationError(
      "1 validation error detected: Value at 'entries' failed to satisfy constraint: Member must not be null",
    );
  }
  if (entries.length < 1) {
    throw new ValidationError(
      "1 validation error detected: Value '[]' at 'entries' failed to satisfy constraint: Member must have length greater than or equal to 1",
    );
  }
  if (entries.length > MAX_ENTRIES_PER_PUT_EVENTS) {
    throw new ValidationError(
      `1 validation error detected: Value at 'entries' failed to satisfy constraint: Member must have length less than or equal to ${MAX_ENTRIES_PER_PUT_EVENTS} (got ${entries.length})`,
    );
  }
  let totalBytes = 0;
  for (const entry of entries as unknown[]) {
    if (!isPlainObject(entry)) throw new ValidationError("Each entry of 'entries' must be an object");
    totalBytes += entrySizeBytes(entry);
  }
  if (totalBytes > MAX_PUT_EVENTS_SIZE_BYTES) {
    throw new ValidationError("Total size of the entries in the request is over the limit.");
  }
}

export interface EnvelopeContext {
  /** Called only for an entry that is accepted, so rejected entries consume no id. */
  readonly newId: () => string;
  readonly account: string;
  readonly region: string;
  readonly nowMs: number;
  /** An AWS service's own event (ECS task state changes): the aws.* namespace is allowed. */
  readonly awsService?: boolean;
}

/**
 * Validates one entry and builds its envelope, or returns the failure AWS would put in the
 * entry's slot. The bus name is checked by the caller (it knows which bus it is).
 */
export function buildEnvelope(
  entry: PutEventsRequestEntry,
  ctx: EnvelopeContext,
): { readonly event: EventBridgeEvent } | { readonly failure: PutEventsFailureEntry } {
  const fail = (ErrorCode: string, ErrorMessage: string) => ({ failure: { ErrorCode, ErrorMessage } });
  if (!nonEmptyString(entry.Source)) {
    return fail("InvalidArgument", "Parameter Source is not valid. Reason: Source is a required argument.");
  }
  if (!nonEmptyString(entry.DetailType)) {
    return fail(
      "InvalidArgument",
      "Parameter DetailType is not valid. Reason: DetailType is a required argument.",
    );
  }
  if (!nonEmptyString(entry.Detail)) {
    return fail("InvalidArgument", "Parameter Detail is not valid. Reason: Detail is a required argument.");
  }
  // Only AWS services may publish under the aws. namespace.
  if (entry.Source.startsWith("aws.") && ctx.awsService !== true)
    return fail("NotAuthorizedForSourceException", "Not authorized for the source.");
  let detail: unknown;
  try {
    detail = JSON.parse(entry.Detail);
  } catch {
    return fail("MalformedDetail", "Detail is malformed.");
  }
  if (!isPlainObject(detail)) return fail("MalformedDetail", "Detail is malformed.");
  const resources = entry.Resources ?? [];
  if (!Array.isArray(resources) || !resources.every((r) => typeof r === "string")) {
    return fail(
      "InvalidArgument",
      "Parameter Resources is not valid. Reason: Resources must be a list of strings.",
    );
  }
  let timeMs = ctx.nowMs;
  if (entry.Time !== undefined && entry.Time !== null) {
    const t = entry.Time instanceof Date ? entry.Time.getTime() : NaN;
    if (!Number.isFinite(t))
      return fail("InvalidArgument", "Parameter Time is not valid. Reason: Time must be a valid timestamp.");
    timeMs = t;
  }
  return {
    event: {
      version: "0",
      id: ctx.newId(),
      "detail-type": entry.DetailType,
      source: entry.Source,
      account: ctx.account,
      time: isoSeconds(timeMs),
      region: ctx.region,
      resources: [...resources],
      detail,
    },
  };
}

// Events put in the same second share their timestamp; formatting it once per second is a
// measurable share of PutEvents' cost.
let lastEpochSec = NaN;
let lastIso = "";

export function isoSeconds(epochMs: number): string {
  const epochSec = Math.floor(epochMs / 1000);
  if (epochSec !== lastEpochSec) {
    lastIso = new Date(epochSec * 1000).toISOString().replace(".000Z", "Z");
    lastEpochSec = epochSec;
  }
  return lastIso;
}

function nonEmptyString(value: unknown): value is string {
  return typeof value === "string" && value.length > 0;
}
