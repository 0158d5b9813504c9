/**
 * The embedded SQS's queues by name: creation (an existing queue is returned when the attributes
 * the request names are its own, else QueueNameExists), deletion
 * (a name is reusable 60 s later, as AWS), listing, and lookup by queue URL. The runtime may
 * inspect it directly; the HTTP operations go through it too.
 */
import { SqsError, SqsErrorCode, invalidParameter, queueDoesNotExist } from "./errors.ts";
import { LocalSqsQueue, type Clock } from "./queue.ts";
import type { QueueSettings, SettableAttribute } from "./queue-attributes.ts";

export interface SqsQueuesOptions {
  /** `http://host:port` the queue URLs start with; read when a queue is created. */
  readonly baseUrl: () => string;
  /** @default "000000000000" */
  readonly account?: string;
  /** @default "local" */
  readonly region?: string;
  /** Epoch milliseconds. @default Date.now */
  readonly clock?: Clock;
}

const NAME = /^[A-Za-z0-9_-]{1,80}$/;
const DELETED_NAME_HOLD_MS = 60_000;
const MAX_TAGS = 50;

export class SqsQueues {
  readonly account: string;
  readonly region: string;
  readonly clock: Clock;
  readonly #baseUrl: () => string;
  readonly #queues = new Map<string, LocalSqsQueue>();
  readonly #deletedAtMs = new Map<string, number>();

  constructor(options: SqsQueuesOptions) {
    this.#baseUrl = options.baseUrl;
    this.account = options.account ?? "000000000000";
    this.region = options.region ?? "local";
    this.clock = options.clock ?? Date.now;
  }

  create(
    name: string,
    settings: Partial<QueueSettings> = {},
    tags: ReadonlyMap<string, string> = new Map(),
  ): LocalSqsQueue {
    validateQueueName(name);
    if (tags.size > MAX_TAGS)
      throw invalidParameter("tags", `${tags.size} tags`, `A queue can have at most ${MAX_TAGS} tags.`);
    const existing = this.#queues.get(name);
    if (existing) {
      // As SQS: "returns this error only if the request includes attributes whose values differ
      // from those of the existing queue". An attribute the request leaves out is not compared,
      // whatever the queue's value (a default or one set since).
      const differing = (Object.keys(settings) as SettableAttribute[]).find(
        (attribute) => existing.settings[attribute] !== settings[attribute],
      );
      if (differing) {
        throw new SqsError(
          SqsErrorCode.QueueNameExists,
          `A queue already exists with the same name and a different value for attribute ${differing}`,
        );
      }
      return existing;
    }
    const deletedAt = this.#deletedAtMs.get(name);
    if (deletedAt !== undefined && this.clock() - deletedAt < DELETED_NAME_HOLD_MS) {
      throw new SqsError(
        SqsErrorCode.QueueDeletedRecently,
        `You must wait 60 seconds after deleting a queue before you can create another queue with the same name (${name}).`,
      );
    }
    const queue = new LocalSqsQueue({
      name,
      url: `${this.#baseUrl()}/${this.account}/${name}`,
      arn: `arn:aws:sqs:${this.region}:${this.account}:${name}`,
      settings,
      tags,
      clock: this.clock,
    });
    this.#queues.set(name, queue);
    return queue;
  }

  delete(name: string): void {
    const queue = this.get(name);
    this.#queues.delete(name);
    this.#deletedAtMs.set(name, this.clock());
    queue.markDeleted();
  }

  find(name: string): LocalSqsQueue | undefined {
    return this.#queues.get(name);
  }

  get(name: string): LocalSqsQueue {
    const queue = this.#queues.get(name);
    if (!queue) throw queueDoesNotExist();
    return queue;
  }

  /** The queue a URL names (any host: clients may reach us by another name or port). */
  byUrl(queueUrl: string): LocalSqsQueue {
    return this.get(this.nameOfUrl(queueUrl));
  }

  nameOfUrl(queueUrl: string): string {
    let path: string;
    try {
      path = new URL(queueUrl).pathname;
    } catch {
      throw new SqsError(
        SqsErrorCode.InvalidAddress,
        `The address ${queueUrl} is not valid for this endpoint.`,
      );
    }
    const [, account, name, ...rest] = path.split("/");
    if (account !== this.account || !name || rest.length > 0) throw queueDoesNotExist();
    return decodeURIComponent(name);
  }

  /** Sorted by name, so pages are stable. */
  list(prefix = ""): LocalSqsQueue[] {
    return [...this.#queues.values()]
      .filter((q) => q.name.startsWith(prefix))
      .sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  /** Ends every queue's pending long polls. */
  close(): void {
    for (const queue of this.#queues.values()) queue.markDeleted();
    this.#queues.clear();
  }
}

function validateQueueName(name: string): void {
  if (name.endsWith(".fifo")) {
    throw new SqsError(
      SqsErrorCode.UnsupportedOperation,
      `FIFO queues are not supported by the embedded SQS (QueueName ${name}); use a standard queue.`,
    );
  }
  if (!NAME.test(name)) {
    throw invalidParameter(
      "QueueName",
      name,
      "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length",
    );
  }
}
