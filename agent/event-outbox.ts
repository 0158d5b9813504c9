/**
 * The agent's way onto the bus: every event it puts (reports, heartbeats, route health,
 * registration) goes through one outbox, which sends them in order, one PutEvents request at a
 * time, each carrying everything that queued while the previous one was out (up to the
 * request's limits, functions/topology/put-events.ts).
 *
 * Why: a kernel that starts and exits at once produces its reports within a millisecond or two.
 * Sent one request each, and in parallel, they reach the control plane's report queue as
 * separate messages, often in separate batches handled at once, where they contend for the same
 * kernel and one of them must read and write again. Sent together, they arrive together, and the
 * control plane writes them as one. A short linger (`lingerMs`) lets the reports of one moment
 * gather before the first request leaves. It also means one request, one signature and one
 * connection's round trip for many events. An entry may also take the place of one of its key
 * queued before it and not yet sent (Coalesce): the agent's report of a kernel then carries the
 * status its previous report only passed through, and the two reach the control plane as one
 * event, which no two report batches can split.
 *
 * Nothing is dropped silently: an entry the bus refuses is sent again with the next request, up
 * to `attempts` times in all, and one that still fails (or that no request could carry) is
 * logged and its `send` resolves false. A failed request holds the entries behind it, so order
 * is kept; one unanswered for 10 s is abandoned and sent again (the control plane takes a
 * report or heartbeat that arrives twice as it takes it once).
 */
import {
  PutEventsCommand,
  type EventBridgeClient,
  type PutEventsRequestEntry,
} from "@aws-sdk/client-eventbridge";
import { entrySizeBytes, MAX_REQUEST_BYTES, roomFor } from "../functions/topology/put-events.ts";

export interface EventOutboxOptions {
  readonly events: Pick<EventBridgeClient, "send">;
  /** A line for the agent's log (prefixed by the caller). */
  readonly log: (line: string) => void;
  /** Sends of one entry before it is given up. @default 5 */
  readonly attempts?: number;
  /** How long the first entry of an idle outbox waits for others. @default 25 */
  readonly lingerMs?: number;
  /** Wait before a request is sent again after a failure. @default 200 × 2^(attempt − 1) ms */
  readonly backoffMs?: (attempt: number) => number;
  /**
   * A request not answered within this is abandoned and sent again: one request is out at a
   * time, so a connection that hangs must not hold every later report and heartbeat behind it
   * (the SDK sets no request timeout of its own). @default 10000
   */
  readonly requestTimeoutMs?: number;
}

/**
 * How an entry may take the place of one queued before it that has not left yet: entries with
 * the same `key` are offered to `merge`, which returns the one entry that says both, or
 * undefined to queue the new entry after the other.
 */
export interface Coalesce {
  readonly key: string;
  merge(queued: PutEventsRequestEntry): PutEventsRequestEntry | undefined;
}

interface Queued {
  entry: PutEventsRequestEntry;
  bytes: number;
  /** Sends so far. */
  attempts: number;
  readonly key: string | undefined;
  /** One per entry merged into this one: each learns whether it was sent. */
  readonly resolves: ((sent: boolean) => void)[];
}

export class EventOutbox {
  readonly #o: EventOutboxOptions;
  readonly #queue: Queued[] = [];
  #pumping = false;
  /** Requests sent, for the agent's figures and tests. */
  requests = 0;
  /** Entries merged into one queued before them (Coalesce). */
  merged = 0;

  constructor(options: EventOutboxOptions) {
    this.#o = options;
  }

