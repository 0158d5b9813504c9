/**
 * Deployment and route items against DynamoDB Local: a deployment reads back whole
 * with its routes, every write is guarded by the version it was planned from (a stale one is a
 * ConflictError naming the entity, and writes nothing), a deployment and its new routes and
 * history records change in one transaction, history lives apart and reads back in time order.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { DeploymentItems } from "../functions/adapters/dynamo/deployment-items.ts";
import { DynamoRequests } from "../functions/adapters/dynamo/dynamo-requests.ts";
import { initialHealth } from "../functions/core/deployments/health.ts";
import { routeId, type Deployment, type Route } from "../functions/core/deployments/model.ts";
import { parseDeploymentSpec } from "../functions/core/deployments/spec.ts";
import { ConflictError, InvalidStoreRequestError } from "../functions/core/ports/errors.ts";
import { caught, freshTable, T0, type TestTable } from "./store-fixtures.ts";

describe("deployment items", () => {
  let table: TestTable;
  let store: DeploymentItems;
  beforeAll(async () => {
    table = await freshTable("cairn-store-deployments");
    store = new DeploymentItems(new DynamoRequests(table.client, table.tableName, undefined));
  });
  afterAll(() => table.drop());

  const spec = parseDeploymentSpec({ name: "web", replicas: 2, service: { command: ["serve"] } });
  const deployment = (id: string, over: Partial<Deployment> = {}): Deployment => ({
    id,
    spec,
    status: "PENDING",
    version: 0,
    execution: { name: id, generation: 1, transitions: 0, startedAtMs: T0 },
    stage: { enteredAtMs: T0, taskToken: "tok-d" },
    nextRouteIndex: 0,
    createdAtMs: T0,
    updatedAtMs: T0,
    ...over,
  });
  const route = (deploymentId: string, index: number, over: Partial<Route> = {}): Route => ({
    id: routeId(deploymentId, index),
    deploymentId,
    index,
    status: "PROVISIONING",
    version: 0,
    sessionId: routeId(deploymentId, index),
    execution: { name: routeId(deploymentId, index), generation: 1, transitions: 0, startedAtMs: T0 },
    stage: { enteredAtMs: T0 },
    health: initialHealth(T0),
    createdAtMs: T0,
    updatedAtMs: T0,
    ...over,
  });

  test("a new deployment reads back exactly, with no routes; creating it twice conflicts", async () => {
    const d = deployment("web-one");
    await store.saveDeployment({ deployment: { next: d, expected: "absent" } });
    expect(await store.getDeployment("web-one")).toEqual({ deployment: d, routes: [] });
    const again = await caught(() => store.saveDeployment({ deployment: { next: d, expected: "absent" } }));
    expect(again).toBeInstanceOf(ConflictError);
    expect(again).toMatchObject({ entity: "deployment", sessionId: "web-one", reason: "it exists already" });
    expect(await store.getDeployment("no-such")).toBeUndefined();
  });

  test("scaling: the deployment, its new routes and history in one write; versions move on", async () => {
    const d = deployment("web-two");
    await store.saveDeployment({ deployment: { next: d, expected: "absent" } });
    const scaling = { ...d, status: "SCALING" as const, nextRouteIndex: 2, updatedAtMs: T0 + 1 };
    await store.saveDeployment({
      deployment: { next: scaling, expected: { status: "PENDING", version: 0 } },
      routes: [0, 1].map((i) => ({ next: route("web-two", i), expected: "absent" as const })),
      history: [
        {
          entity: "deployment",
          id: "web-two",
          handler: "CheckPendingDeployment",
          result: "SUCCESS",
          fromStatus: "PENDING",
          toStatus: "SCALING",
          atMs: T0 + 1,
        },
      ],
    });
    const read = await store.getDeployment("web-two");
    expect(read?.deployment).toEqual({ ...scaling, version: 1 });
    expect(read?.routes.map((r) => [r.id, r.status, r.version])).toEqual([
      ["web-two-r0", "PROVISIONING", 0],
      ["web-two-r1", "PROVISIONING", 0],
    ]);
    // A route moves on by itself, guarded by its own version.
    const r0 = read!.routes[0]!;
    await store.saveDeployment({
      routes: [{ next: { ...r0, status: "DEGRADED", agentId: "agent-1", port: 8080 }, expected: r0 }],
      history: [
        {
          entity: "route",
          id: r0.id,
          handler: "ProvisioningRoute",
          result: "SUCCESS",
          fromStatus: "PROVISIONING",
          toStatus: "DEGRADED",
          message: "session running",
          atMs: T0 + 2,
        },
      ],
    });
    expect((await store.getDeployment("web-two"))?.routes[0]).toEqual({
      ...r0,
      status: "DEGRADED",
      agentId: "agent-1",
      port: 8080,
      version: 1,
    });
    expect(
      (await store.deploymentHistory("web-two")).map((h) => `${h.id} ${h.fromStatus}→${h.toStatus}`),
    ).toEqual(["web-two PENDING→SCALING", "web-two-r0 PROVISIONING→DEGRADED"]);
  });

  test("a write planned from a stale copy conflicts, naming the entity, and writes nothing", async () => {
    const d = deployment("web-three");
    await store.saveDeployment({
      deployment: { next: d, expected: "absent" },
      routes: [{ next: route("web-three", 0), expected: "absent" }],
    });
    const stale = await caught(() =>
      store.saveDeployment({
        deployment: { next: { ...d, status: "SCALING" }, expected: { status: "PENDING", version: 0 } },
        // The route was read at version 0 and is still there; the deployment's guard holds too,
        // but the route's expected status is wrong: nothing of the change is written.
        routes: [
          {
            next: route("web-three", 0, { status: "DEGRADED" }),
            expected: { status: "HEALTHY", version: 0 },
          },
        ],
      }),
    );
    expect(stale).toBeInstanceOf(ConflictError);
    expect(stale).toMatchObject({
      entity: "route",
      sessionId: "web-three-r0",
      expected: { status: "HEALTHY", version: 0 },
      found: { status: "PROVISIONING", version: 0 },
    });
    const read = await store.getDeployment("web-three");
    expect(read?.deployment.status).toBe("PENDING");
    expect(read?.routes[0]?.status).toBe("PROVISIONING");
  });

  test("a crash loop's count reads back, and a save without it clears it", async () => {
    const d = { ...deployment("web-loop"), failedStarts: { count: 3, lastAtMs: T0 + 5 } };
    await store.saveDeployment({ deployment: { next: d, expected: "absent" } });
    expect((await store.getDeployment("web-loop"))?.deployment.failedStarts).toEqual({
      count: 3,
      lastAtMs: T0 + 5,
    });
    const { failedStarts: _cleared, ...recovered } = d;
    await store.saveDeployment({
      deployment: { next: { ...recovered, version: 1 }, expected: { status: d.status, version: 0 } },
    });
    expect((await store.getDeployment("web-loop"))?.deployment).not.toHaveProperty("failedStarts");
  });

  test("the roster lists every deployment by id", async () => {
    await store.saveDeployment({ deployment: { next: deployment("api-one"), expected: "absent" } });
    const ids = (await store.listDeployments()).map((d) => d.id);
    expect(ids).toEqual([...ids].sort());
    expect(ids).toEqual(expect.arrayContaining(["api-one", "web-one", "web-two", "web-three"]));
  });

  test("bad changes are refused before anything is sent, naming the field", async () => {
    const other = await caught(() =>
      store.saveDeployment({
        deployment: { next: deployment("web-four"), expected: "absent" },
        routes: [{ next: route("web-five", 0), expected: "absent" }],
      }),
    );
    expect(other).toBeInstanceOf(InvalidStoreRequestError);
    expect(other).toMatchObject({ field: "routes" });
    const orphan = await caught(() =>
      store.saveDeployment({
        deployment: { next: deployment("web-four"), expected: "absent" },
        history: [
          {
            entity: "route",
            id: "web-four-r9",
            handler: "h",
            result: "SUCCESS",
            fromStatus: "HEALTHY",
            atMs: T0,
          },
        ],
      }),
    );
    expect(orphan.message).toMatch(/^history: web-four-r9 is not written by this change/);
    expect(await store.getDeployment("web-four")).toBeUndefined();
  });
});
