/**
 * What each deployment and route handler of Backend.AI's BEP-1030 finds, pure: given the
 * deployment, its routes and the sessions backing them, each handler returns its result
 * (successes, failures, stale: judged by judge.ts against the tables) and the actions the
 * application carries out (routes to create or remove, sessions to cancel). Nothing here reads
 * a clock; `nowMs` is given.
 */
import type { SessionStatus } from "../status.ts";
import { TERMINAL_SESSION_STATUSES } from "../status.ts";
import { healthVerdict } from "./health.ts";
import type { FamilyHandlerResult } from "./judge.ts";
import type { Deployment, Route } from "./model.ts";
import { RouteResult, RouteStatus } from "./tables.ts";
import type { HealthCheck } from "./spec.ts";

/** The session behind a route, as far as the route's handlers read it. */
export interface BackingSession {
  readonly status: SessionStatus;
  /** How it ended, for people ("failed", "cancelled"), once it has. */
  readonly result?: string;
  /** The route it backs (its service binding); another route's session backs nothing here. */
  readonly routeId?: string;
}

export interface RouteTarget {
  readonly route: Route;
  /** Undefined when the session is gone (or was never created). */
  readonly session: BackingSession | undefined;
}

class Results {
  readonly successes: string[] = [];
  readonly failures: string[] = [];
  readonly stale: string[] = [];
  readonly messages: Record<string, string> = {};

  add(list: "successes" | "failures" | "stale", id: string, message: string): void {
    this[list].push(id);
    this.messages[id] = message;
  }

  build(): FamilyHandlerResult {
    return {
      successes: this.successes,
      failures: this.failures,
      ...(this.stale.length > 0 ? { stale: this.stale } : {}),
      messages: this.messages,
    };
  }
}

function ended(session: BackingSession | undefined): boolean {
  return session === undefined || TERMINAL_SESSION_STATUSES.has(session.status);
}

function endedWhy(session: BackingSession | undefined): string {
  if (session === undefined) return "its session is gone";
  return `its session ended ${session.status}${session.result !== undefined ? ` (${session.result})` : ""}`;
}

/**
 * ProvisioningRoute: a replica is provisioned once its session runs and its agent has probed it
 * (the process got its port and stayed up at least one interval, pass or fail); one whose session
 * ended before that never started. A command that exits at once is never probed.
 */
export function provisioningRoute(targets: readonly RouteTarget[]): FamilyHandlerResult {
  const r = new Results();
  for (const { route, session } of targets) {
    if (session?.status === "RUNNING" && route.health.lastProbeAtMs !== undefined) {
      const where =
        route.agentId !== undefined && route.port !== undefined ? ` on ${route.agentId}:${route.port}` : "";
      r.add("successes", route.id, `replica running${where}`);
    } else if (ended(session)) {
      r.add("failures", route.id, `${endedWhy(session)} before it ran`);
    }
  }
  return r.build();
}

/** HealthCheckRoute: each route's probes, judged (health.ts); routes the probes decide nothing on are left. */
export function healthCheckRoute(
  deployment: Deployment,
  targets: readonly RouteTarget[],
  nowMs: number,
): FamilyHandlerResult {
  const r = new Results();
  for (const { route } of targets) {
    const verdict = healthVerdict(route.health, deployment.spec.healthCheck, nowMs);
    if (verdict === undefined) continue;
    const list =
      verdict.result === RouteResult.SUCCESS
        ? "successes"
        : verdict.result === RouteResult.FAILURE
          ? "failures"
          : "stale";
    r.add(list, route.id, verdict.message);
  }
  return r.build();
}

/** RunningRoute: a route whose session ended, or that never started, is terminated; the rest run on. */
export function runningRoute(targets: readonly RouteTarget[]): FamilyHandlerResult {
  const r = new Results();
  for (const { route, session } of targets) {
    if (route.status === RouteStatus.FAILED_TO_START) r.add("failures", route.id, "it failed to start");
    else if (ended(session)) r.add("failures", route.id, endedWhy(session));
    else r.add("successes", route.id, "its session runs");
  }
  return r.build();
}

