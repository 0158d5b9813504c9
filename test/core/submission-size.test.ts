/**
 * A submission against the largest message it causes: the bound on a kernel
 * command is never below what the control plane really sends, and a spec past it is refused with
 * the field to shrink and the sizes.
 */
import { fargateOverrideChars, MAX_TASK_OVERRIDE_CHARS } from "../../functions/core/ecs-task-events.ts";
import { describe, expect, test } from "vitest";
import { kernelCommand } from "../../functions/app/kernel-commands.ts";
import { AgentMessageType, MAX_AGENT_MESSAGE_BYTES } from "../../functions/core/agent-protocol.ts";
import { MAX_ENTRY_BYTES, MAX_MESSAGE_LENGTH } from "../../functions/core/events.ts";
import type { Kernel, SessionWithKernels } from "../../functions/core/model.ts";
import { parseSessionSpec } from "../../functions/core/spec.ts";
import {
  largestKernelCommandBytes,
  submissionSizeIssue,
  submittedEventBytes,
} from "../../functions/core/submission-size.ts";

const bytes = (value: unknown) => new TextEncoder().encode(JSON.stringify(value)).length;
/** What command and env may take together (JSON bytes) in a spec that is accepted. */
const room = MAX_AGENT_MESSAGE_BYTES - largestKernelCommandBytes({ command: [], env: {} }) + 4;

describe("the kernel command bound", () => {
  test("is at least what the control plane sends for the longest session, run, agent and stop reason", () => {
    const spec = parseSessionSpec({
      name: "big",
      command: ["/bin/sh", "-c", "€".repeat(1000)],
      env: { A: "ü" },
    });
    const kernels = Array.from(
      { length: 64 },
      (_, index): Kernel =>
        ({
          index,
          agentId: "a".repeat(40),
          resources: { cpu: 0.30000000000000004, memoryMiB: 2 ** 52 },
        }) as Kernel,
    );
    const target = {
      session: {
        id: "t".repeat(63),
        spec,
        runIndex: Number.MAX_SAFE_INTEGER,
        task: { jobId: "j".repeat(63), index: 63, count: 64 },
      },
      kernels,
    } as unknown as SessionWithKernels;
    const command = kernelCommand(target, kernels[63]!, "stop", {
      graceMs: Number.MAX_SAFE_INTEGER,
      condition: "DeadlineExceeded",
      reason: "\u0000".repeat(MAX_MESSAGE_LENGTH),
    });
    const message = { type: AgentMessageType.command, incarnation: "i".repeat(64), command };
    expect(bytes(message)).toBeLessThanOrEqual(largestKernelCommandBytes(spec));
  });
});

describe("submissionSizeIssue", () => {
  test("a Fargate spec whose command and env would not fit RunTask's 8,192-character overrides is refused", () => {
    const fargate = (envChars: number) => ({
      command: ["sh", "-c", "serve"],
      env: { DATA: "x".repeat(envChars) },
      executor: "fargate" as const,
    });
    const fits = (n: number) => fargateOverrideChars(fargate(n)) <= MAX_TASK_OVERRIDE_CHARS;
    let room = 0;
    while (fits(room + 1)) room++;
    expect(room).toBeGreaterThan(6_000);
    expect(submissionSizeIssue("s-1", fargate(room))).toBeUndefined();
    expect(submissionSizeIssue("s-1", fargate(room + 1))).toEqual({
      path: "spec.env",
      message:
        `too large for executor fargate: spec.command and spec.env make RunTask overrides of up to ` +
        `${MAX_TASK_OVERRIDE_CHARS + 1} characters, and ECS takes at most ${MAX_TASK_OVERRIDE_CHARS} (JSON included)`,
    });
    // The same spec on agents has a queue message of 256 KiB to fill.
    expect(submissionSizeIssue("s-1", { ...fargate(room + 1), executor: "agent" })).toBeUndefined();
  });

  test("a usual spec fits", () => {
    expect(submissionSizeIssue("s-1", { command: ["/bin/echo", "hi"], env: { A: "1" } })).toBeUndefined();
  });

  test("command and env at the room left fit; one byte more is refused", () => {
    const env = { A: "x".repeat(1000) };
    const fill = (extra: number) => ["x".repeat(room + extra - bytes(env) - bytes([""]))];
    expect(bytes(fill(0)) + bytes(env)).toBe(room);
    expect(submissionSizeIssue("s-1", { command: fill(0), env })).toBeUndefined();
    expect(submissionSizeIssue("s-1", { command: fill(1), env })?.path).toBe("spec.command");
  });

  test("the 262,100-byte submission that used to be accepted is refused, naming spec.command and the sizes", () => {
    const spec = { name: "big", command: ["/bin/true", "x".repeat(261_950)] };
    const event = submittedEventBytes("big-1", spec);
    // It fits its own Session Submitted event…
    expect(event).toBeGreaterThan(262_000);
    expect(event).toBeLessThanOrEqual(MAX_ENTRY_BYTES);
    // …but not the kernel command it causes.
    const commandBytes = bytes(spec.command);
    const largest = largestKernelCommandBytes({ command: spec.command, env: {} });
    expect(submissionSizeIssue("big-1", { ...spec, env: {} })).toEqual({
      path: "spec.command",
      message:
        `too large: spec.command (${commandBytes} bytes as JSON) and spec.env (2 bytes) make a kernel ` +
        `command of up to ${largest} bytes, and an agent's queue takes messages of at most ` +
        `${MAX_AGENT_MESSAGE_BYTES}; together they may be at most ${room} bytes`,
    });
  });

  test("bytes, not characters: a multibyte env is measured in UTF-8 and blamed when it is the larger", () => {
    const env = { NOTE: "€".repeat(80_000) };
    expect(JSON.stringify(env).length).toBeLessThan(room);
    const issue = submissionSizeIssue("s-1", { command: ["/bin/true"], env });
    expect(issue?.path).toBe("spec.env");
    expect(issue?.message).toContain(`spec.env (${bytes(env)} bytes)`);
  });
});
