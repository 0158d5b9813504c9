/**
 * Submissions too large to carry through their lifecycle, end to end against the embedded
 * runtime. A spec whose Session Submitted event fits EventBridge used to be
 * accepted although the kernel command it causes could never be put on an agent's queue: the
 * session was stranded at its first command. Now the edge refuses it — the CLI before sending, the
 * coordinator on receipt (for clients that put the event themselves) — naming the field and the
 * sizes; and a spec at the bound is accepted and runs.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { MAX_AGENT_MESSAGE_BYTES } from "../functions/core/agent-protocol.ts";
import { MAX_ENTRY_BYTES } from "../functions/core/events.ts";
import { parseSessionSpec } from "../functions/core/spec.ts";
import { largestKernelCommandBytes, submittedEventBytes } from "../functions/core/submission-size.ts";
import { runCairn } from "./support/cli.ts";
import { startTestRuntime, type TestRuntime } from "./support/runtime.ts";

const WAIT_MS = 60_000;

let rt: TestRuntime;
beforeAll(async () => {
  rt = await startTestRuntime();
}, 120_000);
afterAll(async () => {
  await rt?.stop();
});

const bytes = (value: unknown) => new TextEncoder().encode(JSON.stringify(value)).length;

/** A submission once stranded: 262,100 bytes of event, a kernel command that cannot be sent. */
function oversized(name: string) {
  return { name, command: ["/bin/true", "x".repeat(261_950)] };
}

/**
 * Smaller, for the CLI: `submit` sends the spec with its defaults written out (some 500 bytes
 * more), which that submission would not fit. 250 KB fits the event with room to spare.
 */
function oversizedWithDefaults(name: string) {
  return { name, command: ["/bin/true", "x".repeat(250_000)] };
}

function specFile(name: string, spec: unknown): string {
  const path = join(rt.dataDir, name);
  writeFileSync(path, JSON.stringify(spec));
  return path;
}

async function rejectionsOf(id: string, timeoutMs: number): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await rt.store.listRejections(id);
    if (found.length > 0 || Date.now() > deadline) return found.map((r) => r.reason);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("a spec too large for the kernel commands it causes", () => {
  test("fits its own event: the fault is real", () => {
    const spec = oversized("big");
    expect(submittedEventBytes("big-1", spec)).toBeGreaterThan(262_000);
    expect(submittedEventBytes("big-1", spec)).toBeLessThanOrEqual(MAX_ENTRY_BYTES);
    expect(largestKernelCommandBytes({ ...spec, env: {} })).toBeGreaterThan(MAX_AGENT_MESSAGE_BYTES);
    const withDefaults = { ...parseSessionSpec(oversizedWithDefaults("big")) };
    expect(submittedEventBytes("big-cli-1", withDefaults)).toBeLessThan(MAX_ENTRY_BYTES - 10_000);
    expect(largestKernelCommandBytes(withDefaults)).toBeGreaterThan(MAX_AGENT_MESSAGE_BYTES);
  });

  test("cairn submit refuses it before sending: exit 2 naming spec.command and the sizes", async () => {
    const run = await runCairn(rt.dataDir, [
      "submit",
      specFile("big.json", oversizedWithDefaults("big")),
      "--id",
      "big-cli-1",
    ]);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toMatch(
      /^cairn: the spec cannot be submitted: spec\.command: too large: spec\.command \(250\d{3} bytes as JSON\) and spec\.env \(2 bytes\) make a kernel command of up to \d+ bytes, and an agent's queue takes messages of at most 262144; together they may be at most \d+ bytes\n/,
    );
    expect(await rt.store.getSession("big-cli-1")).toBeUndefined();
    expect(await rt.store.getJob("big-cli-1")).toBeUndefined();
    // Nothing was sent: the coordinator, which records every submission it refuses, saw none.
    expect(await rt.store.listRejections("big-cli-1")).toEqual([]);
  });

  test("put on the bus directly, the coordinator refuses it: recorded with the reason, no session", async () => {
    await rt.submit({ sessionId: "big-bus-1", spec: oversized("big") });
    const reasons = await rejectionsOf("big-bus-1", WAIT_MS);
    expect(reasons).toHaveLength(1);
    expect(reasons[0]).toMatch(
      /^detail\.spec\.command: too large: spec\.command \(261\d{3} bytes as JSON\) and spec\.env \(2 bytes\) make a kernel command of up to \d+ bytes/,
    );
    expect(await rt.store.getSession("big-bus-1")).toBeUndefined();
    expect(await rt.store.getJob("big-bus-1")).toBeUndefined();
  });

  test("an env too large is blamed on spec.env", async () => {
    const spec = { name: "big-env", command: ["/bin/true"], env: { BLOB: "€".repeat(85_000) } };
    const run = await runCairn(rt.dataDir, ["submit", specFile("big-env.json", spec), "--id", "big-env-1"]);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(
      `spec.env: too large: spec.command (13 bytes as JSON) and spec.env (${bytes(spec.env)} bytes)`,
    );
  });
});

describe("a spec at the bound", () => {
  test("is accepted, its kernel commands reach the agent, and it runs to success", async () => {
    const room = MAX_AGENT_MESSAGE_BYTES - largestKernelCommandBytes({ command: [], env: {} }) + 4;
    const env = { PAD: "e".repeat(1_000) };
    // Two arguments: the kernel's argv, and one argument may be at most 128 KiB (MAX_ARG_STRLEN).
    const head = ["/bin/sh", "-c", "exit 0", "sh"];
    const left = room - bytes(env) - bytes([...head, "", ""]);
    const command = [...head, "a".repeat(Math.floor(left / 2)), "b".repeat(Math.ceil(left / 2))];
    expect(bytes(command) + bytes(env)).toBe(room);
    const run = await runCairn(rt.dataDir, [
      "submit",
      specFile("at-bound.json", { name: "at-bound", command, env }),
      "--id",
      "at-bound-1",
    ]);
    expect(run.code, run.stderr).toBe(0);
    const ended = await rt.waitForEnd("at-bound-1", WAIT_MS);
    expect(ended.session.status).toBe("TERMINATED");
    expect(ended.kernels.map((k) => k.exitCode)).toEqual([0]);
  }, 90_000);
});
