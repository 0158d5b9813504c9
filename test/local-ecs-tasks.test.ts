/**
 * Embedded ECS tasks as real local processes, driven through `@aws-sdk/client-ecs`: the
 * lifecycle's states and events in the documented shape, delivered through a default bus's
 * rule matching; the environment and awslogs streams; StopTask (SIGTERM, then SIGKILL after
 * stopTimeout); a command that cannot start; a missing log group; the Spot interruption switch;
 * tasks of one call being independent processes.
 */
import {
  DescribeTasksCommand,
  ECSClient,
  RegisterTaskDefinitionCommand,
  RunTaskCommand,
  StopTaskCommand,
  type ContainerDefinition,
  type RunTaskCommandInput,
} from "@aws-sdk/client-ecs";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  EcsService,
  logsStoreSink,
  reapStaleEcsTasks,
  SPOT_INTERRUPTED_REASON,
  startEcsServer,
  type EcsServer,
} from "../local/ecs/index.ts";
import { LocalEventBus, type EventBridgeEvent } from "../local/eventbridge/index.ts";
import { LogsStore } from "../local/logs/index.ts";
import { until } from "./support/until.ts";

const CLUSTER_ARN = "arn:aws:ecs:local:000000000000:cluster/cairn";
const LOG_GROUP = "/cairn/kernels";

interface Detail {
  taskArn: string;
  clusterArn: string;
  lastStatus: string;
  desiredStatus: string;
  version: number;
  stopCode?: string;
  stoppedReason?: string;
  containers: { name: string; lastStatus: string; exitCode?: number; reason?: string }[];
  [key: string]: unknown;
}

const logs = new LogsStore();
logs.ensureLogGroup(LOG_GROUP);
/** AWS's default bus: ECS's events reach targets only through rules that match them. */
const defaultBus = new LocalEventBus({ name: "default", region: "local" });
const delivered: EventBridgeEvent<Detail>[] = [];
const otherCluster: EventBridgeEvent[] = [];
let server: EcsServer;
let ecs: ECSClient;

function kernel(over: Partial<ContainerDefinition> = {}): ContainerDefinition {
  return {
    name: "kernel",
    image: "123456789012.dkr.ecr.us-east-1.amazonaws.com/cairn-kernel:latest",
    essential: true,
    logConfiguration: {
      logDriver: "awslogs",
      options: { "awslogs-group": LOG_GROUP, "awslogs-region": "local", "awslogs-stream-prefix": "cairn" },
    },
    ...over,
  };
}

async function register(family: string, container: ContainerDefinition): Promise<void> {
  await ecs.send(
    new RegisterTaskDefinitionCommand({
      family,
      requiresCompatibilities: ["FARGATE"],
      networkMode: "awsvpc",
      cpu: "256",
      memory: "512",
      executionRoleArn: "arn:aws:iam::000000000000:role/cairn-task-execution",
      containerDefinitions: [container],
    }),
  );
}

async function runTasks(family: string, over: Partial<RunTaskCommandInput> = {}): Promise<string[]> {
  const out = await ecs.send(
    new RunTaskCommand({
      cluster: "cairn",
      taskDefinition: family,
      launchType: "FARGATE",
      networkConfiguration: { awsvpcConfiguration: { subnets: ["subnet-a", "subnet-b"] } },
      ...over,
    }),
  );
  expect(out.failures).toEqual([]);
  return out.tasks!.map((t) => t.taskArn!);
}

const eventsOf = (taskArn: string) => delivered.filter((e) => e.detail.taskArn === taskArn);

const stoppedEvent = (taskArn: string) =>
  until(`${taskArn} STOPPED`, () => eventsOf(taskArn).find((e) => e.detail.lastStatus === "STOPPED"));
const runningEvent = (taskArn: string) =>
  until(`${taskArn} RUNNING`, () => eventsOf(taskArn).find((e) => e.detail.lastStatus === "RUNNING"));

