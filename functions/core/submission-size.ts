/**
 * A submission against the largest message it will ever cause, checked at the edge. A spec that
 * fits its own Session Submitted event can still make a kernel command that no agent queue
 * accepts, and that command would fail on every attempt, long after the submission was accepted.
 * So the edge (the CLI before sending, the coordinator on receipt) refuses such a spec at once,
 * naming the field and the sizes.
 *
 * What a submission causes, and which carry the spec:
 * - its Session Submitted event: the whole spec (EventBridge, MAX_ENTRY_BYTES per entry);
 * - each kernel command on an agent's queue: `spec.command` and `spec.env` (agent-protocol.ts,
 *   MAX_AGENT_MESSAGE_BYTES), with ids, indices and, on a stop, a reason of up to
 *   MAX_MESSAGE_LENGTH characters;
 * - every other event (status changes, requeues, job states, rejections): ids, counts and
 *   messages of bounded length, never the spec.
 * The kernel command is measured at its worst: every other field at its longest, so no session,
 * run, agent or stop reason can make the real one larger.
 */
import { AgentMessageType, MAX_AGENT_MESSAGE_BYTES } from "./agent-protocol.ts";
import { fargateOverrideChars, MAX_TASK_OVERRIDE_CHARS } from "./ecs-task-events.ts";
import { Executor, executorOf } from "./fargate.ts";
import { DetailType, EVENT_CONTRACTS, MAX_ENTRY_BYTES, MAX_MESSAGE_LENGTH } from "./events.ts";
import type { SessionSpec } from "./model.ts";
import { SPEC_LIMITS } from "./spec.ts";
import { TERMINATION_CONDITIONS } from "./status.ts";

const encoder = new TextEncoder();
const utf8Bytes = (text: string): number => encoder.encode(text).length;

/** The longest of each bounded field of a kernel command (agent-protocol.ts and event-fields.ts). */
const LONGEST = {
  /** Agent ids: up to 40 characters; incarnations up to 64; session and job ids up to 63. */
  agentId: "a".repeat(40),
  incarnation: "i".repeat(64),
  id: "s".repeat(63),
  action: "prepare",
  index: SPEC_LIMITS.replicas.max - 1,
  count: SPEC_LIMITS.replicas.max,
  integer: Number.MAX_SAFE_INTEGER,
  /** The longest way JSON writes a number in (0, 1024]. */
  cpu: 1.0000000000000002e-300,
  condition: TERMINATION_CONDITIONS.reduce((a, b) => (b.length > a.length ? b : a)),
  /** Control characters: 6 bytes each once JSON escapes them (`\u0001`). */
  reason: "\u0001".repeat(MAX_MESSAGE_LENGTH),
} as const;

/** The largest kernel command an agent can receive for a session with this command and env. */
export function largestKernelCommandBytes(spec: Pick<SessionSpec, "command" | "env">): number {
  return utf8Bytes(
    JSON.stringify({
      type: AgentMessageType.command,
      incarnation: LONGEST.incarnation,
      command: {
        agentId: LONGEST.agentId,
        action: LONGEST.action,
        sessionId: LONGEST.id,
        kernelIndex: LONGEST.index,
        numKernels: LONGEST.count,
        jobId: LONGEST.id,
        taskIndex: LONGEST.index,
        numTasks: LONGEST.count,
        runIndex: LONGEST.integer,
        placement: LONGEST.integer,
        command: spec.command,
        env: spec.env,
        cpu: LONGEST.cpu,
        memoryMiB: LONGEST.integer,
        graceMs: LONGEST.integer,
        condition: LONGEST.condition,
        reason: LONGEST.reason,
      },
    }),
  );
}

/** The Session Submitted entry's size as EventBridge counts it (the bus name does not count). */
export function submittedEventBytes(sessionId: string | undefined, spec: unknown): number {
  const { source } = EVENT_CONTRACTS[DetailType.SessionSubmitted];
  return (
    utf8Bytes(source) +
    utf8Bytes(DetailType.SessionSubmitted) +
    utf8Bytes(JSON.stringify(sessionId === undefined ? { spec } : { sessionId, spec }))
  );
}

export interface SubmissionSizeIssue {
  /** The field to shrink: `spec.command` or `spec.env` (the larger of the two), or `spec`. */
  readonly path: string;
  readonly message: string;
}

/**
 * Why this submission is too large to carry through its lifecycle, or undefined when it fits.
 * `spec` is the spec as submitted (before or after defaults: command and env are the same).
 */
export function submissionSizeIssue(
  sessionId: string | undefined,
  spec: Pick<SessionSpec, "command" | "env" | "executor">,
): SubmissionSizeIssue | undefined {
  const commandBytes = utf8Bytes(JSON.stringify(spec.command));
  const envBytes = utf8Bytes(JSON.stringify(spec.env));
  if (executorOf(spec) === Executor.fargate) {
    // A Fargate kernel's command and env reach it as RunTask's container override, not a message.
    const chars = fargateOverrideChars(spec);
    if (chars > MAX_TASK_OVERRIDE_CHARS) {
      return {
        path: commandBytes >= envBytes ? "spec.command" : "spec.env",
        message:
          `too large for executor fargate: spec.command and spec.env make RunTask overrides of up to ` +
          `${chars} characters, and ECS takes at most ${MAX_TASK_OVERRIDE_CHARS} (JSON included)`,
      };
    }
  }
  const kernelCommand = largestKernelCommandBytes(spec);
  if (kernelCommand > MAX_AGENT_MESSAGE_BYTES) {
    const room = MAX_AGENT_MESSAGE_BYTES - largestKernelCommandBytes({ command: [], env: {} }) + 2 + 2;
    return {
      path: commandBytes >= envBytes ? "spec.command" : "spec.env",
      message:
        `too large: spec.command (${commandBytes} bytes as JSON) and spec.env (${envBytes} bytes) ` +
        `make a kernel command of up to ${kernelCommand} bytes, and an agent's queue takes messages ` +
        `of at most ${MAX_AGENT_MESSAGE_BYTES}; together they may be at most ${room} bytes`,
    };
  }
  const event = submittedEventBytes(sessionId, spec);
  if (event > MAX_ENTRY_BYTES) {
    return {
      path: "spec",
      message: `too large: its Session Submitted event is ${event} bytes; EventBridge accepts at most ${MAX_ENTRY_BYTES} per entry`,
    };
  }
  return undefined;
}
