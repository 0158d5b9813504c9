/**
 * What makes a session one replica of a deployment: the route it backs, the port
 * its process listens on, and how its agent checks its health. Set by the deployment's
 * handlers when they submit the route's session; carried to the agent in the kernel's start
 * command, and named in the session's status changes so the deployment hears of them.
 */
import * as z from "zod";
import type { ServiceBinding } from "./model.ts";
import { ID_PATTERN, ID_PATTERN_MESSAGE, strictObject } from "./spec.ts";

export const SERVICE_PORT_LIMITS = { min: 1, max: 65_535 } as const;

/** A route's id is `<deployment id>-r<index>`: the deployment's id leaves room for it. */
export const DEPLOYMENT_ID_MAX_LENGTH = 56;

export const deploymentIdSchema = z
  .string()
  .max(DEPLOYMENT_ID_MAX_LENGTH, {
    error: `must be at most ${DEPLOYMENT_ID_MAX_LENGTH} characters (its routes are named <id>-r<index>)`,
  })
  .regex(ID_PATTERN, { error: ID_PATTERN_MESSAGE });

export const ROUTE_ID_PATTERN = /^([a-z0-9][a-z0-9-]{2,55})-r(\d{1,6})$/;
export const routeIdSchema = z
  .string()
  .regex(ROUTE_ID_PATTERN, { error: "must be a route id: <deployment id>-r<index>" });

export const servicePortSchema = z.number().int().min(SERVICE_PORT_LIMITS.min).max(SERVICE_PORT_LIMITS.max);

/** The probe an agent runs against a replica: an HTTP GET of `path` every interval. */
export const ProbeSpecSchema = strictObject({
  path: z
    .string()
    .max(1_024)
    .regex(/^\/[\x21-\x7e]*$/, { error: "must be a URL path starting with '/', without spaces" }),
  intervalSeconds: z.number().int().min(1).max(3_600),
  timeoutSeconds: z.number().int().min(1).max(60),
}).readonly();
export type ProbeSpec = z.output<typeof ProbeSpecSchema>;

export const ServiceBindingSchema = strictObject({
  deploymentId: deploymentIdSchema,
  routeId: routeIdSchema,
  /** Pinned by the deployment's spec; absent: the agent picks a free port. */
  port: servicePortSchema.optional(),
  probe: ProbeSpecSchema,
}).readonly();
export type { ServiceBinding };

// The schema's output is the model's type (a new field fails to compile here).
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Assert<T extends true> = T;
type _BindingMatchesModel = Assert<Same<z.output<typeof ServiceBindingSchema>, ServiceBinding>>;

/** The deployment a route id belongs to, and the route's index; undefined for anything else. */
export function parseRouteId(id: string): { deploymentId: string; index: number } | undefined {
  const match = ROUTE_ID_PATTERN.exec(id);
  if (!match) return undefined;
  return { deploymentId: match[1]!, index: Number(match[2]) };
}