beforeAll(async () => {
  defaultBus.putRule({
    name: "cairn-ecs-tasks",
    // The pattern the ECS documentation gives for one cluster's task state changes.
    eventPattern: {
      source: ["aws.ecs"],
      "detail-type": ["ECS Task State Change"],
      detail: { clusterArn: [CLUSTER_ARN] },
    },
    targets: [
      { id: "rec", invoke: (e) => Promise.resolve(void delivered.push(e as EventBridgeEvent<Detail>)) },
    ],
  });
  defaultBus.putRule({
    name: "another-cluster",
    eventPattern: {
      source: ["aws.ecs"],
      detail: { clusterArn: ["arn:aws:ecs:local:000000000000:cluster/other"] },
    },
    targets: [{ id: "rec", invoke: (e) => Promise.resolve(void otherCluster.push(e)) }],
  });
  server = await startEcsServer({
    clusters: ["cairn"],
    stepDelayMs: 5,
    logs: logsStoreSink(logs),
    publish: (entry) => {
      const result = defaultBus.putServiceEvent({ ...entry, Resources: [...entry.Resources] });
      if ("ErrorCode" in result) throw new Error(`${result.ErrorCode}: ${result.ErrorMessage}`);
    },
  });
  ecs = new ECSClient({
    endpoint: server.endpoint,
    region: "local",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
    maxAttempts: 1,
  });
});

afterAll(async () => {
  ecs.destroy();
  await server.close();
  defaultBus.close();
});

