/**
 * What each deployment and route handler finds (core/deployments/handlers.ts), case by case,
 * and judged against the seed's tables (judge.ts): the decisions the coordinator will carry out.
 */
import { describe, expect, test } from "vitest";
import {
  checkPendingDeployment,
  checkReplicaDeployment,
  destroyingDeployment,
  healthCheckRoute,
  provisioningRoute,
  reconcileDeployment,
  evictionFailures,
  routeEviction,
  runningRoute,
  replacementDelayMs,
  scalingDeployment,
  terminatingRoute,
  type RouteTarget,
} from "../../functions/core/deployments/handlers.ts";
import { applyProbes, initialHealth } from "../../functions/core/deployments/health.ts";
import { judgeDeployments, judgeRoutes } from "../../functions/core/deployments/judge.ts";
import type { Deployment, Route } from "../../functions/core/deployments/model.ts";
import { DEPLOYMENT_HANDLERS, ROUTE_HANDLERS } from "../../functions/core/deployments/tables.ts";
import type { SessionStatus } from "../../functions/core/status.ts";
import { T0, webDeployment, webRoute } from "./deployment-fixtures.ts";

const deployment = webDeployment;
const route = webRoute;

const on = (r: Route, status?: SessionStatus, result?: string): RouteTarget => ({
  route: r,
  session: status === undefined ? undefined : { status, ...(result ? { result } : {}) },
});

const moves = (decisions: readonly { id: string; from: string; to?: string; result: string }[]) =>
  decisions.map((d) => `${d.id} ${d.result} ${d.from}->${d.to ?? "="}`);

function judgeRoute(
  name: keyof typeof ROUTE_HANDLERS,
  result: Parameters<typeof judgeRoutes>[1],
  targets: RouteTarget[],
) {
  return moves(
    judgeRoutes(
      ROUTE_HANDLERS[name],
      result,
      targets.map((t) => ({ id: t.route.id, status: t.route.status })),
      T0,
    ),
  );
}

function judgeDeployment(
  name: keyof typeof DEPLOYMENT_HANDLERS,
  result: Parameters<typeof judgeDeployments>[1],
  d: Deployment,
) {
  return moves(judgeDeployments(DEPLOYMENT_HANDLERS[name], result, [{ id: d.id, status: d.status }], T0));
}

