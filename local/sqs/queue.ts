/**
 * One standard SQS queue in memory: messages with their delay, visibility and retention
 * judged against an injected clock, receipt handles that change on every receive, and long
 * polls woken as soon as a message can be delivered.
 */
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { SqsError, SqsErrorCode, invalidParameter } from "./errors.ts";
import type { MessageAttributes } from "./message-attributes.ts";
import { DEFAULT_SETTINGS, type QueueSettings } from "./queue-attributes.ts";

export type Clock = () => number;

interface StoredMessage {
  readonly id: string;
  readonly body: string;
  readonly md5OfBody: string;
  readonly attributes: MessageAttributes;
  readonly sentAtMs: number;
  readonly senderId: string;
  /** Delivery may happen from this time (delay, then each visibility timeout). */
  visibleAtMs: number;
  receiveCount: number;
  firstReceivedAtMs?: number;
  /** The handle of the latest receive; older handles are stale. */
  receiptHandle?: string;
  receivedAtMs?: number;
}

export interface ReceivedMessage {
  readonly messageId: string;
  readonly receiptHandle: string;
  readonly body: string;
  readonly md5OfBody: string;
  readonly attributes: MessageAttributes;
  readonly sentAtMs: number;
  readonly senderId: string;
  readonly receiveCount: number;
  readonly firstReceivedAtMs: number;
}

export interface SentMessage {
  readonly messageId: string;
  readonly md5OfBody: string;
}

export interface QueueCounts {
  readonly visible: number;
  readonly inFlight: number;
  readonly delayed: number;
}

/** SQS's in-flight limit for a standard queue. */
export const MAX_IN_FLIGHT = 120_000;
/** ChangeMessageVisibility cannot push a message's invisibility past 12 h from its receive. */
const MAX_VISIBILITY_SPAN_MS = 43_200_000;
const PURGE_INTERVAL_MS = 60_000;

export class LocalSqsQueue {
  readonly name: string;
  readonly url: string;
  readonly arn: string;
  readonly createdAtMs: number;
  readonly tags: ReadonlyMap<string, string>;
  #settings: QueueSettings;
  #lastModifiedMs: number;
  #lastPurgeMs: number | undefined;
  #deleted = false;
  readonly #clock: Clock;
  /** Insertion order is send order, which receives follow (best effort, as standard queues). */
  readonly #messages = new Map<string, StoredMessage>();
  readonly #waiters = new Set<() => void>();
  /** Messages accepted since the queue was created, for benchmarks. */
  sentCount = 0;

  constructor(init: {
    name: string;
    url: string;
    arn: string;
    settings: Partial<QueueSettings>;
    tags: ReadonlyMap<string, string>;
    clock: Clock;
  }) {
    this.name = init.name;
    this.url = init.url;
    this.arn = init.arn;
    this.tags = init.tags;
    this.#clock = init.clock;
    this.#settings = { ...DEFAULT_SETTINGS, ...init.settings };
    this.createdAtMs = this.#lastModifiedMs = init.clock();
  }

  get settings(): Readonly<QueueSettings> {
    return this.#settings;
  }

  get lastModifiedMs(): number {
    return this.#lastModifiedMs;
  }

  get deleted(): boolean {
    return this.#deleted;
  }

  setSettings(settings: Partial<QueueSettings>): void {
    this.#settings = { ...this.#settings, ...settings };
    this.#lastModifiedMs = this.#clock();
    this.#wake();
  }

