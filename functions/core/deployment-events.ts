/**
 * Deployment and route events (docs/events.md), after Backend.AI's BEP-1030 deployment and route
 * lifecycles: what a client sends to create, scale and destroy a deployment, the probes an agent
 * reports for a replica, and the status changes the control plane publishes. The contract table
 * that names each one's source and direction is in events.ts.
 */
import * as z from "zod";
import {
  agentIdSchema,
  epochMsSchema,
  incarnationSchema,
  messageSchema,
  runIndexSchema,
  sessionIdSchema,
  signatureSchema,
} from "./event-fields.ts";
import { strictObject } from "./spec.ts";
import {
  DEPLOYMENT_STATUSES,
  DeploymentHandlerName,
  DeploymentResult,
  ROUTE_STATUSES,
  RouteHandlerName,
  RouteResult,
} from "./deployments/tables.ts";
import { DeploymentSpecSchema, DEPLOYMENT_LIMITS } from "./deployments/spec.ts";
import { deploymentIdSchema, routeIdSchema, servicePortSchema } from "./service-binding.ts";

/** A client creates a deployment: N replicas of a service, each a route backed by a session. */
export const DeploymentCreatedDetailSchema = strictObject({
  /** Unique among deployments; names the lifecycle execution and prefixes its routes' ids. */
  deploymentId: deploymentIdSchema,
  /** The deployment spec, as a user writes it (docs/deployments.md); defaults apply on receipt. */
  spec: DeploymentSpecSchema,
}).readonly();

/** A client asks for another replica count. */
export const DeploymentScaledDetailSchema = strictObject({
  deploymentId: deploymentIdSchema,
  replicas: z.number().int().min(DEPLOYMENT_LIMITS.replicas.min).max(DEPLOYMENT_LIMITS.replicas.max),
}).readonly();

/** A client destroys a deployment: its routes are terminated, then it is DESTROYED. */
export const DeploymentDestroyRequestedDetailSchema = strictObject({
  deploymentId: deploymentIdSchema,
  reason: messageSchema.optional(),
}).readonly();

/** One HTTP probe of a replica, as its agent ran it. */
export const ProbeReportSchema = strictObject({
  /** A 2xx or 3xx answer within the timeout. */
  ok: z.boolean(),
  atMs: epochMsSchema,
  httpStatus: z.number().int().min(100).max(599).optional(),
  message: messageSchema.optional(),
}).readonly();

/** An agent reports the probes of one replica it hosts; signed like its kernel reports. */
export const RouteHealthReportedDetailSchema = strictObject({
  agentId: agentIdSchema,
  incarnation: incarnationSchema,
  deploymentId: deploymentIdSchema,
  routeId: routeIdSchema,
  sessionId: sessionIdSchema,
  runIndex: runIndexSchema,
  /** Where the replica listens on the agent's host. */
  port: servicePortSchema,
  /** The probes since the last report, oldest first (more than one when a report was late). */
  probes: z.array(ProbeReportSchema).min(1).max(20),
  atMs: epochMsSchema,
  signature: signatureSchema,
}).readonly();

const familyHistoryResult = z.enum({ ...RouteResult, ...DeploymentResult, CREATED: "CREATED" });

/** A deployment entered a status (recorded by its lifecycle execution's stage entry). */
export const DeploymentStatusChangedDetailSchema = strictObject({
  deploymentId: deploymentIdSchema,
  executionName: z.string().min(1).max(80),
  from: z.enum(DEPLOYMENT_STATUSES),
  to: z.enum(DEPLOYMENT_STATUSES),
  result: familyHistoryResult,
  handler: z.enum({ ...DeploymentHandlerName, Create: "Create", Destroy: "Destroy", Lifecycle: "Lifecycle" }),
  message: messageSchema.optional(),
  /** Replicas asked for. */
  replicas: z.number().int().min(0),
  atMs: epochMsSchema,
}).readonly();

/** A route entered a status (recorded by its lifecycle execution's stage entry). */
export const RouteStatusChangedDetailSchema = strictObject({
  deploymentId: deploymentIdSchema,
  routeId: routeIdSchema,
  sessionId: sessionIdSchema,
  executionName: z.string().min(1).max(80),
  from: z.enum(ROUTE_STATUSES),
  to: z.enum(ROUTE_STATUSES),
  result: familyHistoryResult,
  handler: z.enum({ ...RouteHandlerName, Create: "Create", Remove: "Remove", Lifecycle: "Lifecycle" }),
  message: messageSchema.optional(),
  /** Where the replica listens, once known (service discovery). */
  agentId: agentIdSchema.optional(),
  port: servicePortSchema.optional(),
  atMs: epochMsSchema,
}).readonly();
