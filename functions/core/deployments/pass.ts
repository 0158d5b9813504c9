/**
 * One pass of a deployment's handlers, pure: given the deployment, its routes and
 * the sessions backing them as read, decide what changes. Each entity waiting in a callback
 * state is judged by the handlers of its status (BEP-1030's tables, judge.ts); a decision that
 * changes its status becomes the callback to send (`stage.leaving`, written first so that a
 * lost send is sent again by the next pass). "(maintain)" results are recorded once per stay in
 * a status. The application writes `change`, then starts, submits, cancels and calls back.
 */
import { MAX_CHANGE_ITEMS, type DeploymentChange, type Saved } from "../ports/deployments.ts";
import {
  checkPendingDeployment,
  checkReplicaDeployment,
  destroyingDeployment,
  healthCheckRoute,
  liveRoutes,
  provisioningRoute,
  reconcileDeployment,
  routeEviction,
  runningRoute,
  scalingDeployment,
  terminatingRoute,
  type BackingSession,
  type RouteTarget,
} from "./handlers.ts";
import { countFailure, resetAfterHealthy } from "./crash-loop.ts";
import { initialHealth } from "./health.ts";
import {
  judgeDeployments,
  judgeRoutes,
  type DeploymentDecision,
  type FamilyHandlerResult,
  type RouteDecision,
} from "./judge.ts";
import {
  routeId,
  type Deployment,
  type FamilyExecution,
  type FamilyHistoryRecord,
  type FamilyLeaving,
  type FamilyTransition,
  type Route,
} from "./model.ts";
import {
  DEPLOYMENT_HANDLERS,
  DeploymentStatus,
  DESTROYABLE_STATUSES,
  ON_DESTROY,
  ON_REMOVE,
  REMOVABLE_ROUTE_STATUSES,
  ROUTE_HANDLERS,
  RouteStatus,
  type DeploymentHandlerSpec,
  type RouteHandlerSpec,
} from "./tables.ts";

const D = DeploymentStatus;
const R = RouteStatus;

/**
 * Each waiting state's first edge: the status SendTaskSuccess leads to (the state's `Next` in
 * the ASL; test/family-asl.test.ts checks it). Any other status is a `Cairn.To.<STATUS>` error.
 */
export const DEPLOYMENT_FIRST_EDGE: Readonly<Partial<Record<DeploymentStatus, DeploymentStatus>>> = {
  [D.PENDING]: D.SCALING,
  [D.SCALING]: D.READY,
  [D.READY]: D.SCALING,
  [D.DESTROYING]: D.DESTROYED,
};
export const ROUTE_FIRST_EDGE: Readonly<Partial<Record<RouteStatus, RouteStatus>>> = {
  [R.PROVISIONING]: R.DEGRADED,
  [R.DEGRADED]: R.HEALTHY,
  [R.HEALTHY]: R.UNHEALTHY,
  [R.UNHEALTHY]: R.TERMINATING,
  [R.FAILED_TO_START]: R.TERMINATING,
  [R.TERMINATING]: R.TERMINATED,
};

/**
 * When an execution is renewed (Cairn.Renew, a new execution `<id>-g<n>`): well before Step
 * Functions' 25,000 history events (a status change costs about ten) and its one-year limit.
 */
export const RENEW_AFTER_TRANSITIONS = 1_000;
export const RENEW_AFTER_MS = 300 * 86_400_000;

/**
 * How long a callback state of either family waits (its `TimeoutSeconds`; test/family-asl.test.ts
 * checks the ASL against it) before it is entered again in the same status with a new token: not
 * an expiry, which these families do not have, but a bound on every wait, so that the executions
 * of a deleted state machine end at their next transition (DeleteStateMachine leaves it DELETING
 * until then).
 */
export const WAIT_AGAIN_AFTER_SECONDS = 86_400;

export const RenewError = "Cairn.Renew";
export function toError(status: string): string {
  return `Cairn.To.${status}`;
}

/** The handler names of the two triggers outside the tables, as history and events record them. */
export const TriggerHandler = { Destroy: "Destroy", Remove: "Remove" } as const;

export interface PassInput {
  readonly deployment: Deployment;
  readonly routes: readonly Route[];
  /** The sessions backing the routes, by session id; absent: not created yet, or gone. */
  readonly sessions: ReadonlyMap<string, BackingSession>;
  readonly nowMs: number;
}

export interface FamilyCallback {
  readonly entity: "deployment" | "route";
  readonly id: string;
  readonly taskToken: string;
  readonly leaving: FamilyLeaving;
}

