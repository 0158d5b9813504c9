/**
 * The embedded ECS endpoint through the real `@aws-sdk/client-ecs`, signed with per-run
 * credentials as the runtime signs: task definitions (revisions, lookups, Fargate's checks),
 * RunTask's validation and errors as ECS sends them, StopTask/DescribeTasks/ListTasks on
 * missing tasks, the capacity fault switch, and who may call it.
 */
import {
  DescribeTaskDefinitionCommand,
  DescribeTasksCommand,
  ECSClient,
  ListTasksCommand,
  RegisterTaskDefinitionCommand,
  RunTaskCommand,
  StopTaskCommand,
  type RegisterTaskDefinitionCommandInput,
  type RunTaskCommandInput,
} from "@aws-sdk/client-ecs";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { CAPACITY_UNAVAILABLE, ecsAuth, startEcsServer, type EcsServer } from "../local/ecs/index.ts";

const CONTROL = {
  accessKeyId: "AKIALOCALCONTROL",
  secretAccessKey: "control-secret",
  principal: "control-plane",
};
const AGENT = { accessKeyId: "AKIALOCALAGENT", secretAccessKey: "agent-secret", principal: "agent" };

let server: EcsServer;
let ecs: ECSClient;
let asAgent: ECSClient;

const client = (c: { accessKeyId: string; secretAccessKey: string }) =>
  new ECSClient({ endpoint: server.endpoint, region: "local", credentials: c, maxAttempts: 1 });

const definition = (
  over: Partial<RegisterTaskDefinitionCommandInput> = {},
): RegisterTaskDefinitionCommandInput => ({
  family: "cairn-test",
  requiresCompatibilities: ["FARGATE"],
  networkMode: "awsvpc",
  cpu: "256",
  memory: "512",
  containerDefinitions: [
    { name: "kernel", image: "public.ecr.aws/docker/library/busybox:latest", command: ["true"] },
  ],
  ...over,
});

const run = (over: Partial<RunTaskCommandInput> = {}): RunTaskCommandInput => ({
  cluster: "cairn",
  taskDefinition: "cairn-test",
  launchType: "FARGATE",
  networkConfiguration: { awsvpcConfiguration: { subnets: ["subnet-1"], assignPublicIp: "DISABLED" } },
  ...over,
});

async function rejection(promise: Promise<unknown>): Promise<{ name: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    const e = error as Error;
    return { name: e.name, message: e.message };
  }
  throw new Error("expected the call to fail");
}

beforeAll(async () => {
  server = await startEcsServer({
    clusters: ["cairn"],
    stepDelayMs: 5,
    auth: ecsAuth({ credentials: [CONTROL, AGENT], region: "local" }),
  });
  ecs = client(CONTROL);
  asAgent = client(AGENT);
  await ecs.send(new RegisterTaskDefinitionCommand(definition()));
});

afterAll(async () => {
  ecs.destroy();
  asAgent.destroy();
  await server.close();
});

describe("task definitions", () => {
  test("each registration is a new revision of its family; lookups by family, family:revision and ARN", async () => {
    const first = await ecs.send(new RegisterTaskDefinitionCommand(definition({ family: "cairn-revs" })));
    const second = await ecs.send(new RegisterTaskDefinitionCommand(definition({ family: "cairn-revs" })));
    expect(first.taskDefinition).toMatchObject({
      family: "cairn-revs",
      revision: 1,
      taskDefinitionArn: "arn:aws:ecs:local:000000000000:task-definition/cairn-revs:1",
      cpu: "256",
      memory: "512",
      status: "ACTIVE",
    });
    expect(second.taskDefinition?.revision).toBe(2);
    const latest = await ecs.send(new DescribeTaskDefinitionCommand({ taskDefinition: "cairn-revs" }));
    expect(latest.taskDefinition?.revision).toBe(2);
    const byRevision = await ecs.send(new DescribeTaskDefinitionCommand({ taskDefinition: "cairn-revs:1" }));
    expect(byRevision.taskDefinition?.revision).toBe(1);
    const byArn = await ecs.send(
      new DescribeTaskDefinitionCommand({ taskDefinition: first.taskDefinition!.taskDefinitionArn! }),
    );
    expect(byArn.taskDefinition?.revision).toBe(1);
    expect(byArn.taskDefinition?.registeredAt).toBeInstanceOf(Date);
  });

  test("an unknown task definition is ClientException, as ECS words it", async () => {
    expect(
      await rejection(ecs.send(new DescribeTaskDefinitionCommand({ taskDefinition: "cairn-none" }))),
    ).toEqual({
      name: "ClientException",
      message: "Unable to describe task definition.",
    });
    expect(
      await rejection(ecs.send(new DescribeTaskDefinitionCommand({ taskDefinition: "cairn-revs:9" }))),
    ).toEqual({
      name: "ClientException",
      message: "Unable to describe task definition.",
    });
  });

  test("tags come back with include TAGS", async () => {
    await ecs.send(
      new RegisterTaskDefinitionCommand(
        definition({ family: "cairn-tagged", tags: [{ key: "cairn:hash", value: "abc" }] }),
      ),
    );
    const out = await ecs.send(
      new DescribeTaskDefinitionCommand({ taskDefinition: "cairn-tagged", include: ["TAGS"] }),
    );
    expect(out.tags).toEqual([{ key: "cairn:hash", value: "abc" }]);
  });

  test.each([
    [
      "a size Fargate does not offer",
      { cpu: "256", memory: "4096" },
      "No Fargate configuration exists for given values.",
    ],
    [
      "no task-level memory",
      { memory: undefined },
      "Fargate requires that 'memory' be defined at the task level.",
    ],
    ["bridge networking", { networkMode: "bridge" as const }, "Fargate only supports network mode ‘awsvpc’."],
    [
      "awslogs without an execution role",
      {
        containerDefinitions: [
          {
            name: "kernel",
            image: "busybox",
            logConfiguration: {
              logDriver: "awslogs" as const,
              options: {
                "awslogs-group": "/cairn/kernels",
                "awslogs-region": "local",
                "awslogs-stream-prefix": "k",
              },
            },
          },
        ],
      },
      "Fargate requires task definition to have execution role ARN to support log driver awslogs.",
    ],
  ])("a Fargate definition with %s is refused", async (_what, over, message) => {
    expect(await rejection(ecs.send(new RegisterTaskDefinitionCommand(definition(over))))).toEqual({
      name: "ClientException",
      message,
    });
  });

  test("vCPU and GB notations are stored as units and MiB", async () => {
    const out = await ecs.send(
      new RegisterTaskDefinitionCommand(definition({ cpu: "1 vCPU", memory: "2 GB" })),
    );
    expect(out.taskDefinition).toMatchObject({ cpu: "1024", memory: "2048" });
  });
});

