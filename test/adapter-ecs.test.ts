/**
 * The ECS adapter (FargateTasksPort) against the embedded ECS through the real SDK: task
 * definitions registered once per content and found again by a fresh process, kernels' tasks
 * started with their command, environment, size, startedBy and tags, stopped with a reason, the
 * gang rule (a member that cannot start stops the others), and failures as data with
 * retryability.
 */
import { DescribeTasksCommand, ECSClient } from "@aws-sdk/client-ecs";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { FargateRunRequest, FargateTaskDefinitionSpec } from "../functions/app/fargate-port.ts";
import { FargateKernels } from "../functions/app/fargate-kernels.ts";
import type { FargateConfig } from "../functions/config.ts";
import { FARGATE_LOG_STREAM_PREFIX } from "../functions/core/fargate-logs.ts";
import type { SessionWithKernels } from "../functions/core/model.ts";
import { FargateTasksError } from "../functions/adapters/ecs/errors.ts";
import { EcsFargateTasks } from "../functions/adapters/ecs/fargate-tasks.ts";
import { planTaskDefinition } from "../functions/adapters/ecs/task-definition.ts";
import { CAPACITY_UNAVAILABLE, logsStoreSink, startEcsServer, type EcsServer } from "../local/ecs/index.ts";
import { LogsStore } from "../local/logs/index.ts";
import { newSession } from "./store-fixtures.ts";
import { until } from "./support/until.ts";

const LOG_GROUP = "/cairn/kernels";
const logs = new LogsStore();
logs.ensureLogGroup(LOG_GROUP);

interface Detail {
  taskArn: string;
  lastStatus: string;
  stopCode?: string;
  stoppedReason?: string;
  containers: { exitCode?: number }[];
}
const events: Detail[] = [];
let server: EcsServer;
let client: ECSClient;
let port: EcsFargateTasks;

const SPEC: FargateTaskDefinitionSpec = {
  image: "123456789012.dkr.ecr.us-east-1.amazonaws.com/cairn-kernel:1",
  cpu: 256,
  memoryMiB: 512,
  logGroup: LOG_GROUP,
  logStreamPrefix: "fargate",
  executionRoleArn: "arn:aws:iam::000000000000:role/cairn-task-execution",
};

function request(
  kernelIndex: number,
  taskDefinitionArn: string,
  over: Partial<FargateRunRequest> = {},
): FargateRunRequest {
  return {
    kernelIndex,
    taskDefinitionArn,
    command: [
      "sh",
      "-c",
      'echo "kernel $CAIRN_KERNEL_INDEX of $CAIRN_SESSION_ID"; trap "exit 0" TERM; while :; do sleep 0.05; done',
    ],
    environment: [
      { name: "CAIRN_SESSION_ID", value: "s-adapter" },
      { name: "CAIRN_KERNEL_INDEX", value: String(kernelIndex) },
    ],
    capacity: "FARGATE",
    network: { subnets: ["subnet-1"], securityGroups: ["sg-1"], assignPublicIp: false },
    startedBy: "cairn/s-adapter",
    tags: [{ key: "cairn:session-id", value: "s-adapter" }],
    ...over,
  };
}

const statusOf = (taskArn: string, status: string) =>
  until(`${taskArn} ${status}`, () => events.find((e) => e.taskArn === taskArn && e.lastStatus === status));

beforeAll(async () => {
  server = await startEcsServer({
    clusters: ["cairn"],
    stepDelayMs: 5,
    logs: logsStoreSink(logs),
    publish: (entry) => void events.push(JSON.parse(entry.Detail) as Detail),
  });
  client = new ECSClient({
    endpoint: server.endpoint,
    region: "local",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
    maxAttempts: 1,
  });
  port = new EcsFargateTasks(client, { cluster: "cairn", region: "local" });
});

afterAll(async () => {
  client.destroy();
  await server.close();
});

