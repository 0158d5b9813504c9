/**
 * A queue's Fargate capacity as a pool agent (functions/core/fargate-pool.ts): its id, its
 * capacity, its liveness, and placement onto it (functions/core/placement-pass.ts): a Fargate
 * session only on its own queue's pool, an agent session never on one, and the reasons a
 * Fargate session waits.
 */
import { describe, expect, test } from "vitest";
import { AGENT_ID_PATTERN } from "../../functions/core/event-fields.ts";
import {
  fargatePoolCapacity,
  fargatePoolId,
  isFargatePool,
  POOL_ID_PATTERN,
} from "../../functions/core/fargate-pool.ts";
import { isLiveAgent, type Agent, type SessionSpec } from "../../functions/core/model.ts";
import { NO_FARGATE_EXECUTOR, PlacementPass } from "../../functions/core/placement-pass.ts";
import type { AgentFree } from "../../functions/core/placement.ts";
import { newSession } from "../store-fixtures.ts";

describe("fargatePoolId", () => {
  test.each([
    // [queue, pool id]
    ["default", "fargate_default"],
    ["gpu-batch_2", "fargate_gpu-batch_2"],
    ["a".repeat(32), `fargate_${"a".repeat(32)}`],
    // Too long, or a '.' (queues allow it, agent ids do not): cut, with a hash of the whole name.
    ["a".repeat(33), `fargate_${"a".repeat(23)}-f9680f0c`],
    ["team.batch", "fargate_team_batch-cf5e25b2"],
  ])("queue %s → %s", (queue, id) => {
    const poolId = fargatePoolId(queue);
    expect(poolId).toBe(id);
    expect(poolId).toMatch(AGENT_ID_PATTERN);
    expect(poolId.length).toBeLessThanOrEqual(40);
    expect(isFargatePool(poolId)).toBe(true);
  });

  test("two long names that share a beginning get different pools", () => {
    expect(fargatePoolId(`${"q".repeat(40)}-a`)).not.toBe(fargatePoolId(`${"q".repeat(40)}-b`));
    expect(fargatePoolId("team.batch")).not.toBe(fargatePoolId("team_batch"));
  });

  test("the pool id pattern is the agent id pattern", () => {
    expect(POOL_ID_PATTERN.source).toBe(AGENT_ID_PATTERN.source);
  });

  test("an agent's id is no pool", () => {
    expect(isFargatePool("agent-1")).toBe(false);
    expect(isFargatePool("fargate-1")).toBe(false);
  });
});

describe("a pool as an agent", () => {
  test("its capacity is the vCPU quota, with 8 GiB per vCPU so memory never binds first", () => {
    expect(fargatePoolCapacity({ vcpuQuota: 16 })).toEqual({
      cpu: 16,
      memoryMiB: 131_072,
    });
  });

  test("it is live unless draining, whatever its heartbeat", () => {
    const pool: Agent = {
      id: "fargate_default",
      capacity: { cpu: 4, memoryMiB: 32_768 },
      free: { cpu: 4, memoryMiB: 32_768 },
      lastHeartbeatAtMs: 0,
      version: 0,
    };
    expect(isLiveAgent(pool, 1_000_000_000, 30_000)).toBe(true);
    expect(isLiveAgent({ ...pool, draining: true }, 0, 30_000)).toBe(false);
    expect(isLiveAgent({ ...pool, id: "agent-1" }, 1_000_000_000, 30_000)).toBe(false);
  });
});

const pool = (queue: string, quota: number, free = quota): AgentFree => ({
  id: fargatePoolId(queue),
  free: { cpu: free, memoryMiB: free * 8192 },
  capacity: { cpu: quota, memoryMiB: quota * 8192 },
});
const agent = (id: string, cpu: number): AgentFree => ({
  id,
  free: { cpu, memoryMiB: cpu * 8192 },
  capacity: { cpu, memoryMiB: cpu * 8192 },
});