export interface PassPlan {
  /** Written first, guarded by the versions read; undefined when nothing changed. */
  readonly change: DeploymentChange | undefined;
  /** Then sent: every entity's callback, new or left from an earlier pass. */
  readonly callbacks: readonly FamilyCallback[];
  /** Routes whose lifecycle execution is started (new, or created but never entered). */
  readonly startRoutes: readonly Route[];
  /** Routes whose session is submitted (new, or still provisioning without one). */
  readonly submit: readonly Route[];
  readonly cancel: readonly { readonly sessionId: string; readonly reason: string }[];
  /** The deployment was created but its execution never entered a state: start it (again). */
  readonly startDeployment: boolean;
  /**
   * The change reached the most one write may hold, and some of the deployment's routes were
   * left for another pass: the application passes again at once.
   */
  readonly more: boolean;
}

/** What one route may add to a change: its item and two history records (a decision and a removal). */
const ROUTE_ITEMS = 3;

export function planPass(input: PassInput): PassPlan {
  const { nowMs } = input;
  const history: FamilyHistoryRecord[] = [];
  const routes = new Map(input.routes.map((r) => [r.id, r]));
  const changedRoutes = new Set<string>();
  const newRoutes: Route[] = [];
  const cancel: { sessionId: string; reason: string }[] = [];
  const submit: Route[] = [];
  const startRoutes: Route[] = [];
  let deployment = input.deployment;
  let deploymentChanged = false;

  let more = false;
  /**
   * Items the change may hold so far: each changed route counted at its most (its item and two
   * history records), a new route as its item (no history), and room always kept for the
   * deployment's item and its two records.
   */
  const items = () => ROUTE_ITEMS * changedRoutes.size + newRoutes.length + 3;
  const roomFor = (n: number) => items() + n <= MAX_CHANGE_ITEMS;
  const setRoute = (route: Route) => {
    routes.set(route.id, route);
    changedRoutes.add(route.id);
  };
  const targetOf = (route: Route): RouteTarget => ({
    route,
    session: backing(input.sessions.get(route.sessionId), route),
  });

  // -- Routes first: what the deployment's handlers see is the routes after this pass.
  for (const route of input.routes) {
    if (!waiting(route.stage)) continue;
    if (!roomFor(ROUTE_ITEMS)) {
      more = true;
      break;
    }
    // Its session is submitted through the bus: until the coordinator has created it, the route
    // waits (and the submission is repeated; a repeat of an accepted one changes nothing).
    const target = targetOf(route);
    if (route.status === R.PROVISIONING && target.session === undefined) {
      submit.push(route);
      continue;
    }
    const decision = judgeRoute(deployment, target, nowMs);
    if (decision === undefined) continue;
    const next = applyDecision(route, decision, ROUTE_FIRST_EDGE, nowMs, history, "route");
    if (next !== route) setRoute(next);
    // A crash loop is counted as it happens: a failed replica holds the next replacements back.
    const { handler, message } = decision.history;
    const counted = countFailure(deployment, route.id, { ...decision, handler, message }, nowMs);
    if (counted !== deployment) {
      deployment = counted;
      deploymentChanged = true;
    }
  }
  // A replica started since the latest failure that stayed HEALTHY long enough ends the count.
  const reset = resetAfterHealthy(deployment, [...routes.values()], nowMs);
  if (reset !== deployment) {
    deployment = reset;
    deploymentChanged = true;
  }
  // -- Then the deployment.
  const current = [...routes.values()];
  if (
    deployment.destroyRequest !== undefined &&
    waiting(deployment.stage) &&
    DESTROYABLE_STATUSES.includes(deployment.status)
  ) {
    const transition: FamilyTransition = {
      from: deployment.status,
      to: ON_DESTROY,
      result: "SUCCESS",
      handler: TriggerHandler.Destroy,
      message: deployment.destroyRequest.reason,
    };
    history.push(record("deployment", deployment.id, transition, nowMs));
    deployment = leaveWith(deployment, transition, DEPLOYMENT_FIRST_EDGE, nowMs);
    deploymentChanged = true;
  } else if (deployment.status === D.DESTROYED) {
    // Ended by a failed lifecycle (RecordFailure) rather than by DestroyingDeployment: no route
    // may outlive it.
    for (const route of liveRoutes(current)) {
      if (route.removeRequestedAtMs === undefined) setRoute({ ...route, removeRequestedAtMs: nowMs });
    }
  } else if (waiting(deployment.stage)) {
    const judged = judgeDeployment(deployment, current, input.sessions, nowMs);
    // New routes as the write has room for; the rest are created by the next pass.
    const room = Math.max(0, MAX_CHANGE_ITEMS - items());
    if (judged.create.length > room) more = true;
    for (const index of judged.create.slice(0, room)) {
      const route = newRoute(deployment, index, nowMs);
      newRoutes.push(route);
      startRoutes.push(route);
      submit.push(route);
    }
    if (judged.create.length > 0 && room > 0) {
      deployment = { ...deployment, nextRouteIndex: Math.max(...judged.create.slice(0, room)) + 1 };
      deploymentChanged = true;
    }
    for (const id of judged.remove) {
      const route = routes.get(id)!;
      if (route.removeRequestedAtMs !== undefined) continue;
      if (!changedRoutes.has(id) && !roomFor(ROUTE_ITEMS)) {
        more = true;
        break;
      }
      setRoute({ ...route, removeRequestedAtMs: nowMs });
    }
    // A scaling deployment that could not create or remove all it wanted this pass is not READY yet.
    if (judged.decision !== undefined && !(more && deployment.status === D.SCALING)) {
      const next = applyDecision(
        deployment,
        judged.decision,
        DEPLOYMENT_FIRST_EDGE,
        nowMs,
        history,
        "deployment",
      );
      if (next !== deployment) {
        deployment = next;
        deploymentChanged = true;
      }
    }
  }

  // -- Then what the deployment decided on its routes, this pass or before.
  for (const route of [...routes.values()]) {
    // A route the deployment no longer wants leaves from whichever status allows it.
    if (
      !changedRoutes.has(route.id) &&
      route.removeRequestedAtMs !== undefined &&
      waiting(route.stage) &&
      REMOVABLE_ROUTE_STATUSES.includes(route.status) &&
      !roomFor(ROUTE_ITEMS)
    ) {
      more = true;
      continue;
    }
    if (
      route.removeRequestedAtMs !== undefined &&
      waiting(route.stage) &&
      REMOVABLE_ROUTE_STATUSES.includes(route.status)
    ) {
      const transition: FamilyTransition = {
        from: route.status,
        to: ON_REMOVE,
        result: "SUCCESS",
        handler: TriggerHandler.Remove,
        message: "the deployment no longer wants it",
      };
      history.push(record("route", route.id, transition, nowMs));
      setRoute(leaveWith(route, transition, ROUTE_FIRST_EDGE, nowMs));
    }
    // TerminatingRoute's sessions to cancel are asked for on every pass until they have ended.
    if (route.status === R.TERMINATING) {
      for (const sessionId of terminatingRoute([targetOf(route)]).cancel) {
        cancel.push({ sessionId, reason: `route ${route.id} is terminating` });
      }
    }
    // Created, but its execution never entered PROVISIONING (the start was lost): again.
    if (
      route.status === R.PROVISIONING &&
      route.stage.taskToken === undefined &&
      route.execution.transitions === 0
    ) {
      startRoutes.push(route);
      if (targetOf(route).session === undefined) submit.push(route);
    }
  }

  const callbacks: FamilyCallback[] = [];
  const callbackOf = (entity: "deployment" | "route", e: Deployment | Route) => {
    if (e.stage.leaving !== undefined && e.stage.taskToken !== undefined) {
      callbacks.push({ entity, id: e.id, taskToken: e.stage.taskToken, leaving: e.stage.leaving });
    }
  };
  for (const route of routes.values()) callbackOf("route", route);
  callbackOf("deployment", deployment);

  const savedRoutes: Saved<Route>[] = [
    ...[...changedRoutes].map((id) => {
      const before = input.routes.find((r) => r.id === id)!;
      return { next: routes.get(id)!, expected: { status: before.status, version: before.version } };
    }),
    ...newRoutes.map((next) => ({ next, expected: "absent" as const })),
  ];
  const change: DeploymentChange | undefined =
    deploymentChanged || savedRoutes.length > 0 || history.length > 0
      ? {
          // The deployment is always written with its routes: its version guards the set of routes.
          deployment: {
            next: { ...deployment, updatedAtMs: deploymentChanged ? nowMs : deployment.updatedAtMs },
            expected: { status: input.deployment.status, version: input.deployment.version },
          },
          ...(savedRoutes.length > 0 ? { routes: savedRoutes } : {}),
          ...(history.length > 0 ? { history } : {}),
        }
      : undefined;
  return {
    change,
    callbacks,
    startRoutes,
    submit,
    cancel,
    startDeployment:
      deployment.status === D.PENDING &&
      deployment.stage.taskToken === undefined &&
      deployment.execution.transitions === 0,
    more,
  };
}

