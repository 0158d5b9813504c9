/**
 * An SQS-style queue feeding a Lambda in batches, as the coordinator is fed on AWS (EventBridge
 * rule → SQS queue → event source mapping). Messages that the consumer reports as failed
 * (`batchItemFailures`), or whose whole batch threw, are redelivered after a back-off; after
 * `maxReceives` they move to the dead-letter list. Nothing is dropped silently.
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

export interface LocalQueueOptions {
  readonly name: string;
  readonly consumer: QueueConsumer;
  readonly batchSize: number;
  /** How long a partial batch waits for more messages. */
  readonly batchingWindowMs: number;
  readonly maxConcurrency: number;
  /** Receives before a message goes to the dead-letter list. @default 5 */
  readonly maxReceives?: number;
  /** First redelivery delay, doubled per receive. @default 200 */
  readonly redeliveryBaseMs?: number;
  /**
   * A FIFO queue of one message group, as SQS runs it: one batch at a time, in order; a message
   * being redelivered holds the group (nothing behind it is delivered first); a body sent again
   * within five minutes is dropped (content-based deduplication).
   */
  readonly fifoGroup?: string;
  readonly onError?: (error: unknown) => void;
}

interface Message {
  readonly id: string;
  readonly body: string;
  receives: number;
}

export interface QueueStats {
  readonly sent: number;
  readonly batches: number;
  readonly redelivered: number;
  readonly deadLettered: number;
}

export class LocalQueue {
  readonly #o: Required<Omit<LocalQueueOptions, "fifoGroup">> & Pick<LocalQueueOptions, "fifoGroup">;
  readonly #ready: Message[] = [];
  readonly #delayed = new Set<NodeJS.Timeout>();
  readonly #dead: { body: string; receives: number }[] = [];
  readonly #idleWaiters: (() => void)[] = [];
  #inFlight = 0;
  /** FIFO: messages waiting to be redelivered, which hold the group. */
  #holding = 0;
  /** FIFO: when each body was last sent (content-based deduplication). */
  readonly #sentAt = new Map<string, number>();
  #window: NodeJS.Timeout | undefined;
  #closed = false;
  #stats = { sent: 0, batches: 0, redelivered: 0, deadLettered: 0 };

  constructor(options: LocalQueueOptions) {
    this.#o = {
      maxReceives: 5,
      redeliveryBaseMs: 200,
      onError: () => {},
      ...options,
      ...(options.fifoGroup !== undefined ? { batchingWindowMs: 0 } : {}),
    };
  }

  send(body: string): void {
    if (this.#closed) throw new Error(`queue ${this.#o.name} is closed`);
    if (this.#o.fifoGroup !== undefined && this.#duplicate(body)) return;
    this.#stats.sent++;
    this.#ready.push({ id: randomUUID(), body, receives: 0 });
    this.#schedule();
  }

  stats(): QueueStats {
    return { ...this.#stats };
  }

  deadLetters(): readonly { body: string; receives: number }[] {
    return [...this.#dead];
  }

  /** Resolves when nothing is queued, delayed or being processed. */
  idle(): Promise<void> {
    if (this.#isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** Stops taking messages and waits for the batches in flight to finish. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#window) clearTimeout(this.#window);
    for (const t of this.#delayed) clearTimeout(t);
    this.#delayed.clear();
    this.#ready.length = 0;
    while (this.#inFlight > 0) await new Promise((r) => setTimeout(r, 10));
    this.#notifyIdle();
  }

  #isIdle(): boolean {
    return this.#ready.length === 0 && this.#delayed.size === 0 && this.#inFlight === 0;
  }

  #notifyIdle(): void {
    if (!this.#isIdle() && !this.#closed) return;
    for (const resolve of this.#idleWaiters.splice(0)) resolve();
  }

  /** Batches that may run at once: a FIFO queue's one group runs one at a time, and not while held. */
  #capacity(): number {
    if (this.#o.fifoGroup === undefined) return this.#o.maxConcurrency;
    return this.#holding > 0 ? 0 : 1;
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

  #schedule(): void {
    if (this.#closed) return;
    while (this.#inFlight < this.#capacity() && this.#ready.length >= this.#o.batchSize) this.#dispatch();
    if (this.#ready.length === 0 || this.#inFlight >= this.#capacity() || this.#window) return;
    if (this.#o.batchingWindowMs <= 0) {
      this.#dispatch();
      return;
    }
    this.#window = setTimeout(() => {
      this.#window = undefined;
      if (this.#ready.length > 0 && this.#inFlight < this.#capacity()) this.#dispatch();
      this.#schedule();
    }, this.#o.batchingWindowMs);
  }

  #dispatch(): void {
    const batch = this.#ready.splice(0, this.#o.batchSize);
    if (batch.length === 0) return;
    for (const m of batch) m.receives++;
    this.#inFlight++;
    this.#stats.batches++;
    const group = this.#o.fifoGroup !== undefined ? { MessageGroupId: this.#o.fifoGroup } : {};
    const records: SqsRecord[] = batch.map((m) => ({
      messageId: m.id,
      body: m.body,
      attributes: { ApproximateReceiveCount: String(m.receives), ...group },
    }));
    void this.#o
      .consumer({ Records: records })
      .then(
        (out) => new Set(out.batchItemFailures.map((f) => f.itemIdentifier)),
        (error: unknown) => {
          this.#o.onError(error);
          return new Set(batch.map((m) => m.id));
        },
      )
      .then((failed) => {
        const again = batch.filter((m) => failed.has(m.id));
        if (this.#o.fifoGroup !== undefined) this.#redeliverInOrder(again);
        else for (const m of again) this.#redeliver(m);
      })
      .finally(() => {
        this.#inFlight--;
        this.#schedule();
        this.#notifyIdle();
      });
  }

  /**
   * FIFO: the failed messages go back to the head of the group, in their order, after the
   * back-off of the first; the group is held meanwhile. Those past their receives are
   * dead-lettered.
   */
  #redeliverInOrder(messages: readonly Message[]): void {
    if (this.#closed || messages.length === 0) return;
    const alive = messages.filter((m) => {
      if (m.receives < this.#o.maxReceives) return true;
      this.#deadLetter(m);
      return false;
    });
    if (alive.length === 0) return;
    this.#stats.redelivered += alive.length;
    this.#holding++;
    const timer = setTimeout(
      () => {
        this.#delayed.delete(timer);
        this.#holding--;
        this.#ready.unshift(...alive);
        this.#schedule();
        this.#notifyIdle();
      },
      this.#o.redeliveryBaseMs * 2 ** (alive[0]!.receives - 1),
    );
    this.#delayed.add(timer);
  }

  #deadLetter(m: Message): void {
    this.#stats.deadLettered++;
    this.#dead.push({ body: m.body, receives: m.receives });
    this.#o.onError(
      new Error(`queue ${this.#o.name}: message ${m.id} dead-lettered after ${m.receives} receives`),
    );
  }

  #redeliver(m: Message): void {
    if (this.#closed) return;
    if (m.receives >= this.#o.maxReceives) {
      this.#deadLetter(m);
      return;
    }
    this.#stats.redelivered++;
    const timer = setTimeout(
      () => {
        this.#delayed.delete(timer);
        this.#ready.push(m);
        this.#schedule();
        this.#notifyIdle();
      },
      this.#o.redeliveryBaseMs * 2 ** (m.receives - 1),
    );
    this.#delayed.add(timer);
  }
}
