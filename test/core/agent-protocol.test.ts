/**
 * The agent channel's messages, the signing payload, and what losing an agent does to a
 * session (pure core; the coordinator and the agent carry these out).
 */
import { describe, expect, test } from "vitest";
import { agentLossPlan } from "../../functions/core/agent-loss.ts";
import {
  canonicalJson,
  parseAgentMessage,
  signingPayload,
  type KernelCommandInput,
} from "../../functions/core/agent-protocol.ts";
import { placeKernels, type AgentFree } from "../../functions/core/placement.ts";
import type { SessionStatus } from "../../functions/core/status.ts";
import { kernel, NOW_MS, session } from "./fixtures.ts";

const INCARNATION = "0b7c1e2a-3f4d-4c5e-8a9b-0c1d2e3f4a5b";
const stop: KernelCommandInput = {
  agentId: "agent-1",
  action: "stop",
  sessionId: "train-42",
  kernelIndex: 1,
  numKernels: 2,
  runIndex: 0,
  command: ["python", "train.py"],
  env: { CAIRN_SESSION_ID: "train-42" },
  cpu: 1,
  memoryMiB: 256,
  graceMs: 5000,
  condition: "DeadlineExceeded",
  reason: "run-time limit",
};

describe("agent channel messages", () => {
  test("a command round-trips through its JSON body", () => {
    const body = JSON.stringify({ type: "command", incarnation: INCARNATION, command: stop });
    expect(parseAgentMessage(body)).toEqual({
      ok: true,
      message: { type: "command", incarnation: INCARNATION, command: stop },
    });
  });

  test("an invalid command names each problem", () => {
    const body = JSON.stringify({
      type: "command",
      incarnation: INCARNATION,
      command: { ...stop, action: "start", kernelIndex: 2 },
    });
    const parsed = parseAgentMessage(body);
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.issues.map((i) => `${i.path}: ${i.message}`)).toEqual([
      "command.kernelIndex: must be less than numKernels (2)",
      'command.graceMs: only allowed when action is "stop"',
      'command.condition: only allowed when action is "stop"',
    ]);
  });

  test.each([
    ["not JSON", "{", ["(root): not JSON"]],
    ["no type", "{}", ["type: must be one of command, registered, fenced, ended"]],
    [
      "a registration answer without its key",
      JSON.stringify({
        type: "registered",
        agentId: "a",
        incarnation: INCARNATION,
        capacity: { cpu: 1, memoryMiB: 1 },
        labels: {},
        atMs: 1,
      }),
      ["signingKey: required"],
    ],
    [
      "an ended answer naming no run",
      JSON.stringify({ type: "ended", agentId: "a", incarnation: INCARNATION, runs: [], atMs: 1 }),
      ["runs: must not be empty"],
    ],
    [
      "a fence for a malformed incarnation",
      JSON.stringify({ type: "fenced", agentId: "a", incarnation: "X", reason: "lost", atMs: 1 }),
      ["incarnation: must be 8 to 64 lowercase letters, digits or '-'"],
    ],
  ])("%s is refused with the reason", (_what, body, expected) => {
    const parsed = parseAgentMessage(body);
    expect(parsed.ok ? [] : parsed.issues.map((i) => `${i.path}: ${i.message}`)).toEqual(expected);
  });
});

describe("the signing payload", () => {
  test("is the same whatever order the keys arrive in, and leaves the signature out", () => {
    const a = { agentId: "agent-1", atMs: 5, capacity: { cpu: 2, memoryMiB: 64 }, signature: "x" };
    const b = { capacity: { memoryMiB: 64, cpu: 2 }, signature: "y", atMs: 5, agentId: "agent-1" };
    expect(signingPayload("Agent Heartbeat", a)).toBe(signingPayload("Agent Heartbeat", b));
    expect(signingPayload("Agent Heartbeat", a)).toBe(
      'Agent Heartbeat\n{"agentId":"agent-1","atMs":5,"capacity":{"cpu":2,"memoryMiB":64}}',
    );
  });

  test("names the detail-type, so a heartbeat's signature cannot pass for a report's", () => {
    const detail = { agentId: "agent-1", atMs: 5 };
    expect(signingPayload("Agent Heartbeat", detail)).not.toBe(
      signingPayload("Kernel Status Changed", detail),
    );
  });

  test("canonical JSON drops undefined fields, keeps array order and escapes strings as JSON does", () => {
    expect(canonicalJson({ b: [3, 1], a: undefined, c: 'q"\n' })).toBe('{"b":[3,1],"c":"q\\"\\n"}');
  });
});

