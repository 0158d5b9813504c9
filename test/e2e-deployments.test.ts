/**
 * Issue 15 end to end: deployments and routes on the embedded runtime, with real processes on
 * local agents. Each replica is a session whose kernel is a real HTTP server on $CAIRN_PORT,
 * probed by the agent that hosts it.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DeploymentItems } from "../functions/adapters/dynamo/deployment-items.ts";
import { DynamoRequests } from "../functions/adapters/dynamo/dynamo-requests.ts";
import { storeRetryConfig } from "../functions/adapters/dynamo/retry.ts";
import { DetailType, toPutEventsEntry, type EventDetailInput } from "../functions/core/events.ts";
import type { DeploymentWithRoutes } from "../functions/core/deployments/model.ts";
import { startTestRuntime, type TestRuntime } from "./support/runtime.ts";

let rt: TestRuntime;
let deployments: DeploymentItems;

beforeAll(async () => {
  rt = await startTestRuntime({ agents: 2, agentCapacity: { cpu: 4, memoryMiB: 4096 } });
  const { info } = rt.runtime;
  deployments = new DeploymentItems(
    new DynamoRequests(
      new DynamoDBClient({
        endpoint: info.endpoints.dynamoDb,
        region: info.region,
        credentials: { accessKeyId: "local", secretAccessKey: "local" },
        ...storeRetryConfig(),
      }),
      info.tableName,
      undefined,
    ),
  );
}, 120_000);

afterAll(async () => {
  await rt?.stop();
});

async function send<T extends "Deployment Created" | "Deployment Scaled" | "Deployment Destroy Requested">(
  type: T,
  detail: EventDetailInput<T>,
): Promise<void> {
  await rt.put(toPutEventsEntry(rt.runtime.info.eventBusName, type as DetailType, detail as never));
}

async function waitDeployment(
  id: string,
  predicate: (d: DeploymentWithRoutes) => boolean,
  what: string,
  timeoutMs = 60_000,
): Promise<DeploymentWithRoutes> {
  const deadline = Date.now() + timeoutMs;
  let last: DeploymentWithRoutes | undefined;
  while (Date.now() < deadline) {
    last = await deployments.getDeployment(id);
    if (last && predicate(last)) return last;
    await new Promise((r) => setTimeout(r, 200));
  }
  const history = (await deployments.deploymentHistory(id)).map(
    (h) => `${h.id} ${h.handler} ${h.result} ${h.fromStatus}->${h.toStatus ?? "="} ${h.message ?? ""}`,
  );
  throw new Error(
    `deployment ${id} did not reach ${what} in ${timeoutMs} ms; history:\n  ${history.join("\n  ")}\nlast: ${JSON.stringify(
      last && {
        status: last.deployment.status,
        stage: last.deployment.stage,
        routes: last.routes.map((r) => ({ id: r.id, status: r.status, stage: r.stage, health: r.health })),
      },
    )}`,
  );
}

const statuses = (d: DeploymentWithRoutes) => d.routes.map((r) => `${r.id}:${r.status}`);

describe("smoke", () => {
  test("create, scale to 0, destroy", async () => {
    await send(DetailType.DeploymentCreated, {
      deploymentId: "smoke",
      spec: {
        name: "smoke",
        replicas: 2,
        service: { command: ["sleep", "3600"], resources: { cpu: 0.5, memoryMiB: 64 } },
      },
    });
    const ready = await waitDeployment("smoke", (d) => d.deployment.status === "READY", "READY");
    expect(statuses(ready)).toEqual(["smoke-r0:DEGRADED", "smoke-r1:DEGRADED"]);
    await send(DetailType.DeploymentScaled, { deploymentId: "smoke", replicas: 0 });
    await waitDeployment(
      "smoke",
      (d) => d.deployment.status === "READY" && d.routes.every((r) => r.status === "TERMINATED"),
      "READY with no routes",
    );
    await send(DetailType.DeploymentDestroyRequested, { deploymentId: "smoke" });
    await waitDeployment("smoke", (d) => d.deployment.status === "DESTROYED", "DESTROYED");
  }, 120_000);
});
