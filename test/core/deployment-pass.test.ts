/**
 * One pass of a deployment's handlers (core/deployments/pass.ts), case by case: what it writes,
 * which callbacks it sends (SendTaskSuccess for a state's first edge, Cairn.To.<STATUS> for the
 * others, Cairn.Renew before the history limit), and what it starts, submits and cancels.
 */
import { describe, expect, test } from "vitest";
import type { BackingSession } from "../../functions/core/deployments/handlers.ts";
import { CRASH_LOOP_RESET_MS, resetAfterHealthy } from "../../functions/core/deployments/crash-loop.ts";
import { initialHealth } from "../../functions/core/deployments/health.ts";
import { routeId, type Deployment, type Route } from "../../functions/core/deployments/model.ts";
import {
  executionName,
  generationOf,
  newDeployment,
  planPass,
  RENEW_AFTER_TRANSITIONS,
  type PassPlan,
} from "../../functions/core/deployments/pass.ts";
import { MAX_CHANGE_ITEMS } from "../../functions/core/ports/deployments.ts";
import type { DeploymentStatus, RouteStatus } from "../../functions/core/deployments/tables.ts";
import type { SessionStatus } from "../../functions/core/status.ts";
import { T0, webDeployment, webRoute } from "./deployment-fixtures.ts";

const NOW = T0 + 60_000;

const deployment = (status: DeploymentStatus, replicas: number, over: Partial<Deployment> = {}): Deployment =>
  webDeployment(replicas, {
    status,
    execution: { name: "web", generation: 1, transitions: 2, startedAtMs: T0 },
    ...over,
  });

/** A route that has entered its status (one transition), checked since a second ago. */
const route = (index: number, status: RouteStatus, over: Partial<Route> = {}): Route =>
  webRoute(index, status, {
    execution: { name: routeId("web", index), generation: 1, transitions: 1, startedAtMs: T0 },
    health: initialHealth(NOW - 1_000),
    ...over,
  });

const sessions = (...entries: [number, SessionStatus, string?][]): Map<string, BackingSession> =>
  new Map(
    entries.map(([index, status, result]) => [
      routeId("web", index),
      { status, routeId: routeId("web", index), ...(result !== undefined ? { result } : {}) },
    ]),
  );

const pass = (d: Deployment, routes: Route[], s = new Map<string, BackingSession>(), nowMs = NOW): PassPlan =>
  planPass({ deployment: d, routes, sessions: s, nowMs });

/** The callbacks as `id: from→to (how)`. */
const callbacks = (plan: PassPlan) =>
  plan.callbacks.map(
    (c) =>
      `${c.id}: ${c.leaving.transition.from}→${c.leaving.transition.to} (${c.leaving.error ?? "success"})`,
  );
const history = (plan: PassPlan) =>
  (plan.change?.history ?? []).map(
    (h) => `${h.id} ${h.handler} ${h.result} ${h.fromStatus}→${h.toStatus ?? "="}`,
  );