function session(id: string, over: Partial<SessionSpec> & { replicas?: number; cpu?: number } = {}) {
  const { replicas = 1, cpu = 1, ...spec } = over;
  const s = newSession(id, { replicas, resources: { cpu, memoryMiB: cpu * 2048 } });
  return { ...s, session: { ...s.session, spec: { ...s.session.spec, ...spec } } };
}
const fargate = { executor: "fargate", image: "public.ecr.aws/docker/library/busybox:1" } as const;

describe("placement on pools", () => {
  test.each([
    // [case, spec, pools and agents, expected placement or reason]
    [
      "a Fargate session on its queue's pool",
      { ...fargate, queue: "batch" },
      [pool("batch", 4), agent("a1", 8)],
      { kind: "place", message: "placed on fargate_batch" },
    ],
    [
      "a gang's kernels all on the pool",
      { ...fargate, queue: "batch", replicas: 4 },
      [pool("batch", 4)],
      { kind: "place", message: "placed on fargate_batch" },
    ],
    [
      "not on another queue's pool",
      { ...fargate, queue: "batch" },
      [pool("other", 16), agent("a1", 8)],
      {
        kind: "wait",
        message:
          'queue "batch" has no Fargate capacity: set one with `cairn queue update batch --vcpu-quota N`',
      },
    ],
    [
      "not enough vCPU free",
      { ...fargate, queue: "batch", cpu: 4 },
      [pool("batch", 16, 2)],
      { kind: "wait", message: "needs 4 vCPU; queue batch's Fargate quota has 2 of 16 free" },
    ],
    [
      "more vCPU than the quota",
      { ...fargate, queue: "batch", replicas: 4, cpu: 2 },
      [pool("batch", 4)],
      {
        kind: "wait",
        message:
          "needs 8 vCPU; queue batch's Fargate quota is 4 vCPU: raise it with `cairn queue update batch --vcpu-quota N`",
      },
    ],
    [
      "an agent session never on a pool",
      { queue: "batch" },
      [pool("batch", 16)],
      { kind: "wait", message: "no live agents are registered" },
    ],
    [
      "an agent session on an agent beside a pool",
      { queue: "batch" },
      [pool("batch", 16), agent("a1", 2)],
      { kind: "place", message: "placed on a1" },
    ],
  ] as const)("%s", (_, spec, agents, expected) => {
    const pass = new PlacementPass(agents, { fargate: true });
    expect(pass.place(session("s1", spec))).toMatchObject(expected);
  });

  test("without a Fargate executor a Fargate session waits, saying so", () => {
    const pass = new PlacementPass([pool("batch", 4)]);
    expect(pass.place(session("s1", { ...fargate, queue: "batch" }))).toEqual({
      kind: "wait",
      forPriority: false,
      message: NO_FARGATE_EXECUTOR,
    });
  });

  test("a placement on a pool draws its quota down for the rest of the pass, and waits for priority", () => {
    const pass = new PlacementPass([pool("batch", 4)], { fargate: true });
    const high = session("high", { ...fargate, queue: "batch", cpu: 4, priority: 50 });
    const planned = pass.place(high);
    if (planned.kind !== "place") throw new Error("not placed");
    pass.taken(high, planned.kernels);
    expect(pass.pools.get("fargate_batch")?.free.cpu).toBe(0);
    expect(pass.free.size).toBe(0);
    expect(pass.place(session("low", { ...fargate, queue: "batch", cpu: 2, priority: 10 }))).toEqual({
      kind: "wait",
      forPriority: true,
      message:
        "capacity: higher-priority sessions were placed first (needs 2 vCPU; queue batch's Fargate quota has 0 of 4 free)",
    });
    // The next pass reads the pool with its capacity back.
    const next = new PlacementPass([pool("batch", 4)], { fargate: true });
    expect(next.place(session("low", { ...fargate, queue: "batch", cpu: 2 })).kind).toBe("place");
  });
});
