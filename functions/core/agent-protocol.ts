/**
 * The agent protocol's control-plane half (docs/agents.md): what the control plane sends to an
 * agent on the agent's own queue, and how an agent's reports are signed.
 *
 * - Commands travel on one SQS queue per agent, created by the control plane when the agent
 *   registers; nothing else reads it. Each message is one `AgentMessage` as JSON.
 * - `registered` answers a registration: it carries the key the new incarnation signs its
 *   reports and heartbeats with. Only a reader of the agent's queue learns it, so only the
 *   agent can speak for itself; the payload's `agentId` alone proves nothing.
 * - `fenced` tells an incarnation that was declared lost to stop everything and register again.
 * - Every command names the incarnation it is for: a restarted agent refuses commands that
 *   were meant for its previous life.
 *
 * Pure: schemas, the canonical form that is signed, and the limits. The HMAC itself is computed
 * outside the core (functions/topology/agent-signature.ts).
 */
import * as z from "zod";
import {
  agentIdSchema,
  capacitySchema,
  conditionSchema,
  epochMsSchema,
  incarnationSchema,
  kernelIndexSchema,
  labelsSchema,
  messageSchema,
  placementSchema,
  runIndexSchema,
  sessionIdSchema,
} from "./event-fields.ts";
import {
  SPEC_LIMITS,
  commandSchema,
  cpuSchema,
  envSchema,
  memoryMiBSchema,
  safeParseWithIssues,
  strictObject,
  type ValidationIssue,
} from "./spec.ts";
import { ServiceBindingSchema } from "./service-binding.ts";
import { MAX_HEARTBEAT_RUNS } from "./agent-events.ts";

/** SQS's classic message limit; commands stay far below it (no spec may make one larger). */
export const MAX_AGENT_MESSAGE_BYTES = 256 * 1024;

export const KernelAction = { prepare: "prepare", start: "start", stop: "stop" } as const;
export type KernelAction = (typeof KernelAction)[keyof typeof KernelAction];

export const KernelCommandDetailSchema = strictObject({
  agentId: agentIdSchema,
  action: z.enum(KernelAction),
  sessionId: sessionIdSchema,
  kernelIndex: kernelIndexSchema,
  numKernels: z.number().int().min(SPEC_LIMITS.replicas.min).max(SPEC_LIMITS.replicas.max),
  /** An independent task's job and place in it (CAIRN_TASK_ID/INDEX, CAIRN_NUM_TASKS). */
  jobId: sessionIdSchema.optional(),
  taskIndex: kernelIndexSchema.optional(),
  numTasks: z.number().int().min(SPEC_LIMITS.replicas.min).max(SPEC_LIMITS.replicas.max).optional(),
  runIndex: runIndexSchema,
  /** Which placement of the run (a session sent back to PENDING within a run is placed again). */
  placement: placementSchema.optional(),
  command: commandSchema,
  /** Includes Cairn's own `CAIRN_…` variables, so the reserved-prefix rule does not apply. */
  env: envSchema,
  cpu: cpuSchema,
  memoryMiB: memoryMiBSchema,
  /** stop only: how long the kernel gets between SIGTERM and SIGKILL. */
  graceMs: z.number().int().min(0).optional(),
  /** stop only: why the kernel is being stopped, recorded as its termination condition. */
  condition: conditionSchema.optional(),
  reason: messageSchema.optional(),
  /**
   * start only, for a deployment's replica (Backend.AI's BEP-1030 routes): the agent gives the process a port as
   * CAIRN_PORT (the pinned one, or a free one it picks) and probes its health there.
   */
  service: ServiceBindingSchema.optional(),
})
  .superRefine((detail, ctx) => {
    if (detail.kernelIndex >= detail.numKernels) {
      ctx.addIssue({
        code: "custom",
        path: ["kernelIndex"],
        message: `must be less than numKernels (${detail.numKernels})`,
      });
    }
    if (detail.service !== undefined && detail.action !== KernelAction.start) {
      ctx.addIssue({ code: "custom", path: ["service"], message: 'only allowed when action is "start"' });
    }
    if (detail.action === KernelAction.stop) return;
    for (const field of ["graceMs", "condition"] as const) {
      if (detail[field] !== undefined) {
        ctx.addIssue({ code: "custom", path: [field], message: 'only allowed when action is "stop"' });
      }
    }
  })
  .readonly();

