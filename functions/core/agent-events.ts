/**
 * Agent events (docs/events.md): an agent's registration, its heartbeats and its kernels' status
 * reports, each signed with the key its registration got (agent-protocol.ts). The contract table
 * that names each one's source and direction is in events.ts.
 */
import * as z from "zod";
import {
  agentIdSchema,
  capacitySchema,
  epochMsSchema,
  incarnationSchema,
  kernelIndexSchema,
  labelsSchema,
  messageSchema,
  placementSchema,
  reportedConditionSchema,
  runIndexSchema,
  sessionIdSchema,
  signatureSchema,
} from "./event-fields.ts";
import { strictObject } from "./spec.ts";
import { KernelStatus } from "./status.ts";

const signalSchema = z.string().regex(/^SIG[A-Z0-9]+$/, { error: 'must be a signal name such as "SIGKILL"' });

/**
 * Kernel statuses an agent reports; the others are the control plane's to set. PULLING (Backend.AI's
 * BEP-1030, between PREPARING and PREPARED) says preparation has
 * begun: informational, it never moves a kernel back (kernel-reports.ts).
 */
export const REPORTED_KERNEL_STATUSES = [
  KernelStatus.PULLING,
  KernelStatus.PREPARED,
  KernelStatus.RUNNING,
  KernelStatus.TERMINATED,
  KernelStatus.ERROR,
] as const;
const ENDED_STATUSES: readonly string[] = [KernelStatus.TERMINATED, KernelStatus.ERROR];
/** The order in which a kernel's reported statuses follow each other within one placement. */
const REPORT_ORDER: Readonly<Record<(typeof REPORTED_KERNEL_STATUSES)[number], number>> = {
  PULLING: 0,
  PREPARED: 1,
  RUNNING: 2,
  TERMINATED: 3,
  ERROR: 3,
};
/** Statuses a report may say its kernel passed through since the agent's previous report. */
export const PASSED_KERNEL_STATUSES = [KernelStatus.PULLING, KernelStatus.RUNNING] as const;
/** At most one of each. */
const MAX_PASSED = PASSED_KERNEL_STATUSES.length;

/** An agent reports that one of its kernels changed status (preparing, prepared, running, ended). */
export const KernelStatusChangedDetailSchema = strictObject({
  agentId: agentIdSchema,
  /** The reporting agent's registration; reports of an earlier one are refused. */
  incarnation: incarnationSchema,
  sessionId: sessionIdSchema,
  kernelIndex: kernelIndexSchema,
  runIndex: runIndexSchema,
  /**
   * The command's `placement`, echoed; a report of another placement is refused. Optional for
   * agents of the previous version: absent counts as 0, refused once the run is placed again.
   */
  placement: placementSchema.optional(),
  status: z.enum(REPORTED_KERNEL_STATUSES),
  exitCode: z.number().int().optional(),
  signal: signalSchema.optional(),
  condition: reportedConditionSchema.optional(),
  message: messageSchema.optional(),
  /**
   * How the agent classified the failure (Armada's error categories), for retry rules: the
   * local agent's table is core/retry/failure-categories.ts (oom, killed, user_error…).
   */
  failureCategory: z
    .string()
    .regex(/^[a-z0-9][a-z0-9_.-]{0,63}$/, { error: "must be 1 to 64 of a-z, 0-9, '_', '.', '-'" })
    .optional(),
  /**
   * Events CloudWatch Logs accepted in the run's log stream (split parts and the dropped-lines
   * marker count one each), all sent before this report: `cairn logs` reads a finished run until
   * it has read this many. Sent with the run's end by an agent that ships its kernels' output.
   */
  logEventCount: z.number().int().min(0).optional(),
  atMs: epochMsSchema,
  /**
   * Statuses the kernel passed through since the agent's previous report, oldest first: sent
   * with this one, each is applied before `status` as if reported on its own.
   */
  passed: z
    .array(strictObject({ status: z.enum(PASSED_KERNEL_STATUSES), atMs: epochMsSchema }).readonly())
    .min(1)
    .max(MAX_PASSED)
    .readonly()
    .optional(),
  /** HMAC-SHA256 of the signing payload with the key the agent got at registration (agent-protocol.ts). */
  signature: signatureSchema,
})
  .superRefine((detail, ctx) => {
    // What a kernel passed through comes before where it is now, in order and in time.
    let previous: { readonly status: keyof typeof REPORT_ORDER; readonly atMs: number } | undefined;
    for (const [i, passed] of (detail.passed ?? []).entries()) {
      if (
        previous &&
        (REPORT_ORDER[passed.status] <= REPORT_ORDER[previous.status] || passed.atMs < previous.atMs)
      ) {
        ctx.addIssue({
          code: "custom",
          path: ["passed", i],
          message: `must come after ${previous.status}, in order and in time`,
        });
      }
      previous = passed;
    }
    if (
      previous &&
      (REPORT_ORDER[detail.status] <= REPORT_ORDER[previous.status] || detail.atMs < previous.atMs)
    ) {
      ctx.addIssue({
        code: "custom",
        path: ["passed"],
        message: `a kernel reported ${detail.status} cannot have passed through ${previous.status} after it (the last one must come before status, and not later than atMs)`,
      });
    }
    // How a kernel ended only makes sense once it has.
    if (ENDED_STATUSES.includes(detail.status)) return;
    for (const field of ["exitCode", "signal", "condition", "failureCategory", "logEventCount"] as const) {
      if (detail[field] !== undefined) {
        ctx.addIssue({
          code: "custom",
          path: [field],
          message: "only allowed when status is TERMINATED or ERROR",
        });
      }
    }
  })
  .readonly();

