/**
 * A deployment's or a route's execution entering a state (app/enter-family-stage.ts), against
 * DynamoDB Local: the status, task token and execution are recorded, the change is published;
 * a retried entry writes nothing again; a renewed execution (`<id>-g<n>`) starts its count anew;
 * a DEGRADED route is checked from its entry; bad input names the field.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { DeploymentItems } from "../functions/adapters/dynamo/deployment-items.ts";
import { DynamoRequests } from "../functions/adapters/dynamo/dynamo-requests.ts";
import {
  enterFamilyStage,
  FamilyStageError,
  type EnterFamilyStageDeps,
} from "../functions/app/enter-family-stage.ts";
import type {
  DeploymentStatusChangedDetailInput,
  RouteStatusChangedDetailInput,
} from "../functions/core/ports/event-bus.ts";
import { initialHealth } from "../functions/core/deployments/health.ts";
import { newDeployment, newRoute } from "../functions/core/deployments/pass.ts";
import { parseDeploymentSpec } from "../functions/core/deployments/spec.ts";
import { caught, freshTable, T0, type TestTable } from "./store-fixtures.ts";

describe("entering a family stage", () => {
  let table: TestTable;
  let store: DeploymentItems;
  let nowMs = T0;
  const published: (DeploymentStatusChangedDetailInput | RouteStatusChangedDetailInput)[] = [];
  let deps: EnterFamilyStageDeps;
  beforeAll(async () => {
    table = await freshTable("cairn-enter-family-stage");
    store = new DeploymentItems(new DynamoRequests(table.client, table.tableName, undefined));
    deps = {
      store,
      events: {
        deploymentStatusChanged: (d) => Promise.resolve(void published.push(...d)),
        routeStatusChanged: (d) => Promise.resolve(void published.push(...d)),
      },
      clock: { nowMs: () => nowMs },
      log: { info: () => {}, warn: () => {}, error: () => {}, debug: () => {} } as never,
    };
  });
  afterAll(() => table.drop());

  const spec = parseDeploymentSpec({ name: "web", replicas: 1, service: { command: ["serve"] } });
  const created = { from: "PENDING", to: "PENDING", result: "CREATED", handler: "Create" };

  test("PENDING entered: token and execution recorded, the change published; a retried entry writes nothing", async () => {
    await store.saveDeployment({ deployment: { next: newDeployment("web", spec, T0), expected: "absent" } });
    nowMs = T0 + 1_000;
    const entry = {
      deploymentId: "web",
      status: "PENDING",
      transition: created,
      taskToken: "tok-1",
      executionName: "web",
    };
    expect(await enterFamilyStage(entry, deps)).toEqual({ status: "PENDING" });
    const { deployment } = (await store.getDeployment("web"))!;
    expect(deployment.stage).toEqual({ enteredAtMs: T0 + 1_000, taskToken: "tok-1" });
    expect(deployment.execution).toMatchObject({ name: "web", generation: 1, transitions: 1 });
    expect(published.at(-1)).toMatchObject({
      deploymentId: "web",
      from: "PENDING",
      to: "PENDING",
      result: "CREATED",
      replicas: 1,
    });

    nowMs = T0 + 2_000;
    await enterFamilyStage(entry, deps);
    const again = (await store.getDeployment("web"))!.deployment;
    expect(again.version).toBe(deployment.version);
    expect(again.stage.enteredAtMs).toBe(T0 + 1_000);
  });

  test("a renewed execution (web-g2) resumes: its generation, its own count of transitions", async () => {
    nowMs = T0 + 3_000;
    await enterFamilyStage(
      {
        deploymentId: "web",
        status: "SCALING",
        transition: { from: "PENDING", to: "SCALING", result: "SUCCESS", handler: "CheckPendingDeployment" },
        taskToken: "tok-2",
        executionName: "web-g2",
      },
      deps,
    );
    const { deployment } = (await store.getDeployment("web"))!;
    expect(deployment.status).toBe("SCALING");
    expect(deployment.execution).toEqual({
      name: "web-g2",
      generation: 2,
      transitions: 1,
      startedAtMs: T0 + 3_000,
    });
  });

  test("a DEGRADED route is checked from its entry; probes from its provisioning still count", async () => {
    const d = (await store.getDeployment("web"))!.deployment;
    const route = {
      ...newRoute(d, 0, T0),
      health: { ...initialHealth(T0), consecutiveSuccesses: 1, lastProbeAtMs: T0 + 500 },
    };
    await store.saveDeployment({ routes: [{ next: route, expected: "absent" }] });
    nowMs = T0 + 4_000;
    await enterFamilyStage(
      {
        routeId: "web-r0",
        status: "DEGRADED",
        transition: { from: "PROVISIONING", to: "DEGRADED", result: "SUCCESS", handler: "ProvisioningRoute" },
        taskToken: "tok-r",
        executionName: "web-r0",
      },
      deps,
    );
    const stored = (await store.getDeployment("web"))!.routes[0]!;
    expect(stored.status).toBe("DEGRADED");
    expect(stored.health).toEqual({
      consecutiveSuccesses: 1,
      consecutiveFailures: 0,
      lastProbeAtMs: T0 + 500,
      checkedSinceMs: T0 + 4_000,
    });
    expect(published.at(-1)).toMatchObject({
      routeId: "web-r0",
      sessionId: "web-r0",
      from: "PROVISIONING",
      to: "DEGRADED",
    });
  });

  test("bad input names the field; an unknown entity or another's execution is refused", async () => {
    const error = await caught(() => enterFamilyStage({ deploymentId: "web", status: "SOMEWHERE" }, deps));
    expect(error).toBeInstanceOf(FamilyStageError);
    expect((error as Error).message).toMatch(/^status: .*; transition: required; executionName: required$/);
    const missing = await caught(() =>
      enterFamilyStage(
        {
          deploymentId: "nope",
          status: "PENDING",
          transition: created,
          taskToken: "t",
          executionName: "nope",
        },
        deps,
      ),
    );
    expect((missing as Error).message).toBe("deploymentId: no deployment nope");
    const foreign = await caught(() =>
      enterFamilyStage(
        {
          deploymentId: "web",
          status: "READY",
          transition: created,
          taskToken: "t3",
          executionName: "other",
        },
        deps,
      ),
    );
    expect((foreign as Error).message).toBe("executionName: other is not an execution of web");
  });
});