describe("losing an agent", () => {
  const on = (agentId: string, status: Parameters<typeof kernel>[2], index = 0) =>
    kernel("s-1", index, status, { agentId });

  test.each<[SessionStatus, string | undefined]>([
    ["SCHEDULED", "PENDING"],
    ["PREPARING", "PENDING"],
    ["PREPARED", "PENDING"],
    ["CREATING", "PENDING"],
    ["RUNNING", undefined],
    ["TERMINATING", undefined],
  ])("a %s session's kernels on it end WORKER_FAILED; it is completed to %s", (status, to) => {
    const s = {
      session: session("s-1", status),
      kernels: [on("agent-1", "RUNNING", 0), on("agent-2", "RUNNING", 1)],
    };
    const plan = agentLossPlan(s, "agent-1", "agent agent-1 lost", NOW_MS);
    expect(plan?.kernels).toEqual([
      {
        index: 0,
        expectedVersion: 0,
        status: "TERMINATED",
        condition: "AgentLost",
        message: "agent agent-1 lost",
        outcome: "WORKER_FAILED",
        finishedAtMs: NOW_MS,
      },
    ]);
    expect(plan?.transition?.to).toBe(to);
    if (to)
      expect(plan?.transition).toMatchObject({ from: status, result: "AGENT_LOST", handler: "Liveness" });
  });

  test("nothing to do for a session with nothing alive there, or one that has ended", () => {
    const ended = { session: session("s-1", "RUNNING"), kernels: [on("agent-1", "TERMINATED")] };
    const elsewhere = { session: session("s-1", "RUNNING"), kernels: [on("agent-2", "RUNNING")] };
    const terminal = { session: session("s-1", "TERMINATED"), kernels: [on("agent-1", "RUNNING")] };
    for (const s of [ended, elsewhere, terminal]) {
      expect(agentLossPlan(s, "agent-1", "lost", NOW_MS)).toBeUndefined();
    }
  });
});

describe("node selectors", () => {
  const demand = [{ index: 0, resources: { cpu: 1, memoryMiB: 64 } }];
  const agents: AgentFree[] = [
    { id: "cpu-box", free: { cpu: 8, memoryMiB: 4096 }, labels: { zone: "a" } },
    { id: "gpu-box", free: { cpu: 2, memoryMiB: 4096 }, labels: { gpu: "a100", zone: "b" } },
  ];

  test("only agents carrying every selected label may hold the kernels", () => {
    expect(placeKernels(demand, agents, { nodeSelector: { gpu: "a100" } })).toEqual({
      ok: true,
      kernels: [{ index: 0, agentId: "gpu-box" }],
    });
    expect(placeKernels(demand, agents)).toEqual({ ok: true, kernels: [{ index: 0, agentId: "cpu-box" }] });
  });

  test("no matching agent says which labels were asked for", () => {
    expect(placeKernels(demand, agents, { nodeSelector: { gpu: "h100", zone: "b" } })).toEqual({
      ok: false,
      reason: "no live agent has the labels nodeSelector asks for (gpu=h100, zone=b)",
    });
  });
});

describe("agent queue batches", () => {
  test("at most 10 messages and 256 KiB a batch, in order", async () => {
    const { packBatches } = await import("../../functions/adapters/sqs/agent-channel.ts");
    const small = Array.from({ length: 23 }, (_, i) => `m${i}`);
    expect(packBatches(small).map((b) => b.length)).toEqual([10, 10, 3]);
    const big = Array.from({ length: 5 }, (_, i) => `${i}`.padEnd(100 * 1024, "x"));
    const packed = packBatches(big);
    expect(packed.map((b) => b.length)).toEqual([2, 2, 1]);
    expect(packed.flat()).toEqual(big);
    for (const batch of packed) {
      expect(batch.reduce((sum, body) => sum + Buffer.byteLength(body), 0)).toBeLessThanOrEqual(256 * 1024);
    }
  });
});
