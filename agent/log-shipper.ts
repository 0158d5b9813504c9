/**
 * Ships a LocalAgent's kernel output to CloudWatch Logs (`cairn agent`): every line the agent
 * hears (`onLog`) is buffered per run's log stream (log-events.ts) and sent with PutLogEvents in
 * batches that obey every documented limit: at most 10,000 events and 1,048,576 bytes (each event
 * counted as its UTF-8 message plus 26 bytes), events in time order, a batch spanning less than
 * 24 hours, no event over the largest event size (a longer line is split into parts that say so).
 *
 * Each stream sends one batch at a time, so its events arrive in order; a stream's timestamps
 * never go backwards (a clock stepped back is clamped), so a reader following the stream's
 * forward token misses nothing. Throttling, 5xx answers and dropped connections are retried with
 * backoff; memory is capped: past `maxBufferedBytes` new lines are dropped, counted, and one
 * marker event in their stream says how many, where they were.
 */
import {
  CreateLogStreamCommand,
  PutLogEventsCommand,
  type CloudWatchLogsClient,
  type InputLogEvent,
} from "@aws-sdk/client-cloudwatch-logs";
import { InvalidAgentInputError } from "./errors.ts";
import {
  droppedMessage,
  EVENT_OVERHEAD_BYTES,
  kernelLogStreamName,
  lineMessages,
  type DroppedCount,
} from "./log-events.ts";
import type { LogLine } from "./types.ts";

/** PutLogEvents' documented limits. */
export const PUT_LOG_EVENTS_LIMITS = {
  maxEvents: 10_000,
  maxBatchBytes: 1_048_576,
  /** A batch spanning this long or more is refused. */
  maxSpanMs: 24 * 60 * 60 * 1000,
  /**
   * The largest event, overhead included. AWS now documents 1 MB, but some partitions still
   * document 256 KB: the smaller one is accepted everywhere.
   */
  maxEventBytes: 262_144,
} as const;

export interface LogShipperOptions {
  readonly client: Pick<CloudWatchLogsClient, "send">;
  readonly logGroupName: string;
  /** Time for the idle-stream sweep and the close deadline (line times come from the lines). */
  readonly clock: () => number;
  /** Trouble the shipper recovers from or gives up on; each kind is said once per episode. */
  readonly warn: (message: string, error?: unknown) => void;
  /** How often buffered lines are sent. @default 1000 */
  readonly flushIntervalMs?: number;
  /** Buffered output, all streams together; past it new lines are dropped and counted. @default 8 MiB */
  readonly maxBufferedBytes?: number;
  /** The largest event sent, the 26 bytes of overhead included. @default 262144 */
  readonly maxEventBytes?: number;
  /** First retry delay; it doubles per attempt, with jitter. @default 200 */
  readonly retryBaseMs?: number;
  /** @default 10000 */
  readonly retryMaxMs?: number;
  /** How long close() keeps retrying before it drops what is left (counted). @default 30000 */
  readonly closeTimeoutMs?: number;
  /** An empty stream's state is forgotten after this long without output. @default 600000 */
  readonly idleStreamMs?: number;
  /** @default setTimeout */
  readonly sleep?: (ms: number) => Promise<void>;
  /** In [0, 1), for jitter. @default Math.random */
  readonly random?: () => number;
}

export interface LogShipperStats {
  /** Events CloudWatch Logs accepted (split parts and markers count one each). */
  readonly eventsSent: number;
  /** Their bytes as PutLogEvents counts them (message + 26). */
  readonly bytesSent: number;
  readonly batchesSent: number;
  readonly retries: number;
  readonly streamsCreated: number;
  /** Lines longer than one event, sent as several parts. */
  readonly linesSplit: number;
  /** Lines (or split parts) not sent: buffer full, a batch given up on, or after close. */
  readonly linesDropped: number;
  readonly bytesDropped: number;
  /** Events CloudWatch Logs refused as too old, too new or expired (rejectedLogEventsInfo). */
  readonly eventsRejected: number;
  readonly bufferedEvents: number;
  readonly bufferedBytes: number;
}

