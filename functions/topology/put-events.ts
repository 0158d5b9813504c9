/**
 * EventBridge's PutEvents limits, shared by everything that sends or serves events: the
 * functions' publisher, the agent's outbox and the embedded bus that enforces them. At most 10
 * entries per request, and at most 256 KiB of entries, counted as EventBridge counts them
 * ("Calculating PutEvents event entry size").
 */

import { CoreError } from "../core/errors.ts";

export const MAX_ENTRIES_PER_REQUEST = 10;
/** The entries of one PutEvents request may total at most this many bytes (entrySizeBytes). */
export const MAX_REQUEST_BYTES = 256 * 1024;

/** The fields of an entry that count towards its size (structurally a PutEventsRequestEntry). */
export interface SizedEntry {
  readonly Time?: unknown;
  readonly Source?: unknown;
  readonly DetailType?: unknown;
  readonly Detail?: unknown;
  readonly Resources?: unknown;
}

/**
 * An entry's size as EventBridge counts it: Time 14 bytes if set; Source, DetailType, Detail and
 * each Resource their UTF-8 length. The bus name does not count.
 */
export function entrySizeBytes(entry: SizedEntry): number {
  let size = entry.Time !== undefined && entry.Time !== null ? 14 : 0;
  size += utf8Length(entry.Source) + utf8Length(entry.DetailType) + utf8Length(entry.Detail);
  if (Array.isArray(entry.Resources)) for (const r of entry.Resources) size += utf8Length(r);
  return size;
}

function utf8Length(value: unknown): number {
  return typeof value === "string" ? Buffer.byteLength(value, "utf8") : 0;
}

/** Whether a request of `entries` entries and `bytes` bytes can take one more of `more` bytes. */
export function roomFor(entries: number, bytes: number, more: number): boolean {
  return entries < MAX_ENTRIES_PER_REQUEST && bytes + more < MAX_REQUEST_BYTES;
}

/** An entry no PutEvents request can carry. Sending it again cannot help (CoreError: never retryable). */
export class EntryTooLargeError extends CoreError {
  override readonly name = "EntryTooLargeError";
  readonly code = "ENTRY_TOO_LARGE";
  constructor(detailType: unknown, bytes: number) {
    super(
      `a ${typeof detailType === "string" ? detailType : "?"} event is ${bytes} bytes; the entries of a PutEvents request must total less than ${MAX_REQUEST_BYTES}`,
    );
  }
}

/**
 * The requests to send, in order, each as full as both limits allow (a request's entries stay
 * strictly under MAX_REQUEST_BYTES). Throws EntryTooLargeError before anything is sent if an
 * entry could never fit a request.
 */
export function packRequests<E extends SizedEntry>(entries: readonly E[]): E[][] {
  const requests: E[][] = [];
  let current: E[] = [];
  let currentBytes = 0;
  for (const entry of entries) {
    const bytes = entrySizeBytes(entry);
    if (bytes >= MAX_REQUEST_BYTES) throw new EntryTooLargeError(entry.DetailType, bytes);
    if (!roomFor(current.length, currentBytes, bytes)) {
      requests.push(current);
      current = [];
      currentBytes = 0;
    }
    current.push(entry);
    currentBytes += bytes;
  }
  if (current.length > 0) requests.push(current);
  return requests;
}