describe("a task that runs and exits", () => {
  test("walks every lifecycle state with an event each, in the documented shape, to EssentialContainerExited", async () => {
    await register(
      "cairn-exit",
      kernel({
        command: ["sh", "-c", 'echo "hello $GREETING from $KEPT"; echo oops >&2; exit 3'],
        environment: [
          { name: "GREETING", value: "from-definition" },
          { name: "KEPT", value: "the-definition" },
        ],
      }),
    );
    const [taskArn] = await runTasks("cairn-exit", {
      startedBy: "cairn/s-1",
      overrides: {
        containerOverrides: [{ name: "kernel", environment: [{ name: "GREETING", value: "override" }] }],
      },
    });
    const stopped = await stoppedEvent(taskArn!);
    const events = eventsOf(taskArn!);
    expect(events.map((e) => e.detail.lastStatus)).toEqual([
      "PROVISIONING",
      "PENDING",
      "ACTIVATING",
      "RUNNING",
      "RUNNING", // desiredStatus STOPPED: the essential container exited
      "DEACTIVATING",
      "STOPPING",
      "DEPROVISIONING",
      "STOPPED",
    ]);
    const versions = events.map((e) => e.detail.version);
    expect(versions).toEqual([...versions].sort((a, b) => a - b));
    expect(new Set(versions).size).toBe(versions.length);

    expect(stopped).toMatchObject({
      source: "aws.ecs",
      "detail-type": "ECS Task State Change",
      account: "000000000000",
      region: "local",
      resources: [taskArn],
      detail: {
        clusterArn: CLUSTER_ARN,
        taskArn,
        taskDefinitionArn: "arn:aws:ecs:local:000000000000:task-definition/cairn-exit:1",
        lastStatus: "STOPPED",
        desiredStatus: "STOPPED",
        stopCode: "EssentialContainerExited",
        stoppedReason: "Essential container in task exited",
        startedBy: "cairn/s-1",
        group: "family:cairn-exit",
        launchType: "FARGATE",
        cpu: "256",
        memory: "512",
        containers: [{ name: "kernel", lastStatus: "STOPPED", exitCode: 3 }],
        overrides: {
          containerOverrides: [{ name: "kernel", environment: [{ name: "GREETING", value: "override" }] }],
        },
        attachments: [{ type: "eni", status: "DELETED" }],
      },
    });
    for (const field of [
      "createdAt",
      "startedAt",
      "stoppingAt",
      "stoppedAt",
      "pullStartedAt",
      "connectivityAt",
    ]) {
      expect(stopped.detail[field], field).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
    expect(otherCluster).toEqual([]);
    // Only ECS itself puts aws.ecs events: PutEvents still refuses them to callers.
    expect(
      defaultBus.putEvents([{ Source: "aws.ecs", DetailType: "ECS Task State Change", Detail: "{}" }])
        .Entries,
    ).toEqual([
      { ErrorCode: "NotAuthorizedForSourceException", ErrorMessage: "Not authorized for the source." },
    ]);

    // awslogs: stream <prefix>/<container>/<task id>, a line per event, the override's value.
    const taskId = taskArn!.split("/").at(-1)!;
    expect(logs.eventsOf(LOG_GROUP, `cairn/kernel/${taskId}`).map((e) => e.message)).toEqual(
      expect.arrayContaining(["hello override from the-definition", "oops"]),
    );

    const described = await ecs.send(new DescribeTasksCommand({ cluster: "cairn", tasks: [taskArn!] }));
    expect(described.tasks?.[0]).toMatchObject({
      lastStatus: "STOPPED",
      stopCode: "EssentialContainerExited",
      containers: [{ exitCode: 3, lastStatus: "STOPPED" }],
    });
    expect(described.tasks?.[0]?.stoppedAt).toBeInstanceOf(Date);
  });
});

describe("StopTask", () => {
  test("SIGTERM, and a container that handles it exits on its own: UserInitiated with the caller's reason", async () => {
    await register(
      "cairn-graceful",
      kernel({ command: ["sh", "-c", 'trap "echo bye; exit 0" TERM; while :; do sleep 0.05; done'] }),
    );
    const [taskArn] = await runTasks("cairn-graceful");
    await runningEvent(taskArn!);
    const answer = await ecs.send(
      new StopTaskCommand({ cluster: "cairn", task: taskArn!, reason: "cancelled: session s-2" }),
    );
    expect(answer.task).toMatchObject({ desiredStatus: "STOPPED", stopCode: "UserInitiated" });
    const stopped = await stoppedEvent(taskArn!);
    expect(stopped.detail).toMatchObject({
      stopCode: "UserInitiated",
      stoppedReason: "cancelled: session s-2",
      containers: [{ exitCode: 0 }],
    });
    const taskId = taskArn!.split("/").at(-1)!;
    expect(logs.eventsOf(LOG_GROUP, `cairn/kernel/${taskId}`).map((e) => e.message)).toContain("bye");
    // Stopping a stopped task answers with it, unchanged.
    const again = await ecs.send(new StopTaskCommand({ cluster: "cairn", task: taskArn! }));
    expect(again.task).toMatchObject({ lastStatus: "STOPPED", stoppedReason: "cancelled: session s-2" });
  });

  test("stopped before it runs: no process is left, the task never reports RUNNING", async () => {
    await register("cairn-early-stop", kernel({ command: ["sh", "-c", "while :; do sleep 0.05; done"] }));
    // Run and stop in one turn of the event loop, on the service the endpoint serves: over HTTP
    // the lifecycle's step timers could fire between the two calls on a loaded machine.
    const service = server.service;
    const { tasks } = service.runTask({
      cluster: "cairn",
      definition: service.taskDefinitions.find("cairn-early-stop")!,
      count: 1,
      subnets: ["subnet-a"],
      overrides: { containerOverrides: [] },
      cpu: "256",
      memory: "512",
      group: "family:cairn-early-stop",
      tags: [],
      propagateTaskDefinitionTags: false,
      managedTags: false,
    });
    const taskArn = tasks[0]!.init.arn;
    service.stopTask("cairn", taskArn, "cancelled early");
    const stopped = await stoppedEvent(taskArn);
    expect(stopped.detail).toMatchObject({ stopCode: "UserInitiated", stoppedReason: "cancelled early" });
    expect(eventsOf(taskArn).map((e) => e.detail.lastStatus)).not.toContain("RUNNING");
    expect(server.service.activeTasks).toBe(0);
  });

  test("a container that ignores SIGTERM is killed after its stopTimeout (137)", async () => {
    await register(
      "cairn-stubborn",
      kernel({ stopTimeout: 2, command: ["sh", "-c", 'trap "" TERM; while :; do sleep 0.05; done'] }),
    );
    const [taskArn] = await runTasks("cairn-stubborn");
    await runningEvent(taskArn!);
    const t0 = Date.now();
    await ecs.send(new StopTaskCommand({ cluster: "cairn", task: taskArn! }));
    const stopped = await stoppedEvent(taskArn!);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1_900);
    expect(stopped.detail).toMatchObject({
      stopCode: "UserInitiated",
      stoppedReason: "Task stopped by user",
      containers: [{ exitCode: 137 }],
    });
  });
});