/** What LocalAgent offers for this: its log listener registration. */
export interface LogSource {
  onLog(listener: (line: LogLine) => void): () => void;
}

interface PendingEvent {
  readonly timestamp: number;
  readonly message: string;
  /** As PutLogEvents counts it. */
  readonly bytes: number;
  /** Lines this event stands for when it is dropped (a split line's parts count once in all). */
  readonly lines: number;
}

interface StreamState {
  readonly name: string;
  queue: PendingEvent[];
  head: number;
  /** Events ever enqueued / taken for sending: a flush sends up to the count at its call. */
  enqueued: number;
  taken: number;
  target: number;
  created: boolean;
  lastTimestamp: number;
  lastActivityMs: number;
  dropped: (DroppedCount & { atMs: number; why: string }) | undefined;
  sending: Promise<void> | undefined;
}

const MiB = 1024 * 1024;
/**
 * Ended runs whose stream counts are kept: a run placed again within the same run (on this
 * agent) writes on in the same stream, and its count goes on from there.
 */
const ENDED_COUNTS_KEPT = 10_000;
const THROTTLING_NAMES: ReadonlySet<string> = new Set([
  "ThrottlingException",
  "Throttling",
  "ThrottledException",
  "TooManyRequestsException",
  "RequestLimitExceeded",
  "RequestThrottled",
  "RequestThrottledException",
  "ServiceUnavailableException",
  "ServiceUnavailable",
  "InternalFailure",
  "InternalServerError",
  "RequestTimeout",
  "RequestTimeoutException",
  "TimeoutError",
]);
const TRANSIENT_NETWORK_CODES: ReadonlySet<string> = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "ECONNABORTED",
  "ETIMEDOUT",
  "EPIPE",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENETDOWN",
  "UND_ERR_SOCKET",
]);

/**
 * Whether a failed call may succeed if repeated: decided from the error's data (`$retryable`,
 * `name`, `$metadata.httpStatusCode`, `$fault`, a socket's `code`), never from its message.
 */
export function isRetryableAwsError(error: unknown): boolean {
  for (let link = error, depth = 0; link !== undefined && link !== null && depth < 8; depth++) {
    if (typeof link !== "object") return false;
    const e = link as {
      $retryable?: unknown;
      name?: unknown;
      code?: unknown;
      $fault?: unknown;
      $metadata?: { httpStatusCode?: unknown };
      cause?: unknown;
    };
    if (e.$retryable !== undefined && e.$retryable !== null && e.$retryable !== false) return true;
    if (typeof e.name === "string" && THROTTLING_NAMES.has(e.name)) return true;
    if (typeof e.code === "string" && TRANSIENT_NETWORK_CODES.has(e.code)) return true;
    const status = e.$metadata?.httpStatusCode;
    if (typeof status === "number") return status === 429 || status >= 500;
    if (e.$fault === "server") return true;
    link = e.cause;
  }
  return false;
}

