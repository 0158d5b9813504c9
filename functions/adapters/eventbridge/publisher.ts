/**
 * Publishes events to the bus in as few PutEvents requests as the limits allow: at most 10
 * entries and less than 256 KiB of entries per request, sizes counted as EventBridge counts them.
 * Entries that failed individually are resent. An entry that still fails after the retries, or
 * one too large for any request, raises: an event is never dropped silently.
 */
import {
  PutEventsCommand,
  type EventBridgeClient,
  type PutEventsRequestEntry,
} from "@aws-sdk/client-eventbridge";
import { errorCode, PortError } from "../../core/ports/errors.ts";
import {
  entrySizeBytes,
  MAX_ENTRIES_PER_REQUEST,
  MAX_REQUEST_BYTES,
  packRequests as packEntries,
} from "../../topology/put-events.ts";

export interface OutboundEntry {
  readonly Source: string;
  readonly DetailType: string;
  readonly Detail: string;
  readonly EventBusName: string;
}

export class PublishError extends PortError {
  override readonly name = "PublishError";
  readonly code = "PUBLISH";
  /** False when sending again cannot help (an entry over the request limit). */
  override readonly retryable: boolean;
  constructor(message: string, retryable = true) {
    super(message);
    this.retryable = retryable;
  }
}

export { entrySizeBytes, MAX_ENTRIES_PER_REQUEST, MAX_REQUEST_BYTES };

/**
 * The requests to send, in order: each as full as both limits allow. Throws (not retryable)
 * before anything is sent if an entry could never fit a request.
 */
export function packRequests(entries: readonly PutEventsRequestEntry[]): PutEventsRequestEntry[][] {
  try {
    return packEntries(entries);
  } catch (error) {
    if (errorCode(error) === "ENTRY_TOO_LARGE") throw new PublishError((error as Error).message, false);
    throw error;
  }
}

export class EventPublisher {
  readonly #client: EventBridgeClient;
  readonly #attempts: number;
  /** Entries accepted by the bus, for the benchmark's per-session figures. */
  published = 0;

  constructor(client: EventBridgeClient, attempts = 4) {
    this.#client = client;
    this.#attempts = attempts;
  }

  async publish(entries: readonly OutboundEntry[]): Promise<void> {
    for (const request of packRequests(entries)) await this.#publishChunk(request);
  }

  async #publishChunk(chunk: readonly PutEventsRequestEntry[]): Promise<void> {
    let pending = [...chunk];
    let lastError = "";
    for (let attempt = 1; attempt <= this.#attempts && pending.length > 0; attempt++) {
      if (attempt > 1) await new Promise((r) => setTimeout(r, 50 * 2 ** attempt));
      const out = await this.#client.send(new PutEventsCommand({ Entries: pending }));
      const failed: PutEventsRequestEntry[] = [];
      (out.Entries ?? []).forEach((result, i) => {
        const entry = pending[i];
        if (result.ErrorCode && entry) {
          failed.push(entry);
          lastError = `${result.ErrorCode}: ${result.ErrorMessage ?? ""}`;
        }
      });
      this.published += pending.length - failed.length;
      pending = failed;
    }
    if (pending.length > 0) {
      throw new PublishError(
        `${pending.length} event(s) were not accepted by the bus after ${this.#attempts} attempts (${lastError})`,
      );
    }
  }
}
