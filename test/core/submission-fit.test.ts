/**
 * Whether a submission could ever be placed (core/submission-fit.ts): against the registered
 * agents' whole capacity (as if idle), by the scheduler's own placement rule; against its queue's
 * Fargate quota for a Fargate session.
 */
import { describe, expect, test } from "vitest";
import { parseSessionSpec, type SessionSpecInput } from "../../functions/core/spec.ts";
import { submissionFitWarning, type RegisteredAgent } from "../../functions/core/submission-fit.ts";

const spec = (over: Partial<SessionSpecInput> = {}) =>
  parseSessionSpec({ name: "job", command: ["true"], ...over });
const agent = (
  id: string,
  cpu: number,
  memoryMiB = 4096,
  labels?: Record<string, string>,
): RegisteredAgent => ({
  id,
  capacity: { cpu, memoryMiB },
  ...(labels !== undefined ? { labels } : {}),
});
const FOUR_CPU = [agent("agent-1", 4), agent("agent-2", 4)];

describe("agents", () => {
  test("a task that fits an agent, even one busy now, draws no warning", () => {
    expect(submissionFitWarning(spec({ resources: { cpu: 4 } }), { agents: FOUR_CPU })).toBeUndefined();
  });

  test("64 cpu on 4-cpu agents: no agent could ever run it, saying the largest", () => {
    expect(submissionFitWarning(spec({ resources: { cpu: 64 } }), { agents: FOUR_CPU })).toBe(
      "no registered agent could ever run a task of 64 cpu and 256 MiB, even idle: " +
        "no agent matches: a task needs 64 cpu and 256 MiB; the largest agent has 4 cpu and 4096 MiB",
    );
  });

  test("memory counts too", () => {
    expect(
      submissionFitWarning(spec({ resources: { cpu: 1, memoryMiB: 8192 } }), { agents: FOUR_CPU }),
    ).toMatch(
      /^no registered agent could ever run a task of 1 cpu and 8192 MiB, even idle: no agent matches/,
    );
  });

  test("a gang needs all its tasks at once: 3 tasks, one per agent, on 2 agents never fits; 2 per agent does", () => {
    expect(submissionFitWarning(spec({ replicas: 3, resources: { cpu: 2 } }), { agents: FOUR_CPU })).toBe(
      "no registered agent could ever run a gang of 3 tasks of 2 cpu and 256 MiB each, even idle: " +
        "needs 3 agents (3 tasks, at most 1 per agent); 2 are live",
    );
    expect(
      submissionFitWarning(spec({ replicas: 3, perAgent: 2, resources: { cpu: 2 } }), { agents: FOUR_CPU }),
    ).toBeUndefined();
    // Two per agent, 3 cpu each: only one fits on a 4-cpu agent, so only 2 of the 3 ever fit.
    expect(
      submissionFitWarning(spec({ replicas: 3, perAgent: 2, resources: { cpu: 3 } }), { agents: FOUR_CPU }),
    ).toMatch(/^no registered agent could ever run a gang of 3 tasks of 3 cpu and 256 MiB each, even idle: /);
  });

  test("independent tasks are each one kernel: 3 of 4 cpu on two 4-cpu agents fit, one after another", () => {
    expect(
      submissionFitWarning(spec({ replicas: 3, coscheduled: false, resources: { cpu: 4 } }), {
        agents: FOUR_CPU,
      }),
    ).toBeUndefined();
  });

  test("nodeSelector: only the agents with its labels count", () => {
    const agents = [agent("small", 2, 4096, { gpu: "a100" }), agent("big", 16)];
    expect(
      submissionFitWarning(spec({ resources: { cpu: 8 }, nodeSelector: { gpu: "a100" } }), { agents }),
    ).toMatch(/the largest agent has 2 cpu and 4096 MiB$/);
    expect(
      submissionFitWarning(spec({ resources: { cpu: 8 }, nodeSelector: { gpu: "h100" } }), { agents }),
    ).toMatch(/no live agent has the labels nodeSelector asks for \(gpu=h100\)$/);
  });

  test("no agent registered: it waits until one that fits registers", () => {
    expect(submissionFitWarning(spec(), { agents: [] })).toBe(
      "no agent is registered: a task of 1 cpu and 256 MiB waits until one that fits registers (`cairn agent`)",
    );
  });
});

describe("Fargate", () => {
  const fargate = (over: Partial<SessionSpecInput> = {}) =>
    spec({ executor: "fargate", image: "busybox", resources: { cpu: 2, memoryMiB: 4096 }, ...over });

  test("a queue without Fargate settings: the advice names the command that gives it some", () => {
    expect(submissionFitWarning(fargate(), { agents: [] })).toBe(
      'queue "default" has no Fargate capacity, so a task of 2 cpu and 4096 MiB waits: ' +
        "set one with `cairn queue update default --vcpu-quota N`",
    );
  });

  test("a quota below what it needs at once (a gang: every task's vCPU), and one that holds it", () => {
    expect(submissionFitWarning(fargate({ replicas: 4 }), { agents: [], fargateVcpuQuota: 4 })).toBe(
      "a gang of 4 tasks of 2 cpu and 4096 MiB each needs 8 vCPU at once; queue default's Fargate quota is 4 vCPU: " +
        "raise it with `cairn queue update default --vcpu-quota N`",
    );
    expect(
      submissionFitWarning(fargate({ replicas: 4 }), { agents: [], fargateVcpuQuota: 8 }),
    ).toBeUndefined();
  });
});
