/**
 * A deployment whose replicas keep failing backs off, as Kubernetes' CrashLoopBackOff does: after
 * each replica that failed, the next one is started 10 s later, doubling up to 5 minutes
 * (handlers.ts replacementDelayMs), and the count is reset once a replica started after the
 * latest failure has been HEALTHY for 10 minutes ("After containers in a Pod run for 10 minutes
 * without any problems, the kubelet resets the restart backoff timer", Kubernetes' Pod
 * lifecycle). A replica fails when it fails to start, when its session ends on its own, and
 * when it is evicted for failing its health checks: a server that never answers is replaced
 * ever more slowly instead of every half minute.
 *
 * Also what people read of it (`cairn deployment get`, `--wait`, the dashboard): why a
 * deployment is not serving every replica it asks for. Pure: `nowMs` is given.
 */
import { liveRoutes, replacementsHeldUntilMs } from "./handlers.ts";
import type { Deployment, Route } from "./model.ts";
import { RouteHandlerName, RouteStatus } from "./tables.ts";

/** How long a replica must stay HEALTHY before the failures counted before it are forgotten. */
export const CRASH_LOOP_RESET_MS = 600_000;

/** A route's decision as the count reads it. */
export interface RouteOutcome {
  readonly from: string;
  readonly to?: string | undefined;
  readonly handler: string;
  readonly message?: string | undefined;
}

/**
 * Whether the decision ends a replica that failed: it failed to start, its session ended while it
 * served (RunningRoute), or it was evicted for its health (RouteEviction). A route the deployment
 * removed (a scale-down, a destroy) did not fail, nor does a FAILED_TO_START route count twice.
 */
export function isReplicaFailure(outcome: RouteOutcome): boolean {
  if (outcome.to === RouteStatus.FAILED_TO_START) return true;
  return (
    outcome.to === RouteStatus.TERMINATING &&
    outcome.from !== RouteStatus.FAILED_TO_START &&
    (outcome.handler === RouteHandlerName.RouteEviction || outcome.handler === RouteHandlerName.RunningRoute)
  );
}

/** The deployment with one more failed replica counted, if the decision is one. */
export function countFailure(
  deployment: Deployment,
  routeId: string,
  outcome: RouteOutcome,
  nowMs: number,
): Deployment {
  if (!isReplicaFailure(outcome)) return deployment;
  const count = (deployment.failedStarts?.count ?? 0) + 1;
  const reason = `${routeId} ${outcome.to === RouteStatus.FAILED_TO_START ? "failed to start" : "failed"}${
    outcome.message !== undefined ? `: ${outcome.message}` : ""
  }`;
  return { ...deployment, failedStarts: { count, lastAtMs: nowMs, lastReason: reason } };
}

/**
 * The deployment with its count forgotten, once a replica started after the latest failure has
 * been HEALTHY for CRASH_LOOP_RESET_MS (its stage was entered when it became HEALTHY). Replicas
 * that were healthy all along prove nothing about the ones that keep failing.
 */
export function resetAfterHealthy(
  deployment: Deployment,
  routes: readonly Route[],
  nowMs: number,
): Deployment {
  const f = deployment.failedStarts;
  if (f === undefined) return deployment;
  const proven = routes.some(
    (r) =>
      r.status === RouteStatus.HEALTHY &&
      r.createdAtMs > f.lastAtMs &&
      nowMs - r.stage.enteredAtMs >= CRASH_LOOP_RESET_MS,
  );
  if (!proven) return deployment;
  const { failedStarts: _forgotten, ...rest } = deployment;
  return rest;
}

/**
 * Why a deployment is not serving all it asks for, as Kubernetes' `reason` and `message`:
 * CrashLoopBackOff while new replicas are held back, Unhealthy while live replicas fail their
 * checks (or are not checked yet); undefined when every replica asked for is HEALTHY, and for a
 * deployment being destroyed.
 */
export interface DeploymentReason {
  readonly reason: "CrashLoopBackOff" | "Unhealthy" | "Starting";
  readonly message: string;
}

export function deploymentReason(
  deployment: Deployment,
  routes: readonly Route[],
  nowMs: number,
): DeploymentReason | undefined {
  if (deployment.destroyRequest !== undefined || deployment.status === "DESTROYED") return undefined;
  if (deployment.status === "DESTROYING") return undefined;
  const asked = deployment.spec.replicas;
  const live = liveRoutes(routes);
  const healthy = live.filter((r) => r.status === RouteStatus.HEALTHY).length;
  const f = deployment.failedStarts;
  const latest = f?.lastReason !== undefined ? ` (latest: ${f.lastReason})` : "";
  const heldUntilMs = replacementsHeldUntilMs(deployment);
  if (f !== undefined && live.length < asked && nowMs < heldUntilMs) {
    return {
      reason: "CrashLoopBackOff",
      message:
        `${f.count} replica(s) in a row failed${latest}; the next one starts in ` +
        `${Math.ceil((heldUntilMs - nowMs) / 1000)} s (${new Date(heldUntilMs).toISOString()})`,
    };
  }
  if (healthy >= asked) return undefined;
  const sick = live.filter((r) => r.status !== RouteStatus.HEALTHY);
  const failing = sick.filter(
    (r) =>
      r.health.consecutiveFailures > 0 ||
      r.status === RouteStatus.UNHEALTHY ||
      r.status === RouteStatus.FAILED_TO_START,
  );
  const loop = f === undefined ? "" : `; ${f.count} replica(s) failed in a row${latest}`;
  const detail = sick.map(
    (r) => `${r.id} ${r.status}${r.health.lastMessage !== undefined ? ` (${r.health.lastMessage})` : ""}`,
  );
  return {
    reason: failing.length === 0 && f === undefined ? "Starting" : "Unhealthy",
    message: `${healthy} of ${asked} replica(s) healthy${detail.length > 0 ? `: ${detail.join("; ")}` : ""}${loop}`,
  };
}
