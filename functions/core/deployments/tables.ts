/**
 * The deployment and route handler families of Backend.AI's BEP-1030 (001_d9b509ca94f26bf4.txt), as typed
 * data beside the session tables (core/handlers.ts). A deployment keeps N replicas of a service
 * running; each replica is a route, backed by a session. Unlike sessions, neither family has
 * expiry or give-up: a deployment handler's outcome is SUCCESS or FAILURE, a route handler's
 * SUCCESS, FAILURE or STALE, and that is also what their history records.
 *
 * The tables are BEP-1030's second tables ("Handler | Current | SUCCESS | FAILURE [| STALE]"),
 * where "(maintain)" is `undefined`: the status stays and only history is written.
 */

/** EndpointLifecycle. CREATED is deprecated in BEP-1030 (use READY) but still handled. */
export const DeploymentStatus = {
  PENDING: "PENDING",
  CREATED: "CREATED",
  SCALING: "SCALING",
  READY: "READY",
  DEPLOYING: "DEPLOYING",
  DESTROYING: "DESTROYING",
  DESTROYED: "DESTROYED",
} as const;
export type DeploymentStatus = (typeof DeploymentStatus)[keyof typeof DeploymentStatus];
export const DEPLOYMENT_STATUSES = Object.values(DeploymentStatus);

export const RouteStatus = {
  PROVISIONING: "PROVISIONING",
  HEALTHY: "HEALTHY",
  UNHEALTHY: "UNHEALTHY",
  DEGRADED: "DEGRADED",
  TERMINATING: "TERMINATING",
  TERMINATED: "TERMINATED",
  FAILED_TO_START: "FAILED_TO_START",
} as const;
export type RouteStatus = (typeof RouteStatus)[keyof typeof RouteStatus];
export const ROUTE_STATUSES = Object.values(RouteStatus);

/** What a deployment handler's outcome is recorded as. */
export const DeploymentResult = { SUCCESS: "SUCCESS", FAILURE: "FAILURE" } as const;
export type DeploymentResult = (typeof DeploymentResult)[keyof typeof DeploymentResult];

/** What a route handler's outcome is recorded as: STALE when the route was not reported on in time. */
export const RouteResult = { SUCCESS: "SUCCESS", FAILURE: "FAILURE", STALE: "STALE" } as const;
export type RouteResult = (typeof RouteResult)[keyof typeof RouteResult];

export const DeploymentHandlerName = {
  CheckPendingDeployment: "CheckPendingDeployment",
  ScalingDeployment: "ScalingDeployment",
  CheckReplicaDeployment: "CheckReplicaDeployment",
  ReconcileDeployment: "ReconcileDeployment",
  DestroyingDeployment: "DestroyingDeployment",
} as const;
export type DeploymentHandlerName = (typeof DeploymentHandlerName)[keyof typeof DeploymentHandlerName];

export const RouteHandlerName = {
  ProvisioningRoute: "ProvisioningRoute",
  HealthCheckRoute: "HealthCheckRoute",
  RunningRoute: "RunningRoute",
  RouteEviction: "RouteEviction",
  TerminatingRoute: "TerminatingRoute",
  ServiceDiscoverySync: "ServiceDiscoverySync",
} as const;
export type RouteHandlerName = (typeof RouteHandlerName)[keyof typeof RouteHandlerName];

export interface DeploymentHandlerSpec {
  readonly name: DeploymentHandlerName;
  readonly targetStatuses: readonly DeploymentStatus[];
  /** `undefined`: the status is maintained, history only. */
  readonly success: DeploymentStatus | undefined;
  readonly failure: DeploymentStatus | undefined;
  /** BEP-1030's "Role" column. */
  readonly role: string;
}

export interface RouteHandlerSpec {
  readonly name: RouteHandlerName;
  readonly targetStatuses: readonly RouteStatus[];
  readonly success: RouteStatus | undefined;
  readonly failure: RouteStatus | undefined;
  /** Only a handler with a STALE transition may judge a route stale. */
  readonly stale: RouteStatus | undefined;
  readonly role: string;
}

const D = DeploymentStatus;
const R = RouteStatus;

