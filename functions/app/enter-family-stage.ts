/**
 * A deployment's or a route's lifecycle execution enters a state: the entity records
 * its status, the callback's task token and which execution carries it, and the change is
 * published (Deployment / Route Status Changed), which also wakes the deployment's handlers.
 * A retried entry (the same token) writes nothing again; the event is published again (at
 * least once, as EventBridge delivers).
 */
import * as z from "zod";
import { initialHealth } from "../core/deployments/health.ts";
import type {
  Deployment,
  FamilyExecution,
  FamilyHistoryRecord,
  FamilyStage,
  FamilyTransition,
  Route,
} from "../core/deployments/model.ts";
import { generationOf } from "../core/deployments/pass.ts";
import {
  DEPLOYMENT_STATUSES,
  ROUTE_STATUSES,
  RouteStatus,
  type DeploymentStatus,
  type RouteStatus as RouteStatusType,
} from "../core/deployments/tables.ts";
import type { DeploymentRepository } from "../core/ports/deployments.ts";
import { deploymentIdSchema, parseRouteId, routeIdSchema } from "../core/service-binding.ts";
import { safeParseWithIssues, strictObject } from "../core/spec.ts";
import type { Logger } from "./logger.ts";
import type { Clock } from "../core/ports/clock.ts";
import type { FamilyEventsPort } from "../core/ports/event-bus.ts";
import { rereadOnConflict } from "./reread.ts";
import { AppError } from "./errors.ts";

export interface EnterFamilyStageDeps {
  readonly store: DeploymentRepository;
  readonly events: FamilyEventsPort;
  readonly clock: Clock;
  readonly log: Logger;
}

/** A malformed entry or one for an entity that does not exist: not retried (the execution records it). */
export class FamilyStageError extends AppError {
  override readonly name = "FamilyStageError";
  readonly code = "FAMILY_STAGE";
  override readonly retryable = false;
}

const transitionSchema = z.object({
  from: z.string().min(1),
  to: z.string().min(1),
  result: z.string().min(1),
  handler: z.string().min(1),
  message: z.string().optional(),
});

const common = {
  transition: transitionSchema,
  taskToken: z.string().min(1).optional(),
  executionName: z.string().min(1).max(80),
  entry: z.unknown().optional(),
  failure: z.object({ Error: z.string().optional(), Cause: z.string().optional() }).loose().optional(),
};

const DeploymentEntrySchema = strictObject({
  deploymentId: deploymentIdSchema,
  status: z.enum(DEPLOYMENT_STATUSES),
  ...common,
});
const RouteEntrySchema = strictObject({ routeId: routeIdSchema, status: z.enum(ROUTE_STATUSES), ...common });
export type FamilyStageInput = z.input<typeof DeploymentEntrySchema> | z.input<typeof RouteEntrySchema>;

/** A route's entry names its route; anything else is read as a deployment's, so its issues name fields. */
function parseEntry(input: unknown) {
  const isRoute = typeof input === "object" && input !== null && "routeId" in input;
  return isRoute
    ? safeParseWithIssues(RouteEntrySchema, input)
    : safeParseWithIssues(DeploymentEntrySchema, input);
}

export async function enterFamilyStage(
  input: unknown,
  deps: EnterFamilyStageDeps,
): Promise<{ readonly status: string }> {
  const parsed = parseEntry(input);
  if (!parsed.success) {
    throw new FamilyStageError(parsed.issues.map((i) => `${i.path}: ${i.message}`).join("; "));
  }
  const entry = parsed.data;
  if ("deploymentId" in entry) {
    await enterDeployment(entry, deps);
  } else {
    await enterRoute(entry, deps);
  }
  return { status: entry.status };
}

interface Entry<S extends string> {
  readonly status: S;
  readonly transition: FamilyTransition;
  readonly taskToken?: string | undefined;
  readonly executionName: string;
  readonly failure?: { readonly Error?: string | undefined; readonly Cause?: string | undefined } | undefined;
}

/** The entity as the entry leaves it; undefined when it already records this entry. */
function entered<E extends Deployment | Route>(
  entity: E,
  entry: Entry<E["status"]>,
  nowMs: number,
): E | undefined {
  const stage: FamilyStage = {
    enteredAtMs: nowMs,
    ...(entry.taskToken !== undefined ? { taskToken: entry.taskToken } : {}),
  };
  if (
    entity.status === entry.status &&
    entity.stage.taskToken === entry.taskToken &&
    entity.stage.leaving === undefined
  ) {
    // The same entry again (a retried invocation), or a final state recorded already.
    if (entry.taskToken !== undefined || entity.execution.name === entry.executionName) return undefined;
  }
  const generation = generationOf(entity.id, entry.executionName);
  if (generation === undefined) {
    throw new FamilyStageError(`executionName: ${entry.executionName} is not an execution of ${entity.id}`);
  }
  const execution: FamilyExecution =
    entity.execution.name === entry.executionName
      ? { ...entity.execution, transitions: entity.execution.transitions + 1 }
      : { name: entry.executionName, generation, transitions: 1, startedAtMs: nowMs };
  const changed = entity.status !== entry.status;
  const { maintained: _kept, ...rest } = entity;
  return {
    ...rest,
    status: entry.status,
    stage,
    execution,
    // "(maintain)" results are recorded once per stay in a status.
    ...(changed || entity.maintained === undefined ? {} : { maintained: entity.maintained }),
    updatedAtMs: nowMs,
  } as E;
}

