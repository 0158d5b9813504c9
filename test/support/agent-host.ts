/**
 * An agent host (agent/host.ts) with its AWS faked where a test needs to see or break what it
 * sends: the agent's queue is an array the test pushes messages onto, and every PutEvents entry
 * goes through `put`, which records it (or fails the request, as the test decides). The kernels
 * it runs are real.
 */
import {
  PutEventsCommand,
  type EventBridgeClient,
  type PutEventsRequestEntry,
} from "@aws-sdk/client-eventbridge";
import { GetQueueUrlCommand, ReceiveMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { AgentHost, type AgentHostOptions } from "../../agent/host.ts";
import type { KernelCommandInput } from "../../functions/core/agent-protocol.ts";

export const SIGNING_KEY = "k".repeat(43);

export interface FakeHost {
  readonly host: AgentHost;
  /** Every entry the host put, in order (those `put` let through). */
  readonly put: PutEventsRequestEntry[];
  readonly logs: string[];
  /** Registers the host (its answer on the queue) and resolves once it is ready. */
  readonly start: () => Promise<void>;
  /** A command for this host's incarnation, on its queue. */
  readonly command: (command: Omit<KernelCommandInput, "agentId">) => void;
}

/**
 * `refuse` may fail an entry's request (return the error to throw); entries it lets through are
 * recorded in `put`.
 */
export function fakeHost(
  id: string,
  workRoot: string,
  options: Partial<AgentHostOptions> & {
    readonly refuse?: (
      entry: PutEventsRequestEntry,
      put: readonly PutEventsRequestEntry[],
    ) => Error | undefined;
  } = {},
): FakeHost {
  const { refuse, ...hostOptions } = options;
  const queue: string[] = [];
  const sqs = {
    send: async (command: unknown) => {
      if (command instanceof GetQueueUrlCommand) return { QueueUrl: "agent-queue" };
      if (command instanceof ReceiveMessageCommand) {
        if (queue.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
        return { Messages: queue.splice(0).map((Body, i) => ({ Body, ReceiptHandle: `h${i}` })) };
      }
      return {};
    },
  } as unknown as SQSClient;
  const put: PutEventsRequestEntry[] = [];
  const events = {
    send: (command: unknown) => {
      if (!(command instanceof PutEventsCommand)) return Promise.resolve({});
      const entries = command.input.Entries ?? [];
      for (const entry of entries) {
        const error = refuse?.(entry, put);
        if (error) return Promise.reject(error);
      }
      put.push(...entries);
      return Promise.resolve({ FailedEntryCount: 0, Entries: entries.map(() => ({ EventId: "e" })) });
    },
  } as unknown as EventBridgeClient;
  const logs: string[] = [];
  const capacity = { cpu: 2, memoryMiB: 2048 };
  const host = new AgentHost({
    id,
    capacity,
    labels: {},
    workRoot,
    busName: "bus",
    queueName: "agent-queue",
    events,
    sqs,
    heartbeatMs: 60_000,
    waitSeconds: 0,
    drainGraceMs: 0,
    log: (line) => logs.push(line),
    ...hostOptions,
  });
  return {
    host,
    put,
    logs,
    start: async () => {
      const started = host.start();
      queue.push(
        JSON.stringify({
          type: "registered",
          agentId: id,
          incarnation: host.incarnation,
          signingKey: SIGNING_KEY,
          capacity,
          labels: {},
          atMs: Date.now(),
        }),
      );
      await started;
    },
    command: (command) => {
      queue.push(
        JSON.stringify({
          type: "command",
          incarnation: host.incarnation,
          command: { agentId: id, ...command },
        }),
      );
    },
  };
}
