/**
 * An SQS queue feeding a Lambda in batches, as the functions are fed on AWS (EventBridge rule →
 * SQS queue → event source mapping), with SQS's own rules:
 *
 * - A received message is in flight, invisible, for the queue's visibility timeout. The
 *   consumer's success deletes it; a message it reports failed (`batchItemFailures`), or one of a
 *   batch whose invocation failed, is not deleted and becomes visible again only when its
 *   visibility timeout runs out (Lambda does not hand it back sooner). A message still in flight
 *   when its timeout runs out is delivered again, even while the first delivery still runs.
 *   The answer is read as Lambda reads a partial batch response: one naming a message the batch
 *   does not hold, or with an empty id, fails the whole batch (`reportedFailures`).
 * - A message received `maxReceives` times and failed once more goes to the dead-letter list
 *   when it would next be delivered. One older than the queue's retention then is deleted, as
 *   SQS deletes it (counted in `expired`); nothing else is dropped.
 * - FIFO: each message carries a message group. While a message of a group is in flight, no
 *   other message of that group is delivered; messages of other groups are, in parallel, up to
 *   the trigger's maximum concurrency. A body sent again within five minutes is dropped
 *   (content-based deduplication).
 *
 * A fault switch (`faults`) fails chosen batches as a failed invocation would (the function
 * threw or timed out), so what AWS does with them is exercised end to end.
 */
import { randomUUID } from "node:crypto";

/** How long SQS remembers a FIFO message's deduplication id (here: its body's content). */
const FIFO_DEDUPLICATION_MS = 5 * 60_000;

export interface SqsRecord {
  readonly messageId: string;
  readonly body: string;
  readonly attributes: { readonly ApproximateReceiveCount: string; readonly MessageGroupId?: string };
}

export type QueueConsumer = (event: {
  Records: SqsRecord[];
}) => Promise<{ batchItemFailures: readonly { itemIdentifier: string }[] }>;

/**
 * Fails the next `times` batches that hold a message whose body contains `bodyContains` (any
 * batch when absent), as an invocation that failed before it did anything: the whole batch
 * stays in flight until its visibility timeout.
 */
export interface QueueFault {
  readonly bodyContains?: string;
  /** @default 1 */
  readonly times?: number;
}

export interface LocalQueueOptions {
  readonly name: string;
  readonly consumer: QueueConsumer;
  readonly batchSize: number;
  /** How long a partial batch waits for more messages. */
  readonly batchingWindowMs: number;
  readonly maxConcurrency: number;
  /** How long a received message stays invisible. */
  readonly visibilityTimeoutMs: number;
  /** Receives before a message goes to the dead-letter list. @default 5 */
  readonly maxReceives?: number;
  /**
   * How long a message is kept (SQS MessageRetentionPeriod): one older than this when it would
   * next be delivered is deleted, not dead-lettered. @default kept until delivered
   */
  readonly retentionMs?: number;
  /**
   * A FIFO queue: every message carries a message group (`send`'s `groupId`, else this one),
   * and a group's messages are delivered one batch at a time, in order.
   */
  readonly fifoGroup?: string;
  /**
   * A standard queue's order is best effort (the SQS guide: messages may arrive out of order):
   * `shuffled` takes the deliverable messages in a random order, so batches are made of any of
   * them. FIFO queues keep each group's order. @default "sent"
   */
  readonly order?: "sent" | "shuffled";
  readonly faults?: readonly QueueFault[];
  readonly onError?: (error: unknown) => void;
}

interface Message {
  readonly id: string;
  readonly body: string;
  readonly groupId: string | undefined;
  receives: number;
  /** When it was sent: past the retention from then, it is deleted. */
  readonly sentAtMs: number;
  /** Deliverable from this time (its visibility timeout after each receive). */
  visibleAtMs: number;
  /** The current delivery; a batch of an older one neither deletes nor fails it. */
  delivery: number;
}

