/** A deployment `web` and its routes as the deployment core's tests build them. */
import { initialHealth } from "../../functions/core/deployments/health.ts";
import { routeId, type Deployment, type Route } from "../../functions/core/deployments/model.ts";
import { parseDeploymentSpec } from "../../functions/core/deployments/spec.ts";
import type { RouteStatus } from "../../functions/core/deployments/tables.ts";

export const T0 = 1_767_225_600_000;

/** SCALING, waiting on its callback, in its first execution. */
export function webDeployment(replicas: number, over: Partial<Deployment> = {}): Deployment {
  return {
    id: "web",
    spec: parseDeploymentSpec({ name: "web", replicas, service: { command: ["serve"] } }),
    status: "SCALING",
    version: 3,
    execution: { name: "web", generation: 1, transitions: 0, startedAtMs: T0 },
    stage: { enteredAtMs: T0, taskToken: "tok" },
    nextRouteIndex: 0,
    createdAtMs: T0,
    updatedAtMs: T0,
    ...over,
  };
}

/** Route `web-r<index>` in `status`, waiting on its callback, its session named after it. */
export function webRoute(index: number, status: RouteStatus, over: Partial<Route> = {}): Route {
  return {
    id: routeId("web", index),
    deploymentId: "web",
    index,
    status,
    version: 1,
    sessionId: routeId("web", index),
    execution: { name: routeId("web", index), generation: 1, transitions: 0, startedAtMs: T0 },
    stage: { enteredAtMs: T0, taskToken: `tok-${index}` },
    health: initialHealth(T0),
    createdAtMs: T0,
    updatedAtMs: T0,
    ...over,
  };
}