/** Most runs one heartbeat lists (a PutEvents entry stays far below 256 KiB). */
export const MAX_HEARTBEAT_RUNS = 1000;

/** One kernel process an agent runs, as its heartbeat names it. */
export const heartbeatRunSchema = strictObject({
  sessionId: sessionIdSchema,
  kernelIndex: kernelIndexSchema,
  runIndex: runIndexSchema,
  placement: placementSchema,
}).readonly();
export type HeartbeatRun = z.output<typeof heartbeatRunSchema>;

/** An agent is alive and offers this capacity; an agent silent past the agent timeout is lost. */
export const AgentHeartbeatDetailSchema = strictObject({
  agentId: agentIdSchema,
  incarnation: incarnationSchema,
  /** What the agent offers now: at most what it registered with (a heartbeat cannot raise it). */
  capacity: capacitySchema.readonly(),
  /** Shutting down: no new work is placed on it. */
  draining: z.boolean().optional(),
  /** Kernel runs the agent holds, so the control plane can tell what it lost. */
  running: z.number().int().min(0).optional(),
  /**
   * The processes the agent runs, each by run and placement: the control plane answers with the
   * ones it considers ended (`ended` on the agent's queue), which the agent then stops, so a
   * process can outlive its session in Cairn's view only until the next heartbeat.
   */
  runs: z.array(heartbeatRunSchema).max(MAX_HEARTBEAT_RUNS).optional(),
  atMs: epochMsSchema,
  signature: signatureSchema,
}).readonly();

/**
 * First contact of an agent process (a new incarnation). The control plane creates the agent's
 * queue and answers on it with the key the incarnation signs with; the registration's capacity
 * is the most the agent can ever offer until it registers again. Allowed only to principals
 * with the agent policy (events:source = cairn.agent).
 */
export const AgentRegistrationRequestedDetailSchema = strictObject({
  agentId: agentIdSchema,
  incarnation: incarnationSchema,
  capacity: capacitySchema.readonly(),
  labels: labelsSchema.optional(),
  atMs: epochMsSchema,
}).readonly();
export type KernelStatusChangedDetail = z.output<typeof KernelStatusChangedDetailSchema>;

/**
 * One report saying what two of one kernel's placement say, when the earlier only passed on the
 * way to the later (KernelStatusChangedDetail.passed): the later with the earlier's status and
 * time (and what the earlier had passed) in `passed`, unsigned. Undefined when the earlier says
 * more than a status passed through, or the two are of different kernels or placements.
 */
export function withPassed<D extends Omit<KernelStatusChangedDetail, "signature">>(
  earlier: Omit<KernelStatusChangedDetail, "signature">,
  later: D,
): D | undefined {
  const same = (
    ["sessionId", "kernelIndex", "runIndex", "placement", "agentId", "incarnation"] as const
  ).every((f) => earlier[f] === later[f]);
  if (!same) return undefined;
  const passedStatus = PASSED_KERNEL_STATUSES.find((s) => s === earlier.status);
  if (passedStatus === undefined || REPORT_ORDER[later.status] <= REPORT_ORDER[passedStatus])
    return undefined;
  if (earlier.message !== undefined || later.atMs < earlier.atMs) return undefined;
  const passed = [...(earlier.passed ?? []), { status: passedStatus, atMs: earlier.atMs }];
  return { ...later, passed };
}
export type ReportedKernelStatus = KernelStatusChangedDetail["status"];
export type AgentHeartbeatDetail = z.output<typeof AgentHeartbeatDetailSchema>;
export type AgentRegistrationRequestedDetail = z.output<typeof AgentRegistrationRequestedDetailSchema>;