describe("route handlers", () => {
  test("ProvisioningRoute: running and probed → DEGRADED, ended before it ran → FAILED_TO_START, else waits", () => {
    const probed = applyProbes(initialHealth(T0), [{ ok: false, atMs: T0 + 1_000, message: "ECONNREFUSED" }]);
    const targets = [
      on(route(0, "PROVISIONING", { agentId: "agent-1", port: 41000, health: probed }), "RUNNING"),
      on(route(1, "PROVISIONING"), "TERMINATED", "failed"),
      on(route(2, "PROVISIONING"), "PREPARING"),
      on(route(3, "PROVISIONING"), undefined),
      // Running, but its agent has not probed it yet: it may still exit at once.
      on(route(4, "PROVISIONING"), "RUNNING"),
    ];
    const result = provisioningRoute(targets);
    expect(result.messages).toEqual({
      "web-r0": "replica running on agent-1:41000",
      "web-r1": "its session ended TERMINATED (failed) before it ran",
      "web-r3": "its session is gone before it ran",
    });
    expect(judgeRoute("ProvisioningRoute", result, targets)).toEqual([
      "web-r0 SUCCESS PROVISIONING->DEGRADED",
      "web-r1 FAILURE PROVISIONING->FAILED_TO_START",
      "web-r3 FAILURE PROVISIONING->FAILED_TO_START",
    ]);
  });

  test("HealthCheckRoute: passing → HEALTHY, 3 failures → UNHEALTHY, silent → DEGRADED (STALE)", () => {
    const d = deployment(3, { status: "READY" });
    const probes = (ok: boolean[]) =>
      applyProbes(
        initialHealth(T0),
        ok.map((o, i) => ({ ok: o, atMs: T0 + (i + 1) * 1000, ...(o ? {} : { message: "HTTP 500" }) })),
      );
    const now = T0 + 4_000;
    const targets = [
      on(route(0, "DEGRADED", { health: probes([true]) }), "RUNNING"),
      on(route(1, "HEALTHY", { health: probes([false, false, false]) }), "RUNNING"),
      on(route(2, "HEALTHY", { health: initialHealth(T0 - 60_000) }), "RUNNING"),
      on(route(3, "UNHEALTHY", { health: probes([false, true]) }), "RUNNING"),
      on(route(4, "HEALTHY", { health: probes([true, false]) }), "RUNNING"),
    ];
    expect(judgeRoute("HealthCheckRoute", healthCheckRoute(d, targets, now), targets)).toEqual([
      "web-r0 SUCCESS DEGRADED->HEALTHY",
      "web-r3 SUCCESS UNHEALTHY->HEALTHY",
      "web-r1 FAILURE HEALTHY->UNHEALTHY",
      "web-r2 STALE HEALTHY->DEGRADED",
    ]);
  });

  test("RunningRoute: a route whose session ended, or that failed to start, → TERMINATING", () => {
    const targets = [
      on(route(0, "HEALTHY"), "RUNNING"),
      on(route(1, "UNHEALTHY"), "TERMINATED", "failed"),
      on(route(2, "FAILED_TO_START"), "TERMINATED"),
      on(route(3, "DEGRADED"), undefined),
    ];
    expect(judgeRoute("RunningRoute", runningRoute(targets), targets)).toEqual([
      "web-r0 SUCCESS HEALTHY->=",
      "web-r1 FAILURE UNHEALTHY->TERMINATING",
      "web-r2 FAILURE FAILED_TO_START->TERMINATING",
      "web-r3 FAILURE DEGRADED->TERMINATING",
    ]);
  });

  test("RouteEviction: an UNHEALTHY route failing twice the threshold in a row → TERMINATING, saying why; one within the grace is left", () => {
    const sick = (consecutiveFailures: number) =>
      route(1, "UNHEALTHY", {
        health: { ...initialHealth(T0), consecutiveFailures, lastMessage: "HTTP 500" },
      });
    const d = webDeployment(2);
    expect(evictionFailures(d.spec.healthCheck)).toBe(6);
    const result = routeEviction(d, [on(sick(6), "RUNNING")]);
    expect(result.messages).toEqual({
      "web-r1": "evicted: failed 6 health checks in a row without recovering (HTTP 500)",
    });
    expect(judgeRoute("RouteEviction", result, [on(sick(6), "RUNNING")])).toEqual([
      "web-r1 SUCCESS UNHEALTHY->TERMINATING",
    ]);
    expect(routeEviction(d, [on(sick(5), "RUNNING")])).toMatchObject({ successes: [], failures: [] });
  });

  test("TerminatingRoute: ended → TERMINATED; a session still running is cancelled first", () => {
    const targets = [on(route(0, "TERMINATING"), "RUNNING"), on(route(1, "TERMINATING"), "CANCELLED")];
    const { result, cancel } = terminatingRoute(targets);
    expect(cancel).toEqual(["web-r0"]);
    expect(judgeRoute("TerminatingRoute", result, targets)).toEqual([
      "web-r1 SUCCESS TERMINATING->TERMINATED",
    ]);
  });
});

