/**
 * Kernel commands as ECS calls (functions/app/fargate-kernels.ts) against a fake port that
 * records what it is asked: the task definition of a session's kernels, the tasks a start runs
 * (command, environment with the identity last, size, capacity, network, startedBy, tags), a
 * gang that cannot start, and stops through KernelCommands: a Fargate pool's go to ECS with the
 * stop's condition in the reason, an agent's go to its queue without the task.
 */
import { describe, expect, test } from "vitest";
import type { FargateConfig } from "../functions/config.ts";
import { FargateKernels } from "../functions/app/fargate-kernels.ts";
import type {
  FargateGangResult,
  FargateRunRequest,
  FargateStopRequest,
  FargateTaskDefinitionSpec,
  FargateTasksPort,
} from "../functions/core/ports/fargate-tasks.ts";
import { kernelCommand, KernelCommands } from "../functions/app/kernel-commands.ts";
import type { AgentDelivery } from "../functions/core/ports/agent-channel.ts";
import type { Agent, SessionWithKernels } from "../functions/core/model.ts";
import { fargateOverrideChars } from "../functions/core/ecs-task-events.ts";
import { newSession, T0 } from "./store-fixtures.ts";

const CONFIG: FargateConfig = {
  clusterArn: "arn:aws:ecs:us-east-1:123456789012:cluster/cairn",
  subnets: ["subnet-0a"],
  securityGroups: ["sg-0b"],
  assignPublicIp: false,
  executionRoleArn: "arn:aws:iam::123456789012:role/exec",
  taskRoleArn: "arn:aws:iam::123456789012:role/task",
  logGroupName: "/cairn/kernels",
  capacityProviders: ["FARGATE", "FARGATE_SPOT"],
};

class FakePort implements FargateTasksPort {
  readonly definitions: FargateTaskDefinitionSpec[] = [];
  readonly runs: FargateRunRequest[][] = [];
  readonly stops: FargateStopRequest[] = [];
  failKernel: number | undefined;

  ensureTaskDefinition(spec: FargateTaskDefinitionSpec): Promise<string> {
    this.definitions.push(spec);
    return Promise.resolve("arn:aws:ecs:us-east-1:123456789012:task-definition/cairn-abc:1");
  }
  runTasks(): Promise<FargateGangResult> {
    throw new Error("not used");
  }
  runGang(requests: readonly FargateRunRequest[]): Promise<FargateGangResult> {
    this.runs.push([...requests]);
    if (this.failKernel !== undefined) {
      return Promise.resolve({
        started: [],
        failures: [
          { kernelIndex: this.failKernel, reason: "RESOURCE:FARGATE capacity unavailable", retryable: true },
        ],
        rolledBack: ["arn:task/0"],
      });
    }
    return Promise.resolve({
      started: requests.map((r) => ({ kernelIndex: r.kernelIndex, taskArn: `arn:task/${r.kernelIndex}` })),
      failures: [],
      rolledBack: [],
    });
  }
  stopTasks(requests: readonly FargateStopRequest[]): Promise<void> {
    this.stops.push(...requests);
    return Promise.resolve();
  }
}

function fargateSession(id: string, replicas = 2): SessionWithKernels {
  const s = newSession(id, { replicas, resources: { cpu: 1, memoryMiB: 2048 } });
  return {
    session: {
      ...s.session,
      runIndex: 1,
      spec: {
        ...s.session.spec,
        queue: "batch",
        executor: "fargate",
        image: "public.ecr.aws/docker/library/busybox:1",
        command: ["sh", "-c", "echo hi"],
        // A spec cannot pose as another kernel: the identity comes after its env.
        env: { GREETING: "hi", CAIRN_KERNEL_INDEX: "7" },
      },
    },
    kernels: s.kernels.map((k) => ({ ...k, agentId: "fargate_batch" })),
  };
}

