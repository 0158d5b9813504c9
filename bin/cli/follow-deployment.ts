/**
 * `cairn deployment … --wait`: polls the deployment with its routes until it reaches what was
 * asked for (READY with the replicas asked for, or DESTROYED), reporting every change of the
 * deployment's or a route's status as a progress line. One read per poll (the deployment and its
 * routes are one Query); time and sleeping are passed in, as follow.ts's.
 */
import { deploymentReason } from "../../functions/core/deployments/crash-loop.ts";
import { liveRoutes } from "../../functions/core/deployments/handlers.ts";
import type { DeploymentWithRoutes, Route } from "../../functions/core/deployments/model.ts";
import { DeploymentStatus } from "../../functions/core/deployments/tables.ts";
import type { DeploymentReader } from "./cairn-api.ts";
import { printable } from "./terminal-text.ts";
import { DeploymentRejectedError, DeploymentWaitTimeoutError } from "./errors.ts";
import type { PollOptions } from "./follow.ts";

/** What the wait ends on. */
export type DeploymentGoal =
  /**
   * READY with `replicas` live routes, every one HEALTHY (scale: the count asked for; create: the
   * spec's): a replica that runs but does not pass its health check is not served.
   */
  { readonly kind: "ready"; readonly replicas: number } | { readonly kind: "destroyed" };

export interface DeploymentFollowOptions extends PollOptions {
  readonly store: Pick<DeploymentReader, "getDeployment">;
  /**
   * Snapshots at or below this version are from before the request was handled (a deployment
   * created again after it was DESTROYED): they are reported as progress but end nothing.
   */
  readonly afterVersion?: number;
  /** Why the control plane refused the request, once it has (checked every poll). */
  readonly rejected?: () => Promise<string | undefined>;
}

export interface FollowedDeployment {
  /** reached: the goal; destroyed: waiting for READY, it is being (or was) destroyed instead. */
  readonly outcome: "reached" | "destroyed";
  readonly found: DeploymentWithRoutes;
}

export function goalText(goal: DeploymentGoal): string {
  return goal.kind === "destroyed" ? "DESTROYED" : `READY with ${goal.replicas} healthy replica(s)`;
}

export async function followDeployment(
  deploymentId: string,
  goal: DeploymentGoal,
  options: DeploymentFollowOptions,
): Promise<FollowedDeployment> {
  const { store, nowMs, sleep, progress } = options;
  const pollMs = options.pollMs ?? 500;
  const noticeMs = options.notRecordedNoticeMs ?? 30_000;
  const startMs = nowMs();
  const deadlineMs =
    options.timeoutSeconds === undefined ? Number.POSITIVE_INFINITY : startMs + options.timeoutSeconds * 1000;
  let last: DeploymentWithRoutes | undefined;
  let noticed = false;
  let lastWhy = "";
  for (;;) {
    const reason = await options.rejected?.();
    if (reason !== undefined) throw new DeploymentRejectedError(deploymentId, reason);
    const found = await store.getDeployment(deploymentId);
    if (found !== undefined) {
      for (const line of changes(last, found)) progress(line);
      last = found;
      // Why it is not serving yet, each time that changes (not its countdown), as Kubernetes'
      // events say why a pod waits.
      const why = goal.kind === "ready" ? whyNotReady(found, nowMs()) : undefined;
      if (why !== undefined && why.key !== lastWhy) progress(`deployment ${deploymentId}: ${why.text}`);
      lastWhy = why?.key ?? "";
      if (found.deployment.version > (options.afterVersion ?? -1)) {
        const outcome = judge(found, goal);
        if (outcome !== undefined) return { outcome, found };
      }
    } else if (!noticed && nowMs() - startMs >= noticeMs) {
      noticed = true;
      progress(
        `deployment ${deploymentId} is not recorded yet after ${Math.round(noticeMs / 1000)} s; ` +
          "is the control plane processing events? (still waiting)",
      );
    }
    const remainingMs = deadlineMs - nowMs();
    if (remainingMs <= 0) {
      throw new DeploymentWaitTimeoutError(
        deploymentId,
        options.timeoutSeconds ?? 0,
        goalText(goal),
        last?.deployment.status,
        last === undefined || goal.kind !== "ready" ? undefined : reasonText(last, nowMs()),
      );
    }
    await sleep(Math.min(pollMs, remainingMs));
  }
}

function judge(
  { deployment, routes }: DeploymentWithRoutes,
  goal: DeploymentGoal,
): FollowedDeployment["outcome"] | undefined {
  if (goal.kind === "destroyed")
    return deployment.status === DeploymentStatus.DESTROYED ? "reached" : undefined;
  if (deployment.status === DeploymentStatus.DESTROYING || deployment.status === DeploymentStatus.DESTROYED) {
    return "destroyed";
  }
  const ready =
    deployment.status === DeploymentStatus.READY &&
    deployment.spec.replicas === goal.replicas &&
    liveRoutes(routes).length === goal.replicas &&
    routes.filter((r) => r.status === "HEALTHY").length === goal.replicas;
  return ready ? "reached" : undefined;
}

function reasonText({ deployment, routes }: DeploymentWithRoutes, nowMs: number): string | undefined {
  const why = deploymentReason(deployment, routes, nowMs);
  return why === undefined ? undefined : `${why.reason}: ${printable(why.message)}`;
}

/** The deployment's reason (crash-loop.ts), keyed by what changes it rather than by its countdown. */
function whyNotReady(
  { deployment, routes }: DeploymentWithRoutes,
  nowMs: number,
): { readonly key: string; readonly text: string } | undefined {
  const why = deploymentReason(deployment, routes, nowMs);
  // Replicas still starting say so in their own status lines.
  if (why === undefined || why.reason === "Starting") return undefined;
  const text = reasonText({ deployment, routes }, nowMs)!;
  const sick = routes.filter((r) => r.status !== "HEALTHY" && r.status !== "TERMINATED");
  return {
    key: [why.reason, deployment.failedStarts?.count ?? 0, ...sick.map((r) => `${r.id}:${r.status}`)].join(
      " ",
    ),
    text,
  };
}

/** Progress lines: the deployment's status (with its replica counts), then each route's. */
function changes(before: DeploymentWithRoutes | undefined, now: DeploymentWithRoutes): string[] {
  const lines: string[] = [];
  const { deployment, routes } = now;
  const counts = `${liveRoutes(routes).length} of ${deployment.spec.replicas} replica(s) live`;
  if (before === undefined) {
    lines.push(`deployment ${deployment.id}: ${deployment.status} (${counts})`);
  } else if (before.deployment.status !== deployment.status) {
    lines.push(`deployment ${deployment.id}: ${before.deployment.status} → ${deployment.status} (${counts})`);
  }
  const previous = new Map((before?.routes ?? []).map((r) => [r.id, r]));
  for (const route of routes) {
    const was = previous.get(route.id);
    // A route first seen already TERMINATED is history, not progress.
    if (was === undefined && before === undefined && route.status === "TERMINATED") continue;
    if (was === undefined) lines.push(`route ${route.id}: ${route.status}${where(route)}`);
    else if (was.status !== route.status)
      lines.push(`route ${route.id}: ${was.status} → ${route.status}${where(route)}`);
  }
  return lines;
}

function where(route: Route): string {
  return route.agentId === undefined ? "" : ` on ${route.agentId}:${route.port ?? "?"}`;
}
