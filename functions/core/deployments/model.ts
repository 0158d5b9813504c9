/**
 * Deployments and routes as stored (Backend.AI's BEP-1030). A deployment is one item with its spec and
 * lifecycle state; each replica is a route item beside it; their history records live apart, so
 * reading a deployment with its routes never reads its history.
 */
import type { RouteHealth } from "./health.ts";
import type { DeploymentSpec } from "./spec.ts";
import type { DeploymentResult, DeploymentStatus, RouteResult, RouteStatus } from "./tables.ts";

/** The lifecycle execution carrying the entity now: `<id>`, then `<id>-g2`, … after renewals. */
export interface FamilyExecution {
  readonly name: string;
  readonly generation: number;
  /** Status changes since this execution started: the coordinator renews it before the history limit. */
  readonly transitions: number;
  readonly startedAtMs: number;
}

/**
 * A status change as the lifecycle execution carries it: the callback's output (or its error's
 * cause) and the next state's input; EnterFamilyStage publishes it.
 */
export interface FamilyTransition {
  readonly from: string;
  readonly to: string;
  readonly result: string;
  readonly handler: string;
  readonly message?: string;
}

/**
 * The callback the handlers decided on, kept until the next state is entered: a pass that finds
 * it (the callback's send failed, or the function stopped after the write) sends it again.
 */
export interface FamilyLeaving {
  readonly transition: FamilyTransition;
  /** Absent: SendTaskSuccess (the state's first edge). `Cairn.To.<STATUS>` or `Cairn.Renew`: SendTaskFailure. */
  readonly error?: string;
}

/** The waiting state the entity is in, and the callback that completes it (absent in a final state). */
export interface FamilyStage {
  readonly enteredAtMs: number;
  readonly taskToken?: string;
  readonly leaving?: FamilyLeaving;
}

/**
 * Which "(maintain)" results were recorded in the current status, by handler: a handler that
 * keeps finding the same writes its history once per stay, not once per pass.
 */
export type Maintained = Readonly<Record<string, string>>;

export interface Deployment {
  /** An id like a session's (it names executions): 3 to 63 lowercase letters, digits or '-'. */
  readonly id: string;
  readonly spec: DeploymentSpec;
  readonly status: DeploymentStatus;
  /** Bumped by every write; writes are guarded by the version they were planned from. */
  readonly version: number;
  readonly execution: FamilyExecution;
  readonly stage: FamilyStage;
  /** The next route's index: route ids are never reused. */
  readonly nextRouteIndex: number;
  /** A destroy was asked for: the deployment goes DESTROYING from whichever status allows it. */
  readonly destroyRequest?: { readonly atMs: number; readonly reason: string };
  /**
   * Replicas that failed in a row (failed to start, ended, or were evicted for their health): a
   * crash loop. New routes are held back after the latest (handlers.ts replacementDelayMs); the
   * count is forgotten once a later replica has stayed HEALTHY for 10 minutes (crash-loop.ts).
   * Absent: none.
   */
  readonly failedStarts?: {
    readonly count: number;
    readonly lastAtMs: number;
    /** Which replica failed last, and why. */
    readonly lastReason?: string;
  };
  readonly maintained?: Maintained;
  readonly createdAtMs: number;
  readonly updatedAtMs: number;
}

export interface Route {
  /** `<deploymentId>-r<index>`; also the id of the session backing it. */
  readonly id: string;
  readonly deploymentId: string;
  readonly index: number;
  readonly status: RouteStatus;
  readonly version: number;
  readonly sessionId: string;
  readonly execution: FamilyExecution;
  readonly stage: FamilyStage;
  readonly health: RouteHealth;
  /** Where the replica listens, once its agent has started it. */
  readonly agentId?: string;
  readonly port?: number;
  /** The deployment no longer wants it (a scale-down, a destroy, an eviction's replacement). */
  readonly removeRequestedAtMs?: number;
  readonly maintained?: Maintained;
  readonly createdAtMs: number;
  readonly updatedAtMs: number;
}

export interface DeploymentWithRoutes {
  readonly deployment: Deployment;
  /** In index order, ended ones included. */
  readonly routes: readonly Route[];
}

/** One record of a deployment's or a route's history, as BEP-1030 says: SUCCESS / FAILURE (/ STALE). */
export interface FamilyHistoryRecord {
  readonly entity: "deployment" | "route";
  /** The deployment's or the route's id. */
  readonly id: string;
  readonly handler: string;
  readonly result: DeploymentResult | RouteResult;
  readonly fromStatus: DeploymentStatus | RouteStatus;
  readonly toStatus?: DeploymentStatus | RouteStatus;
  readonly message?: string;
  readonly atMs: number;
}

/** A route's id: its deployment's id and its index. */
export function routeId(deploymentId: string, index: number): string {
  return `${deploymentId}-r${index}`;
}