describe("the deployment's handlers", () => {
  test("PENDING: CheckPendingDeployment starts scaling (the first edge: SendTaskSuccess)", () => {
    const plan = pass(deployment("PENDING", 3), []);
    expect(callbacks(plan)).toEqual(["web: PENDING→SCALING (success)"]);
    expect(history(plan)).toEqual(["web CheckPendingDeployment SUCCESS PENDING→SCALING"]);
    expect(plan.change?.deployment?.expected).toEqual({ status: "PENDING", version: 3 });
  });

  test("a new deployment whose execution never entered PENDING is started (again)", () => {
    const fresh = newDeployment("web", deployment("PENDING", 1).spec, NOW);
    const plan = pass(fresh, []);
    expect(plan.startDeployment).toBe(true);
    expect(plan.callbacks).toEqual([]);
    expect(plan.change).toBeUndefined();
  });

  test("SCALING with no routes creates them all, with ids never reused, and waits", () => {
    const plan = pass(deployment("SCALING", 3, { nextRouteIndex: 4 }), []);
    expect(plan.startRoutes.map((r) => r.id)).toEqual(["web-r4", "web-r5", "web-r6"]);
    expect(plan.submit.map((r) => r.id)).toEqual(["web-r4", "web-r5", "web-r6"]);
    expect(plan.change?.routes?.map((r) => r.expected)).toEqual(["absent", "absent", "absent"]);
    expect(plan.change?.deployment?.next.nextRouteIndex).toBe(7);
    expect(plan.callbacks).toEqual([]);
  });

  test("SCALING waits while a route provisions, then is READY", () => {
    const routes = [route(0, "DEGRADED"), route(1, "PROVISIONING")];
    expect(
      callbacks(pass(deployment("SCALING", 2), routes, sessions([0, "RUNNING"], [1, "PREPARING"]))),
    ).toEqual([]);
    const ready = pass(
      deployment("SCALING", 2),
      [route(0, "DEGRADED"), route(1, "HEALTHY")],
      sessions([0, "RUNNING"], [1, "RUNNING"]),
    );
    expect(callbacks(ready)).toContain("web: SCALING→READY (success)");
  });

  test("SCALING down removes the least useful routes, newest first; they leave for TERMINATING", () => {
    const routes = [route(0, "HEALTHY"), route(1, "DEGRADED"), route(2, "HEALTHY"), route(3, "UNHEALTHY")];
    const all = sessions([0, "RUNNING"], [1, "RUNNING"], [2, "RUNNING"], [3, "RUNNING"]);
    const plan = pass(deployment("SCALING", 2), routes, all);
    expect(callbacks(plan)).toEqual([
      // web-r3 was UNHEALTHY, within its eviction grace: the scale-down takes it (TERMINATING is its first edge).
      "web-r1: DEGRADED→TERMINATING (Cairn.To.TERMINATING)",
      "web-r3: UNHEALTHY→TERMINATING (success)",
    ]);
    expect(
      plan.change?.routes?.filter((r) => r.next.removeRequestedAtMs !== undefined).map((r) => r.next.id),
    ).toEqual(["web-r1", "web-r3"]);
  });

  test("READY: another replica count (CheckReplicaDeployment) goes back to SCALING", () => {
    const plan = pass(
      deployment("READY", 3),
      [route(0, "HEALTHY"), route(1, "HEALTHY")],
      sessions([0, "RUNNING"], [1, "RUNNING"]),
    );
    expect(callbacks(plan)).toEqual(["web: READY→SCALING (success)"]);
    expect(history(plan)).toContain("web CheckReplicaDeployment SUCCESS READY→SCALING");
  });

  test("READY: a replica whose session ended (ReconcileDeployment FAILURE) → SCALING; the route leaves", () => {
    const plan = pass(
      deployment("READY", 2),
      [route(0, "HEALTHY"), route(1, "HEALTHY", { stage: { enteredAtMs: T0 } })],
      sessions([0, "RUNNING"], [1, "TERMINATED", "failed"]),
    );
    // SCALING is READY's first edge, whichever handler leads there.
    expect(callbacks(plan)).toEqual(["web: READY→SCALING (success)"]);
    expect(history(plan)).toContain("web ReconcileDeployment FAILURE READY→SCALING");
  });

  test("READY and in agreement: ReconcileDeployment SUCCESS is recorded once per stay", () => {
    const routes = [
      route(0, "HEALTHY", {
        agentId: "a",
        port: 8000,
        maintained: { HealthCheckRoute: "SUCCESS", ServiceDiscoverySync: "SUCCESS", RunningRoute: "SUCCESS" },
      }),
    ];
    const first = pass(deployment("READY", 1), routes, sessions([0, "RUNNING"]));
    expect(history(first)).toEqual(["web ReconcileDeployment SUCCESS READY→="]);
    expect(first.callbacks).toEqual([]);
    const again = pass(first.change!.deployment!.next, routes, sessions([0, "RUNNING"]));
    expect(again.change).toBeUndefined();
  });

  test("a destroy request takes PENDING, SCALING or READY to DESTROYING", () => {
    for (const status of ["PENDING", "SCALING", "READY"] as const) {
      const plan = pass(deployment(status, 1, { destroyRequest: { atMs: T0, reason: "retired" } }), []);
      expect(callbacks(plan)).toEqual([`web: ${status}→DESTROYING (Cairn.To.DESTROYING)`]);
      expect(history(plan)).toEqual([`web Destroy SUCCESS ${status}→DESTROYING`]);
    }
  });

  test("DESTROYING removes every live route, and is DESTROYED once all are TERMINATED", () => {
    const plan = pass(
      deployment("DESTROYING", 2),
      [route(0, "HEALTHY"), route(1, "TERMINATED", { stage: { enteredAtMs: T0 } })],
      sessions([0, "RUNNING"]),
    );
    expect(callbacks(plan)).toEqual(["web-r0: HEALTHY→TERMINATING (Cairn.To.TERMINATING)"]);
    const done = pass(deployment("DESTROYING", 2), [route(1, "TERMINATED", { stage: { enteredAtMs: T0 } })]);
    expect(callbacks(done)).toEqual(["web: DESTROYING→DESTROYED (success)"]);
  });

  test("a deployment ended by a failed lifecycle leaves no route behind", () => {
    const plan = pass(
      deployment("DESTROYED", 1, { stage: { enteredAtMs: T0 } }),
      [route(0, "HEALTHY")],
      sessions([0, "RUNNING"]),
    );
    expect(callbacks(plan)).toEqual(["web-r0: HEALTHY→TERMINATING (Cairn.To.TERMINATING)"]);
  });
});

