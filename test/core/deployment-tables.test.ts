/**
 * The deployment and route tables of Backend.AI's Sokovan (001_d9b509ca94f26bf4.txt), one case per
 * row, written here as literal data copied from the seed text ("Handler | Current | SUCCESS |
 * FAILURE [| STALE]"; "(maintain)" and "-" are null), never derived from the code under test. Each
 * row is checked twice: the table in the core says the same, and judging a target of each current
 * status with each outcome moves it where the row says and records the seed's result.
 */
import { describe, expect, test } from "vitest";
import { judgeDeployments, judgeRoutes } from "../../functions/core/deployments/judge.ts";
import {
  DEPLOYMENT_HANDLERS,
  DEPLOYMENT_STATUSES,
  ROUTE_HANDLERS,
  ROUTE_STATUSES,
  type DeploymentHandlerName,
  type DeploymentStatus,
  type RouteHandlerName,
  type RouteStatus,
} from "../../functions/core/deployments/tables.ts";

const NOW_MS = 1_767_225_600_000;

// Lowercased enum values in the seed (`PENDING = "pending"`), upper-cased as Cairn spells statuses.
const SEED_ENDPOINT_LIFECYCLE = [
  "PENDING",
  "CREATED",
  "SCALING",
  "READY",
  "DEPLOYING",
  "DESTROYING",
  "DESTROYED",
];
const SEED_ROUTE_STATUS = [
  "PROVISIONING",
  "HEALTHY",
  "UNHEALTHY",
  "DEGRADED",
  "TERMINATING",
  "TERMINATED",
  "FAILED_TO_START",
];

/** | Handler | Current | SUCCESS | FAILURE | */
const SEED_DEPLOYMENT_ROWS: [
  DeploymentHandlerName,
  DeploymentStatus[],
  DeploymentStatus | null,
  DeploymentStatus | null,
][] = [
  ["CheckPendingDeployment", ["PENDING", "CREATED"], "SCALING", null],
  ["ScalingDeployment", ["SCALING"], "READY", null],
  ["CheckReplicaDeployment", ["READY"], "SCALING", null],
  ["ReconcileDeployment", ["READY"], null, "SCALING"],
  ["DestroyingDeployment", ["DESTROYING"], "DESTROYED", "DESTROYED"],
];

/** | Handler | Current | SUCCESS | FAILURE | STALE | */
const SEED_ROUTE_ROWS: [
  RouteHandlerName,
  RouteStatus[],
  RouteStatus | null,
  RouteStatus | null,
  RouteStatus | null,
][] = [
  ["ProvisioningRoute", ["PROVISIONING"], "DEGRADED", "FAILED_TO_START", null],
  ["HealthCheckRoute", ["HEALTHY", "UNHEALTHY", "DEGRADED"], "HEALTHY", "UNHEALTHY", "DEGRADED"],
  ["RunningRoute", ["DEGRADED", "HEALTHY", "UNHEALTHY", "FAILED_TO_START"], null, "TERMINATING", null],
  ["RouteEviction", ["UNHEALTHY"], "TERMINATING", null, null],
  ["TerminatingRoute", ["TERMINATING"], "TERMINATED", null, null],
  ["ServiceDiscoverySync", ["HEALTHY"], null, null, null],
];

describe("the seed's enums", () => {
  test("EndpointLifecycle and RouteStatus, value for value", () => {
    expect(DEPLOYMENT_STATUSES).toEqual(SEED_ENDPOINT_LIFECYCLE);
    expect(ROUTE_STATUSES).toEqual(SEED_ROUTE_STATUS);
  });

  test("5 deployment handlers and 6 route handlers, as the seed counts them", () => {
    expect(Object.keys(DEPLOYMENT_HANDLERS).sort()).toEqual(SEED_DEPLOYMENT_ROWS.map((r) => r[0]).sort());
    expect(Object.keys(ROUTE_HANDLERS).sort()).toEqual(SEED_ROUTE_ROWS.map((r) => r[0]).sort());
  });
});

