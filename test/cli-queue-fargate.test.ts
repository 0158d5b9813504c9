/**
 * `cairn queue create|update` passes a queue's Fargate settings through: merged with what the
 * queue has, checked with the core's parser before anything is sent.
 */
import { describe, expect, test } from "vitest";
import type { CommandContext } from "../bin/cli/commands/context.ts";
import { runQueueWrite, type QueueWriteInvocation } from "../bin/cli/commands/queue.ts";
import { InvalidInputError } from "../bin/cli/errors.ts";
import type { Queue } from "../functions/core/model.ts";

type QueueInput = Omit<Queue, "createdAtMs" | "updatedAtMs">;

/** Records what the command sends; only the queue calls runQueueWrite makes. */
function world(existing?: Queue) {
  const sent: { kind: "create" | "update"; input: QueueInput }[] = [];
  const out: string[] = [];
  const write = (kind: "create" | "update") => (input: QueueInput, nowMs: number) => {
    sent.push({ kind, input });
    return Promise.resolve({ ...input, createdAtMs: nowMs, updatedAtMs: nowMs });
  };
  const ctx = {
    io: { nowMs: () => 1_000, stdout: (text: string) => out.push(text) },
    api: {
      admin: {
        getQueue: (name: string) => Promise.resolve(existing?.name === name ? existing : undefined),
        getRetryPolicy: () => Promise.resolve(undefined),
        createQueue: write("create"),
        updateQueue: write("update"),
      },
    },
  } as unknown as CommandContext;
  return { ctx, sent, out };
}

const GPU: Queue = {
  name: "gpu",
  priority: 5,
  retryPolicies: [],
  fargate: { capacityProvider: "FARGATE_SPOT", vcpuQuota: 8 },
  createdAtMs: 0,
  updatedAtMs: 0,
};

function invocation(over: Partial<QueueWriteInvocation>): QueueWriteInvocation {
  return { kind: "queue update", name: "gpu", output: "json", ...over };
}

describe("cairn queue create|update with Fargate settings", () => {
  test.each([
    [
      "create with a quota: on-demand FARGATE",
      undefined,
      { kind: "queue create", fargate: { vcpuQuota: 4 } },
      { capacityProvider: "FARGATE", vcpuQuota: 4 },
    ],
    ["create without settings sends none", undefined, { kind: "queue create" }, undefined],
    ["update without settings keeps them", GPU, {}, GPU.fargate],
    [
      "update of the provider keeps the quota",
      GPU,
      { fargate: { capacityProvider: "FARGATE" } },
      { capacityProvider: "FARGATE", vcpuQuota: 8 },
    ],
    ["update with null removes them", GPU, { fargate: null }, undefined],
  ] as const)("%s", async (_label, existing, over, expected) => {
    const { ctx, sent } = world(existing);
    await runQueueWrite(invocation(over), ctx);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.input.fargate).toEqual(expected);
    expect(sent[0]!.input.priority).toBe(existing?.priority ?? 0);
  });

  test("a bad setting is refused, named, and nothing is sent", async () => {
    const { ctx, sent } = world(GPU);
    const error = await runQueueWrite(invocation({ fargate: { vcpuQuota: 0 } }), ctx).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as InvalidInputError).message).toBe(
      "invalid Fargate settings for queue gpu:\n  fargate.vcpuQuota: must be greater than 0",
    );
    expect(sent).toEqual([]);
  });
});