/** A state that failed with an error no retry cleared: the entity's history says which. */
function failureRecord(
  kind: "deployment" | "route",
  id: string,
  entry: Entry<string>,
  nowMs: number,
): FamilyHistoryRecord[] {
  if (entry.failure === undefined) return [];
  const why = [entry.failure.Error, entry.failure.Cause]
    .filter((p) => p !== undefined && p !== "")
    .join(": ");
  return [
    {
      entity: kind,
      id,
      handler: "Lifecycle",
      result: "FAILURE",
      fromStatus: entry.transition.from as DeploymentStatus,
      toStatus: entry.status as DeploymentStatus,
      message: `the lifecycle failed: ${why}`.slice(0, 4096),
      atMs: nowMs,
    },
  ];
}

async function enterDeployment(
  entry: Entry<DeploymentStatus> & { readonly deploymentId: string },
  deps: EnterFamilyStageDeps,
): Promise<void> {
  const { store, clock } = deps;
  const written = await rereadOnConflict(async () => {
    const found = await store.getDeployment(entry.deploymentId);
    if (found === undefined) throw new FamilyStageError(`deploymentId: no deployment ${entry.deploymentId}`);
    const nowMs = clock.nowMs();
    const next = entered(found.deployment, entry, nowMs);
    if (next === undefined) return found.deployment;
    const { deployment: before } = found;
    await store.saveDeployment({
      deployment: { next, expected: { status: before.status, version: before.version } },
      history: failureRecord("deployment", before.id, entry, nowMs),
    });
    return next;
  });
  await deps.events.deploymentStatusChanged([
    {
      deploymentId: written.id,
      executionName: entry.executionName,
      from: entry.transition.from as DeploymentStatus,
      to: entry.status,
      result: entry.transition.result as "SUCCESS",
      handler: entry.transition.handler as "Create",
      ...messageOf(entry),
      replicas: written.spec.replicas,
      atMs: clock.nowMs(),
    },
  ]);
}

async function enterRoute(
  entry: Entry<RouteStatusType> & { readonly routeId: string },
  deps: EnterFamilyStageDeps,
): Promise<void> {
  const { store, clock } = deps;
  const deploymentId = parseRouteId(entry.routeId)!.deploymentId;
  const written = await rereadOnConflict(async () => {
    const found = await store.getDeployment(deploymentId);
    const route = found?.routes.find((r) => r.id === entry.routeId);
    if (route === undefined) throw new FamilyStageError(`routeId: no route ${entry.routeId}`);
    const nowMs = clock.nowMs();
    let next = entered(route, entry, nowMs);
    if (next === undefined) return route;
    // Checked from now on: a replica has its interval and more to be first reported healthy.
    if (entry.status === RouteStatus.DEGRADED && route.status === RouteStatus.PROVISIONING) {
      next = { ...next, health: { ...initialHealth(nowMs), ...probesOf(route) } };
    }
    await store.saveDeployment({
      routes: [{ next, expected: { status: route.status, version: route.version } }],
      history: failureRecord("route", route.id, entry, nowMs),
    });
    return next;
  });
  await deps.events.routeStatusChanged([
    {
      deploymentId,
      routeId: written.id,
      sessionId: written.sessionId,
      executionName: entry.executionName,
      from: entry.transition.from as RouteStatusType,
      to: entry.status,
      result: entry.transition.result as "SUCCESS",
      handler: entry.transition.handler as "Create",
      ...messageOf(entry),
      ...(written.agentId !== undefined ? { agentId: written.agentId } : {}),
      ...(written.port !== undefined ? { port: written.port } : {}),
      atMs: clock.nowMs(),
    },
  ]);
}

/** Probes that came while the route was provisioning still count. */
function probesOf(route: Route): Partial<Route["health"]> {
  const { consecutiveSuccesses, consecutiveFailures, lastProbeAtMs, lastMessage } = route.health;
  return lastProbeAtMs === undefined
    ? {}
    : {
        consecutiveSuccesses,
        consecutiveFailures,
        lastProbeAtMs,
        ...(lastMessage !== undefined ? { lastMessage } : {}),
      };
}

function messageOf(entry: Entry<string>): { message?: string } {
  const message =
    entry.failure !== undefined
      ? [entry.failure.Error, entry.failure.Cause].filter((p) => p !== undefined && p !== "").join(": ")
      : entry.transition.message;
  return message !== undefined && message !== "" ? { message: message.slice(0, 4096) } : {};
}
