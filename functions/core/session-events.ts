/**
 * Session, job and draft events (docs/events.md): what a client sends to submit or cancel work and
 * to keep job drafts, and what the control plane publishes as sessions and jobs change state.
 * The contract table that names each one's source and direction is in events.ts.
 */
import * as z from "zod";
import { LifecycleHandlerName, PromotionHandlerName } from "./handlers.ts";
import type { HistoryRecord, HistoryResult } from "./model.ts";
import { SchedulingResult } from "./scheduling.ts";
import {
  agentIdSchema,
  epochMsSchema,
  messageSchema,
  runIndexSchema,
  sessionIdSchema,
} from "./event-fields.ts";
import { SessionSpecSchema, strictObject } from "./spec.ts";
import { JobState, SessionStatus, TaskState } from "./status.ts";
import { HPC_STATES } from "./hpc-view.ts";
import { deploymentIdSchema, ServiceBindingSchema } from "./service-binding.ts";

const sessionStatusSchema = z.enum(SessionStatus);
const historyResultSchema = z.enum({
  ...SchedulingResult,
  CANCELLED: "CANCELLED",
  SUBMITTED: "SUBMITTED",
  REQUEUED: "REQUEUED",
  PREEMPTED: "PREEMPTED",
  AGENT_LOST: "AGENT_LOST",
  FAILED: "FAILED",
});
const historyHandlerSchema = z.enum({
  ...LifecycleHandlerName,
  ...PromotionHandlerName,
  Lifecycle: "Lifecycle",
  Cancel: "Cancel",
  Submit: "Submit",
  Retry: "Retry",
  Preempt: "Preempt",
  Liveness: "Liveness",
});

/** A client submits a session: Cairn starts its lifecycle execution, named by the session id. */
export const SessionSubmittedDetailSchema = strictObject({
  /** The session's id, unique in the deployment; without one Cairn uses `s-<event id>`. */
  sessionId: sessionIdSchema.optional(),
  /** The session spec, as a user writes it (docs/concepts.md, "A session's spec"); defaults apply on receipt. */
  spec: SessionSpecSchema,
  /** Set by a deployment submitting one of its replicas: the route the session backs. */
  service: ServiceBindingSchema.optional(),
}).readonly();

/** A client cancels a session (or a job, by its id): one not yet running ends CANCELLED, a running one TERMINATED. */
export const SessionCancelRequestedDetailSchema = strictObject({
  sessionId: sessionIdSchema,
  /** Recorded in the session's history. */
  reason: messageSchema.optional(),
  /**
   * HPC Pack's Force Cancel (its job and task states): the run's end is not waited for. Its kernels are killed
   * without a grace period and ended at once, even when their agents cannot confirm it (an agent
   * that stopped answering); their capacity is given back. May follow a plain cancel.
   */
  force: z.boolean().optional(),
}).readonly();

/** A draft's version (HPC Pack's Configuring): 1 when created, one more at every change. */
const draftVersionSchema = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER);

/**
 * A client stores a job's spec as a draft (HPC Pack's Configuring): not queued, no sessions. Without
 * `expectedVersion` it creates the draft; with it, it replaces the spec of the draft at that version.
 */
export const JobDraftSavedDetailSchema = strictObject({
  /** The job's id once submitted; no job or other draft may hold it. */
  jobId: sessionIdSchema,
  /** The session spec, as a user writes it (docs/concepts.md, "A session's spec"); defaults apply on receipt. */
  spec: SessionSpecSchema,
  /** The version the edit was made from (`cairn job edit` reads it); absent: create the draft. */
  expectedVersion: draftVersionSchema.optional(),
}).readonly();

/** A client submits a draft: from then on it is the job a `Session Submitted` under its id makes. */
export const JobDraftSubmittedDetailSchema = strictObject({
  jobId: sessionIdSchema,
}).readonly();

/** A client deletes a draft (only a draft: a submitted job is cancelled instead). */
export const JobDraftDeletedDetailSchema = strictObject({
  jobId: sessionIdSchema,
  /** When given, the draft is deleted only if it is still at this version. */
  expectedVersion: draftVersionSchema.optional(),
}).readonly();

/** A session entered a status: published by the lifecycle execution's stage entry, with the history record's result. */
export const SessionStatusChangedDetailSchema = strictObject({
  sessionId: sessionIdSchema,
  executionName: z.string().min(1).max(80),
  from: sessionStatusSchema,
  to: sessionStatusSchema,
  result: historyResultSchema,
  handler: historyHandlerSchema,
  message: messageSchema.optional(),
  /** The session's HPC Pack state once it has entered `to` (HPC Pack's job and task states; functions/core/hpc-view.ts). */
  hpcState: z.enum(HPC_STATES).optional(),
  /** The deployment whose replica the session is: its changes wake the deployment. */
  deploymentId: deploymentIdSchema.optional(),
  atMs: epochMsSchema,
}).readonly();

/** A finished run is retried: the session goes back to PENDING as run `runIndex`. */
export const SessionRequeuedDetailSchema = strictObject({
  sessionId: sessionIdSchema,
  executionName: z.string().min(1).max(80),
  /** The new run's index (the failed one was runIndex − 1). */
  runIndex: runIndexSchema,
  runName: z.string().min(1).max(128),
  reason: messageSchema,
  delayMs: z.number().int().min(0),
  avoidAgentId: agentIdSchema.optional(),
  atMs: epochMsSchema,
}).readonly();

/** A job reached its final state (Iris's job state, derived from its tasks): published once, after its cascades ran. */
export const JobStateChangedDetailSchema = strictObject({
  jobId: sessionIdSchema,
  state: z.enum(JobState),
  reason: messageSchema,
  /** Task counts by state when the job ended. */
  tasks: z.partialRecord(z.enum(TaskState), z.number().int().min(0)),
  parentId: sessionIdSchema.optional(),
  atMs: epochMsSchema,
}).readonly();

/** An inbound event the control plane refused, with the field and reason: recorded, never silent. */
export const EventRejectedDetailSchema = strictObject({
  eventId: z.string().max(256).optional(),
  detailType: z.string().max(256).optional(),
  source: z.string().max(256).optional(),
  reason: messageSchema,
  atMs: epochMsSchema,
}).readonly();

export type SessionSubmittedDetail = z.output<typeof SessionSubmittedDetailSchema>;
/** What a client sends: the spec before defaults. */
export type SessionSubmittedDetailInput = z.input<typeof SessionSubmittedDetailSchema>;
export type SessionCancelRequestedDetail = z.output<typeof SessionCancelRequestedDetailSchema>;
export type SessionStatusChangedDetail = z.output<typeof SessionStatusChangedDetailSchema>;
export type EventRejectedDetail = z.output<typeof EventRejectedDetailSchema>;

// The event's vocabulary must be the model's (a new handler or result fails to compile here).
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Assert<T extends true> = T;
type _HandlerMatchesModel = Assert<Same<SessionStatusChangedDetail["handler"], HistoryRecord["handler"]>>;
type _ResultMatchesModel = Assert<Same<SessionStatusChangedDetail["result"], HistoryResult>>;
type _StatusMatchesModel = Assert<Same<SessionStatusChangedDetail["from"], SessionStatus>>;
