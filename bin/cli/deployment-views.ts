/**
 * The JSON shapes `cairn deployment` prints (`--output json`), as views.ts's for sessions:
 * stable field names, ISO 8601 times, `null` for what is not known yet. Pure.
 */
import {
  replicaCounts,
  replacementsHeldUntilMs,
  type ReplicaCounts,
} from "../../functions/core/deployments/handlers.ts";
import type {
  Deployment,
  DeploymentWithRoutes,
  FamilyHistoryRecord,
  Route,
} from "../../functions/core/deployments/model.ts";
import type { DeploymentSpec } from "../../functions/core/deployments/spec.ts";
import { deploymentReason, type DeploymentReason } from "../../functions/core/deployments/crash-loop.ts";
import { RouteStatus } from "../../functions/core/deployments/tables.ts";
import { iso } from "./views.ts";

export interface RouteHealthView {
  readonly lastProbeAt: string | null;
  readonly consecutiveSuccesses: number;
  readonly consecutiveFailures: number;
  readonly lastMessage: string | null;
  /** Since when the route is checked (staleness counts from here until a probe comes). */
  readonly checkedSince: string;
}

export interface RouteView {
  readonly routeId: string;
  readonly index: number;
  readonly status: string;
  readonly sessionId: string;
  readonly agent: string | null;
  readonly port: number | null;
  readonly health: RouteHealthView;
  /** When the deployment stopped wanting it (a scale-down, a destroy, an eviction). */
  readonly removeRequestedAt: string | null;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export interface DeploymentHistoryRecordView {
  readonly entity: "deployment" | "route";
  /** The deployment's or the route's id. */
  readonly id: string;
  readonly handler: string;
  readonly result: string;
  readonly from: string;
  /** Null when the status was maintained. */
  readonly to: string | null;
  readonly message: string | null;
  readonly at: string;
}

export interface DeploymentView {
  readonly deploymentId: string;
  readonly status: string;
  readonly replicas: ReplicaCounts;
  /** The spec, defaults filled in. */
  readonly spec: DeploymentSpec;
  readonly destroyRequest: { readonly at: string; readonly reason: string } | null;
  /**
   * Why it does not serve every replica asked for (CrashLoopBackOff, Unhealthy, Starting), as
   * Kubernetes' reason and message; null when every replica asked for is HEALTHY.
   */
  readonly reason: DeploymentReason | null;
  /**
   * Replicas that failed in a row (failed to start, ended, evicted), the latest and why, and until
   * when new ones are held back; null: none.
   */
  readonly failedStarts: {
    readonly count: number;
    readonly last: string;
    readonly lastReason: string | null;
    readonly heldUntil: string;
  } | null;
  readonly executionName: string;
  readonly createdAt: string;
  readonly updatedAt: string;
  /** Every route, ended ones included, in index order. */
  readonly routes: readonly RouteView[];
  /** The deployment's and its routes' history, oldest first (newest last). */
  readonly history: readonly DeploymentHistoryRecordView[];
}

export interface DeploymentSummaryView {
  readonly deploymentId: string;
  readonly status: string;
  readonly replicas: ReplicaCounts;
  readonly reason: DeploymentReason | null;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export interface RoutesView {
  readonly deploymentId: string;
  readonly status: string;
  /** False: TERMINATED routes are left out (`--all` includes them). */
  readonly all: boolean;
  readonly routes: readonly RouteView[];
}

export function deploymentView(
  found: DeploymentWithRoutes,
  history: readonly FamilyHistoryRecord[],
  nowMs: number,
): DeploymentView {
  const { deployment, routes } = found;
  return {
    deploymentId: deployment.id,
    status: deployment.status,
    replicas: replicaCounts(deployment, routes),
    reason: deploymentReason(deployment, routes, nowMs) ?? null,
    spec: deployment.spec,
    destroyRequest:
      deployment.destroyRequest === undefined
        ? null
        : { at: iso(deployment.destroyRequest.atMs), reason: deployment.destroyRequest.reason },
    failedStarts:
      deployment.failedStarts === undefined
        ? null
        : {
            count: deployment.failedStarts.count,
            last: iso(deployment.failedStarts.lastAtMs),
            lastReason: deployment.failedStarts.lastReason ?? null,
            heldUntil: iso(replacementsHeldUntilMs(deployment)),
          },
    executionName: deployment.execution.name,
    createdAt: iso(deployment.createdAtMs),
    updatedAt: iso(deployment.updatedAtMs),
    routes: routes.map(routeView),
    history: history.map(deploymentHistoryRecordView),
  };
}

/** A deployment in a list (a DESTROYED one's routes are not read: it has no live route). */
export function deploymentSummaryView(
  deployment: Deployment,
  routes: readonly Route[],
  nowMs: number,
): DeploymentSummaryView {
  return {
    deploymentId: deployment.id,
    status: deployment.status,
    replicas: replicaCounts(deployment, routes),
    reason: deploymentReason(deployment, routes, nowMs) ?? null,
    createdAt: iso(deployment.createdAtMs),
    updatedAt: iso(deployment.updatedAtMs),
  };
}

export function routesView(found: DeploymentWithRoutes, all: boolean): RoutesView {
  return {
    deploymentId: found.deployment.id,
    status: found.deployment.status,
    all,
    routes: found.routes.filter((r) => all || r.status !== RouteStatus.TERMINATED).map(routeView),
  };
}

export function routeView(route: Route): RouteView {
  const { health } = route;
  return {
    routeId: route.id,
    index: route.index,
    status: route.status,
    sessionId: route.sessionId,
    agent: route.agentId ?? null,
    port: route.port ?? null,
    health: {
      lastProbeAt: health.lastProbeAtMs === undefined ? null : iso(health.lastProbeAtMs),
      consecutiveSuccesses: health.consecutiveSuccesses,
      consecutiveFailures: health.consecutiveFailures,
      lastMessage: health.lastMessage ?? null,
      checkedSince: iso(health.checkedSinceMs),
    },
    removeRequestedAt: route.removeRequestedAtMs === undefined ? null : iso(route.removeRequestedAtMs),
    createdAt: iso(route.createdAtMs),
    updatedAt: iso(route.updatedAtMs),
  };
}

export function deploymentHistoryRecordView(record: FamilyHistoryRecord): DeploymentHistoryRecordView {
  return {
    entity: record.entity,
    id: record.id,
    handler: record.handler,
    result: record.result,
    from: record.fromStatus,
    to: record.toStatus ?? null,
    message: record.message ?? null,
    at: iso(record.atMs),
  };
}
