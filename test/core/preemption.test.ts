/**
 * Priority preemption as a table: given free capacity, the sessions holding capacity and the
 * sessions that could not be placed, which sessions are preempted, and what each one waits for.
 */
import { describe, expect, test } from "vitest";
import type { AgentFree } from "../../functions/core/placement.ts";
import {
  describePlan,
  planPreemptions,
  PreemptionInputError,
  type PreemptionCandidate,
  type PreemptionPlan,
  type Preemptor,
} from "../../functions/core/preemption.ts";

const agent = (id: string, cpu: number, memoryMiB = 4096): AgentFree => ({ id, free: { cpu, memoryMiB } });

/** A session of `priority` holding `cpu` (and 512 MiB) on each of `agents`. */
function holder(
  id: string,
  priority: number,
  agents: readonly string[],
  cpu: number,
  more: Partial<PreemptionCandidate> = {},
): PreemptionCandidate {
  return {
    sessionId: id,
    priority,
    createdAtMs: 1_000,
    started: true,
    holds: agents.map((agentId) => ({ agentId, resources: { cpu, memoryMiB: 512 } })),
    releasing: false,
    ...more,
  };
}

/** A session of `priority` needing `tasks` kernels of `cpu` each. */
function wants(
  id: string,
  priority: number,
  tasks: number,
  cpu: number,
  more: Partial<Preemptor> = {},
): Preemptor {
  return {
    sessionId: id,
    priority,
    kernels: Array.from({ length: tasks }, (_, index) => ({ index, resources: { cpu, memoryMiB: 512 } })),
    ...more,
  };
}

/** A plan as the ids it names, for compact expectations. */
function brief(plan: PreemptionPlan | undefined): unknown {
  if (!plan) return undefined;
  switch (plan.kind) {
    case "fits":
      return "fits";
    case "none":
      return { none: plan.lowerPriority };
    case "wait":
      return { wait: plan.awaiting.map((c) => c.sessionId) };
    case "preempt":
      return {
        preempt: plan.victims.map((c) => c.sessionId),
        ...(plan.awaiting.length > 0 ? { wait: plan.awaiting.map((c) => c.sessionId) } : {}),
      };
  }
}

interface Row {
  readonly name: string;
  readonly agents: readonly AgentFree[];
  readonly candidates: readonly PreemptionCandidate[];
  readonly preemptors: readonly Preemptor[];
  /** Per preemptor id, its plan in brief. */
  readonly expected: Readonly<Record<string, unknown>>;
}

