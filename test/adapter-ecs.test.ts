/**
 * The ECS adapter (FargateTasksPort) against the embedded ECS through the real SDK: task
 * definitions registered once per content and found again by a fresh process, kernels' tasks
 * started with their command, environment, size, startedBy and tags, stopped with a reason, the
 * gang rule (a member that cannot start stops the others), and failures as data with
 * retryability.
 */
import {
  DescribeTaskDefinitionCommand,
  DescribeTasksCommand,
  ECSClient,
  ListTasksCommand,
  RunTaskCommand,
} from "@aws-sdk/client-ecs";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { FargateRunRequest, FargateTaskDefinitionSpec } from "../functions/core/ports/fargate-tasks.ts";
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
      // The trap first: once its line is out, a SIGTERM ends it with 0.
      'trap "exit 0" TERM; echo "kernel $CAIRN_KERNEL_INDEX of $CAIRN_SESSION_ID"; while :; do sleep 0.05; done',
    ],
    environment: [
      { name: "CAIRN_SESSION_ID", value: "s-adapter" },
      { name: "CAIRN_KERNEL_INDEX", value: String(kernelIndex) },
    ],
    capacity: "FARGATE",
    network: { subnets: ["subnet-1"], securityGroups: ["sg-1"], assignPublicIp: false },
    startedBy: "cairn/s-adapter",
    // A token of its own for every request here, unless a test repeats one on purpose.
    clientToken: `s-adapter/${kernelIndex}/${++tokens}`,
    tags: [{ key: "cairn:session-id", value: "s-adapter" }],
    ...over,
  };
}
let tokens = 0;

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
    // Both run their shells past the trap: stopped now, each exits 0.
    for (const [index, taskArn] of [k0!, k1!].entries()) {
      const id = taskArn.split("/").at(-1)!;
      await until(`kernel ${index}'s first line`, () =>
        logs
          .eventsOf(LOG_GROUP, `fargate/kernel/${id}`)
          .find((e) => e.message === `kernel ${index} of s-adapter`),
      );
    }

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