describe("the routes' handlers", () => {
  const d = deployment("READY", 1);
  const one = (r: Route, s = new Map<string, BackingSession>(), nowMs = NOW) =>
    pass({ ...d, stage: { enteredAtMs: T0 } }, [r], s, nowMs);

  test("ProvisioningRoute: a running session → DEGRADED; an ended one → FAILED_TO_START", () => {
    const probed = { ...initialHealth(T0), consecutiveFailures: 1, lastProbeAtMs: NOW - 1_000 };
    expect(callbacks(one(route(0, "PROVISIONING", { health: probed }), sessions([0, "RUNNING"])))).toEqual([
      "web-r0: PROVISIONING→DEGRADED (success)",
    ]);
    // Not probed yet: it may still exit at once, so it waits.
    expect(one(route(0, "PROVISIONING"), sessions([0, "RUNNING"])).callbacks).toEqual([]);
    const failed = one(route(0, "PROVISIONING"), sessions([0, "TERMINATED", "failed"]));
    expect(callbacks(failed)).toEqual(["web-r0: PROVISIONING→FAILED_TO_START (Cairn.To.FAILED_TO_START)"]);
    expect(failed.change?.history?.[0]?.message).toBe("its session ended TERMINATED (failed) before it ran");
  });

  test("a replica failing to start is counted on the deployment, with why", () => {
    const failed = one(route(0, "PROVISIONING"), sessions([0, "TERMINATED", "failed"]));
    expect(failed.change?.deployment?.next.failedStarts).toEqual({
      count: 1,
      lastAtMs: NOW,
      lastReason: "web-r0 failed to start: its session ended TERMINATED (failed) before it ran",
    });
    const again = pass(
      { ...d, stage: { enteredAtMs: T0 }, failedStarts: { count: 1, lastAtMs: T0 } },
      [route(1, "PROVISIONING")],
      sessions([1, "TERMINATED", "failed"]),
    );
    expect(again.change?.deployment?.next.failedStarts).toMatchObject({ count: 2, lastAtMs: NOW });
  });

  test("a replica that runs but never passes its health check is counted when it is evicted; removed ones are not", () => {
    const failing = route(0, "UNHEALTHY", {
      health: {
        consecutiveSuccesses: 0,
        consecutiveFailures: 6,
        lastProbeAtMs: NOW - 1_000,
        lastMessage: "connect ECONNREFUSED 127.0.0.1:9000",
        checkedSinceMs: T0,
      },
    });
    const evicted = one(failing, sessions([0, "RUNNING"]));
    expect(callbacks(evicted)).toEqual(["web-r0: UNHEALTHY→TERMINATING (success)"]);
    expect(evicted.change?.deployment?.next.failedStarts).toEqual({
      count: 1,
      lastAtMs: NOW,
      lastReason:
        "web-r0 failed: evicted: failed 6 health checks in a row without recovering (connect ECONNREFUSED 127.0.0.1:9000)",
    });
    // A replica whose session ended on its own failed too.
    const ended = one(route(0, "HEALTHY"), sessions([0, "TERMINATED", "failed"]));
    expect(ended.change?.deployment?.next.failedStarts?.count).toBe(1);
    // One the deployment no longer wants (scaled down) did not.
    const removed = one(route(0, "HEALTHY", { removeRequestedAtMs: NOW - 1 }), sessions([0, "RUNNING"]));
    expect(callbacks(removed)).toEqual(["web-r0: HEALTHY→TERMINATING (Cairn.To.TERMINATING)"]);
    expect(removed.change?.deployment?.next.failedStarts).toBeUndefined();
  });

  test("the count is forgotten once a replica started after the latest failure has been HEALTHY for 10 minutes", () => {
    const looping = { ...d, failedStarts: { count: 4, lastAtMs: T0 } };
    const healthy = (createdAtMs: number, enteredAtMs: number) =>
      route(1, "HEALTHY", { createdAtMs, stage: { enteredAtMs, taskToken: "tok-r1" } });
    const since = T0 + 1_000;
    // Healthy for 9 min 59.999 s: still counted.
    expect(resetAfterHealthy(looping, [healthy(T0 + 1, since)], since + 599_999)).toBe(looping);
    // Ten minutes: forgotten.
    expect(
      resetAfterHealthy(looping, [healthy(T0 + 1, since)], since + CRASH_LOOP_RESET_MS),
    ).not.toHaveProperty("failedStarts");
    // A replica healthy since before the failures proves nothing about the ones that fail.
    expect(resetAfterHealthy(looping, [healthy(T0 - 1, T0 - 1)], T0 + 3_600_000)).toBe(looping);
    // The pass writes it: a replica becoming HEALTHY no longer ends the count at once.
    const probed = route(2, "DEGRADED", {
      createdAtMs: T0 + 1,
      health: {
        consecutiveSuccesses: 1,
        consecutiveFailures: 0,
        lastProbeAtMs: NOW - 1_000,
        checkedSinceMs: T0,
      },
    });
    const recovered = pass({ ...looping, stage: { enteredAtMs: T0 } }, [probed], sessions([2, "RUNNING"]));
    expect(callbacks(recovered)).toEqual(["web-r2: DEGRADED→HEALTHY (success)"]);
    expect(recovered.change?.deployment?.next.failedStarts).toEqual(looping.failedStarts);
  });
  test("ProvisioningRoute: no session yet → the submission is repeated, nothing decided", () => {
    const plan = one(route(0, "PROVISIONING"));
    expect(plan.submit.map((r) => r.id)).toEqual(["web-r0"]);
    expect(plan.callbacks).toEqual([]);
  });

  test("a session that is another route's backs nothing", () => {
    const other = new Map<string, BackingSession>([["web-r0", { status: "RUNNING", routeId: "" }]]);
    expect(one(route(0, "PROVISIONING"), other).submit.map((r) => r.id)).toEqual(["web-r0"]);
  });

  test("HealthCheckRoute: a passing probe → HEALTHY; failures in a row → UNHEALTHY", () => {
    const healthy = route(0, "DEGRADED", {
      health: {
        consecutiveSuccesses: 1,
        consecutiveFailures: 0,
        lastProbeAtMs: NOW - 1_000,
        checkedSinceMs: T0,
      },
    });
    expect(callbacks(one(healthy, sessions([0, "RUNNING"])))).toEqual(["web-r0: DEGRADED→HEALTHY (success)"]);
    const failing = route(0, "HEALTHY", {
      health: {
        consecutiveSuccesses: 0,
        consecutiveFailures: 3,
        lastProbeAtMs: NOW - 1_000,
        lastMessage: "HTTP 500",
        checkedSinceMs: T0,
      },
    });
    expect(callbacks(one(failing, sessions([0, "RUNNING"])))).toEqual([
      "web-r0: HEALTHY→UNHEALTHY (success)",
    ]);
    const degradedFailing = { ...failing, status: "DEGRADED" as const };
    expect(callbacks(one(degradedFailing, sessions([0, "RUNNING"])))).toEqual([
      "web-r0: DEGRADED→UNHEALTHY (Cairn.To.UNHEALTHY)",
    ]);
  });

  test("HealthCheckRoute STALE: a HEALTHY route not reported on → DEGRADED; a DEGRADED one stays, recorded once", () => {
    const stale = route(0, "HEALTHY", {
      health: {
        consecutiveSuccesses: 4,
        consecutiveFailures: 0,
        lastProbeAtMs: NOW - 13_000,
        checkedSinceMs: T0,
      },
    });
    const plan = one(stale, sessions([0, "RUNNING"]));
    expect(callbacks(plan)).toEqual(["web-r0: HEALTHY→DEGRADED (Cairn.To.DEGRADED)"]);
    expect(history(plan)).toEqual(["web-r0 HealthCheckRoute STALE HEALTHY→DEGRADED"]);
    const degraded = { ...stale, status: "DEGRADED" as const, maintained: { RunningRoute: "SUCCESS" } };
    const first = one(degraded, sessions([0, "RUNNING"]));
    expect(history(first)).toEqual(["web-r0 HealthCheckRoute STALE DEGRADED→="]);
    expect(first.callbacks).toEqual([]);
    const second = one(first.change!.routes![0]!.next, sessions([0, "RUNNING"]));
    expect(second.change).toBeUndefined();
  });

  test("RunningRoute: a replica whose session ended is terminated, whatever its probes said", () => {
    const plan = one(route(0, "HEALTHY"), sessions([0, "TERMINATED", "failed"]));
    expect(callbacks(plan)).toEqual(["web-r0: HEALTHY→TERMINATING (Cairn.To.TERMINATING)"]);
    expect(history(plan)).toEqual(["web-r0 RunningRoute FAILURE HEALTHY→TERMINATING"]);
    expect(callbacks(one(route(0, "FAILED_TO_START"), sessions([0, "TERMINATED", "failed"])))).toEqual([
      "web-r0: FAILED_TO_START→TERMINATING (success)",
    ]);
  });

  /** An UNHEALTHY route whose probes say `over` (default health check: thresholds 1 and 3). */
  const unhealthy = (over: Partial<Route["health"]>): Route =>
    route(0, "UNHEALTHY", {
      health: { ...initialHealth(T0), lastProbeAtMs: NOW - 500, lastMessage: "HTTP 500", ...over },
    });

  test("RouteEviction: UNHEALTHY → TERMINATING once it kept failing past the grace (twice the threshold)", () => {
    const plan = one(unhealthy({ consecutiveFailures: 6 }), sessions([0, "RUNNING"]));
    expect(callbacks(plan)).toEqual(["web-r0: UNHEALTHY→TERMINATING (success)"]);
    expect(plan.change?.history?.[0]?.message).toBe(
      "evicted: failed 6 health checks in a row without recovering (HTTP 500)",
    );
  });

  test('Backend.AI: UNHEALTHY → HEALTHY "on health recovery": the health check acts before eviction', () => {
    // HealthCheckRoute | HEALTHY, UNHEALTHY, DEGRADED | HEALTHY | UNHEALTHY | DEGRADED
    const within = one(unhealthy({ consecutiveFailures: 5 }), sessions([0, "RUNNING"]));
    expect(within.callbacks).toEqual([]);
    expect(history(within)).toEqual(["web-r0 HealthCheckRoute FAILURE UNHEALTHY→="]);
    const recovered = one(
      unhealthy({ consecutiveFailures: 0, consecutiveSuccesses: 1, lastMessage: "HTTP 500" }),
      sessions([0, "RUNNING"]),
    );
    expect(callbacks(recovered)).toEqual(["web-r0: UNHEALTHY→HEALTHY (Cairn.To.HEALTHY)"]);
    expect(history(recovered)).toEqual(["web-r0 HealthCheckRoute SUCCESS UNHEALTHY→HEALTHY"]);
    const stale = one(
      unhealthy({ consecutiveFailures: 6, lastProbeAtMs: NOW - 13_000 }),
      sessions([0, "RUNNING"]),
    );
    expect(callbacks(stale)).toEqual(["web-r0: UNHEALTHY→DEGRADED (Cairn.To.DEGRADED)"]);
    // A replica whose session ended is terminated first, whatever its probes say.
    expect(
      callbacks(
        one(
          unhealthy({ consecutiveSuccesses: 1, consecutiveFailures: 0 }),
          sessions([0, "TERMINATED", "failed"]),
        ),
      ),
    ).toEqual(["web-r0: UNHEALTHY→TERMINATING (success)"]);
  });

  test("TerminatingRoute: cancels a running session; TERMINATED once it has ended", () => {
    const running = one(route(0, "TERMINATING"), sessions([0, "RUNNING"]));
    expect(running.cancel).toEqual([{ sessionId: "web-r0", reason: "route web-r0 is terminating" }]);
    expect(running.callbacks).toEqual([]);
    const ended = one(route(0, "TERMINATING"), sessions([0, "CANCELLED", "cancelled"]));
    expect(ended.cancel).toEqual([]);
    expect(callbacks(ended)).toEqual(["web-r0: TERMINATING→TERMINATED (success)"]);
  });

  test("ServiceDiscoverySync: a HEALTHY route's endpoint is recorded once per stay", () => {
    const serving = route(0, "HEALTHY", {
      agentId: "host-a",
      port: 8080,
      health: {
        consecutiveSuccesses: 2,
        consecutiveFailures: 0,
        lastProbeAtMs: NOW - 500,
        checkedSinceMs: T0,
      },
      maintained: { RunningRoute: "SUCCESS" },
    });
    const plan = one(serving, sessions([0, "RUNNING"]));
    expect(history(plan)).toEqual(["web-r0 ServiceDiscoverySync SUCCESS HEALTHY→="]);
    expect(plan.change?.history?.[0]?.message).toBe("serving on host-a:8080");
  });
});