const rows: readonly Row[] = [
  {
    name: "one lower-priority session is enough: only it is preempted (equals: by id)",
    agents: [agent("a", 0), agent("b", 0)],
    candidates: [holder("low-1", 0, ["a"], 2), holder("low-2", 0, ["b"], 2)],
    preemptors: [wants("high", 10, 1, 2)],
    expected: { high: { preempt: ["low-1"] } },
  },
  {
    name: "only strictly lower priority: a session of the same priority is never preempted",
    agents: [agent("a", 0)],
    candidates: [holder("peer", 10, ["a"], 2)],
    preemptors: [wants("high", 10, 1, 2)],
    expected: { high: { none: 0 } },
  },
  {
    name: "lowest band first: priority 0 goes before priority 5, even when priority 5 alone would do",
    agents: [agent("a", 0), agent("b", 0)],
    candidates: [holder("mid", 5, ["a"], 4), holder("low", 0, ["b"], 4)],
    preemptors: [wants("high", 10, 1, 4)],
    expected: { high: { preempt: ["low"] } },
  },
  {
    name: "a higher band is reached only when the lower one cannot make room",
    agents: [agent("a", 0), agent("b", 0)],
    candidates: [
      holder("low", 0, ["a"], 1, { holds: [{ agentId: "a", resources: { cpu: 1, memoryMiB: 512 } }] }),
      holder("mid", 5, ["b"], 4),
    ],
    preemptors: [wants("high", 10, 1, 4)],
    expected: { high: { preempt: ["mid"] } },
  },
  {
    name: "fewest needed: one session freeing enough beats several small ones of the same band",
    agents: [agent("a", 0), agent("b", 0)],
    candidates: [
      holder("s1", 0, ["a"], 1),
      holder("s2", 0, ["a"], 1),
      holder("s3", 0, ["a"], 2),
      holder("big", 0, ["b"], 4),
    ],
    preemptors: [wants("high", 10, 1, 4)],
    expected: { high: { preempt: ["big"] } },
  },
  {
    name: "several victims on one agent when no single one frees enough",
    agents: [agent("a", 0), agent("b", 1)],
    candidates: [holder("s1", 0, ["a"], 2), holder("s2", 0, ["a"], 2), holder("other", 0, ["b"], 1)],
    preemptors: [wants("high", 10, 1, 4)],
    expected: { high: { preempt: ["s1", "s2"] } },
  },
  {
    name: "a victim chosen on the way that the placement does not need is spared again",
    agents: [agent("a", 0), agent("b", 0)],
    // Band 0 cannot make room alone (x on a, y on b); with m of band 5 on b, y and m do, and x is spared.
    candidates: [holder("x", 0, ["a"], 2), holder("y", 0, ["b"], 3), holder("m", 5, ["b"], 1)],
    preemptors: [wants("high", 10, 1, 4)],
    expected: { high: { preempt: ["y", "m"] } },
  },
  {
    name: "not started before started, then the newest, within a band",
    agents: [agent("a", 0), agent("b", 0), agent("c", 0)],
    candidates: [
      holder("old-running", 0, ["a"], 2, { createdAtMs: 1 }),
      holder("new-running", 0, ["b"], 2, { createdAtMs: 5 }),
      holder("scheduled", 0, ["c"], 2, { createdAtMs: 3, started: false }),
    ],
    preemptors: [wants("high", 10, 1, 2)],
    expected: { high: { preempt: ["scheduled"] } },
  },
  {
    name: "the newest running session when none is unstarted",
    agents: [agent("a", 0), agent("b", 0)],
    candidates: [
      holder("old", 0, ["a"], 2, { createdAtMs: 1 }),
      holder("new", 0, ["b"], 2, { createdAtMs: 5 }),
    ],
    preemptors: [wants("high", 10, 1, 2)],
    expected: { high: { preempt: ["new"] } },
  },
  {
    name: "a gang preempts on as many agents as it needs, and a gang victim frees every agent it holds",
    agents: [agent("a", 0), agent("b", 0), agent("c", 0)],
    candidates: [holder("gang-low", 0, ["a", "b"], 2), holder("single-low", 0, ["c"], 2)],
    preemptors: [wants("gang-high", 10, 2, 2, { maxPerAgent: 1 })],
    expected: { "gang-high": { preempt: ["gang-low"] } },
  },
  {
    name: "nothing is preempted when even preempting every lower-priority session would not make room",
    agents: [agent("a", 0), agent("b", 0)],
    candidates: [holder("low-1", 0, ["a"], 4), holder("low-2", 0, ["b"], 4)],
    preemptors: [wants("huge", 10, 1, 16)],
    expected: { huge: { none: 2 } },
  },
  {
    name: "nothing is preempted for a gang needing more agents than there are",
    agents: [agent("a", 0), agent("b", 0)],
    candidates: [holder("low", 0, ["a", "b"], 4)],
    preemptors: [wants("gang", 10, 3, 1, { maxPerAgent: 1 })],
    expected: { gang: { none: 1 } },
  },
  {
    name: "capacity on an avoided agent does not help: nothing there is preempted",
    agents: [agent("a", 0), agent("b", 0)],
    candidates: [holder("low-a", 0, ["a"], 4), holder("low-b", 0, ["b"], 4, { createdAtMs: 9 })],
    preemptors: [wants("high", 10, 1, 4, { avoidAgentIds: new Set(["b"]) })],
    expected: { high: { preempt: ["low-a"] } },
  },
  {
    name: "capacity held on an agent that is not live does not help",
    agents: [agent("a", 0)],
    candidates: [holder("ghost", 0, ["gone"], 8)],
    preemptors: [wants("high", 10, 1, 4)],
    expected: { high: { none: 1 } },
  },
  {
    name: "a session already preempted counts as freed: the preemptor waits and preempts no one else",
    agents: [agent("a", 0), agent("b", 0)],
    candidates: [holder("victim", 0, ["a"], 4, { releasing: "preempted" }), holder("low-2", 0, ["b"], 4)],
    preemptors: [wants("high", 10, 1, 4)],
    expected: { high: { wait: ["victim"] } },
  },
  {
    name: "an ending session of any priority counts as freed",
    agents: [agent("a", 0)],
    candidates: [holder("done", 20, ["a"], 4, { releasing: "ending" }), holder("low", 0, ["a"], 0)],
    preemptors: [wants("high", 10, 1, 4)],
    expected: { high: { wait: ["done"] } },
  },
  {
    name: "freed capacity that is not enough: the rest is preempted, and the plan says both",
    agents: [agent("a", 0)],
    candidates: [holder("victim", 0, ["a"], 2, { releasing: "preempted" }), holder("low-2", 0, ["a"], 2)],
    preemptors: [wants("high", 10, 1, 4)],
    expected: { high: { preempt: ["low-2"], wait: ["victim"] } },
  },
  {
    name: "fits the free capacity already: nothing to do",
    agents: [agent("a", 4)],
    candidates: [holder("low", 0, ["a"], 4)],
    preemptors: [wants("high", 10, 1, 4)],
    expected: { high: "fits" },
  },
  {
    name: "in queue order, each preemptor holds what it will use: the second preempts for itself",
    agents: [agent("a", 0), agent("b", 0)],
    candidates: [
      holder("low-1", 0, ["a"], 4, { createdAtMs: 2 }),
      holder("low-2", 0, ["b"], 4, { createdAtMs: 1 }),
    ],
    preemptors: [wants("first", 10, 1, 4), wants("second", 8, 1, 4)],
    expected: { first: { preempt: ["low-1"] }, second: { preempt: ["low-2"] } },
  },
  {
    name: "a later preemptor does not count on capacity an earlier one waits for",
    agents: [agent("a", 0), agent("b", 0)],
    candidates: [holder("victim", 0, ["a"], 4, { releasing: "preempted" }), holder("low", 0, ["b"], 4)],
    preemptors: [wants("first", 10, 1, 4), wants("second", 9, 1, 4)],
    expected: { first: { wait: ["victim"] }, second: { preempt: ["low"] } },
  },
  {
    name: "a later preemptor of lower priority cannot take a victim from a band it does not outrank",
    agents: [agent("a", 0), agent("b", 0)],
    candidates: [holder("p0", 0, ["a"], 4), holder("p5", 5, ["b"], 4)],
    preemptors: [wants("p10", 10, 1, 4), wants("p3", 3, 1, 4)],
    expected: { p10: { preempt: ["p0"] }, p3: { none: 0 } },
  },
];