describe("RunTask refuses what ECS refuses", () => {
  test.each<[string, Partial<RunTaskCommandInput>, string, string]>([
    ["an unknown cluster", { cluster: "nope" }, "ClusterNotFoundException", "Cluster not found."],
    [
      "no cluster when only cairn exists",
      { cluster: undefined },
      "ClusterNotFoundException",
      "Cluster not found.",
    ],
    [
      "an unknown task definition",
      { taskDefinition: "cairn-none" },
      "ClientException",
      "TaskDefinition not found.",
    ],
    [
      "both a launch type and a capacity provider strategy",
      { capacityProviderStrategy: [{ capacityProvider: "FARGATE_SPOT", weight: 1 }] },
      "InvalidParameterException",
      "Specifying both a launch type and capacity provider strategy is not supported. Remove one and try again.",
    ],
    [
      "the EC2 launch type",
      { launchType: "EC2" },
      "InvalidParameterException",
      "No Container Instances were found in your cluster.",
    ],
    [
      "no network configuration",
      { networkConfiguration: undefined },
      "InvalidParameterException",
      "Network Configuration must be provided when networkMode 'awsvpc' is specified.",
    ],
    ["count 0", { count: 0 }, "InvalidParameterException", "count must be between 1 and 10."],
    ["count 11", { count: 11 }, "InvalidParameterException", "count must be between 1 and 10."],
    [
      "a startedBy over 128 characters",
      { startedBy: "s".repeat(129) },
      "InvalidParameterException",
      "startedBy: up to 128 letters (uppercase and lowercase), numbers, hyphens (-), forward slash (/), and underscores (_) are allowed.",
    ],
    [
      "a startedBy with a colon",
      { startedBy: "cairn:s-1" },
      "InvalidParameterException",
      "startedBy: up to 128 letters (uppercase and lowercase), numbers, hyphens (-), forward slash (/), and underscores (_) are allowed.",
    ],
    [
      "51 tags",
      { tags: Array.from({ length: 51 }, (_, i) => ({ key: `k${i}`, value: "v" })) },
      "InvalidParameterException",
      "A resource can have at most 50 tags.",
    ],
    [
      "a tag under aws:",
      { tags: [{ key: "aws:mine", value: "v" }] },
      "InvalidParameterException",
      "Tag keys and values cannot begin with the reserved prefix aws:.",
    ],
    [
      "an override of a container the definition lacks",
      { overrides: { containerOverrides: [{ name: "other", command: ["true"] }] } },
      "InvalidParameterException",
      "Override for container named other is not a container in the TaskDefinition.",
    ],
    [
      "overrides over 8192 characters",
      { overrides: { containerOverrides: [{ name: "kernel", command: ["echo", "x".repeat(8200)] }] } },
      "InvalidParameterException",
      "Container Overrides length must be at most 8192",
    ],
    [
      "an override size Fargate does not offer",
      { overrides: { cpu: "512", memory: "512" } },
      "ClientException",
      "No Fargate configuration exists for given values.",
    ],
  ])("%s", async (_what, over, name, message) => {
    const input = run(over);
    expect(await rejection(ecs.send(new RunTaskCommand(input)))).toEqual({ name, message });
    expect(server.service.activeTasks).toBe(0);
  });

  test("a 36-character startedBy with / and _ is accepted, and the default cluster works once it exists", async () => {
    server.service.createCluster("default");
    const out = await ecs.send(
      new RunTaskCommand(run({ cluster: undefined, startedBy: "cairn/s_0123456789abcdef0123456789ab" })),
    );
    expect(out.tasks?.[0]).toMatchObject({
      clusterArn: "arn:aws:ecs:local:000000000000:cluster/default",
      startedBy: "cairn/s_0123456789abcdef0123456789ab",
      lastStatus: "PROVISIONING",
      desiredStatus: "RUNNING",
    });
  });
});