export const DEPLOYMENT_HANDLERS: Readonly<Record<DeploymentHandlerName, DeploymentHandlerSpec>> = {
  CheckPendingDeployment: {
    name: "CheckPendingDeployment",
    targetStatuses: [D.PENDING, D.CREATED],
    success: D.SCALING,
    failure: undefined,
    role: "Check pending and start scaling",
  },
  ScalingDeployment: {
    name: "ScalingDeployment",
    targetStatuses: [D.SCALING],
    success: D.READY,
    failure: undefined,
    role: "Perform actual scaling",
  },
  CheckReplicaDeployment: {
    name: "CheckReplicaDeployment",
    targetStatuses: [D.READY],
    success: D.SCALING,
    failure: undefined,
    role: "Check replica count and scale if needed",
  },
  ReconcileDeployment: {
    name: "ReconcileDeployment",
    targetStatuses: [D.READY],
    success: undefined,
    failure: D.SCALING,
    role: "Detect replica-route mismatch",
  },
  DestroyingDeployment: {
    name: "DestroyingDeployment",
    targetStatuses: [D.DESTROYING],
    success: D.DESTROYED,
    failure: D.DESTROYED,
    role: "Delete deployment",
  },
};

export const ROUTE_HANDLERS: Readonly<Record<RouteHandlerName, RouteHandlerSpec>> = {
  ProvisioningRoute: {
    name: "ProvisioningRoute",
    targetStatuses: [R.PROVISIONING],
    success: R.DEGRADED,
    failure: R.FAILED_TO_START,
    stale: undefined,
    role: "Route provisioning",
  },
  HealthCheckRoute: {
    name: "HealthCheckRoute",
    targetStatuses: [R.HEALTHY, R.UNHEALTHY, R.DEGRADED],
    success: R.HEALTHY,
    failure: R.UNHEALTHY,
    stale: R.DEGRADED,
    role: "Health check",
  },
  RunningRoute: {
    name: "RunningRoute",
    targetStatuses: [R.DEGRADED, R.HEALTHY, R.UNHEALTHY, R.FAILED_TO_START],
    success: undefined,
    failure: R.TERMINATING,
    stale: undefined,
    role: "Check running routes",
  },
  RouteEviction: {
    name: "RouteEviction",
    targetStatuses: [R.UNHEALTHY],
    success: R.TERMINATING,
    failure: undefined,
    stale: undefined,
    role: "Remove unhealthy routes",
  },
  TerminatingRoute: {
    name: "TerminatingRoute",
    targetStatuses: [R.TERMINATING],
    success: R.TERMINATED,
    failure: undefined,
    stale: undefined,
    role: "Route termination",
  },
  ServiceDiscoverySync: {
    name: "ServiceDiscoverySync",
    targetStatuses: [R.HEALTHY],
    success: undefined,
    failure: undefined,
    stale: undefined,
    role: "Service discovery sync",
  },
};

/**
 * The statuses Cairn records a deployment in (statemachines/deployment-lifecycle.asl.json has a
 * state for each). CREATED is deprecated in BEP-1030 ("use READY instead") and DEPLOYING belongs
 * to rolling updates, which Cairn does not do: their handler rows are kept, and never reached.
 */
export const RECORDED_DEPLOYMENT_STATUSES: readonly DeploymentStatus[] = [
  D.PENDING,
  D.SCALING,
  D.READY,
  D.DESTROYING,
  D.DESTROYED,
];

/**
 * A destroy request ("(destroy request)" in BEP-1030's diagram, a separate trigger) moves a
 * deployment waiting in one of these to DESTROYING.
 */
export const DESTROYABLE_STATUSES: readonly DeploymentStatus[] = [D.PENDING, D.SCALING, D.READY];
export const ON_DESTROY: DeploymentStatus = D.DESTROYING;

/**
 * A route the deployment no longer wants (scaled down, or the deployment destroyed) moves from
 * one of these to TERMINATING, as RunningRoute's failure and RouteEviction move it.
 */
export const REMOVABLE_ROUTE_STATUSES: readonly RouteStatus[] = [
  R.PROVISIONING,
  R.DEGRADED,
  R.HEALTHY,
  R.UNHEALTHY,
  R.FAILED_TO_START,
];
export const ON_REMOVE: RouteStatus = R.TERMINATING;

export const TERMINAL_DEPLOYMENT_STATUSES: ReadonlySet<DeploymentStatus> = new Set([D.DESTROYED]);
export const TERMINAL_ROUTE_STATUSES: ReadonlySet<RouteStatus> = new Set([R.TERMINATED]);