describe("deployment handlers", () => {
  test("CheckPendingDeployment starts scaling", () => {
    const d = deployment(3, { status: "PENDING" });
    expect(judgeDeployment("CheckPendingDeployment", checkPendingDeployment(d), d)).toEqual([
      "web SUCCESS PENDING->SCALING",
    ]);
  });

  test.each([
    // [replicas, routes, routes created, routes removed, READY now (after removals: the next pass)]
    [3, [], [0, 1, 2], [], false],
    [3, ["HEALTHY", "PROVISIONING", "DEGRADED"], [], [], false],
    [3, ["HEALTHY", "DEGRADED", "HEALTHY"], [], [], true],
    [5, ["HEALTHY", "HEALTHY", "HEALTHY"], [3, 4], [], false],
    [
      2,
      ["HEALTHY", "UNHEALTHY", "HEALTHY", "PROVISIONING", "HEALTHY"],
      [],
      ["web-r1", "web-r3", "web-r4"],
      false,
    ],
    [2, ["HEALTHY", "TERMINATING", "HEALTHY", "TERMINATED"], [], [], true],
    [0, ["HEALTHY"], [], ["web-r0"], false],
    [0, [], [], [], true],
  ] as const)("ScalingDeployment to %d from %o", (replicas, statuses, create, remove, ready) => {
    const routes = statuses.map((s, i) => route(i, s));
    const d = deployment(replicas, { nextRouteIndex: routes.length });
    const plan = scalingDeployment(d, routes, T0);
    expect(plan.create).toEqual(create);
    expect(plan.remove).toEqual(remove);
    expect(judgeDeployment("ScalingDeployment", plan.result, d)).toEqual(
      ready ? ["web SUCCESS SCALING->READY"] : [],
    );
  });

  test("replacements are held back after failed starts: 10 s, doubling, at most 5 minutes", () => {
    expect([0, 1, 2, 3, 4, 5, 6, 9].map(replacementDelayMs)).toEqual([
      0, 10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000,
    ]);
  });

  test.each([
    ["before the hold-back has passed: nothing created, SCALING says why", T0 + 19_999, []],
    ["once it has passed: the replacement is created", T0 + 20_000, [3]],
  ] as const)("ScalingDeployment after 2 failed starts in a row, %s", (_, nowMs, create) => {
    const routes = [route(0, "HEALTHY"), route(1, "TERMINATED"), route(2, "TERMINATED")];
    const d = deployment(2, { nextRouteIndex: 3, failedStarts: { count: 2, lastAtMs: T0 } });
    const plan = scalingDeployment(d, routes, nowMs);
    expect(plan.create).toEqual(create);
    if (create.length === 0) {
      expect(plan.result).toEqual({
        successes: [],
        failures: ["web"],
        messages: {
          web: `2 replica(s) in a row failed: new ones held back until ${new Date(T0 + 20_000).toISOString()}`,
        },
      });
      // FAILURE maintains SCALING.
      expect(judgeDeployment("ScalingDeployment", plan.result, d)).toEqual(["web FAILURE SCALING->="]);
    } else {
      expect(plan.result.failures).toEqual([]);
    }
  });

  test("CheckReplicaDeployment: a scale request (or a route gone) sends READY back to SCALING", () => {
    const ready = (replicas: number) => deployment(replicas, { status: "READY" });
    const three = [route(0, "HEALTHY"), route(1, "HEALTHY"), route(2, "HEALTHY")];
    expect(
      judgeDeployment("CheckReplicaDeployment", checkReplicaDeployment(ready(3), three), ready(3)),
    ).toEqual([]);
    expect(
      judgeDeployment("CheckReplicaDeployment", checkReplicaDeployment(ready(5), three), ready(5)),
    ).toEqual(["web SUCCESS READY->SCALING"]);
    const evicted = [route(0, "HEALTHY"), route(1, "TERMINATING"), route(2, "HEALTHY")];
    expect(checkReplicaDeployment(ready(3), evicted).messages).toEqual({ web: "2 replica(s), 3 asked for" });
  });

  test("ReconcileDeployment: a live route whose session ended is a mismatch → SCALING", () => {
    const d = deployment(2, { status: "READY" });
    const agree = [on(route(0, "HEALTHY"), "RUNNING"), on(route(1, "PROVISIONING"), undefined)];
    expect(judgeDeployment("ReconcileDeployment", reconcileDeployment(d, agree), d)).toEqual([
      "web SUCCESS READY->=",
    ]);
    const killed = [on(route(0, "HEALTHY"), "RUNNING"), on(route(1, "HEALTHY"), "TERMINATED", "failed")];
    const result = reconcileDeployment(d, killed);
    expect(result.messages).toEqual({ web: "web-r1 is HEALTHY but its session ended TERMINATED (failed)" });
    expect(judgeDeployment("ReconcileDeployment", result, d)).toEqual(["web FAILURE READY->SCALING"]);
  });

  test("DestroyingDeployment removes every live route, and is DESTROYED once all are TERMINATED", () => {
    const d = deployment(3, { status: "DESTROYING" });
    const first = destroyingDeployment(d, [
      route(0, "HEALTHY"),
      route(1, "TERMINATING"),
      route(2, "TERMINATED"),
    ]);
    expect(first.remove).toEqual(["web-r0"]);
    expect(judgeDeployment("DestroyingDeployment", first.result, d)).toEqual([]);
    const done = destroyingDeployment(d, [route(0, "TERMINATED"), route(1, "TERMINATED")]);
    expect(judgeDeployment("DestroyingDeployment", done.result, d)).toEqual([
      "web SUCCESS DESTROYING->DESTROYED",
    ]);
    expect(judgeDeployment("DestroyingDeployment", destroyingDeployment(d, []).result, d)).toEqual([
      "web SUCCESS DESTROYING->DESTROYED",
    ]);
  });
});