  send(body: string, attributes: MessageAttributes, senderId: string, delaySeconds?: number): SentMessage {
    this.sentCount++;
    const now = this.#clock();
    const message: StoredMessage = {
      id: randomUUID(),
      body,
      md5OfBody: createHash("md5").update(body, "utf8").digest("hex"),
      attributes,
      sentAtMs: now,
      senderId,
      visibleAtMs: now + (delaySeconds ?? this.#settings.DelaySeconds) * 1000,
      receiveCount: 0,
    };
    this.#messages.set(message.id, message);
    this.#wake();
    return { messageId: message.id, md5OfBody: message.md5OfBody };
  }

  /**
   * Up to `max` deliverable messages, each now invisible for `visibilitySeconds`. With
   * `waitSeconds`, waits until at least one is deliverable, the wait ends, or `signal` aborts.
   */
  async receive(
    max: number,
    visibilitySeconds: number | undefined,
    waitSeconds: number,
    signal: AbortSignal,
  ): Promise<ReceivedMessage[]> {
    const deadline = performance.now() + waitSeconds * 1000;
    for (;;) {
      // A poll whose client went away must not take messages no one will see.
      if (signal.aborted || this.#deleted) return [];
      const taken = this.#take(max, visibilitySeconds ?? this.#settings.VisibilityTimeout);
      const remainingMs = deadline - performance.now();
      if (taken.length > 0 || remainingMs <= 0) return taken;
      await this.#changed(remainingMs, signal);
    }
  }

  /** Deletes with the latest receipt handle; a stale one succeeds and deletes nothing (as AWS). */
  delete(receiptHandle: string): void {
    const id = this.#messageIdOf(receiptHandle);
    const message = this.#messages.get(id);
    if (message?.receiptHandle === receiptHandle) this.#messages.delete(id);
  }

  changeVisibility(receiptHandle: string, visibilitySeconds: number): void {
    const now = this.#clock();
    this.#expire(now);
    const message = this.#messages.get(this.#messageIdOf(receiptHandle));
    if (!message || message.receiptHandle !== receiptHandle) {
      throw invalidParameter("ReceiptHandle", receiptHandle, "The receipt handle has expired.");
    }
    if (message.visibleAtMs <= now) {
      throw new SqsError(SqsErrorCode.MessageNotInflight, "The specified message isn't in flight.");
    }
    if (now + visibilitySeconds * 1000 > message.receivedAtMs! + MAX_VISIBILITY_SPAN_MS) {
      throw invalidParameter(
        "VisibilityTimeout",
        String(visibilitySeconds),
        "Total VisibilityTimeout for the message is beyond the limit [43200 seconds]",
      );
    }
    message.visibleAtMs = now + visibilitySeconds * 1000;
    this.#wake();
  }

  purge(): void {
    const now = this.#clock();
    if (this.#lastPurgeMs !== undefined && now - this.#lastPurgeMs < PURGE_INTERVAL_MS) {
      throw new SqsError(
        SqsErrorCode.PurgeQueueInProgress,
        `Only one PurgeQueue operation on ${this.name} is allowed every 60 seconds.`,
      );
    }
    this.#lastPurgeMs = now;
    this.#messages.clear();
  }

  counts(): QueueCounts {
    const now = this.#clock();
    this.#expire(now);
    let visible = 0;
    let inFlight = 0;
    let delayed = 0;
    for (const m of this.#messages.values()) {
      if (m.visibleAtMs <= now) visible++;
      else if (m.receiveCount > 0) inFlight++;
      else delayed++;
    }
    return { visible, inFlight, delayed };
  }

  /** Ends pending long polls (they answer with what they have: nothing). */
  markDeleted(): void {
    this.#deleted = true;
    this.#messages.clear();
    this.#wake();
  }

  #take(max: number, visibilitySeconds: number): ReceivedMessage[] {
    const now = this.#clock();
    this.#expire(now);
    const taken: ReceivedMessage[] = [];
    let inFlight = this.counts().inFlight;
    for (const m of this.#messages.values()) {
      if (taken.length >= max) break;
      if (m.visibleAtMs > now) continue;
      if (inFlight >= MAX_IN_FLIGHT) {
        if (taken.length > 0) break;
        throw new SqsError(
          SqsErrorCode.OverLimit,
          `Too many messages in flight on ${this.name} (${MAX_IN_FLIGHT}); delete the ones you processed.`,
        );
      }
      inFlight++;
      m.receiveCount++;
      m.firstReceivedAtMs ??= now;
      m.receivedAtMs = now;
      m.visibleAtMs = now + visibilitySeconds * 1000;
      m.receiptHandle = this.#newReceiptHandle(m.id);
      taken.push({
        messageId: m.id,
        receiptHandle: m.receiptHandle,
        body: m.body,
        md5OfBody: m.md5OfBody,
        attributes: m.attributes,
        sentAtMs: m.sentAtMs,
        senderId: m.senderId,
        receiveCount: m.receiveCount,
        firstReceivedAtMs: m.firstReceivedAtMs,
      });
    }
    return taken;
  }

  /** Drops messages older than the retention period, received or not. */
  #expire(now: number): void {
    const cutoff = now - this.#settings.MessageRetentionPeriod * 1000;
    for (const [id, m] of this.#messages) if (m.sentAtMs <= cutoff) this.#messages.delete(id);
  }

  /** Resolves on the next change that may make a message deliverable, or after `ms`. */
  #changed(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        this.#waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(1, Math.min(ms, this.#msUntilNextDelivery())));
      signal.addEventListener("abort", done, { once: true });
      this.#waiters.add(done);
    });
  }

  /** How long until a delayed or in-flight message becomes deliverable, by the queue's clock. */
  #msUntilNextDelivery(): number {
    const now = this.#clock();
    let next = Number.POSITIVE_INFINITY;
    for (const m of this.#messages.values())
      if (m.visibleAtMs > now) next = Math.min(next, m.visibleAtMs - now);
    return next;
  }

  #wake(): void {
    for (const waiter of [...this.#waiters]) waiter();
  }

  #newReceiptHandle(messageId: string): string {
    return Buffer.from(`${this.arn}|${messageId}|${randomBytes(16).toString("hex")}`, "utf8").toString(
      "base64url",
    );
  }

  /** The message a handle names; a handle not issued by this queue is invalid. */
  #messageIdOf(receiptHandle: string): string {
    const parts = Buffer.from(receiptHandle, "base64url").toString("utf8").split("|");
    if (parts.length !== 3 || parts[0] !== this.arn || !parts[1] || !/^[0-9a-f]{32}$/.test(parts[2] ?? "")) {
      throw new SqsError(
        SqsErrorCode.ReceiptHandleIsInvalid,
        `The input receipt handle "${receiptHandle}" is not a valid receipt handle.`,
      );
    }
    return parts[1];
  }
}