describe("planPreemptions", () => {
  test.each(rows)("$name", ({ agents, candidates, preemptors, expected }) => {
    const plans = planPreemptions({ agents, candidates, preemptors });
    const got = Object.fromEntries(preemptors.map((p) => [p.sessionId, brief(plans.get(p.sessionId))]));
    expect(got).toEqual(expected);
  });

  test("the plan names whole candidates, with what they hold", () => {
    const low = holder("low", 0, ["a"], 4);
    const plans = planPreemptions({
      agents: [agent("a", 0)],
      candidates: [low],
      preemptors: [wants("high", 1, 1, 4)],
    });
    expect(plans.get("high")).toEqual({ kind: "preempt", victims: [low], awaiting: [] });
  });

  test.each([
    [
      "an agent listed twice",
      { agents: [agent("a", 1), agent("a", 2)], candidates: [], preemptors: [] },
      "agents[1].id: agent a is listed twice",
    ],
    [
      "a candidate listed twice",
      { agents: [], candidates: [holder("x", 0, [], 1), holder("x", 0, [], 1)], preemptors: [] },
      "candidates[1].sessionId: session x is listed twice",
    ],
    [
      "a preemptor that is also a candidate",
      { agents: [], candidates: [holder("x", 0, [], 1)], preemptors: [wants("x", 5, 1, 1)] },
      "preemptors[0].sessionId: session x also holds capacity as a candidate",
    ],
    [
      "a preemptor with no kernels",
      { agents: [], candidates: [], preemptors: [wants("x", 5, 0, 1)] },
      "preemptors[0].kernels: must not be empty",
    ],
  ])("refuses %s, naming the field", (_what, input, message) => {
    expect(() => planPreemptions(input)).toThrow(new PreemptionInputError(message));
  });
});

describe("describePlan", () => {
  const victim = holder("job-x-t1", 0, ["a"], 2, { releasing: "preempted" });
  test.each<[string, PreemptionPlan, string | undefined]>([
    ["fits", { kind: "fits" }, undefined],
    [
      "wait",
      { kind: "wait", awaiting: [victim] },
      "waiting for 1 preempted session (job-x-t1, priority 0) to release capacity",
    ],
    [
      "wait on an ending session",
      { kind: "wait", awaiting: [{ ...victim, sessionId: "done", releasing: "ending" }] },
      "waiting for 1 ending session (done, priority 0) to release capacity",
    ],
    [
      "preempt",
      { kind: "preempt", victims: [holder("a", 0, [], 1), holder("b", 2, [], 1)], awaiting: [] },
      "preempting 2 lower-priority sessions (a, priority 0; b, priority 2) to make room",
    ],
    [
      "preempt and wait",
      { kind: "preempt", victims: [holder("a", 0, [], 1)], awaiting: [victim] },
      "preempting 1 lower-priority session (a, priority 0); waiting for 1 preempted session (job-x-t1, priority 0) to release capacity",
    ],
    [
      "many victims are listed three at a time",
      { kind: "preempt", victims: ["a", "b", "c", "d", "e"].map((id) => holder(id, 0, [], 1)), awaiting: [] },
      "preempting 5 lower-priority sessions (a, priority 0; b, priority 0; c, priority 0; and 2 more) to make room",
    ],
    [
      "none with lower-priority sessions",
      { kind: "none", lowerPriority: 3 },
      "preempting every lower-priority session (3) would not make room",
    ],
    ["none without any", { kind: "none", lowerPriority: 0 }, undefined],
  ])("%s", (_name, plan, text) => {
    expect(describePlan(plan)).toBe(text);
  });
});