/** Waiting in a callback state, with no decision taken yet. */
function waiting(stage: { readonly taskToken?: string; readonly leaving?: FamilyLeaving }): boolean {
  return stage.taskToken !== undefined && stage.leaving === undefined;
}

/** The session as the route's handlers see it: one that is not this route's is no backing at all. */
function backing(session: BackingSession | undefined, route: Route): BackingSession | undefined {
  if (session === undefined) return undefined;
  return session.routeId === undefined || session.routeId === route.id ? session : undefined;
}

interface Judged<D> {
  readonly decision: D | undefined;
}

function judgeRoute(deployment: Deployment, target: RouteTarget, nowMs: number): RouteDecision | undefined {
  const { route } = target;
  const targets = [{ id: route.id, status: route.status }];
  const run = (handler: RouteHandlerSpec, result: FamilyHandlerResult): RouteDecision | undefined =>
    judgeRoutes(handler, result, targets, nowMs)[0];
  switch (route.status) {
    case R.PROVISIONING:
      return run(ROUTE_HANDLERS.ProvisioningRoute, provisioningRoute([target]));
    case R.FAILED_TO_START:
      return run(ROUTE_HANDLERS.RunningRoute, runningRoute([target]));
    case R.TERMINATING:
      return run(ROUTE_HANDLERS.TerminatingRoute, terminatingRoute([target]).result);
    case R.DEGRADED:
    case R.HEALTHY:
    case R.UNHEALTHY: {
      // A replica whose session has ended is terminated whatever its probes said last.
      const running = run(ROUTE_HANDLERS.RunningRoute, runningRoute([target]));
      if (running?.to !== undefined) return running;
      // HealthCheckRoute first: an UNHEALTHY route whose probes pass again recovers (→ HEALTHY), one
      // not reported on goes DEGRADED; RouteEviction then removes one still failing past its grace.
      const health = run(ROUTE_HANDLERS.HealthCheckRoute, healthCheckRoute(deployment, [target], nowMs));
      if (health?.to !== undefined) return health;
      if (route.status === R.UNHEALTHY) {
        const eviction = run(ROUTE_HANDLERS.RouteEviction, routeEviction(deployment, [target]));
        if (eviction !== undefined) return eviction;
      }
      if (route.status === R.HEALTHY && route.agentId !== undefined && route.port !== undefined) {
        // ServiceDiscoverySync: the replica's endpoint, as Route Status Changed published it.
        const sync = run(ROUTE_HANDLERS.ServiceDiscoverySync, {
          successes: [route.id],
          failures: [],
          messages: { [route.id]: `serving on ${route.agentId}:${route.port}` },
        });
        if (sync !== undefined && !alreadyMaintained(route, sync)) return sync;
      }
      if (health !== undefined && !alreadyMaintained(route, health)) return health;
      return running !== undefined && !alreadyMaintained(route, running) ? running : undefined;
    }
    case R.TERMINATED:
      return undefined;
  }
}

