/**
 * Opening an agent's queue (SqsAgentChannel.open) against the embedded SQS, whose CreateQueue
 * answers as SQS does: an agent that registers again after an upgrade finds its queue made by
 * the earlier version, perhaps with other attributes (QueueNameExists), or deleted a moment ago
 * (QueueDeletedRecently, for 60 s). Neither may leave the agent unanswered for good.
 */
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  AGENT_QUEUE_ATTRIBUTES,
  AgentChannelError,
  SqsAgentChannel,
} from "../functions/adapters/sqs/agent-channel.ts";
import { AgentMessageType } from "../functions/core/agent-protocol.ts";
import { startSqsServer, type SqsServer } from "../local/sqs/index.ts";

const PREFIX = "cairn-agent-";
/** A clock the test moves: the 60 s a deleted queue's name is held pass without sleeping. */
let nowMs = Date.UTC(2026, 10, 1, 12, 0, 0);

let server: SqsServer;
let sqs: SQSClient;
let channel: SqsAgentChannel;

beforeAll(async () => {
  server = await startSqsServer({ clock: () => nowMs });
  sqs = new SQSClient({
    endpoint: server.endpoint,
    region: "local",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
  channel = new SqsAgentChannel(sqs, PREFIX);
});

afterAll(async () => {
  sqs.destroy();
  await server.close();
});

const attributesOf = async (url: string) =>
  (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["All"] }))).Attributes;

describe("given an agent's queue made by an earlier version with other attributes", () => {
  test("opening it gives it this version's attributes, and commands reach it", async () => {
    const { QueueUrl } = await sqs.send(
      new CreateQueueCommand({
        QueueName: `${PREFIX}upgraded`,
        Attributes: { VisibilityTimeout: "30", MessageRetentionPeriod: "345600" },
      }),
    );
    await channel.open("upgraded");
    expect(await attributesOf(QueueUrl!)).toMatchObject(AGENT_QUEUE_ATTRIBUTES);
    // Opening again is the plain CreateQueue of an existing queue with the same attributes.
    await channel.open("upgraded");
    await channel.send([
      {
        agentId: "upgraded",
        message: {
          type: AgentMessageType.fenced,
          agentId: "upgraded",
          incarnation: "i-1",
          reason: "test",
          atMs: 1,
        },
      },
    ]);
    const { Messages } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: QueueUrl! }));
    expect(Messages?.map((m) => (JSON.parse(m.Body!) as { type: string }).type)).toEqual(["fenced"]);
  });
});

describe("given an agent's queue deleted a moment ago", () => {
  test("opening it fails, retryably, saying why and when; after 60 s it opens", async () => {
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: `${PREFIX}cleaned` }));
    await sqs.send(new DeleteQueueCommand({ QueueUrl: QueueUrl! }));
    nowMs += 30_000;
    const failure = await channel.open("cleaned").then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(AgentChannelError);
    expect(failure).toMatchObject({
      code: "AGENT_CHANNEL",
      retryable: true,
      retryAfterMs: 60_000,
      message:
        "agent cleaned's queue cairn-agent-cleaned was deleted less than 60 s ago, and SQS creates no queue of that name until then (QueueDeletedRecently): the registration is retried",
    });
    nowMs += 31_000;
    await channel.open("cleaned");
    expect(await attributesOf(QueueUrl!)).toMatchObject(AGENT_QUEUE_ATTRIBUTES);
  });
});