  /**
   * Queues `entry`; resolves true once the bus accepted it, false when it was given up. With
   * `coalesce`, the entry may instead be merged into the last queued entry of its key that has
   * not been sent yet (Coalesce), keeping that entry's place in the queue.
   */
  send(entry: PutEventsRequestEntry, coalesce?: Coalesce): Promise<boolean> {
    const bytes = entrySizeBytes(entry);
    if (bytes >= MAX_REQUEST_BYTES) {
      this.#o.log(
        `could not send ${entry.DetailType ?? "?"}: it is ${bytes} bytes; a PutEvents request carries less than ${MAX_REQUEST_BYTES}`,
      );
      return Promise.resolve(false);
    }
    return new Promise((resolve) => {
      if (coalesce && this.#merge(coalesce, resolve)) {
        this.merged++;
        return;
      }
      this.#queue.push({ entry, bytes, attempts: 0, key: coalesce?.key, resolves: [resolve] });
      void this.#pump();
    });
  }

  /** Merges into the last queued entry of the key, if it has not been sent and the merge says so. */
  #merge(coalesce: Coalesce, resolve: (sent: boolean) => void): boolean {
    const queued = this.#queue.findLast((q) => q.key === coalesce.key);
    if (!queued || queued.attempts > 0) return false;
    const merged = coalesce.merge(queued.entry);
    if (!merged) return false;
    const bytes = entrySizeBytes(merged);
    if (bytes >= MAX_REQUEST_BYTES) return false;
    queued.entry = merged;
    queued.bytes = bytes;
    queued.resolves.push(resolve);
    return true;
  }

  /** Entries queued and not yet sent or given up. */
  get pending(): number {
    return this.#queue.length;
  }

  async #pump(): Promise<void> {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      // Even with no linger, events put in the same turn of the event loop go together.
      await sleep(this.#o.lingerMs ?? 25);
      while (this.#queue.length > 0) {
        const request = this.#take();
        const failedAttempt = await this.#sendRequest(request);
        if (failedAttempt !== undefined) await sleep(this.#backoff(failedAttempt));
      }
    } finally {
      this.#pumping = false;
    }
  }

  /** The head of the queue, as much as one request carries. Left queued until settled. */
  #take(): Queued[] {
    const request: Queued[] = [];
    let bytes = 0;
    for (const queued of this.#queue) {
      if (!roomFor(request.length, bytes, queued.bytes)) break;
      request.push(queued);
      bytes += queued.bytes;
    }
    return request;
  }

  /**
   * Sends one request and settles what it can: accepted entries resolve true, entries out of
   * attempts resolve false, the rest stay at the head of the queue. Returns the attempt number
   * when anything is left to send again (the caller waits before the next request).
   */
  async #sendRequest(request: readonly Queued[]): Promise<number | undefined> {
    const attempts = this.#o.attempts ?? 5;
    for (const queued of request) queued.attempts++;
    const attempt = Math.max(...request.map((q) => q.attempts));
    this.requests++;
    let results: readonly { readonly ErrorCode?: string; readonly ErrorMessage?: string }[];
    try {
      const out = await this.#o.events.send(new PutEventsCommand({ Entries: request.map((q) => q.entry) }), {
        abortSignal: AbortSignal.timeout(this.#o.requestTimeoutMs ?? 10_000),
      });
      results = out.Entries ?? [];
    } catch (error) {
      // A request the bus refuses as such (a client fault) fails the same way every time.
      const final = (error as { $fault?: string }).$fault === "client";
      for (const queued of request) {
        if (final || queued.attempts >= attempts) {
          this.#o.log(`could not send ${queued.entry.DetailType ?? "?"}: ${String(error)}`);
          this.#settle(queued, false);
        }
      }
      return this.#queue.length > 0 && !final ? attempt : undefined;
    }
    let again = false;
    request.forEach((queued, i) => {
      const result = results[i];
      if (result?.ErrorCode === undefined) {
        this.#settle(queued, true);
        return;
      }
      this.#o.log(`${queued.entry.DetailType ?? "?"} rejected: ${result.ErrorMessage ?? result.ErrorCode}`);
      if (queued.attempts >= attempts) this.#settle(queued, false);
      else again = true;
    });
    return again ? attempt : undefined;
  }

  #settle(queued: Queued, sent: boolean): void {
    const at = this.#queue.indexOf(queued);
    if (at >= 0) this.#queue.splice(at, 1);
    for (const resolve of queued.resolves) resolve(sent);
  }

  #backoff(attempt: number): number {
    return this.#o.backoffMs?.(attempt) ?? 200 * 2 ** (attempt - 1);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