describe("task definitions by content", () => {
  test("the same content is registered once, found again by a fresh process, and a change is a new family", async () => {
    const arn = await port.ensureTaskDefinition(SPEC);
    const family = planTaskDefinition(SPEC, "local").family;
    expect(family).toMatch(/^cairn-[0-9a-f]{12}$/);
    expect(arn).toBe(`arn:aws:ecs:local:000000000000:task-definition/${family}:1`);
    expect(
      await Promise.all([port.ensureTaskDefinition(SPEC), port.ensureTaskDefinition({ ...SPEC })]),
    ).toEqual([arn, arn]);

    const freshProcess = new EcsFargateTasks(client, { cluster: "cairn", region: "local" });
    expect(await freshProcess.ensureTaskDefinition(SPEC)).toBe(arn);
    // Still revision 1: found by DescribeTaskDefinition, not registered again.
    expect(server.service.taskDefinitions.find(family)?.revision).toBe(1);

    const bigger = await port.ensureTaskDefinition({ ...SPEC, cpu: 1024, memoryMiB: 2048 });
    expect(bigger).not.toBe(arn);
    expect(bigger).toMatch(/task-definition\/cairn-[0-9a-f]{12}:1$/);
  });

  test("every run of every session with the same image and size starts from one registration", async () => {
    const config: FargateConfig = {
      clusterArn: "arn:aws:ecs:local:000000000000:cluster/cairn",
      subnets: ["subnet-1"],
      securityGroups: ["sg-1"],
      assignPublicIp: false,
      executionRoleArn: "arn:aws:iam::000000000000:role/cairn-task-execution",
      taskRoleArn: "arn:aws:iam::000000000000:role/cairn-kernel",
      logGroupName: LOG_GROUP,
      capacityProviders: ["FARGATE"],
    };
    const session = (id: string, runIndex: number): SessionWithKernels => {
      const s = newSession(id, { replicas: 2, resources: { cpu: 0.5, memoryMiB: 1024 } });
      return {
        session: {
          ...s.session,
          runIndex,
          spec: {
            ...s.session.spec,
            executor: "fargate",
            image: "public.ecr.aws/docker/library/busybox:1.36",
          },
        },
        kernels: s.kernels,
      };
    };
    const arns: string[] = [];
    // A fresh process each time, as each Lambda invocation may be: the definition is found again.
    for (const target of [session("s-td-a", 0), session("s-td-a", 1), session("s-td-b", 0)]) {
      const kernels = new FargateKernels(
        new EcsFargateTasks(client, { cluster: "cairn", region: "local" }),
        config,
      );
      for (const kernel of target.kernels) arns.push(await kernels.taskDefinition(target, kernel));
    }
    expect(new Set(arns).size).toBe(1);
    const family = /task-definition\/(cairn-[0-9a-f]{12}):1$/.exec(arns[0]!)?.[1];
    expect(family).toBeDefined();
    // Registered once: still revision 1, its stream prefix the constant one.
    const definition = server.service.taskDefinitions.find(family!);
    expect(definition?.revision).toBe(1);
    expect(JSON.stringify(definition)).toContain(`"awslogs-stream-prefix":"${FARGATE_LOG_STREAM_PREFIX}"`);
  });

  test("a definition ECS refuses is an error that is not retryable, and is not cached", async () => {
    const bad = { ...SPEC, cpu: 256, memoryMiB: 4096 };
    const error = await port.ensureTaskDefinition(bad).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FargateTasksError);
    expect(error).toMatchObject({ awsCode: "ClientException", retryable: false });
    expect((error as Error).message).toContain("No Fargate configuration exists for given values.");
    await expect(port.ensureTaskDefinition(bad)).rejects.toMatchObject({ awsCode: "ClientException" });
  });

  test("an unreachable endpoint is a retryable failure", async () => {
    const nowhere = new ECSClient({
      endpoint: "http://127.0.0.1:1",
      region: "local",
      credentials: { accessKeyId: "local", secretAccessKey: "local" },
      maxAttempts: 1,
    });
    const error = await new EcsFargateTasks(nowhere, { cluster: "cairn", region: "local" })
      .ensureTaskDefinition(SPEC)
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "FargateTasksError", awsCode: "NetworkError", retryable: true });
    nowhere.destroy();
  });
});