describe("RunTask's client token: one task per request, however often it is sent", () => {
  /** Every task of the cluster started by `startedBy`, running or stopped. */
  const tasksStartedBy = async (startedBy: string) => {
    const [running, stopped] = await Promise.all(
      (["RUNNING", "STOPPED"] as const).map((desiredStatus) =>
        client.send(new ListTasksCommand({ cluster: "cairn", startedBy, desiredStatus })),
      ),
    );
    return [...new Set([...running!.taskArns!, ...stopped!.taskArns!])];
  };

  test("the same request sent again gets the task the first one started, and starts nothing", async () => {
    const arn = await port.ensureTaskDefinition(SPEC);
    const again = request(0, arn, {
      startedBy: "cairn/s-token-again",
      clientToken: "cairn/s-token-again/r0/p0/t0/k0",
    });
    const first = await port.runTasks([again]);
    const second = await port.runTasks([again]);
    expect(first.failures).toEqual([]);
    expect(second).toEqual(first);
    expect(await tasksStartedBy("cairn/s-token-again")).toEqual([first.started[0]!.taskArn]);
    // A new try is a new token: a second task.
    const next = await port.runTasks([{ ...again, clientToken: "cairn/s-token-again/r0/p0/t1/k0" }]);
    expect(next.started[0]!.taskArn).not.toBe(first.started[0]!.taskArn);
    expect(await tasksStartedBy("cairn/s-token-again")).toHaveLength(2);
    await port.stopTasks(
      [...first.started, ...next.started].map((s) => ({ taskArn: s.taskArn, reason: "done" })),
    );
  });

  test("a RunTask answer lost after its task was placed: the SDK asks again with the token and gets that task", async () => {
    const arn = await port.ensureTaskDefinition(SPEC);
    // The functions' client retries (SERVICE_RETRY); this one asks up to three times.
    const retrying = new ECSClient({
      endpoint: server.endpoint,
      region: "local",
      credentials: { accessKeyId: "local", secretAccessKey: "local" },
      maxAttempts: 3,
    });
    const withRetries = new EcsFargateTasks(retrying, { cluster: "cairn", region: "local" });
    server.service.faults.lostRunTaskAnswers = 1;
    try {
      const result = await withRetries.runTasks([
        request(0, arn, { startedBy: "cairn/s-token-lost", clientToken: "cairn/s-token-lost/r0/p0/t0/k0" }),
      ]);
      expect(server.service.faults.lostRunTaskAnswers).toBe(0);
      expect(result.failures).toEqual([]);
      expect(await tasksStartedBy("cairn/s-token-lost")).toEqual([result.started[0]!.taskArn]);
      await withRetries.stopTasks([{ taskArn: result.started[0]!.taskArn, reason: "done" }]);
    } finally {
      server.service.faults.lostRunTaskAnswers = 0;
      retrying.destroy();
    }
  });

  test("an answer still lost after the SDK's last attempt: asked once more with the token, the task is found, not started twice", async () => {
    const arn = await port.ensureTaskDefinition(SPEC);
    // `port`'s client makes one attempt: the SDK gives up at once.
    server.service.faults.lostRunTaskAnswers = 2;
    try {
      const gang = await port.runGang(
        [0, 1].map((k) =>
          request(k, arn, {
            startedBy: "cairn/s-token-unanswered",
            clientToken: `cairn/s-token-unanswered/r0/p0/t0/k${k}`,
          }),
        ),
        "rollback",
      );
      expect(server.service.faults.lostRunTaskAnswers).toBe(0);
      expect(gang.failures).toEqual([]);
      expect(gang.rolledBack).toEqual([]);
      expect((await tasksStartedBy("cairn/s-token-unanswered")).sort()).toEqual(
        gang.started.map((s) => s.taskArn).sort(),
      );
      await port.stopTasks(gang.started.map((s) => ({ taskArn: s.taskArn, reason: "done" })));
    } finally {
      server.service.faults.lostRunTaskAnswers = 0;
    }
  });

  test("the same token with other parameters is a ConflictException naming the token's task, not retryable", async () => {
    const arn = await port.ensureTaskDefinition(SPEC);
    const first = await port.runTasks([
      request(0, arn, { startedBy: "cairn/s-token-conflict", clientToken: "s-token-conflict" }),
    ]);
    const other = await port.runTasks([
      request(0, arn, {
        startedBy: "cairn/s-token-conflict",
        clientToken: "s-token-conflict",
        command: ["sh", "-c", "echo something else"],
      }),
    ]);
    expect(other).toEqual({
      started: [],
      failures: [
        {
          kernelIndex: 0,
          reason: "ConflictException: The clientToken is already in use with a different RunTask request.",
          retryable: false,
        },
      ],
    });
    // ECS names the token's tasks in the exception's resourceIds.
    const raw = await client
      .send(
        new RunTaskCommand({
          cluster: "cairn",
          taskDefinition: arn,
          launchType: "FARGATE",
          clientToken: "s-token-conflict",
          networkConfiguration: { awsvpcConfiguration: { subnets: ["subnet-1"] } },
        }),
      )
      .catch((error: unknown) => error as { name: string; resourceIds?: string[] });
    expect(raw).toMatchObject({ name: "ConflictException", resourceIds: [first.started[0]!.taskArn] });
    expect(await tasksStartedBy("cairn/s-token-conflict")).toHaveLength(1);
    await port.stopTasks([{ taskArn: first.started[0]!.taskArn, reason: "done" }]);
  });

  test("a token longer than 64 characters, or outside ASCII 33-126, is refused", async () => {
    const arn = await port.ensureTaskDefinition(SPEC);
    const result = await port.runTasks([
      request(0, arn, { clientToken: "x".repeat(65) }),
      request(1, arn, { clientToken: "with space" }),
    ]);
    expect(result.started).toEqual([]);
    for (const failure of result.failures) {
      expect(failure).toMatchObject({
        reason:
          "InvalidParameterException: clientToken: up to 64 ASCII characters in the range 33-126 (inclusive) are allowed.",
        retryable: false,
      });
    }
  });
});

describe("the task definition's runtimePlatform", () => {
  test("an arm64 image's definition says ARM64 on LINUX, and its tasks run as arm64; x86_64 is stated too", async () => {
    const arm = await port.ensureTaskDefinition({ ...SPEC, cpuArchitecture: "ARM64" });
    const x86 = await port.ensureTaskDefinition(SPEC);
    expect(arm).not.toBe(x86);
    const described = await Promise.all(
      [arm, x86].map((taskDefinition) => client.send(new DescribeTaskDefinitionCommand({ taskDefinition }))),
    );
    expect(described.map((d) => d.taskDefinition?.runtimePlatform)).toEqual([
      { cpuArchitecture: "ARM64", operatingSystemFamily: "LINUX" },
      { cpuArchitecture: "X86_64", operatingSystemFamily: "LINUX" },
    ]);
    const started = await port.runTasks([request(0, arm)]);
    const task = await client.send(
      new DescribeTasksCommand({ cluster: "cairn", tasks: [started.started[0]!.taskArn] }),
    );
    expect(task.tasks?.[0]?.attributes).toContainEqual({ name: "ecs.cpu-architecture", value: "arm64" });
    await port.stopTasks([{ taskArn: started.started[0]!.taskArn, reason: "done" }]);
  });

  test("Fargate Spot runs no ARM64 task: refused, not retryable", async () => {
    const arm = await port.ensureTaskDefinition({ ...SPEC, cpuArchitecture: "ARM64" });
    const result = await port.runTasks([request(0, arm, { capacity: "FARGATE_SPOT" })]);
    expect(result).toEqual({
      started: [],
      failures: [
        {
          kernelIndex: 0,
          reason:
            "InvalidParameterException: Linux tasks with the ARM64 architecture don't support the Fargate Spot capacity provider.",
          retryable: false,
        },
      ],
    });
  });
});