function judgeDeployment(
  deployment: Deployment,
  routes: readonly Route[],
  sessions: ReadonlyMap<string, BackingSession>,
  nowMs: number,
): Judged<DeploymentDecision> & { create: readonly number[]; remove: readonly string[] } {
  const targets = [{ id: deployment.id, status: deployment.status }];
  const run = (handler: DeploymentHandlerSpec, result: FamilyHandlerResult) =>
    judgeDeployments(handler, result, targets, nowMs)[0];
  const none = { create: [], remove: [] };
  switch (deployment.status) {
    case D.PENDING:
      return {
        decision: run(DEPLOYMENT_HANDLERS.CheckPendingDeployment, checkPendingDeployment(deployment)),
        ...none,
      };
    case D.SCALING: {
      const plan = scalingDeployment(deployment, routes, nowMs);
      return {
        decision: run(DEPLOYMENT_HANDLERS.ScalingDeployment, plan.result),
        create: plan.create,
        remove: plan.remove,
      };
    }
    case D.READY: {
      const replicas = run(
        DEPLOYMENT_HANDLERS.CheckReplicaDeployment,
        checkReplicaDeployment(deployment, routes),
      );
      if (replicas?.to !== undefined) return { decision: replicas, ...none };
      const targetsOf = routes.map((route) => ({
        route,
        session: backing(sessions.get(route.sessionId), route),
      }));
      const reconcile = run(
        DEPLOYMENT_HANDLERS.ReconcileDeployment,
        reconcileDeployment(deployment, targetsOf),
      );
      if (reconcile?.to !== undefined) return { decision: reconcile, ...none };
      return {
        decision:
          reconcile !== undefined && !alreadyMaintained(deployment, reconcile) ? reconcile : undefined,
        ...none,
      };
    }
    case D.DESTROYING: {
      const plan = destroyingDeployment(deployment, routes);
      return {
        decision: run(DEPLOYMENT_HANDLERS.DestroyingDeployment, plan.result),
        create: [],
        remove: plan.remove,
      };
    }
    case D.CREATED:
    case D.DEPLOYING:
    case D.DESTROYED:
      return { decision: undefined, ...none };
  }
}