describe.each(SEED_DEPLOYMENT_ROWS)("deployment row %s", (name, current, success, failure) => {
  const spec = DEPLOYMENT_HANDLERS[name];

  test("the core's table says the same", () => {
    expect(spec.targetStatuses).toEqual(current);
    expect(spec.success ?? null).toBe(success);
    expect(spec.failure ?? null).toBe(failure);
  });

  test.each(current)(
    "from %s: SUCCESS and FAILURE move the target as the row says, and are recorded",
    (from) => {
      const decisions = judgeDeployments(
        spec,
        { successes: ["d-ok"], failures: ["d-bad"], messages: { "d-bad": "no capacity" } },
        [
          { id: "d-ok", status: from },
          { id: "d-bad", status: from },
        ],
        NOW_MS,
      );
      const moved = (to: DeploymentStatus | null) => (to !== null && to !== from ? to : undefined);
      expect(decisions).toEqual([
        {
          id: "d-ok",
          result: "SUCCESS",
          from,
          ...(moved(success) ? { to: moved(success) } : {}),
          history: {
            id: "d-ok",
            handler: name,
            result: "SUCCESS",
            fromStatus: from,
            ...(moved(success) ? { toStatus: moved(success) } : {}),
            atMs: NOW_MS,
          },
        },
        {
          id: "d-bad",
          result: "FAILURE",
          from,
          ...(moved(failure) ? { to: moved(failure) } : {}),
          history: {
            id: "d-bad",
            handler: name,
            result: "FAILURE",
            fromStatus: from,
            ...(moved(failure) ? { toStatus: moved(failure) } : {}),
            message: "no capacity",
            atMs: NOW_MS,
          },
        },
      ]);
    },
  );

  test("a deployment is never stale: the handler contract refuses it", () => {
    expect(() =>
      judgeDeployments(
        spec,
        { successes: [], failures: [], stale: ["d-1"] },
        [{ id: "d-1", status: current[0]! }],
        NOW_MS,
      ),
    ).toThrow(/never stale/);
  });
});

describe.each(SEED_ROUTE_ROWS)("route row %s", (name, current, success, failure, stale) => {
  const spec = ROUTE_HANDLERS[name];

  test("the core's table says the same", () => {
    expect(spec.targetStatuses).toEqual(current);
    expect(spec.success ?? null).toBe(success);
    expect(spec.failure ?? null).toBe(failure);
    expect(spec.stale ?? null).toBe(stale);
  });

  test.each(current)("from %s: each outcome moves the route as the row says, and is recorded", (from) => {
    const outcomes = [
      ["SUCCESS", success],
      ["FAILURE", failure],
      ...(stale !== null ? [["STALE", stale] as const] : []),
    ] as const;
    const decisions = judgeRoutes(
      spec,
      { successes: ["r-s"], failures: ["r-f"], ...(stale !== null ? { stale: ["r-t"] } : {}) },
      [
        { id: "r-s", status: from },
        { id: "r-f", status: from },
        { id: "r-t", status: from },
      ],
      NOW_MS,
    );
    expect(decisions.map((d) => [d.result, d.from, d.to ?? null, d.history.toStatus ?? null])).toEqual(
      outcomes.map(([result, to]) => {
        const moved = to !== null && to !== from ? to : null;
        return [result, from, moved, moved];
      }),
    );
  });

  if (stale === null) {
    test("a handler without a STALE transition may not judge a route stale", () => {
      expect(() =>
        judgeRoutes(
          spec,
          { successes: [], failures: [], stale: ["r-1"] },
          [{ id: "r-1", status: current[0]! }],
          NOW_MS,
        ),
      ).toThrow(/no STALE transition/);
    });
  }
});

describe("the handler contract", () => {
  const spec = ROUTE_HANDLERS.HealthCheckRoute;
  const targets = [{ id: "r-1", status: "HEALTHY" as const }];

  test("an id in two lists, an id not a target, a target of another status", () => {
    expect(() => judgeRoutes(spec, { successes: ["r-1"], failures: ["r-1"] }, targets, NOW_MS)).toThrow(
      /as both SUCCESS and FAILURE/,
    );
    expect(() => judgeRoutes(spec, { successes: ["r-9"], failures: [] }, targets, NOW_MS)).toThrow(
      /not a target/,
    );
    expect(() =>
      judgeRoutes(spec, { successes: [], failures: [] }, [{ id: "r-2", status: "PROVISIONING" }], NOW_MS),
    ).toThrow(/as a target, but it is PROVISIONING/);
  });

  test("targets in no list are left alone, with no history", () => {
    expect(judgeRoutes(spec, { successes: [], failures: [] }, targets, NOW_MS)).toEqual([]);
  });
});
