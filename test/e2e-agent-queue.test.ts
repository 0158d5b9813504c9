/**
 * An agent that registers after an upgrade finds its queue made by the earlier version, with
 * the attributes that version chose: the embedded SQS answers CreateQueue with those of this
 * version `QueueNameExists`, as SQS does. The registration still completes — the queue is given
 * this version's attributes — and the agent runs what it is sent. Real `cairn agent` process,
 * the runtime's own endpoints.
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { AGENT_QUEUE_ATTRIBUTES } from "../functions/adapters/sqs/agent-channel.ts";
import { sessionResult } from "../functions/core/sessions.ts";
import { startTestRuntime, type TestRuntime } from "./support/runtime.ts";

let rt: TestRuntime;

beforeAll(async () => {
  rt = await startTestRuntime({ agents: 0, agentCapacity: { cpu: 1, memoryMiB: 1024 } });
}, 120_000);

afterAll(async () => {
  await rt?.stop();
});

test("an agent whose queue an earlier version made with other attributes registers, and its queue gets this version's", async () => {
  const id = `upgraded-${Date.now().toString(36)}`;
  const queueName = `${rt.runtime.info.agentQueuePrefix}${id}`;
  // The queue as an earlier version created it: other visibility timeout and retention.
  rt.runtime.sqs.queues.create(queueName, { VisibilityTimeout: 30, MessageRetentionPeriod: 345_600 });

  const agent = await rt.runtime.startAgent({ id, labels: { box: id } });
  const settings = rt.runtime.sqs.queues.get(queueName).settings;
  expect(
    Object.fromEntries(
      Object.keys(AGENT_QUEUE_ATTRIBUTES).map((k) => [k, String(settings[k as keyof typeof settings])]),
    ),
  ).toEqual(AGENT_QUEUE_ATTRIBUTES);

  const sessionId = `on-${id}`;
  await rt.submit({
    sessionId,
    spec: { name: "after-upgrade", nodeSelector: { box: id }, command: ["/bin/sh", "-c", "exit 0"] },
  });
  const ended = await rt.waitForEnd(sessionId, 60_000);
  expect(sessionResult(ended)).toBe("succeeded");
  expect(ended.kernels[0]?.agentId).toBe(id);
  await agent.stop();
}, 120_000);