describe("tasks that fail to start", () => {
  test("a command that cannot be spawned: TaskFailedToStart with ECS's CannotStartContainerError", async () => {
    await register("cairn-missing-binary", kernel({ command: ["/nonexistent/cairn-kernel", "--run"] }));
    const [taskArn] = await runTasks("cairn-missing-binary");
    const stopped = await stoppedEvent(taskArn!);
    expect(eventsOf(taskArn!).map((e) => e.detail.lastStatus)).not.toContain("RUNNING");
    expect(stopped.detail.stopCode).toBe("TaskFailedToStart");
    expect(stopped.detail.stoppedReason).toBe(
      'CannotStartContainerError: ResourceInitializationError: failed to create new container runtime task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "/nonexistent/cairn-kernel": executable file not found in $PATH: unknown',
    );
    expect(stopped.detail.containers[0]).toMatchObject({
      lastStatus: "STOPPED",
      reason: stopped.detail.stoppedReason,
    });
    expect(stopped.detail.containers[0]?.exitCode).toBeUndefined();
  });

  test("an awslogs group that does not exist: TaskFailedToStart with the logger's error", async () => {
    await register(
      "cairn-no-log-group",
      kernel({
        command: ["true"],
        logConfiguration: {
          logDriver: "awslogs",
          options: {
            "awslogs-group": "/nowhere",
            "awslogs-region": "local",
            "awslogs-stream-prefix": "cairn",
          },
        },
      }),
    );
    const [taskArn] = await runTasks("cairn-no-log-group");
    const stopped = await stoppedEvent(taskArn!);
    expect(stopped.detail.stopCode).toBe("TaskFailedToStart");
    expect(stopped.detail.stoppedReason).toBe(
      "ResourceInitializationError: failed to validate logger args: create stream has been retried 1 times: failed to create Cloudwatch log stream: ResourceNotFoundException: The specified log group does not exist. : exit status 1",
    );
  });
});

describe("Fargate Spot", () => {
  test("interruptSpot: the warning event first, then SIGTERM and STOPPED with SpotInterruption", async () => {
    await register("cairn-spot", kernel({ command: ["sh", "-c", "while :; do sleep 0.05; done"] }));
    const [taskArn] = await runTasks("cairn-spot", {
      launchType: undefined,
      capacityProviderStrategy: [{ capacityProvider: "FARGATE_SPOT", weight: 1 }],
    });
    const running = await runningEvent(taskArn!);
    expect(running.detail.capacityProviderName).toBe("FARGATE_SPOT");
    server.service.interruptSpot(taskArn!);
    const stopped = await stoppedEvent(taskArn!);
    const afterRunning = eventsOf(taskArn!).slice(eventsOf(taskArn!).indexOf(running) + 1);
    // The documented warning: still RUNNING, desired STOPPED, the Spot code and reason.
    expect(afterRunning[0]?.detail).toMatchObject({
      lastStatus: "RUNNING",
      desiredStatus: "STOPPED",
      stopCode: "SpotInterruption",
      stoppedReason: SPOT_INTERRUPTED_REASON,
    });
    expect(stopped.detail).toMatchObject({
      stopCode: "SpotInterruption",
      stoppedReason: "Your Spot Task was interrupted.",
      containers: [{ exitCode: 143 }], // sh ended by SIGTERM
    });
  });

  test("interruptSpot refuses an on-demand task and one that is not running", async () => {
    await register(
      "cairn-on-demand",
      kernel({ command: ["sh", "-c", 'trap "exit 0" TERM; while :; do sleep 0.05; done'] }),
    );
    const [taskArn] = await runTasks("cairn-on-demand");
    await runningEvent(taskArn!);
    expect(() => server.service.interruptSpot(taskArn!)).toThrow(/does not run on FARGATE_SPOT/);
    await ecs.send(new StopTaskCommand({ cluster: "cairn", task: taskArn! }));
    await stoppedEvent(taskArn!);
  });
});

