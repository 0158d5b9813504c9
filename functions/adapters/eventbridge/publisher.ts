/**
 * Publishes events to the bus in chunks of 10 (the PutEvents limit), resending entries that
 * failed individually. An entry that still fails after the retries raises: an event is never
 * dropped silently.
 */
import {
  PutEventsCommand,
  type EventBridgeClient,
  type PutEventsRequestEntry,
} from "@aws-sdk/client-eventbridge";

export interface OutboundEntry {
  readonly Source: string;
  readonly DetailType: string;
  readonly Detail: string;
  readonly EventBusName: string;
}

export class PublishError extends Error {
  override readonly name = "PublishError";
  readonly code = "PUBLISH";
}

const MAX_ENTRIES = 10;

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
    for (let i = 0; i < entries.length; i += MAX_ENTRIES) {
      await this.#publishChunk(entries.slice(i, i + MAX_ENTRIES));
    }
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