describe("callbacks and renewal", () => {
  test("a callback decided earlier (stage.leaving) is sent again, with nothing new decided or written", () => {
    const leaving = {
      transition: { from: "PENDING", to: "SCALING", result: "SUCCESS", handler: "CheckPendingDeployment" },
    };
    const plan = pass(
      deployment("PENDING", 1, { stage: { enteredAtMs: T0, taskToken: "tok", leaving } }),
      [],
    );
    expect(callbacks(plan)).toEqual(["web: PENDING→SCALING (success)"]);
    expect(plan.change).toBeUndefined();
  });

  test("an execution past its transitions is renewed (Cairn.Renew) instead of moved", () => {
    const old = deployment("PENDING", 1, {
      execution: { name: "web-g3", generation: 3, transitions: RENEW_AFTER_TRANSITIONS, startedAtMs: T0 },
    });
    expect(callbacks(pass(old, []))).toEqual(["web: PENDING→SCALING (Cairn.Renew)"]);
  });

  test("execution names: <id>, then <id>-g<n>; a name of another entity is none of its", () => {
    expect([executionName("web", 1), executionName("web", 2)]).toEqual(["web", "web-g2"]);
    expect([
      generationOf("web", "web"),
      generationOf("web", "web-g7"),
      generationOf("web", "web-r1-g2"),
    ]).toEqual([1, 7, undefined]);
  });

  test("a deployment created again after it was destroyed goes on counting its generations and routes", () => {
    const destroyed = deployment("DESTROYED", 2, {
      nextRouteIndex: 5,
      execution: { name: "web-g2", generation: 2, transitions: 9, startedAtMs: T0 },
    });
    const again = newDeployment("web", destroyed.spec, NOW, destroyed);
    expect(again.execution).toEqual({ name: "web-g3", generation: 3, transitions: 0, startedAtMs: NOW });
    expect(again.nextRouteIndex).toBe(5);
    expect(again.status).toBe("PENDING");
  });
});