describe("FargateKernels", () => {
  test("a kernel's task definition: the image, the size in CPU units, the constant log stream prefix, the roles", async () => {
    const port = new FakePort();
    const target = fargateSession("fg-def");
    await new FargateKernels(port, CONFIG).taskDefinition(target, target.kernels[1]!);
    expect(port.definitions).toEqual([
      {
        image: "public.ecr.aws/docker/library/busybox:1",
        cpu: 1024,
        memoryMiB: 2048,
        logGroup: "/cairn/kernels",
        logStreamPrefix: "cairn",
        executionRoleArn: CONFIG.executionRoleArn,
        taskRoleArn: CONFIG.taskRoleArn,
        cpuArchitecture: "X86_64",
      },
    ]);
  });

  test("an arm64 image's kernels get a definition for ARM64", async () => {
    const port = new FakePort();
    const target = fargateSession("fg-arm");
    const arm = {
      ...target,
      session: { ...target.session, spec: { ...target.session.spec, architecture: "arm64" as const } },
    };
    await new FargateKernels(port, CONFIG).taskDefinition(arm, arm.kernels[0]!);
    expect(port.definitions[0]?.cpuArchitecture).toBe("ARM64");
  });

  test("each kernel's RunTask has a client token: the same start sent again has the same ones, the next try new ones", async () => {
    const port = new FakePort();
    const kernels = new FargateKernels(port, CONFIG);
    const settings = { capacityProvider: "FARGATE", vcpuQuota: 4 } as const;
    const target = fargateSession("fg-token");
    // The handler run again (its first run ended before it recorded the tasks): same tokens.
    await kernels.start(target, settings);
    await kernels.start(target, settings);
    // A recorded failure (say, a gang rolled back) spends a try: the next start is new.
    await kernels.start({ ...target, session: { ...target.session, tries: 1 } }, settings);
    const tokens = port.runs.map((run) => run.map((r) => r.clientToken));
    expect(tokens).toEqual([
      ["cairn/fg-token/r1/p0/t0/k0", "cairn/fg-token/r1/p0/t0/k1"],
      ["cairn/fg-token/r1/p0/t0/k0", "cairn/fg-token/r1/p0/t0/k1"],
      ["cairn/fg-token/r1/p0/t1/k0", "cairn/fg-token/r1/p0/t1/k1"],
    ]);
  });

  test("nothing of the session or run is in it: every run and session of the same image and size asks for one definition", async () => {
    const port = new FakePort();
    const kernels = new FargateKernels(port, CONFIG);
    const first = fargateSession("fg-same-a");
    const retried = { ...first, session: { ...first.session, runIndex: 2 } };
    const other = fargateSession("fg-same-b");
    for (const target of [first, retried, other]) {
      for (const kernel of target.kernels) await kernels.taskDefinition(target, kernel);
    }
    expect(port.definitions).toHaveLength(6);
    expect(new Set(port.definitions.map((d) => JSON.stringify(d))).size).toBe(1);
  });

  test("a start runs one task per kernel as a gang, with the identity last in the environment", async () => {
    const port = new FakePort();
    const outcome = await new FargateKernels(port, CONFIG).start(fargateSession("fg-start"), {
      capacityProvider: "FARGATE_SPOT",
      vcpuQuota: 4,
    });
    expect(outcome).toEqual({
      ok: true,
      tasks: [
        { kernelIndex: 0, taskArn: "arn:task/0" },
        { kernelIndex: 1, taskArn: "arn:task/1" },
      ],
    });
    const [first] = port.runs[0]!;
    expect(first).toMatchObject({
      kernelIndex: 0,
      command: ["sh", "-c", "echo hi"],
      cpu: 1024,
      memoryMiB: 2048,
      capacity: "FARGATE_SPOT",
      network: { subnets: ["subnet-0a"], securityGroups: ["sg-0b"], assignPublicIp: false },
      startedBy: "cairn/fg-start",
    });
    const env = new Map(first!.environment.map((e) => [e.name, e.value]));
    expect(Object.fromEntries(env)).toEqual({
      GREETING: "hi",
      CAIRN_KERNEL_INDEX: "0",
      CAIRN_JOB_ID: "fg-start",
      CAIRN_TASK_INDEX: "0",
      CAIRN_NUM_TASKS: "2",
      CAIRN_TASK_ID: "fg-start/task-0",
      IRIS_TASK_ID: "fg-start/task-0",
      IRIS_TASK_INDEX: "0",
      IRIS_NUM_TASKS: "2",
      CAIRN_SESSION_ID: "fg-start",
      CAIRN_RUN_INDEX: "1",
      CAIRN_PLACEMENT: "0",
    });
    expect(first!.tags).toContainEqual({ key: "cairn:session-id", value: "fg-start" });
  });

  test("the overrides a start sends stay within the size the edge checks a spec against", async () => {
    const port = new FakePort();
    const long = fargateSession("f".repeat(63), 3);
    const spec = { ...long.session.spec, env: { BIG: "x".repeat(2000) } };
    await new FargateKernels(port, CONFIG).start(
      { ...long, session: { ...long.session, runIndex: 12, spec } },
      { capacityProvider: "FARGATE", vcpuQuota: 4 },
    );
    for (const r of port.runs[0]!) {
      // As the adapter shapes it (functions/adapters/ecs/fargate-tasks.ts).
      const sent = JSON.stringify({
        containerOverrides: [{ name: "kernel", command: r.command, environment: r.environment }],
        cpu: String(r.cpu),
        memory: String(r.memoryMiB),
      }).length;
      expect(sent).toBeLessThanOrEqual(fargateOverrideChars(spec));
    }
  });

  test("kernels that have their task are not started again", async () => {
    const port = new FakePort();
    const target = fargateSession("fg-again");
    const started = {
      ...target,
      kernels: target.kernels.map((k) => ({ ...k, taskArn: `arn:task/${k.index}` })),
    };
    expect(
      await new FargateKernels(port, CONFIG).start(started, { capacityProvider: "FARGATE", vcpuQuota: 4 }),
    ).toEqual({
      ok: true,
      tasks: [],
    });
    expect(port.runs).toEqual([]);
  });

  test("a gang that cannot start is a failure naming the kernel and ECS's reason", async () => {
    const port = new FakePort();
    port.failKernel = 1;
    expect(
      await new FargateKernels(port, CONFIG).start(fargateSession("fg-fail"), {
        capacityProvider: "FARGATE",
        vcpuQuota: 4,
      }),
    ).toEqual({ ok: false, reason: "kernel 1: RESOURCE:FARGATE capacity unavailable" });
  });
});

