/**
 * A `service` binding on a submission is only what a deployment would send: one session, named
 * like the route it backs, of that route's deployment. Anything else is refused at the edge.
 */
import { describe, expect, test } from "vitest";
import { serviceBindingRefusal } from "../../functions/core/coordinator/inbound.ts";
import { SPEC } from "./fixtures.ts";

const probe = { path: "/", intervalSeconds: 5, timeoutSeconds: 2 };
const one = { ...SPEC, replicas: 1 };

describe("given a submission's service binding", () => {
  test("a single session named like its route, of the route's deployment: accepted", () => {
    expect(
      serviceBindingRefusal("web-r3", one, { deploymentId: "web", routeId: "web-r3", probe }),
    ).toBeUndefined();
    // A gang (co-scheduled, the default) is still one session.
    expect(
      serviceBindingRefusal("web-r3", SPEC, { deploymentId: "web", routeId: "web-r3", probe }),
    ).toBeUndefined();
  });

  test("another deployment's route: refused naming the field", () => {
    expect(serviceBindingRefusal("web-r3", one, { deploymentId: "api", routeId: "web-r3", probe })).toBe(
      "detail.service.deploymentId: route web-r3 is not a route of deployment api",
    );
  });

  test("a session named otherwise than its route: refused", () => {
    expect(serviceBindingRefusal("mine", one, { deploymentId: "web", routeId: "web-r3", probe })).toBe(
      "detail.service.routeId: a replica is one session named like its route (web-r3); this submission makes session mine",
    );
  });

  test("independent tasks (each a session of its own) under one route: refused", () => {
    const tasks = { ...SPEC, replicas: 3, coscheduled: false };
    expect(serviceBindingRefusal("web-r3", tasks, { deploymentId: "web", routeId: "web-r3", probe })).toBe(
      "detail.service.routeId: a replica is one session named like its route (web-r3); this submission makes 3 sessions",
    );
  });
});