export const AgentMessageType = {
  command: "command",
  registered: "registered",
  fenced: "fenced",
  ended: "ended",
} as const;
export type AgentMessageType = (typeof AgentMessageType)[keyof typeof AgentMessageType];

export const RegisteredMessageSchema = strictObject({
  type: z.literal(AgentMessageType.registered),
  agentId: agentIdSchema,
  incarnation: incarnationSchema,
  signingKey: z.string().min(32).max(128),
  capacity: capacitySchema,
  labels: labelsSchema,
  atMs: epochMsSchema,
});

export const FencedMessageSchema = strictObject({
  type: z.literal(AgentMessageType.fenced),
  agentId: agentIdSchema,
  incarnation: incarnationSchema,
  reason: messageSchema,
  atMs: epochMsSchema,
});

/**
 * The answer to a heartbeat that listed runs Cairn considers ended (their session ended, the run
 * or placement was replaced, the kernel ended or was placed elsewhere): the agent stops each one
 * it still runs at exactly that run and placement, and reports its end.
 */
export const EndedMessageSchema = strictObject({
  type: z.literal(AgentMessageType.ended),
  agentId: agentIdSchema,
  incarnation: incarnationSchema,
  runs: z
    .array(
      strictObject({
        sessionId: sessionIdSchema,
        kernelIndex: kernelIndexSchema,
        runIndex: runIndexSchema,
        placement: placementSchema,
        /** Why Cairn considers it ended, for the agent's log and the kernel's end report. */
        reason: messageSchema,
      }),
    )
    .min(1)
    .max(MAX_HEARTBEAT_RUNS),
  atMs: epochMsSchema,
});

export type RegisteredMessage = z.output<typeof RegisteredMessageSchema>;
export type EndedMessage = z.output<typeof EndedMessageSchema>;
export type FencedMessage = z.output<typeof FencedMessageSchema>;
export type KernelCommand = z.output<typeof KernelCommandDetailSchema>;
/** A command as the control plane builds it (before defaults). */
export type KernelCommandInput = z.input<typeof KernelCommandDetailSchema>;
export interface CommandMessage {
  readonly type: typeof AgentMessageType.command;
  /** The agent incarnation the command was meant for. */
  readonly incarnation: string;
  readonly command: KernelCommandInput;
}
export type AgentMessage = CommandMessage | RegisteredMessage | FencedMessage | EndedMessage;

const CommandMessageSchema = strictObject({
  type: z.literal(AgentMessageType.command),
  incarnation: incarnationSchema,
  command: KernelCommandDetailSchema,
});

export type ParsedAgentMessage =
  | { readonly ok: true; readonly message: AgentMessage }
  | { readonly ok: false; readonly issues: readonly ValidationIssue[] };

/** Parses one queue message body; a bad one is reported with every problem, never thrown. */
export function parseAgentMessage(body: string): ParsedAgentMessage {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return { ok: false, issues: [{ path: "(root)", message: "not JSON" }] };
  }
  const type = typeof value === "object" && value !== null ? (value as { type?: unknown }).type : undefined;
  const schema =
    type === AgentMessageType.command
      ? CommandMessageSchema
      : type === AgentMessageType.registered
        ? RegisteredMessageSchema
        : type === AgentMessageType.fenced
          ? FencedMessageSchema
          : type === AgentMessageType.ended
            ? EndedMessageSchema
            : undefined;
  if (!schema) {
    return {
      ok: false,
      issues: [{ path: "type", message: `must be one of ${Object.values(AgentMessageType).join(", ")}` }],
    };
  }
  const parsed = safeParseWithIssues(schema as z.ZodType<AgentMessage>, value);
  return parsed.success ? { ok: true, message: parsed.data } : { ok: false, issues: parsed.issues };
}

/**
 * What an agent signs: the detail-type and the detail without its signature, as JSON with
 * every object's keys sorted, so both sides compute the same bytes whatever order a JSON
 * parser or schema left the keys in.
 */
export function signingPayload(detailType: string, detail: Readonly<Record<string, unknown>>): string {
  const { signature: _signature, ...unsigned } = detail;
  return `${detailType}\n${canonicalJson(unsigned)}`;
}

export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
