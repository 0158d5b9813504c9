import { describe, expect, test } from "vitest";
import { placeKernels, type AgentFree, type KernelDemand } from "../../functions/core/placement.ts";

const agent = (id: string, cpu: number, memoryMiB: number): AgentFree => ({ id, free: { cpu, memoryMiB } });
const kernels = (n: number, cpu: number, memoryMiB: number): KernelDemand[] =>
  Array.from({ length: n }, (_, index) => ({ index, resources: { cpu, memoryMiB } }));

describe("placeKernels", () => {
  test("given two agents, when one kernel fits, then it goes to the agent with the most free cpu", () => {
    const result = placeKernels(kernels(1, 2, 256), [agent("a", 4, 4096), agent("b", 8, 1024)]);
    expect(result).toEqual({ ok: true, kernels: [{ index: 0, agentId: "b" }] });
  });

  test("a gang spreads across agents and every kernel is placed", () => {
    const result = placeKernels(kernels(4, 2, 256), [agent("a", 4, 4096), agent("b", 4, 4096)]);
    expect(result.ok).toBe(true);
    if (result.ok) {
      expect(result.kernels.map((k) => k.agentId).sort()).toEqual(["a", "a", "b", "b"]);
    }
  });

  test("perAgent caps a gang's tasks per agent: 4 tasks, 2 per agent, on 2 of 3 agents", () => {
    const result = placeKernels(
      kernels(4, 1, 64),
      [agent("a", 8, 4096), agent("b", 8, 4096), agent("c", 2, 4096)],
      {
        maxPerAgent: 2,
      },
    );
    expect(result.ok).toBe(true);
    if (result.ok) {
      const perAgent = Map.groupBy(result.kernels, (k) => k.agentId);
      expect([...perAgent.values()].every((ks) => ks.length <= 2)).toBe(true);
      expect(result.kernels).toHaveLength(4);
    }
  });

  test("a task no agent could hold even idle: 'no agent matches', not a wait for capacity", () => {
    const sized = (id: string, free: number, capacity: number): AgentFree => ({
      id,
      free: { cpu: free, memoryMiB: 4096 },
      capacity: { cpu: capacity, memoryMiB: 4096 },
    });
    expect(placeKernels(kernels(1, 64, 256), [sized("a", 2, 4), sized("b", 8, 8)])).toEqual({
      ok: false,
      reason: "no agent matches: a task needs 64 cpu and 256 MiB; the largest agent has 8 cpu and 4096 MiB",
    });
    // It would fit an idle agent: a wait for capacity.
    expect(placeKernels(kernels(1, 6, 256), [sized("a", 2, 4), sized("b", 4, 8)])).toEqual({
      ok: false,
      reason: "no agent has 6 cpu free; largest free is 4",
    });
  });

  test("perAgent 1 needs as many agents as tasks, and says so", () => {
    const result = placeKernels(kernels(4, 1, 64), [agent("a", 64, 4096), agent("b", 64, 4096)], {
      maxPerAgent: 1,
    });
    expect(result).toEqual({
      ok: false,
      reason: "needs 4 agents (4 tasks, at most 1 per agent); 2 are live",
    });
  });

  test("perAgent with too little room per agent: the capacity reason", () => {
    const result = placeKernels(kernels(2, 4, 64), [agent("a", 4, 4096), agent("b", 2, 4096)], {
      maxPerAgent: 1,
    });
    expect(result).toEqual({
      ok: false,
      reason: "only 1 of 2 kernels (4 cpu, 64 MiB each) fit in the free capacity",
    });
  });

  test("all or nothing: a gang that does not fit whole is not placed at all", () => {
    const result = placeKernels(kernels(3, 4, 256), [agent("a", 4, 4096), agent("b", 4, 4096)]);
    expect(result).toEqual({
      ok: false,
      reason: "only 2 of 3 kernels (4 cpu, 256 MiB each) fit in the free capacity",
    });
  });

  test.each([
    [kernels(1, 64, 256), "no agent has 64 cpu free; largest free is 8"],
    [kernels(1, 1, 65536), "no agent has 65536 MiB memory free; largest free is 4096 MiB"],
    [kernels(1, 64, 65536), "no agent has 64 cpu and 65536 MiB free; largest free is 8 cpu and 4096 MiB"],
    [kernels(1, 6, 3000), "no agent has 6 cpu and 3000 MiB free together"],
  ])("says why a kernel cannot be placed (%#)", (demand, reason) => {
    expect(placeKernels(demand, [agent("a", 8, 1024), agent("b", 2, 4096)])).toEqual({ ok: false, reason });
  });

  test("no agents, and avoided agents, are explained", () => {
    expect(placeKernels(kernels(1, 1, 1), [])).toEqual({
      ok: false,
      reason: "no live agents are registered",
    });
    expect(placeKernels(kernels(1, 1, 1), [agent("a", 8, 1024)], { avoidAgentIds: new Set(["a"]) })).toEqual({
      ok: false,
      reason: "every live agent is excluded for this session",
    });
  });

  test("an avoided agent is never chosen while another fits", () => {
    const result = placeKernels(kernels(1, 1, 1), [agent("a", 8, 1024), agent("b", 2, 1024)], {
      avoidAgentIds: new Set(["a"]),
    });
    expect(result).toEqual({ ok: true, kernels: [{ index: 0, agentId: "b" }] });
  });
});