describe("running and stopping kernels", () => {
  test("each kernel runs as its own task with its command, identity, size, startedBy and tags; stopTasks stops with the reason", async () => {
    const arn = await port.ensureTaskDefinition(SPEC);
    const result = await port.runTasks([
      request(0, arn),
      request(1, arn, { cpu: 512, memoryMiB: 1024, capacity: "FARGATE_SPOT" }),
    ]);
    expect(result.failures).toEqual([]);
    expect(result.started.map((s) => s.kernelIndex)).toEqual([0, 1]);
    const [k0, k1] = result.started.map((s) => s.taskArn);
    await Promise.all([statusOf(k0!, "RUNNING"), statusOf(k1!, "RUNNING")]);

    const described = await client.send(
      new DescribeTasksCommand({ cluster: "cairn", tasks: [k0!, k1!], include: ["TAGS"] }),
    );
    const byArn = new Map(described.tasks!.map((t) => [t.taskArn, t]));
    expect(byArn.get(k0)).toMatchObject({
      cpu: "256",
      memory: "512",
      startedBy: "cairn/s-adapter",
      launchType: "FARGATE",
    });
    expect(byArn.get(k0)?.capacityProviderName).toBeUndefined();
    expect(byArn.get(k1)).toMatchObject({ cpu: "512", memory: "1024", capacityProviderName: "FARGATE_SPOT" });
    expect(byArn.get(k0)?.tags).toEqual(
      expect.arrayContaining([
        { key: "cairn:session-id", value: "s-adapter" },
        { key: "aws:ecs:clusterName", value: "cairn" },
        expect.objectContaining({ key: "cairn:task-definition-hash" }),
      ]),
    );
    const id1 = k1!.split("/").at(-1)!;
    await until("kernel 1's first line", () =>
      logs.eventsOf(LOG_GROUP, `fargate/kernel/${id1}`).find((e) => e.message === "kernel 1 of s-adapter"),
    );

    await port.stopTasks([
      { taskArn: k0!, reason: "cancelled" },
      { taskArn: k1!, reason: `preempted: ${"x".repeat(300)}` },
    ]);
    const [s0, s1] = await Promise.all([statusOf(k0!, "STOPPED"), statusOf(k1!, "STOPPED")]);
    expect(s0).toMatchObject({
      stopCode: "UserInitiated",
      stoppedReason: "cancelled",
      containers: [{ exitCode: 0 }],
    });
    expect(s1.stoppedReason).toHaveLength(255);
    // Stopping again, or a task ECS has never heard of, is done already.
    await port.stopTasks([
      { taskArn: k0!, reason: "again" },
      {
        taskArn: "arn:aws:ecs:local:000000000000:task/cairn/0123456789abcdef0123456789abcdef",
        reason: "gone",
      },
    ]);
  });

  test("a request ECS refuses fails that kernel only, not retryable; a capacity shortage is retryable", async () => {
    const arn = await port.ensureTaskDefinition(SPEC);
    server.service.faults.unavailableCapacity.add("FARGATE_SPOT");
    try {
      const result = await port.runTasks([
        request(0, arn, { cpu: 512, memoryMiB: 512 }),
        request(1, arn, { capacity: "FARGATE_SPOT" }),
        request(2, arn, { startedBy: "cairn:not/allowed" }),
      ]);
      expect(result.started).toEqual([]);
      expect(result.failures).toEqual([
        {
          kernelIndex: 0,
          reason: "ClientException: No Fargate configuration exists for given values.",
          retryable: false,
        },
        { kernelIndex: 1, reason: CAPACITY_UNAVAILABLE, retryable: true },
        {
          kernelIndex: 2,
          reason:
            "InvalidParameterException: startedBy: up to 128 letters (uppercase and lowercase), numbers, hyphens (-), forward slash (/), and underscores (_) are allowed.",
          retryable: false,
        },
      ]);
    } finally {
      server.service.faults.unavailableCapacity.clear();
    }
    const noCluster = new EcsFargateTasks(client, { cluster: "missing", region: "local" });
    expect((await noCluster.runTasks([request(0, arn)])).failures).toEqual([
      { kernelIndex: 0, reason: "ClusterNotFoundException: Cluster not found.", retryable: false },
    ]);
  });
});

describe("gangs: all or nothing", () => {
  test("a 4-task gang starts together", async () => {
    const arn = await port.ensureTaskDefinition(SPEC);
    const gang = await port.runGang(
      [0, 1, 2, 3].map((i) => request(i, arn)),
      "gang rollback",
    );
    expect(gang.failures).toEqual([]);
    expect(gang.rolledBack).toEqual([]);
    expect(gang.started).toHaveLength(4);
    await Promise.all(gang.started.map((s) => statusOf(s.taskArn, "RUNNING")));
    await port.stopTasks(gang.started.map((s) => ({ taskArn: s.taskArn, reason: "done" })));
    await Promise.all(gang.started.map((s) => statusOf(s.taskArn, "STOPPED")));
  });

  test("when one member cannot start (no Spot capacity), the members that started are stopped with the reason", async () => {
    const arn = await port.ensureTaskDefinition(SPEC);
    server.service.faults.unavailableCapacity.add("FARGATE_SPOT");
    try {
      const gang = await port.runGang(
        [request(0, arn), request(1, arn), request(2, arn, { capacity: "FARGATE_SPOT" }), request(3, arn)],
        "gang of s-adapter rolled back",
      );
      expect(gang.started).toEqual([]);
      expect(gang.failures).toEqual([{ kernelIndex: 2, reason: CAPACITY_UNAVAILABLE, retryable: true }]);
      expect(gang.rolledBack).toHaveLength(3);
      const stopped = await Promise.all(gang.rolledBack.map((t) => statusOf(t, "STOPPED")));
      for (const s of stopped) {
        expect(s).toMatchObject({
          stopCode: "UserInitiated",
          stoppedReason:
            `gang of s-adapter rolled back (kernel 2 could not start: ${CAPACITY_UNAVAILABLE})`.slice(0, 255),
        });
      }
    } finally {
      server.service.faults.unavailableCapacity.clear();
    }
  });

  test("an override ECS refuses rolls the gang back as well", async () => {
    const arn = await port.ensureTaskDefinition(SPEC);
    const gang = await port.runGang(
      [request(0, arn), request(1, arn, { cpu: 256, memoryMiB: 8192 })],
      "gang rollback",
    );
    expect(gang.started).toEqual([]);
    expect(gang.failures).toEqual([
      {
        kernelIndex: 1,
        reason: "ClientException: No Fargate configuration exists for given values.",
        retryable: false,
      },
    ]);
    expect(gang.rolledBack).toHaveLength(1);
    await statusOf(gang.rolledBack[0]!, "STOPPED");
  });
});