describe("capacity, stopping and describing", () => {
  test("the capacity fault switch: RunTask reports the refused tasks in failures and starts the rest", async () => {
    server.service.faults.unavailableCapacity.add("FARGATE_SPOT");
    try {
      const out = await ecs.send(
        new RunTaskCommand(
          run({
            launchType: undefined,
            count: 4,
            capacityProviderStrategy: [
              { capacityProvider: "FARGATE", weight: 1, base: 1 },
              { capacityProvider: "FARGATE_SPOT", weight: 1 },
            ],
          }),
        ),
      );
      // base 1 on FARGATE, then 3 spread by weight 1:1 → FARGATE, FARGATE_SPOT, FARGATE (ties to the first)
      expect(out.tasks?.map((t) => t.capacityProviderName)).toEqual(["FARGATE", "FARGATE", "FARGATE"]);
      expect(out.failures).toEqual([{ reason: CAPACITY_UNAVAILABLE }]);
    } finally {
      server.service.faults.unavailableCapacity.clear();
    }
  });

  test("StopTask on a missing task is InvalidParameterException; a reason over 255 characters is refused", async () => {
    expect(
      await rejection(
        ecs.send(new StopTaskCommand({ cluster: "cairn", task: "0123456789abcdef0123456789abcdef" })),
      ),
    ).toEqual({
      name: "InvalidParameterException",
      message: "The referenced task was not found.",
    });
    // A task that keeps running until stopped: `true` could end on its own before the stop.
    const started = await ecs.send(
      new RunTaskCommand(
        run({ overrides: { containerOverrides: [{ name: "kernel", command: ["sleep", "30"] }] } }),
      ),
    );
    const taskArn = started.tasks![0]!.taskArn!;
    expect(
      await rejection(
        ecs.send(new StopTaskCommand({ cluster: "cairn", task: taskArn, reason: "r".repeat(256) })),
      ),
    ).toEqual({ name: "InvalidParameterException", message: "Reason can be at most 255 characters." });
    const stopped = await ecs.send(
      new StopTaskCommand({ cluster: "cairn", task: taskArn, reason: "r".repeat(255) }),
    );
    expect(stopped.task).toMatchObject({ desiredStatus: "STOPPED", stopCode: "UserInitiated" });
  });

  test("DescribeTasks reports unknown tasks as MISSING failures; ListTasks filters by startedBy and family", async () => {
    const started = await ecs.send(
      new RunTaskCommand(
        run({
          count: 2,
          startedBy: "cairn-list-1",
          // Running for the whole test: ListTasks lists tasks whose desired status is RUNNING.
          overrides: { containerOverrides: [{ name: "kernel", command: ["sleep", "30"] }] },
        }),
      ),
    );
    const arns = started.tasks!.map((t) => t.taskArn!);
    const described = await ecs.send(
      new DescribeTasksCommand({
        cluster: "cairn",
        tasks: [...arns, "ffffffffffffffffffffffffffffffff"],
        include: ["TAGS"],
      }),
    );
    expect(described.tasks?.map((t) => t.taskArn).sort()).toEqual([...arns].sort());
    expect(described.failures).toEqual([{ arn: "ffffffffffffffffffffffffffffffff", reason: "MISSING" }]);
    expect(described.tasks?.[0]?.createdAt).toBeInstanceOf(Date);
    const listed = await ecs.send(new ListTasksCommand({ cluster: "cairn", startedBy: "cairn-list-1" }));
    expect(listed.taskArns?.sort()).toEqual([...arns].sort());
    const paged = await ecs.send(
      new ListTasksCommand({ cluster: "cairn", startedBy: "cairn-list-1", maxResults: 1 }),
    );
    expect(paged.taskArns).toHaveLength(1);
    expect(paged.nextToken).toBeDefined();
    const none = await ecs.send(new ListTasksCommand({ cluster: "cairn", family: "cairn-revs" }));
    expect(none.taskArns).toEqual([]);
    await expect(ecs.send(new DescribeTasksCommand({ cluster: "nope", tasks: arns }))).rejects.toMatchObject({
      name: "ClusterNotFoundException",
    });
  });
});

describe("who may call it", () => {
  test("an agent's credentials are refused; a request signed with an unknown key is refused", async () => {
    expect((await rejection(asAgent.send(new RunTaskCommand(run())))).name).toBe("AccessDeniedException");
    const stranger = client({ accessKeyId: "AKIASTRANGER", secretAccessKey: "x" });
    expect((await rejection(stranger.send(new ListTasksCommand({ cluster: "cairn" })))).name).toBe(
      "UnrecognizedClientException",
    );
    stranger.destroy();
  });
});