export class LogShipper {
  readonly logGroupName: string;
  readonly #client: Pick<CloudWatchLogsClient, "send">;
  readonly #clock: () => number;
  readonly #warn: (message: string, error?: unknown) => void;
  readonly #maxBufferedBytes: number;
  readonly #maxMessageBytes: number;
  readonly #retryBaseMs: number;
  readonly #retryMaxMs: number;
  readonly #closeTimeoutMs: number;
  readonly #idleStreamMs: number;
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #random: () => number;
  readonly #streams = new Map<string, StreamState>();
  /** Events CloudWatch Logs accepted per stream, until its run's end (flush); then in #ended. */
  readonly #accepted = new Map<string, number>();
  readonly #ended = new Map<string, number>();
  readonly #detach: (() => void)[] = [];
  readonly #timer: NodeJS.Timeout;
  /** Warnings already given, by kind, until the trouble clears. */
  readonly #warned = new Set<string>();
  #bufferedBytes = 0;
  #bufferedEvents = 0;
  #closing: { deadlineMs: number } | undefined;
  #stats = {
    eventsSent: 0,
    bytesSent: 0,
    batchesSent: 0,
    retries: 0,
    streamsCreated: 0,
    linesSplit: 0,
    linesDropped: 0,
    bytesDropped: 0,
    eventsRejected: 0,
  };

  constructor(options: LogShipperOptions) {
    if (typeof options.client?.send !== "function") {
      throw new InvalidAgentInputError("client", "must be a CloudWatchLogsClient");
    }
    if (!/^[.\-_/#A-Za-z0-9]{1,512}$/.test(options.logGroupName)) {
      throw new InvalidAgentInputError(
        "logGroupName",
        `"${options.logGroupName}" is not a log group name (1 to 512 of A-Z a-z 0-9 . - _ / #)`,
      );
    }
    this.logGroupName = options.logGroupName;
    this.#client = options.client;
    this.#clock = options.clock;
    this.#warn = options.warn;
    const flushIntervalMs = positive("flushIntervalMs", options.flushIntervalMs ?? 1000);
    this.#maxBufferedBytes = positive("maxBufferedBytes", options.maxBufferedBytes ?? 8 * MiB);
    const maxEventBytes = positive(
      "maxEventBytes",
      options.maxEventBytes ?? PUT_LOG_EVENTS_LIMITS.maxEventBytes,
    );
    if (maxEventBytes > PUT_LOG_EVENTS_LIMITS.maxBatchBytes || maxEventBytes < 256) {
      throw new InvalidAgentInputError(
        "maxEventBytes",
        `must be from 256 to ${PUT_LOG_EVENTS_LIMITS.maxBatchBytes}, got ${maxEventBytes}`,
      );
    }
    this.#maxMessageBytes = maxEventBytes - EVENT_OVERHEAD_BYTES;
    this.#retryBaseMs = positive("retryBaseMs", options.retryBaseMs ?? 200);
    this.#retryMaxMs = positive("retryMaxMs", options.retryMaxMs ?? 10_000);
    this.#closeTimeoutMs = positive("closeTimeoutMs", options.closeTimeoutMs ?? 30_000);
    this.#idleStreamMs = positive("idleStreamMs", options.idleStreamMs ?? 600_000);
    this.#sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.#random = options.random ?? Math.random;
    this.#timer = setInterval(() => this.#tick(), flushIntervalMs);
    // The agent's own lifetime decides when the process ends, not this timer.
    this.#timer.unref();
  }

  /** Ships every line `source` (a LocalAgent) emits from now on. Returns the unsubscribe. */
  attach(source: LogSource): () => void {
    const off = source.onLog((line) => this.add(line));
    this.#detach.push(off);
    return off;
  }

  /** Buffers one line for its run's stream. Never throws: what cannot be kept is counted. */
  add(line: LogLine): void {
    if (this.#closing !== undefined) {
      this.#countDropped(undefined, 1, Buffer.byteLength(line.text));
      this.#warnOnce("closed", "kernel output arrived after the log shipper was closed; dropped (counted)");
      return;
    }
    let name: string;
    try {
      name = kernelLogStreamName(line.sessionId, line.kernelIndex, line.runIndex);
    } catch (error) {
      this.#countDropped(undefined, 1, Buffer.byteLength(line.text));
      this.#warnOnce("stream-name", "kernel output with an invalid log stream name was dropped", error);
      return;
    }
    const state = this.#stream(name);
    state.lastActivityMs = this.#clock();
    const timestamp = Math.max(line.atMs, state.lastTimestamp);
    const messages = lineMessages(line.stream, line.text, this.#maxMessageBytes);
    const events = messages.map((message, i) => ({
      timestamp,
      message,
      bytes: Buffer.byteLength(message) + EVENT_OVERHEAD_BYTES,
      lines: i === 0 ? 1 : 0,
    }));
    const bytes = events.reduce((sum, e) => sum + e.bytes, 0);
    if (this.#bufferedBytes + bytes > this.#maxBufferedBytes) {
      const why = `the agent's log buffer (${this.#maxBufferedBytes} bytes) was full`;
      this.#countDropped(state, 1, Buffer.byteLength(line.text), timestamp, why);
      this.#warnOnce(
        "buffer-full",
        `log buffer full (${this.#maxBufferedBytes} bytes): dropping kernel output until CloudWatch Logs ` +
          "catches up; each affected stream gets a marker with the count",
      );
      return;
    }
    this.#warned.delete("buffer-full");
    if (messages.length > 1) this.#stats.linesSplit++;
    state.lastTimestamp = timestamp;
    this.#enqueueMarker(state);
    for (const event of events) this.#enqueue(state, event);
    // A full batch waiting is sent now rather than at the next tick.
    const waiting = state.enqueued - state.taken;
    if (
      waiting >= PUT_LOG_EVENTS_LIMITS.maxEvents ||
      this.#streamBytes(state) >= PUT_LOG_EVENTS_LIMITS.maxBatchBytes
    ) {
      void this.#send(state, state.enqueued);
    }
  }

  /**
   * Sends everything buffered for the run (at a run's end) and forgets the run's stream. Returns
   * how many events CloudWatch Logs has accepted in the run's stream (split parts and markers
   * count one each): once they are readable, a reader that has read that many has read it all.
   */
  async flush(sessionId: string, kernelIndex: number, runIndex: number): Promise<number> {
    const name = kernelLogStreamName(sessionId, kernelIndex, runIndex);
    const state = this.#streams.get(name);
    if (state !== undefined) {
      this.#enqueueMarker(state);
      await this.#send(state, state.enqueued);
      if (state.head >= state.queue.length && state.sending === undefined && state.dropped === undefined) {
        this.#streams.delete(state.name);
      }
    }
    const count = this.#accepted.get(name) ?? this.#ended.get(name) ?? 0;
    this.#accepted.delete(name);
    this.#ended.delete(name);
    this.#ended.set(name, count);
    const oldest = this.#ended.keys().next();
    if (this.#ended.size > ENDED_COUNTS_KEPT && oldest.done !== true) this.#ended.delete(oldest.value);
    return count;
  }

  /** Sends everything buffered, every stream. */
  async flushAll(): Promise<void> {
    await Promise.all(
      [...this.#streams.values()].map((state) => {
        this.#enqueueMarker(state);
        return this.#send(state, state.enqueued);
      }),
    );
  }

  /**
   * Stops listening, then drains: every buffered line is sent (retrying for up to
   * `closeTimeoutMs`; what is left then is dropped and counted). Idempotent.
   */
  async close(): Promise<void> {
    if (this.#closing === undefined) {
      this.#closing = { deadlineMs: this.#clock() + this.#closeTimeoutMs };
      clearInterval(this.#timer);
      for (const off of this.#detach.splice(0)) off();
    }
    await this.flushAll();
    for (const [name, state] of this.#streams) {
      if (state.head >= state.queue.length && state.sending === undefined) this.#streams.delete(name);
    }
  }

  stats(): LogShipperStats {
    return { ...this.#stats, bufferedEvents: this.#bufferedEvents, bufferedBytes: this.#bufferedBytes };
  }

  // ---- buffering ------------------------------------------------------------------------

  #stream(name: string): StreamState {
    let state = this.#streams.get(name);
    if (state === undefined) {
      state = {
        name,
        queue: [],
        head: 0,
        enqueued: 0,
        taken: 0,
        target: 0,
        created: false,
        lastTimestamp: 0,
        lastActivityMs: this.#clock(),
        dropped: undefined,
        sending: undefined,
      };
      this.#streams.set(name, state);
    }
    return state;
  }

  #enqueue(state: StreamState, event: PendingEvent): void {
    state.queue.push(event);
    state.enqueued++;
    this.#bufferedBytes += event.bytes;
    this.#bufferedEvents++;
  }

  /** The marker for what was dropped since the stream's last accepted line (over the cap: it is one small event). */
  #enqueueMarker(state: StreamState): void {
    const dropped = state.dropped;
    if (dropped === undefined) return;
    state.dropped = undefined;
    const message = droppedMessage({ lines: dropped.lines, bytes: dropped.bytes }, dropped.why);
    const timestamp = Math.max(dropped.atMs, state.lastTimestamp);
    state.lastTimestamp = timestamp;
    this.#enqueue(state, {
      timestamp,
      message,
      bytes: Buffer.byteLength(message) + EVENT_OVERHEAD_BYTES,
      lines: 0,
    });
  }

  #countDropped(state: StreamState | undefined, lines: number, bytes: number, atMs = 0, why = ""): void {
    this.#stats.linesDropped += lines;
    this.#stats.bytesDropped += bytes;
    if (state === undefined || lines === 0) return;
    const prior = state.dropped;
    state.dropped = {
      lines: (prior?.lines ?? 0) + lines,
      bytes: (prior?.bytes ?? 0) + bytes,
      atMs: Math.max(prior?.atMs ?? 0, atMs),
      // The first reason stands for the run of drops it started.
      why: prior?.why ?? why,
    };
  }

  #streamBytes(state: StreamState): number {
    let bytes = 0;
    for (let i = state.head; i < state.queue.length; i++) bytes += state.queue[i]!.bytes;
    return bytes;
  }

  #tick(): void {
    const nowMs = this.#clock();
    for (const state of this.#streams.values()) {
      if (state.enqueued > state.taken) {
        void this.#send(state, state.enqueued);
      } else if (
        state.sending === undefined &&
        state.dropped === undefined &&
        nowMs - state.lastActivityMs >= this.#idleStreamMs
      ) {
        // A run nobody flushed: forget it (its stream is created again if it ever writes).
        this.#streams.delete(state.name);
      }
    }
  }

  // ---- sending --------------------------------------------------------------------------

  /** Sends the stream's events up to number `target`; one sender per stream, joined by later calls. */
  #send(state: StreamState, target: number): Promise<void> {
    state.target = Math.max(state.target, target);
    state.sending ??= this.#sendLoop(state);
    return state.sending;
  }

  async #sendLoop(state: StreamState): Promise<void> {
    try {
      while (state.taken < state.target && state.head < state.queue.length) {
        const batch = this.#takeBatch(state);
        try {
          await this.#sendBatch(state, batch);
        } finally {
          const bytes = batch.reduce((sum, e) => sum + e.bytes, 0);
          this.#bufferedBytes -= bytes;
          this.#bufferedEvents -= batch.length;
        }
      }
    } catch (error) {
      // #sendBatch gives up by counting, never by throwing; this is a bug, said once.
      this.#warnOnce("bug", `log shipping to ${state.name} failed unexpectedly`, error);
    } finally {
      // Cleared in the same tick the loop decides it is done: a later #send starts a new loop.
      state.sending = undefined;
    }
  }

  /** The next batch: within every PutLogEvents limit, and no further than the flush target. */
  #takeBatch(state: StreamState): PendingEvent[] {
    const batch: PendingEvent[] = [];
    let bytes = 0;
    while (state.head < state.queue.length && state.taken < state.target) {
      const event = state.queue[state.head]!;
      const first = batch[0];
      if (
        batch.length === PUT_LOG_EVENTS_LIMITS.maxEvents ||
        bytes + event.bytes > PUT_LOG_EVENTS_LIMITS.maxBatchBytes ||
        (first !== undefined && event.timestamp - first.timestamp >= PUT_LOG_EVENTS_LIMITS.maxSpanMs)
      ) {
        break;
      }
      batch.push(event);
      bytes += event.bytes;
      state.head++;
      state.taken++;
    }
    // Compact now and then, so a long-lived stream's array does not keep what was sent.
    if (state.head > 1024 && state.head * 2 > state.queue.length) {
      state.queue = state.queue.slice(state.head);
      state.head = 0;
    }
    return batch;
  }

  async #sendBatch(state: StreamState, batch: readonly PendingEvent[]): Promise<void> {
    const logEvents: InputLogEvent[] = batch.map((e) => ({ timestamp: e.timestamp, message: e.message }));
    let attempt = 0;
    let recreated = false;
    for (;;) {
      try {
        if (!state.created) await this.#createStream(state);
        const out = await this.#client.send(
          new PutLogEventsCommand({ logGroupName: this.logGroupName, logStreamName: state.name, logEvents }),
        );
        const rejected = rejectedIndexes(out.rejectedLogEventsInfo, batch.length);
        this.#stats.batchesSent++;
        for (let i = 0; i < batch.length; i++) {
          if (rejected.has(i)) continue;
          this.#stats.eventsSent++;
          this.#stats.bytesSent += batch[i]!.bytes;
        }
        const accepted = batch.length - rejected.size;
        const prior = this.#accepted.get(state.name) ?? this.#ended.get(state.name) ?? 0;
        this.#ended.delete(state.name);
        this.#accepted.set(state.name, prior + accepted);
        if (rejected.size > 0) {
          this.#stats.eventsRejected += rejected.size;
          this.#warn(
            `CloudWatch Logs rejected ${rejected.size} of ${batch.length} events of ${state.name} as too old, ` +
              `too new or expired (${JSON.stringify(out.rejectedLogEventsInfo)}); is this host's clock right?`,
          );
        }
        this.#warned.delete(`failing:${state.name}`);
        return;
      } catch (error) {
        const name = (error as { name?: unknown }).name;
        if (name === "ResourceNotFoundException" && state.created && !recreated) {
          // The stream was deleted under us: create it again, once.
          state.created = false;
          recreated = true;
          continue;
        }
        const closing = this.#closing;
        const giveUp =
          !isRetryableAwsError(error) || (closing !== undefined && this.#clock() >= closing.deadlineMs);
        if (giveUp) {
          const lines = batch.reduce((sum, e) => sum + e.lines, 0);
          const bytes = batch.reduce((sum, e) => sum + e.bytes, 0);
          this.#countDropped(
            state,
            lines,
            bytes,
            batch.at(-1)?.timestamp ?? 0,
            `sending them failed (${String(name)})`,
          );
          this.#warn(
            `dropped ${batch.length} events of ${state.name} (log group ${this.logGroupName}): ` +
              (isRetryableAwsError(error)
                ? "still failing when the shipper closed"
                : "CloudWatch Logs refused them"),
            error,
          );
          return;
        }
        this.#warnOnce(
          `failing:${state.name}`,
          `sending ${state.name} to log group ${this.logGroupName} failed; retrying with backoff`,
          error,
        );
        this.#stats.retries++;
        const ceiling = Math.min(this.#retryMaxMs, this.#retryBaseMs * 2 ** attempt);
        attempt++;
        await this.#sleep(ceiling / 2 + (this.#random() * ceiling) / 2);
      }
    }
  }

  async #createStream(state: StreamState): Promise<void> {
    try {
      await this.#client.send(
        new CreateLogStreamCommand({ logGroupName: this.logGroupName, logStreamName: state.name }),
      );
      this.#stats.streamsCreated++;
    } catch (error) {
      // An earlier incarnation of this agent (or a retried request) made it: it is ours to write.
      if ((error as { name?: unknown }).name !== "ResourceAlreadyExistsException") throw error;
    }
    state.created = true;
  }

  #warnOnce(kind: string, message: string, error?: unknown): void {
    if (this.#warned.has(kind)) return;
    this.#warned.add(kind);
    this.#warn(message, error);
  }
}

/** Indexes of a batch's events that rejectedLogEventsInfo names (its end indexes are exclusive). */
function rejectedIndexes(
  info:
    | { tooNewLogEventStartIndex?: number; tooOldLogEventEndIndex?: number; expiredLogEventEndIndex?: number }
    | undefined,
  count: number,
): Set<number> {
  const out = new Set<number>();
  if (info === undefined) return out;
  const oldEnd = Math.max(info.tooOldLogEventEndIndex ?? 0, info.expiredLogEventEndIndex ?? 0);
  for (let i = 0; i < Math.min(oldEnd, count); i++) out.add(i);
  if (info.tooNewLogEventStartIndex !== undefined) {
    for (let i = Math.max(0, info.tooNewLogEventStartIndex); i < count; i++) out.add(i);
  }
  return out;
}

function positive(field: string, value: number): number {
  if (!Number.isFinite(value) || value <= 0) {
    throw new InvalidAgentInputError(field, `must be a positive number, got ${value}`);
  }
  return value;
}
