/**
 * The agents' channel on SQS (docs/agents.md): one standard queue per agent, named
 * `<prefix><agentId>`, created by the control plane when the agent registers. Messages are
 * sent in batches of 10 (SendMessageBatch's limit), resending entries that failed one by one;
 * whatever still fails raises, so a command is never dropped silently.
 *
 * Opening a queue that exists is the common case: every restart of an agent registers again.
 * CreateQueue returns the existing queue only when the attributes it names are the queue's own;
 * a queue made by an earlier version of Cairn with other attributes answers `QueueNameExists`,
 * and it is brought to this version's (GetQueueUrl, SetQueueAttributes). A queue deleted less
 * than 60 s ago cannot be created again yet (`QueueDeletedRecently`): that is a retryable
 * failure, saying so, and the registration is retried.
 */
import {
  CreateQueueCommand,
  GetQueueUrlCommand,
  SendMessageBatchCommand,
  SetQueueAttributesCommand,
  type SendMessageBatchRequestEntry,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import { MAX_AGENT_MESSAGE_BYTES } from "../../core/agent-protocol.ts";
import type { AgentChannelPort, AgentDelivery } from "../../core/ports/agent-channel.ts";
import { PortError } from "../../core/ports/errors.ts";

/** Queue settings every agent queue is created with (CreateQueue is idempotent only for equal attributes). */
export const AGENT_QUEUE_ATTRIBUTES = {
  /** An agent acts on a command within seconds; a crash mid-way redelivers it after this. */
  VisibilityTimeout: "60",
  /** Commands older than this are moot: every stage before RUNNING times out sooner, and an agent away longer was declared lost. */
  MessageRetentionPeriod: "3600",
  ReceiveMessageWaitTimeSeconds: "20",
  // Encryption at rest: SQS-managed SSE is on by default for new queues (since 2022), so it is
  // not set here.
} as const;

export class AgentChannelError extends PortError {
  override readonly name = "AgentChannelError";
  readonly code = "AGENT_CHANNEL";
  /** Whether sending again may succeed (throttling, a service fault) rather than never (too large). */
  override readonly retryable: boolean;
  /** When known, how long until trying again can succeed (a deleted queue's name held). */
  declare readonly retryAfterMs?: number;
  constructor(message: string, retryable: boolean, retryAfterMs?: number) {
    super(message);
    this.retryable = retryable;
    if (retryAfterMs !== undefined) Object.assign(this, { retryAfterMs });
  }
}

/** SQS keeps a deleted queue's name this long: CreateQueue of it fails meanwhile. */
export const QUEUE_NAME_HOLD_MS = 60_000;

const MAX_BATCH = 10;
/** SendMessageBatch's total payload: SQS's classic limit, which every region accepts. */
const MAX_BATCH_BYTES = 256 * 1024;

/** Batches of at most 10 messages and 256 KiB in all, in order (one message is never over the batch limit). */
export function packBatches(bodies: readonly string[]): string[][] {
  const batches: string[][] = [];
  let current: string[] = [];
  let bytes = 0;
  for (const body of bodies) {
    const size = Buffer.byteLength(body);
    if (current.length === MAX_BATCH || (current.length > 0 && bytes + size > MAX_BATCH_BYTES)) {
      batches.push(current);
      current = [];
      bytes = 0;
    }
    current.push(body);
    bytes += size;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}

/** The SDK's name for a service error: its exception's name (`QueueNameExists`, …). */
function errorName(error: unknown): string {
  return typeof error === "object" && error !== null && "name" in error ? String(error.name) : "";
}

export function agentQueueName(prefix: string, agentId: string): string {
  return `${prefix}${agentId}`;
}

export class SqsAgentChannel implements AgentChannelPort {
  readonly #client: SQSClient;
  readonly #prefix: string;
  readonly #attempts: number;
  /** Queue URLs by agent id: the URL of a queue never changes while it exists. */
  readonly #urls = new Map<string, string>();
  /** Messages accepted, for the benchmark's per-session figures. */
  sent = 0;

  constructor(client: SQSClient, prefix: string, attempts = 4) {
    this.#client = client;
    this.#prefix = prefix;
    this.#attempts = attempts;
  }

  async open(agentId: string): Promise<void> {
    const QueueName = agentQueueName(this.#prefix, agentId);
    let url: string | undefined;
    try {
      url = (
        await this.#client.send(
          new CreateQueueCommand({
            QueueName,
            Attributes: { ...AGENT_QUEUE_ATTRIBUTES },
            tags: { "cairn:agent-id": agentId },
          }),
        )
      ).QueueUrl;
    } catch (error) {
      switch (errorName(error)) {
        case "QueueNameExists":
          // Made with other attributes (an earlier version's): this version's replace them.
          url = (await this.#client.send(new GetQueueUrlCommand({ QueueName }))).QueueUrl;
          if (!url) throw new AgentChannelError(`no queue URL for agent ${agentId}`, true);
          await this.#client.send(
            new SetQueueAttributesCommand({ QueueUrl: url, Attributes: { ...AGENT_QUEUE_ATTRIBUTES } }),
          );
          break;
        case "QueueDeletedRecently":
          throw new AgentChannelError(
            `agent ${agentId}'s queue ${QueueName} was deleted less than ${QUEUE_NAME_HOLD_MS / 1000} s ago, ` +
              "and SQS creates no queue of that name until then (QueueDeletedRecently): the registration is retried",
            true,
            QUEUE_NAME_HOLD_MS,
          );
        default:
          throw error;
      }
    }
    if (url) this.#urls.set(agentId, url);
  }

  async send(deliveries: readonly AgentDelivery[]): Promise<void> {
    const byAgent = new Map<string, string[]>();
    for (const { agentId, message } of deliveries) {
      const body = JSON.stringify(message);
      const bytes = Buffer.byteLength(body);
      if (bytes > MAX_AGENT_MESSAGE_BYTES) {
        throw new AgentChannelError(
          `a ${message.type} message for agent ${agentId} is ${bytes} bytes; an agent message may be at most ${MAX_AGENT_MESSAGE_BYTES}`,
          false,
        );
      }
      byAgent.set(agentId, [...(byAgent.get(agentId) ?? []), body]);
    }
    await Promise.all(
      [...byAgent].map(async ([agentId, bodies]) => {
        const url = await this.#url(agentId);
        for (const batch of packBatches(bodies)) await this.#sendBatch(agentId, url, batch);
      }),
    );
  }

  async #url(agentId: string): Promise<string> {
    const cached = this.#urls.get(agentId);
    if (cached) return cached;
    const out = await this.#client.send(
      new GetQueueUrlCommand({ QueueName: agentQueueName(this.#prefix, agentId) }),
    );
    if (!out.QueueUrl) throw new AgentChannelError(`no queue URL for agent ${agentId}`, true);
    this.#urls.set(agentId, out.QueueUrl);
    return out.QueueUrl;
  }

  async #sendBatch(agentId: string, url: string, bodies: readonly string[]): Promise<void> {
    let pending: SendMessageBatchRequestEntry[] = bodies.map((MessageBody, i) => ({
      Id: String(i),
      MessageBody,
    }));
    let lastError = "";
    for (let attempt = 1; attempt <= this.#attempts && pending.length > 0; attempt++) {
      if (attempt > 1) await new Promise((r) => setTimeout(r, 50 * 2 ** attempt));
      const out = await this.#client.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: pending }));
      const failedIds = new Set<string>();
      for (const failure of out.Failed ?? []) {
        // A sender fault (a malformed entry) will fail again: give up on it at once.
        if (failure.SenderFault) {
          throw new AgentChannelError(
            `agent ${agentId}'s queue refused a message: ${failure.Code ?? "?"}: ${failure.Message ?? ""}`,
            false,
          );
        }
        if (failure.Id !== undefined) failedIds.add(failure.Id);
        lastError = `${failure.Code ?? "?"}: ${failure.Message ?? ""}`;
      }
      this.sent += pending.length - failedIds.size;
      pending = pending.filter((e) => e.Id !== undefined && failedIds.has(e.Id));
    }
    if (pending.length > 0) {
      throw new AgentChannelError(
        `${pending.length} message(s) for agent ${agentId} were not accepted after ${this.#attempts} attempts (${lastError})`,
        true,
      );
    }
  }
}