describe("one write's worth at a time", () => {
  test("scaling 0 → 64 creates every route in one write (65 items)", () => {
    const plan = pass(deployment("SCALING", 64), []);
    expect(plan.change?.routes?.length).toBe(64);
    expect(plan.more).toBe(false);
  });

  test("64 routes each with a decision and a removal are judged across passes, never one oversized write", () => {
    const routes = Array.from({ length: 64 }, (_, i) =>
      route(i, "HEALTHY", { removeRequestedAtMs: T0, agentId: "a", port: 9000 + i }),
    );
    const all = new Map(routes.map((r) => [r.sessionId, { status: "RUNNING" as const, routeId: r.id }]));
    const plan = pass(deployment("DESTROYING", 0), routes, all);
    const items = (plan.change?.routes?.length ?? 0) + (plan.change?.history?.length ?? 0) + 1;
    expect(items).toBeLessThanOrEqual(MAX_CHANGE_ITEMS);
    expect(plan.more).toBe(true);
    // The next pass, from what this one wrote, takes the rest.
    const written = new Map(plan.change!.routes!.map((r) => [r.next.id, r.next]));
    const after = routes.map((r) => written.get(r.id) ?? r);
    const next = pass(deployment("DESTROYING", 0), after, all);
    const nextItems = (next.change?.routes?.length ?? 0) + (next.change?.history?.length ?? 0) + 1;
    expect(nextItems).toBeLessThanOrEqual(MAX_CHANGE_ITEMS);
    // Every route leaves (the first pass's callbacks are sent again until their states are entered).
    expect(new Set([...plan.callbacks, ...next.callbacks].map((c) => c.id)).size).toBe(64);
  });
});