export interface QueueStats {
  readonly sent: number;
  readonly batches: number;
  /** Deliveries after the first (a message failed, or its visibility timeout ran out). */
  readonly redelivered: number;
  readonly deadLettered: number;
  /** Deleted past the queue's retention, undelivered (SQS drops them without dead-lettering). */
  readonly expired: number;
  /** Batches failed by the fault switch. */
  readonly faulted: number;
}

export class LocalQueue {
  readonly #o: Required<Omit<LocalQueueOptions, "fifoGroup" | "faults" | "order" | "retentionMs">> &
    Pick<LocalQueueOptions, "fifoGroup" | "retentionMs">;
  /** Every message not yet deleted or dead-lettered, in send order. */
  readonly #messages: Message[] = [];
  readonly #dead: { body: string; receives: number }[] = [];
  readonly #idleWaiters: (() => void)[] = [];
  readonly #faults: { bodyContains?: string; left: number }[];
  #inFlight = 0;
  #deliveries = 0;
  /** FIFO: when each body was last sent (content-based deduplication). */
  readonly #sentAt = new Map<string, number>();
  #window: NodeJS.Timeout | undefined;
  /** Wakes the queue when the next in-flight message becomes visible. */
  #visibilityTimer: { readonly atMs: number; readonly timer: NodeJS.Timeout } | undefined;
  #closed = false;
  readonly #shuffled: boolean;
  #stats = { sent: 0, batches: 0, redelivered: 0, deadLettered: 0, expired: 0, faulted: 0 };