/**
 * How many failing probes in a row evict an UNHEALTHY route: the threshold that made it UNHEALTHY,
 * then as many again without a recovery. BEP-1030 lets both HealthCheckRoute (UNHEALTHY → HEALTHY
 * "on health recovery") and RouteEviction (UNHEALTHY → TERMINATING) act on an UNHEALTHY route;
 * the health check goes first, and eviction waits this long, so a replica that was briefly sick
 * (a slow garbage collection, a restart of a dependency) can recover instead of being replaced.
 */
export function evictionFailures(check: HealthCheck): number {
  return 2 * check.unhealthyThreshold;
}

/**
 * RouteEviction: an UNHEALTHY route that kept failing its probes past the grace (evictionFailures)
 * is removed; the deployment replaces it (ReconcileDeployment). One still within the grace is left
 * (not attempted: no history), for the next probes to recover or evict.
 */
export function routeEviction(deployment: Deployment, targets: readonly RouteTarget[]): FamilyHandlerResult {
  const r = new Results();
  const needed = evictionFailures(deployment.spec.healthCheck);
  for (const { route } of targets) {
    const failures = route.health.consecutiveFailures;
    if (failures < needed) continue;
    r.add(
      "successes",
      route.id,
      `evicted: failed ${failures} health checks in a row without recovering` +
        (route.health.lastMessage !== undefined ? ` (${route.health.lastMessage})` : ""),
    );
  }
  return r.build();
}

export interface TerminatingRouteOutcome {
  readonly result: FamilyHandlerResult;
  /** Sessions still running: the application cancels them (a cancel is idempotent). */
  readonly cancel: readonly string[];
}

/** TerminatingRoute: a route whose session has ended is TERMINATED; the others' sessions are cancelled. */
export function terminatingRoute(targets: readonly RouteTarget[]): TerminatingRouteOutcome {
  const r = new Results();
  const cancel: string[] = [];
  for (const { route, session } of targets) {
    if (ended(session)) r.add("successes", route.id, endedWhy(session));
    else cancel.push(route.sessionId);
  }
  return { result: r.build(), cancel };
}

// ---------------------------------------------------------------------------------------------
// The deployment's handlers.

/** Routes that count as the deployment's replicas: every route not on its way out. */
export function liveRoutes(routes: readonly Route[]): Route[] {
  return routes.filter((r) => r.status !== RouteStatus.TERMINATING && r.status !== RouteStatus.TERMINATED);
}

/** A deployment's replicas as people read them (`cairn deployment`, the dashboard). */
export interface ReplicaCounts {
  /** What the spec asks for (the latest scale). */
  readonly asked: number;
  /** Routes that count as replicas (liveRoutes: neither TERMINATING nor TERMINATED). */
  readonly live: number;
  readonly healthy: number;
}

export function replicaCounts(deployment: Deployment, routes: readonly Route[]): ReplicaCounts {
  return {
    asked: deployment.spec.replicas,
    live: liveRoutes(routes).length,
    healthy: routes.filter((r) => r.status === RouteStatus.HEALTHY).length,
  };
}

/** Which routes go first when a deployment has too many: the least useful, then the newest. */
const REMOVAL_ORDER: readonly RouteStatus[] = [
  RouteStatus.FAILED_TO_START,
  RouteStatus.UNHEALTHY,
  RouteStatus.PROVISIONING,
  RouteStatus.DEGRADED,
  RouteStatus.HEALTHY,
];

export interface ScalingPlan {
  readonly result: FamilyHandlerResult;
  /** Indexes of the routes to create, from the deployment's nextRouteIndex. */
  readonly create: readonly number[];
  /** Routes to remove (→ TERMINATING). */
  readonly remove: readonly string[];
}

/**
 * The first hold-back after a failed replica, and the most it grows to: Kubernetes'
 * CrashLoopBackOff (10 s, doubling, capped at 5 minutes).
 */
export const REPLACEMENT_DELAY = { initialMs: 10_000, maxMs: 300_000 } as const;

/**
 * How long new routes are held back after the latest of `failedStarts` replicas that failed in a
 * row (crash-loop.ts counts them): 10 s, doubling, at most 5 minutes.
 */
export function replacementDelayMs(failedStarts: number): number {
  if (failedStarts <= 0) return 0;
  return Math.min(REPLACEMENT_DELAY.initialMs * 2 ** (failedStarts - 1), REPLACEMENT_DELAY.maxMs);
}

