/**
 * A deployment's spec (Backend.AI's BEP-1030): how many replicas of which service, and how each replica's
 * health is checked. Each replica is a route backed by a session whose spec is built from
 * `service` (serviceSessionSpec). Bad input is refused with every field named, as a session
 * spec's is.
 */
import * as z from "zod";
import type { SessionSpec } from "../model.ts";
import {
  commandSchema,
  labelsSchema,
  nameSchema,
  prioritySchema,
  resourcesSchema,
  safeParseWithIssues,
  SPEC_DEFAULTS,
  SPEC_LIMITS,
  SpecValidationError,
  strictObject,
  userEnvSchema,
} from "../spec.ts";

export const DEPLOYMENT_LIMITS = {
  replicas: { min: 0, max: 64 },
  port: { min: 1, max: 65_535 },
  /** Agents pick replica ports from here unless the spec pins one. */
  intervalSeconds: { min: 1, max: 3_600 },
  timeoutSeconds: { min: 1, max: 60 },
  threshold: { min: 1, max: 10 },
  pathMaxLength: 1_024,
} as const;

/**
 * `GET /` every 5 s, as the issue asks; a probe times out after 2 s. One passing probe makes a
 * DEGRADED or UNHEALTHY route HEALTHY; three failing ones in a row make it UNHEALTHY (the
 * thresholds Kubernetes' probes default to: success 1, failure 3).
 */
export const HEALTH_CHECK_DEFAULTS = {
  path: "/",
  intervalSeconds: 5,
  timeoutSeconds: 2,
  healthyThreshold: 1,
  unhealthyThreshold: 3,
} as const;

/**
 * A replica runs until it is removed; its session's RUNNING stage may wait as long as Step
 * Functions lets an execution run (a year), after which the deployment replaces it.
 */
const SERVICE_RUNNING_SECONDS = SPEC_LIMITS.timeoutSeconds.max;

const threshold = z.number().int().min(DEPLOYMENT_LIMITS.threshold.min).max(DEPLOYMENT_LIMITS.threshold.max);

const healthCheckSchema = strictObject({
  /** The URL path the probe GETs; any 2xx or 3xx answer passes. */
  path: z
    .string()
    .max(DEPLOYMENT_LIMITS.pathMaxLength)
    .regex(/^\/[\x21-\x7e]*$/, { error: "must be a URL path starting with '/', without spaces" })
    .default(HEALTH_CHECK_DEFAULTS.path),
  /** Seconds between probes. */
  intervalSeconds: z
    .number()
    .int()
    .min(DEPLOYMENT_LIMITS.intervalSeconds.min)
    .max(DEPLOYMENT_LIMITS.intervalSeconds.max)
    .default(HEALTH_CHECK_DEFAULTS.intervalSeconds),
  /** Seconds a probe may take; less than intervalSeconds. */
  timeoutSeconds: z
    .number()
    .int()
    .min(DEPLOYMENT_LIMITS.timeoutSeconds.min)
    .max(DEPLOYMENT_LIMITS.timeoutSeconds.max)
    .default(HEALTH_CHECK_DEFAULTS.timeoutSeconds),
  /** Passing probes in a row that make a replica HEALTHY. */
  healthyThreshold: threshold.default(HEALTH_CHECK_DEFAULTS.healthyThreshold),
  /** Failing probes in a row that make a replica UNHEALTHY. */
  unhealthyThreshold: threshold.default(HEALTH_CHECK_DEFAULTS.unhealthyThreshold),
})
  .superRefine((h, ctx) => {
    if (h.timeoutSeconds < h.intervalSeconds) return;
    // Named with both values and the default, since a timeout left out is the default's.
    ctx.addIssue({
      code: "custom",
      path: ["timeoutSeconds"],
      message:
        `is ${h.timeoutSeconds} (${HEALTH_CHECK_DEFAULTS.timeoutSeconds} when not given) and must be less than ` +
        `intervalSeconds (${h.intervalSeconds}): a probe ends before the next one starts`,
    });
  })
  .readonly();

const serviceSchema = strictObject({
  /** The server and its arguments (argv, no shell); it listens on `$CAIRN_PORT`. */
  command: commandSchema,
  /** Environment variables for each replica; `CAIRN_…` names are reserved. */
  env: userEnvSchema.prefault({}),
  /** What each replica reserves on its agent. */
  resources: resourcesSchema.prefault({}),
  /** The queue the replicas' sessions wait in. */
  queue: nameSchema.default(SPEC_DEFAULTS.queue),
  /** The replicas' sessions' priority; the queue's is added to it. */
  priority: prioritySchema.default(SPEC_DEFAULTS.priority),
  /** Only agents carrying every one of these labels may run a replica. */
  nodeSelector: labelsSchema.optional(),
  /** Pins every replica's port; by default each replica's agent picks a free one. */
  port: z.number().int().min(DEPLOYMENT_LIMITS.port.min).max(DEPLOYMENT_LIMITS.port.max).optional(),
}).readonly();

export const DeploymentSpecSchema = strictObject({
  /** The deployment's id: it names its execution and prefixes its routes' ids. */
  name: nameSchema,
  /** How many replicas to keep running (0 keeps the deployment with none). */
  replicas: z.number().int().min(DEPLOYMENT_LIMITS.replicas.min).max(DEPLOYMENT_LIMITS.replicas.max),
  /** What each replica runs. */
  service: serviceSchema,
  /** How each replica's agent checks its health: an HTTP GET of `path` on its port. */
  healthCheck: healthCheckSchema.prefault({}),
}).readonly();

export type DeploymentSpec = z.output<typeof DeploymentSpecSchema>;
export type DeploymentSpecInput = z.input<typeof DeploymentSpecSchema>;
export type HealthCheck = DeploymentSpec["healthCheck"];

export function parseDeploymentSpec(input: unknown): DeploymentSpec {
  const result = safeParseWithIssues(DeploymentSpecSchema, input);
  if (!result.success) throw new SpecValidationError(result.issues);
  return result.data;
}

/**
 * The spec of the session backing one replica: the service's command, resources and placement,
 * one kernel, and a RUNNING stage as long as an execution may run. The port, pinned or picked by
 * the agent, reaches the process as CAIRN_PORT.
 */
export function serviceSessionSpec(spec: DeploymentSpec): SessionSpec {
  const { service } = spec;
  return {
    ...SPEC_DEFAULTS,
    name: spec.name,
    queue: service.queue,
    priority: service.priority,
    replicas: 1,
    resources: service.resources,
    command: service.command,
    env: service.env,
    ...(service.nodeSelector ? { nodeSelector: service.nodeSelector } : {}),
    timeouts: { ...SPEC_DEFAULTS.timeouts, running: SERVICE_RUNNING_SECONDS },
  };
}