  constructor(options: LocalQueueOptions) {
    if (!(options.visibilityTimeoutMs >= 0)) {
      throw new RangeError(
        `queue ${options.name}: visibilityTimeoutMs must be 0 or more, got ${options.visibilityTimeoutMs}`,
      );
    }
    const { faults = [], order = "sent", ...rest } = options;
    this.#shuffled = order === "shuffled";
    this.#o = {
      maxReceives: 5,
      onError: () => {},
      ...rest,
      ...(options.fifoGroup !== undefined ? { batchingWindowMs: 0 } : {}),
    };
    this.#faults = faults.map((f) => ({
      ...(f.bodyContains !== undefined ? { bodyContains: f.bodyContains } : {}),
      left: f.times ?? 1,
    }));
  }

  get fifo(): boolean {
    return this.#o.fifoGroup !== undefined;
  }

  /** `groupId`: the message group of a FIFO queue's message (default: the queue's `fifoGroup`). */
  send(body: string, options: { readonly groupId?: string } = {}): void {
    if (this.#closed) throw new Error(`queue ${this.#o.name} is closed`);
    if (!this.fifo && options.groupId !== undefined) {
      throw new Error(`queue ${this.#o.name}: MessageGroupId is for FIFO queues only`);
    }
    if (this.fifo && this.#duplicate(body)) return;
    this.#stats.sent++;
    this.#messages.push({
      id: randomUUID(),
      body,
      groupId: this.fifo ? (options.groupId ?? this.#o.fifoGroup) : undefined,
      receives: 0,
      sentAtMs: Date.now(),
      visibleAtMs: 0,
      delivery: 0,
    });
    this.#schedule();
  }

  stats(): QueueStats {
    return { ...this.#stats };
  }

  deadLetters(): readonly { body: string; receives: number }[] {
    return [...this.#dead];
  }

  /** Resolves when nothing is stored (visible or in flight) and no batch runs. */
  idle(): Promise<void> {
    if (this.#isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** Stops taking messages and waits for the batches in flight to finish. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#window) clearTimeout(this.#window);
    if (this.#visibilityTimer) clearTimeout(this.#visibilityTimer.timer);
    this.#visibilityTimer = undefined;
    this.#messages.length = 0;
    while (this.#inFlight > 0) await new Promise((r) => setTimeout(r, 10));
    this.#notifyIdle();
  }

  #isIdle(): boolean {
    return this.#messages.length === 0 && this.#inFlight === 0;
  }

  #notifyIdle(): void {
    if (!this.#isIdle() && !this.#closed) return;
    for (const resolve of this.#idleWaiters.splice(0)) resolve();
  }

  /** SQS drops a FIFO message whose body was sent in the last five minutes. */
  #duplicate(body: string): boolean {
    const nowMs = Date.now();
    for (const [sent, atMs] of this.#sentAt) {
      if (nowMs - atMs < FIFO_DEDUPLICATION_MS) break;
      this.#sentAt.delete(sent);
    }
    if (this.#sentAt.has(body)) return true;
    this.#sentAt.set(body, nowMs);
    return false;
  }

  /**
   * The messages a receive may take now, in order: visible ones; of a FIFO queue, only from
   * groups with nothing in flight, each group's from its oldest on. Messages past their
   * receives are dead-lettered on the way, as SQS moves them when they would be delivered.
   * At most what the free batch slots take.
   */
  #deliverable(nowMs: number): Message[] {
    const limit = this.#o.batchSize * Math.max(1, this.#o.maxConcurrency - this.#inFlight);
    const out: Message[] = [];
    const blocked = new Set<string | undefined>();
    const candidates = [...this.#messages];
    if (!this.fifo && this.#shuffled) {
      for (let i = candidates.length - 1; i > 0; i--) {
        const j = Math.floor(Math.random() * (i + 1));
        [candidates[i], candidates[j]] = [candidates[j]!, candidates[i]!];
      }
    }
    for (const m of candidates) {
      if (out.length >= limit) break;
      const visible = m.visibleAtMs <= nowMs;
      if (visible && this.#o.retentionMs !== undefined && nowMs - m.sentAtMs >= this.#o.retentionMs) {
        this.#expire(m);
        continue;
      }
      if (visible && m.receives >= this.#o.maxReceives) {
        this.#deadLetter(m);
        continue;
      }
      if (!this.fifo) {
        if (visible) out.push(m);
        continue;
      }
      if (blocked.has(m.groupId)) continue;
      if (!visible) {
        blocked.add(m.groupId);
        continue;
      }
      out.push(m);
    }
    return out;
  }

  #schedule(): void {
    if (this.#closed) return;
    const nowMs = Date.now();
    let ready = this.#deliverable(nowMs);
    while (this.#inFlight < this.#o.maxConcurrency && ready.length >= this.#o.batchSize) {
      this.#dispatch(ready.slice(0, this.#o.batchSize), nowMs);
      ready = this.#deliverable(nowMs);
    }
    if (ready.length > 0 && this.#inFlight < this.#o.maxConcurrency && !this.#window) {
      if (this.#o.batchingWindowMs <= 0) {
        this.#dispatch(ready.slice(0, this.#o.batchSize), nowMs);
        // Another group (FIFO) or more messages than one batch may still go.
        this.#schedule();
        return;
      }
      this.#window = setTimeout(() => {
        this.#window = undefined;
        const now = Date.now();
        const due = this.#deliverable(now);
        if (due.length > 0 && this.#inFlight < this.#o.maxConcurrency)
          this.#dispatch(due.slice(0, this.#o.batchSize), now);
        this.#schedule();
      }, this.#o.batchingWindowMs);
    }
    this.#wakeAtNextVisibility(nowMs);
    this.#notifyIdle();
  }

  /** A timer for the earliest in-flight message's return, so it is delivered when it is due. */
  #wakeAtNextVisibility(nowMs: number): void {
    let next = Number.POSITIVE_INFINITY;
    for (const m of this.#messages) if (m.visibleAtMs > nowMs) next = Math.min(next, m.visibleAtMs);
    if (this.#visibilityTimer && this.#visibilityTimer.atMs <= next) return;
    if (this.#visibilityTimer) clearTimeout(this.#visibilityTimer.timer);
    this.#visibilityTimer = undefined;
    if (next === Number.POSITIVE_INFINITY) return;
    const timer = setTimeout(
      () => {
        this.#visibilityTimer = undefined;
        this.#schedule();
      },
      Math.max(1, next - nowMs),
    );
    this.#visibilityTimer = { atMs: next, timer };
  }

  #dispatch(batch: readonly Message[], nowMs: number): void {
    if (batch.length === 0) return;
    const deliveries = new Map<Message, number>();
    for (const m of batch) {
      if (m.receives > 0) this.#stats.redelivered++;
      m.receives++;
      m.visibleAtMs = nowMs + this.#o.visibilityTimeoutMs;
      m.delivery = ++this.#deliveries;
      deliveries.set(m, m.delivery);
    }
    this.#inFlight++;
    this.#stats.batches++;
    const records: SqsRecord[] = batch.map((m) => ({
      messageId: m.id,
      body: m.body,
      attributes: {
        ApproximateReceiveCount: String(m.receives),
        ...(m.groupId !== undefined ? { MessageGroupId: m.groupId } : {}),
      },
    }));
    const fault = this.#faultFor(batch);
    const invoked = fault
      ? Promise.reject(new Error(`queue ${this.#o.name}: batch failed by the fault switch (${fault})`))
      : this.#o.consumer({ Records: records });
    void invoked
      .then(
        (out) => reportedFailures(out, records),
        (error: unknown) => {
          this.#o.onError(error);
          return new Set(batch.map((m) => m.id));
        },
      )
      .then((failed) => {
        // Done: deleted, unless it was delivered again meanwhile (its timeout ran out), in which
        // case this batch's receipt is stale, as SQS's receipt handle would be. Failed: left in
        // flight until its visibility timeout.
        for (const m of batch) {
          if (failed.has(m.id) || m.delivery !== deliveries.get(m)) continue;
          const i = this.#messages.indexOf(m);
          if (i >= 0) this.#messages.splice(i, 1);
        }
      })
      .finally(() => {
        this.#inFlight--;
        this.#schedule();
      });
  }

  /** The fault that fails this batch, if one is armed for it (used up as it fires). */
  #faultFor(batch: readonly Message[]): string | undefined {
    const fault = this.#faults.find(
      (f) => f.left > 0 && batch.some((m) => f.bodyContains === undefined || m.body.includes(f.bodyContains)),
    );
    if (!fault) return undefined;
    fault.left--;
    this.#stats.faulted++;
    return fault.bodyContains !== undefined ? `a message contains ${fault.bodyContains}` : "any batch";
  }

  #expire(m: Message): void {
    const i = this.#messages.indexOf(m);
    if (i >= 0) this.#messages.splice(i, 1);
    this.#stats.expired++;
  }

  #deadLetter(m: Message): void {
    const i = this.#messages.indexOf(m);
    if (i >= 0) this.#messages.splice(i, 1);
    this.#stats.deadLettered++;
    this.#dead.push({ body: m.body, receives: m.receives });
    this.#o.onError(
      new Error(`queue ${this.#o.name}: message ${m.id} dead-lettered after ${m.receives} receives`),
    );
  }
}

/**
 * The messages of a batch its function's answer reports failed, read as Lambda reads a partial
 * batch response (the Lambda guide, "Handling errors for an SQS event source": success and
 * failure conditions): no answer, or no `batchItemFailures`, or an empty list is complete
 * success; a failure whose `itemIdentifier` is empty, missing, not a string or not a message of
 * the batch makes the whole batch a failure.
 */
export function reportedFailures(response: unknown, records: readonly SqsRecord[]): Set<string> {
  const all = new Set(records.map((r) => r.messageId));
  if (typeof response !== "object" || response === null) return new Set();
  const list = (response as { batchItemFailures?: unknown }).batchItemFailures;
  if (list === undefined || list === null) return new Set();
  if (!Array.isArray(list)) return all;
  const failed = new Set<string>();
  for (const item of list as unknown[]) {
    const id =
      typeof item === "object" && item !== null
        ? (item as { itemIdentifier?: unknown }).itemIdentifier
        : undefined;
    if (typeof id !== "string" || !all.has(id)) return all;
    failed.add(id);
  }
  return failed;
}