describe("KernelCommands: stops of a pool's kernels go to ECS", () => {
  const agent: Agent = {
    id: "agent-1",
    capacity: { cpu: 4, memoryMiB: 4096 },
    free: { cpu: 4, memoryMiB: 4096 },
    lastHeartbeatAtMs: T0,
    version: 1,
    incarnation: "inc-00000001",
  };

  test("a pool kernel's stop is StopTask with the condition in the reason; an agent's is sent without the task", async () => {
    const port = new FakePort();
    const sent: AgentDelivery[] = [];
    const commands = new KernelCommands(
      { getAgent: () => Promise.resolve(agent) },
      { open: () => Promise.resolve(), send: (d) => (sent.push(...d), Promise.resolve()) },
      new FargateKernels(port, CONFIG),
    );
    const onPool = fargateSession("fg-stop");
    const running = {
      ...onPool,
      kernels: onPool.kernels.map((k) => (k.index === 0 ? { ...k, taskArn: "arn:task/0" } : k)),
    };
    const onAgent = newSession("ag-stop", { replicas: 1 });
    const agentKernel = { ...onAgent.kernels[0]!, agentId: "agent-1", taskArn: "arn:task/never" };
    await commands.send([
      ...running.kernels.map((k) =>
        kernelCommand(running, k, "stop", {
          graceMs: 1000,
          condition: "Preempted",
          reason: "preempted by x",
        }),
      ),
      kernelCommand({ ...onAgent, kernels: [agentKernel] }, agentKernel, "stop", { graceMs: 1000 }),
    ]);
    // Kernel 1 never started a task: nothing to stop.
    expect(port.stops).toEqual([{ taskArn: "arn:task/0", reason: "cairn:Preempted: preempted by x" }]);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({
      agentId: "agent-1",
      message: { command: { action: "stop", sessionId: "ag-stop" } },
    });
    expect(JSON.stringify(sent[0])).not.toContain("taskArn");
  });

  test("without a Fargate executor a pool kernel's stop fails, saying why", async () => {
    const commands = new KernelCommands(
      { getAgent: () => Promise.resolve(undefined) },
      { open: () => Promise.resolve(), send: () => Promise.resolve() },
    );
    const target = fargateSession("fg-none", 1);
    const k = { ...target.kernels[0]!, taskArn: "arn:task/0" };
    await expect(
      commands.send([kernelCommand({ ...target, kernels: [k] }, k, "stop", { graceMs: 0 })]),
    ).rejects.toMatchObject({
      code: "FARGATE_UNAVAILABLE",
    });
  });
});