describe("independent tasks", () => {
  test("count 3 starts three processes; stopping one leaves the others running", async () => {
    await register(
      "cairn-gang",
      kernel({ command: ["sh", "-c", 'trap "exit 0" TERM; echo "pid $$"; while :; do sleep 0.05; done'] }),
    );
    const arns = await runTasks("cairn-gang", { count: 3 });
    expect(new Set(arns).size).toBe(3);
    await Promise.all(arns.map(runningEvent));
    // RUNNING is the container started; its first line comes when its shell gets to it.
    const pids = await Promise.all(
      arns.map((arn) => {
        const id = arn.split("/").at(-1)!;
        return until(
          `${id}'s pid line`,
          () =>
            logs.eventsOf(LOG_GROUP, `cairn/kernel/${id}`).find((e) => e.message.startsWith("pid "))?.message,
        );
      }),
    );
    expect(new Set(pids).size).toBe(3);
    await ecs.send(new StopTaskCommand({ cluster: "cairn", task: arns[0]! }));
    await stoppedEvent(arns[0]!);
    const described = await ecs.send(new DescribeTasksCommand({ cluster: "cairn", tasks: arns }));
    const byArn = new Map(described.tasks!.map((t) => [t.taskArn, t.lastStatus]));
    expect([byArn.get(arns[0]), byArn.get(arns[1]), byArn.get(arns[2])]).toEqual([
      "STOPPED",
      "RUNNING",
      "RUNNING",
    ]);
    await Promise.all(arns.slice(1).map((task) => ecs.send(new StopTaskCommand({ cluster: "cairn", task }))));
    await Promise.all(arns.slice(1).map(stoppedEvent));
  });
});

describe("after a runtime killed with SIGKILL", () => {
  test("the next start kills the containers it left (recorded with their start time) and removes their work dirs", async () => {
    const workRoot = mkdtempSync(join(tmpdir(), "cairn-ecs-stale-"));
    // A service whose runtime "died": its task keeps running until the reaper comes.
    const orphaned = new EcsService({ clusters: ["cairn"], stepDelayMs: 5, workRoot });
    orphaned.taskDefinitions.register(
      {
        family: "cairn-orphan",
        requiresCompatibilities: ["FARGATE"],
        networkMode: "awsvpc",
        cpu: "256",
        memory: "512",
        containerDefinitions: [
          { name: "kernel", image: "x", command: ["sh", "-c", "while :; do sleep 0.05; done"] },
        ],
      },
      [],
    );
    const { tasks } = orphaned.runTask({
      cluster: "cairn",
      definition: orphaned.taskDefinitions.find("cairn-orphan")!,
      count: 1,
      subnets: ["subnet-1"],
      overrides: { containerOverrides: [] },
      cpu: "256",
      memory: "512",
      group: "family:cairn-orphan",
      tags: [],
      propagateTaskDefinitionTags: false,
      managedTags: false,
    });
    const task = tasks[0]!;
    await until("the orphan running", () => (task.lastStatus === "RUNNING" ? true : undefined));
    expect(readdirSync(workRoot)).toEqual([task.init.id]);

    const lines = reapStaleEcsTasks(workRoot);
    expect(lines).toEqual([
      expect.stringMatching(
        new RegExp(`^stopped container kernel of ECS task ${task.init.id} \\(pid \\d+\\)$`),
      ),
    ]);
    expect(readdirSync(workRoot)).toEqual([]);
    // The process is gone: its task sees the exit (as the dead runtime would have).
    await until("the orphan's exit", () => (task.containers[0]!.exitCode === 137 ? true : undefined));
    expect(reapStaleEcsTasks(workRoot)).toEqual([]);
    await orphaned.close();
  });
});