/** Until when a deployment's new routes are held back (0: not held). */
export function replacementsHeldUntilMs(deployment: Deployment): number {
  const f = deployment.failedStarts;
  return f === undefined ? 0 : f.lastAtMs + replacementDelayMs(f.count);
}

/**
 * ScalingDeployment: creates or removes routes until the deployment has `spec.replicas` of them,
 * then succeeds (→ READY) once none is still provisioning. Zero replicas is a deployment with no
 * routes, READY at once. A deployment whose replicas keep failing to start creates none until its
 * hold-back has passed (FAILURE, maintained: it stays SCALING and says why).
 */
export function scalingDeployment(
  deployment: Deployment,
  routes: readonly Route[],
  nowMs: number,
): ScalingPlan {
  const live = liveRoutes(routes);
  const want = deployment.spec.replicas;
  const missing = Math.max(0, want - live.length);
  const heldUntilMs = replacementsHeldUntilMs(deployment);
  const held = missing > 0 && nowMs < heldUntilMs;
  const create = held ? [] : Array.from({ length: missing }, (_, i) => deployment.nextRouteIndex + i);
  const remove = [...live]
    .sort((a, b) => REMOVAL_ORDER.indexOf(a.status) - REMOVAL_ORDER.indexOf(b.status) || b.index - a.index)
    .slice(0, Math.max(0, live.length - want))
    .map((r) => r.id);
  const r = new Results();
  const provisioning = live.filter(
    (route) => route.status === RouteStatus.PROVISIONING && !remove.includes(route.id),
  );
  if (held) {
    const count = deployment.failedStarts?.count ?? 0;
    r.add(
      "failures",
      deployment.id,
      `${count} replica(s) in a row failed: new ones held back until ${new Date(heldUntilMs).toISOString()}`,
    );
  } else if (create.length === 0 && remove.length === 0 && provisioning.length === 0) {
    r.add("successes", deployment.id, `${want} replica(s)`);
  }
  return { result: r.build(), create, remove };
}

/** CheckPendingDeployment: a new deployment starts scaling. */
export function checkPendingDeployment(deployment: Deployment): FamilyHandlerResult {
  const r = new Results();
  r.add("successes", deployment.id, `scaling to ${deployment.spec.replicas} replica(s)`);
  return r.build();
}

/**
 * CheckReplicaDeployment: the replica count asked for differs from the live routes the
 * deployment has (a scale request, or a route that has gone) → SCALING.
 */
export function checkReplicaDeployment(
  deployment: Deployment,
  routes: readonly Route[],
): FamilyHandlerResult {
  const r = new Results();
  const live = liveRoutes(routes).length;
  if (live !== deployment.spec.replicas) {
    r.add("successes", deployment.id, `${live} replica(s), ${deployment.spec.replicas} asked for`);
  }
  return r.build();
}

/**
 * ReconcileDeployment: a replica whose route counts it live but whose session has ended (or is
 * gone) is a mismatch between routes and sessions → FAILURE (→ SCALING), which replaces it once
 * the route has gone; otherwise they agree (SUCCESS, maintained).
 */
export function reconcileDeployment(
  deployment: Deployment,
  targets: readonly RouteTarget[],
): FamilyHandlerResult {
  const r = new Results();
  const mismatched = targets.filter(
    ({ route, session }) =>
      liveRoutes([route]).length === 1 && route.status !== RouteStatus.PROVISIONING && ended(session),
  );
  if (mismatched.length > 0) {
    r.add(
      "failures",
      deployment.id,
      mismatched
        .map(({ route, session }) => `${route.id} is ${route.status} but ${endedWhy(session)}`)
        .join("; "),
    );
  } else {
    r.add("successes", deployment.id, "routes and sessions agree");
  }
  return r.build();
}

export interface DestroyPlan {
  readonly result: FamilyHandlerResult;
  /** Routes still live: the application removes them (→ TERMINATING). */
  readonly remove: readonly string[];
}

/** DestroyingDeployment: every route is removed; once all are TERMINATED the deployment is DESTROYED. */
export function destroyingDeployment(deployment: Deployment, routes: readonly Route[]): DestroyPlan {
  const r = new Results();
  const remove = liveRoutes(routes).map((route) => route.id);
  const left = routes.filter((route) => route.status !== RouteStatus.TERMINATED).length;
  if (left === 0) r.add("successes", deployment.id, `every route terminated (${routes.length})`);
  return { result: r.build(), remove };
}