function alreadyMaintained(
  entity: Deployment | Route,
  decision: { readonly history: { readonly handler: string; readonly result: string } },
): boolean {
  return entity.maintained?.[decision.history.handler] === decision.history.result;
}

/** A judged decision on the entity: its history, and the callback when its status changes. */
function applyDecision<E extends Deployment | Route>(
  entity: E,
  decision: DeploymentDecision | RouteDecision,
  firstEdge: Readonly<Partial<Record<string, string>>>,
  nowMs: number,
  history: FamilyHistoryRecord[],
  kind: "deployment" | "route",
): E {
  const { history: h } = decision;
  if (decision.to === undefined) {
    if (entity.maintained?.[h.handler] === h.result) return entity;
    history.push({ entity: kind, ...h });
    return { ...entity, maintained: { ...entity.maintained, [h.handler]: h.result } };
  }
  const transition: FamilyTransition = {
    from: decision.from,
    to: decision.to,
    result: decision.result,
    handler: h.handler,
    ...(h.message !== undefined ? { message: h.message } : {}),
  };
  history.push({ entity: kind, ...h });
  return leaveWith(entity, transition, firstEdge, nowMs);
}

function leaveWith<E extends Deployment | Route>(
  entity: E,
  transition: FamilyTransition,
  firstEdge: Readonly<Partial<Record<string, string>>>,
  nowMs: number,
): E {
  const error = renewDue(entity.execution, nowMs)
    ? RenewError
    : firstEdge[transition.from] === transition.to
      ? undefined
      : toError(transition.to);
  return {
    ...entity,
    stage: { ...entity.stage, leaving: { transition, ...(error !== undefined ? { error } : {}) } },
  };
}

function renewDue(execution: FamilyExecution, nowMs: number): boolean {
  return execution.transitions >= RENEW_AFTER_TRANSITIONS || nowMs - execution.startedAtMs >= RENEW_AFTER_MS;
}

function record(
  entity: "deployment" | "route",
  id: string,
  t: FamilyTransition,
  atMs: number,
): FamilyHistoryRecord {
  return {
    entity,
    id,
    handler: t.handler,
    result: t.result as FamilyHistoryRecord["result"],
    fromStatus: t.from as FamilyHistoryRecord["fromStatus"],
    toStatus: t.to as FamilyHistoryRecord["fromStatus"],
    ...(t.message !== undefined ? { message: t.message } : {}),
    atMs,
  };
}

/** A new route, PROVISIONING, before its execution has entered any state. */
export function newRoute(deployment: Deployment, index: number, nowMs: number): Route {
  const id = routeId(deployment.id, index);
  return {
    id,
    deploymentId: deployment.id,
    index,
    status: R.PROVISIONING,
    version: 0,
    sessionId: id,
    execution: { name: id, generation: 1, transitions: 0, startedAtMs: nowMs },
    stage: { enteredAtMs: nowMs },
    health: initialHealth(nowMs),
    createdAtMs: nowMs,
    updatedAtMs: nowMs,
  };
}

/** A new deployment, PENDING, before its execution has entered any state. */
export function newDeployment(
  id: string,
  spec: Deployment["spec"],
  nowMs: number,
  previous?: Deployment,
): Deployment {
  // Created again after it was destroyed: its execution names and route ids go on counting.
  const generation = previous ? previous.execution.generation + 1 : 1;
  return {
    id,
    spec,
    status: D.PENDING,
    version: previous ? previous.version : 0,
    execution: { name: executionName(id, generation), generation, transitions: 0, startedAtMs: nowMs },
    stage: { enteredAtMs: nowMs },
    nextRouteIndex: previous?.nextRouteIndex ?? 0,
    createdAtMs: nowMs,
    updatedAtMs: nowMs,
  };
}

/** An entity's execution names: `<id>` first, `<id>-g<n>` for the n-th. */
export function executionName(id: string, generation: number): string {
  return generation === 1 ? id : `${id}-g${generation}`;
}

/** The generation an execution's name says, for the entity `id`; undefined if it is not one of its. */
export function generationOf(id: string, name: string): number | undefined {
  if (name === id) return 1;
  const match = /^(.*)-g(\d+)$/.exec(name);
  return match && match[1] === id ? Number(match[2]) : undefined;
}
