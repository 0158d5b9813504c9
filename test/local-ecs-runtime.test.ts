/**
 * The embedded ECS inside the runtime: reached through the edge port with the functions'
 * credentials (AWS_ENDPOINT_URL_ECS set for them), refused to the CLI's; its events on the
 * default bus, not Cairn's; awslogs output in the kernel log group; the Spot switch on the
 * runtime's service.
 */
import {
  ECSClient,
  ListTasksCommand,
  RegisterTaskDefinitionCommand,
  RunTaskCommand,
} from "@aws-sdk/client-ecs";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { EventBridgeEvent } from "../local/eventbridge/index.ts";
import { startTestRuntime, type TestRuntime } from "./support/runtime.ts";
import { until } from "./support/until.ts";

let rt: TestRuntime;
const onDefault: EventBridgeEvent<{ taskArn: string; lastStatus: string; stopCode?: string }>[] = [];
const onCairn: EventBridgeEvent[] = [];

beforeAll(async () => {
  rt = await startTestRuntime({ agents: 0 });
  rt.runtime.defaultBus.onEvent((e) => void onDefault.push(e as (typeof onDefault)[number]));
  rt.runtime.bus.onEvent((e) => void onCairn.push(e));
}, 60_000);

afterAll(async () => {
  await rt?.stop();
});

const eventsOfTask = (taskArn: string) => onDefault.filter((e) => e.detail.taskArn === taskArn).length;

test("a Fargate task through the edge with the functions' credentials: events on the default bus, logs in the kernel group, a Spot interruption", async () => {
  const { info } = rt.runtime;
  expect(process.env.AWS_ENDPOINT_URL_ECS).toBe(info.endpoints.ecs);
  const ecs = new ECSClient({
    endpoint: info.endpoints.edge,
    region: info.region,
    credentials: {
      accessKeyId: process.env.AWS_ACCESS_KEY_ID!,
      secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY!,
    },
    maxAttempts: 1,
  });
  await ecs.send(
    new RegisterTaskDefinitionCommand({
      family: "cairn-runtime",
      requiresCompatibilities: ["FARGATE"],
      networkMode: "awsvpc",
      cpu: "256",
      memory: "512",
      executionRoleArn: "arn:aws:iam::000000000000:role/cairn-task-execution",
      containerDefinitions: [
        {
          name: "kernel",
          image: "cairn-kernel:latest",
          command: ["sh", "-c", "echo started; while :; do sleep 0.05; done"],
          logConfiguration: {
            logDriver: "awslogs",
            options: {
              "awslogs-group": info.kernelLogGroupName,
              "awslogs-region": info.region,
              "awslogs-stream-prefix": "fargate",
            },
          },
        },
      ],
    }),
  );
  const out = await ecs.send(
    new RunTaskCommand({
      cluster: info.ecsClusterArn,
      taskDefinition: "cairn-runtime",
      capacityProviderStrategy: [{ capacityProvider: "FARGATE_SPOT", weight: 1 }],
      networkConfiguration: { awsvpcConfiguration: { subnets: ["subnet-local"] } },
      startedBy: "cairn/s-runtime",
    }),
  );
  const taskArn = out.tasks![0]!.taskArn!;
  await until("RUNNING", () =>
    onDefault.find((e) => e.detail.taskArn === taskArn && e.detail.lastStatus === "RUNNING"),
  );
  const taskId = taskArn.split("/").at(-1)!;
  await until("the first log line", () =>
    rt.runtime.logs.store
      .eventsOf(info.kernelLogGroupName, `fargate/kernel/${taskId}`)
      .find((e) => e.message === "started"),
  );

  rt.runtime.ecs.service.interruptSpot(taskArn);
  const stopped = await until("STOPPED", () =>
    onDefault.find((e) => e.detail.taskArn === taskArn && e.detail.lastStatus === "STOPPED"),
  );
  expect(stopped).toMatchObject({ source: "aws.ecs", detail: { stopCode: "SpotInterruption" } });
  expect(onCairn.filter((e) => e.source === "aws.ecs")).toEqual([]);
  // The stack's rule for them (FARGATE.rules) is on the default bus, bound to this cluster.
  const [rule] = rt.runtime.defaultBus.listRules("EcsTaskStateChanges");
  expect(JSON.parse(rule!.eventPattern)).toEqual({
    source: ["aws.ecs"],
    "detail-type": ["ECS Task State Change"],
    detail: { clusterArn: [info.ecsClusterArn] },
  });
  expect(rt.runtime.defaultBus.stats().matched).toBeGreaterThanOrEqual(eventsOfTask(taskArn));
  ecs.destroy();

  // The CLI's credentials may not touch ECS, as in the stack only the functions' roles may.
  const asClient = new ECSClient({
    endpoint: info.endpoints.edge,
    region: info.region,
    credentials: info.credentials.client,
    maxAttempts: 1,
  });
  await expect(asClient.send(new ListTasksCommand({ cluster: info.ecsClusterArn }))).rejects.toMatchObject({
    name: "AccessDeniedException",
  });
  asClient.destroy();
}, 60_000);
