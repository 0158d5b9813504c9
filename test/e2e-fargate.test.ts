/**
 * End-to-end scenarios of kernels as ECS tasks on Fargate, against the embedded runtime
 * (its ECS runs each task's command as a local process and puts ECS's own task events on the
 * default bus, whose rule forwards Cairn's cluster's to the coordinator). No agent runs here:
 * every kernel is a task on its queue's Fargate pool.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import type { EventBridgeEvent } from "../local/eventbridge/index.ts";
import { runLogStreamName } from "../agent/log-events.ts";
import { fargatePoolId } from "../functions/core/fargate-pool.ts";
import { sessionResult } from "../functions/core/sessions.ts";
import { assertLifecycleInvariants, startTestRuntime, type TestRuntime } from "./support/runtime.ts";
import { HISTORY_TO_RUNNING, historyLines } from "./support/histories.ts";
import { runCairn } from "./support/cli.ts";
import { until } from "./support/until.ts";

let rt: TestRuntime;
afterEach(() => assertLifecycleInvariants(rt));
const onDefault: EventBridgeEvent<{
  taskArn: string;
  lastStatus: string;
  stopCode?: string;
  stoppedReason?: string;
  startedBy?: string;
}>[] = [];
const onCairn: EventBridgeEvent[] = [];
let n = 0;
const newId = (label: string) => `fg-${label}-${Date.now().toString(36)}-${n++}`;

const QUEUE = "fargate-e2e";
/** The embedded runtime's kernel log group, where its ECS's awslogs writes. */
const KERNEL_LOG_GROUP = "/cairn/kernels";
const SPOT_QUEUE = "fargate-spot";
const IMAGE = "public.ecr.aws/docker/library/busybox:1.36";

beforeAll(async () => {
  rt = await startTestRuntime({ agents: 0 });
  rt.runtime.defaultBus.onEvent((e) => void onDefault.push(e as (typeof onDefault)[number]));
  rt.runtime.bus.onEvent((e) => void onCairn.push(e));
  // As `cairn queue create <name> --vcpu-quota 16 [--capacity-provider FARGATE_SPOT]` stores them.
  await rt.store.createQueue(
    { name: QUEUE, priority: 0, retryPolicies: [], fargate: { capacityProvider: "FARGATE", vcpuQuota: 16 } },
    Date.now(),
  );
  await rt.store.createQueue(
    {
      name: SPOT_QUEUE,
      priority: 0,
      retryPolicies: [],
      fargate: { capacityProvider: "FARGATE_SPOT", vcpuQuota: 16 },
    },
    Date.now(),
  );
}, 120_000);

afterAll(async () => {
  await rt?.stop();
});

const fargateSpec = (name: string, command: readonly string[], over: Record<string, unknown> = {}) => ({
  name,
  queue: QUEUE,
  executor: "fargate" as const,
  image: IMAGE,
  resources: { cpu: 0.25, memoryMiB: 512 },
  command: [...command],
  ...over,
});

const tasksOf = (sessionId: string) => [
  ...new Set(
    onDefault.filter((e) => e.detail.startedBy === `cairn/${sessionId}`).map((e) => e.detail.taskArn),
  ),
];
const lastEventOf = (taskArn: string) => onDefault.filter((e) => e.detail.taskArn === taskArn).at(-1);

describe("Fargate sessions, end to end", () => {
  test("a Fargate session runs its command as a task on its queue's pool and succeeds", async () => {
    const id = newId("hello");
    await rt.submit({ sessionId: id, spec: fargateSpec("hello", ["sh", "-c", "echo hi"]) });
    const done = await rt.waitForEnd(id);
    expect(done.session.status).toBe("TERMINATED");
    expect(sessionResult(done)).toBe("succeeded");
    expect(done.kernels).toMatchObject([
      { index: 0, status: "TERMINATED", exitCode: 0, outcome: "SUCCEEDED", agentId: fargatePoolId(QUEUE) },
    ]);
    expect(done.kernels[0]?.taskArn).toMatch(/^arn:aws:ecs:.*:task\//);
    expect(historyLines(await rt.store.listHistory(id))).toEqual([
      ...HISTORY_TO_RUNNING,
      "DetectTermination SUCCESS RUNNING->TERMINATING",
      "PromoteToTerminated SUCCESS TERMINATING->TERMINATED",
    ]);
    // The pool's quota is whole again once the session has left it.
    await until("the quota released", async () => {
      const pool = await rt.store.getAgent(fargatePoolId(QUEUE));
      return pool?.free.cpu === 16 ? pool : undefined;
    });
  }, 60_000);

  test("its output is readable as `cairn logs` reads it, from the task's own stream", async () => {
    const ids = [newId("logs"), newId("logs")];
    for (const id of ids) {
      await rt.submit({
        sessionId: id,
        spec: fargateSpec("logs", ["sh", "-c", "echo hi from $CAIRN_TASK_ID"]),
      });
    }
    for (const id of ids) {
      const done = await rt.waitForEnd(id);
      expect(done.session.status).toBe("TERMINATED");
      const run = await runCairn(rt.dataDir, ["logs", id]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toContain(`hi from ${id}/task-0`);
      // awslogs names the stream after the task, under the one prefix every definition has.
      const stream = runLogStreamName(id, 0, 0, done.kernels[0]!.taskArn);
      expect(stream).toMatch(/^cairn\/kernel\/[0-9a-f]{32}$/);
      expect(rt.runtime.logs.store.eventsOf(KERNEL_LOG_GROUP, stream).map((e) => e.message)).toEqual([
        `hi from ${id}/task-0`,
      ]);
    }
    // Both sessions' tasks ran from one task definition: it was registered once.
    const definitions = new Set(
      ids.flatMap((id) =>
        tasksOf(id).map(
          (arn) => (lastEventOf(arn)?.detail as { taskDefinitionArn?: string }).taskDefinitionArn,
        ),
      ),
    );
    expect([...definitions]).toEqual([expect.stringMatching(/:task-definition\/cairn-[0-9a-f]{12}:1$/)]);
  }, 60_000);

  test("an invalid cpu/memory pair is refused naming spec.resources.memoryMiB and the valid sizes", async () => {
    const id = newId("size");
    // Put as it is: the SDK-level helper would refuse it before sending, as the CLI does.
    await rt.put({
      Source: "cairn.client",
      DetailType: "Session Submitted",
      Detail: JSON.stringify({
        sessionId: id,
        spec: fargateSpec("size", ["true"], { resources: { cpu: 1, memoryMiB: 512 } }),
      }),
    });
    const reasons = await until("the refusal", async () => {
      const found = await rt.store.listRejections(id);
      return found.length > 0 ? found.map((r) => r.reason) : undefined;
    });
    expect(reasons).toHaveLength(1);
    expect(reasons[0]).toMatch(/^rejected event [\w-]+ \(Session Submitted\): /);
    expect(reasons[0]).toContain(
      "detail.spec.resources.memoryMiB: 512 MiB is not a Fargate memory size for 1 vCPU: with executor fargate, " +
        "must be one of 2048, 3072, 4096, 5120, 6144, 7168, 8192",
    );
    expect(await rt.store.getSession(id)).toBeUndefined();
  });

  test("a Spot interruption is a preemption: the kernel runs again under the preemption budget", async () => {
    const id = newId("spot");
    // The first run waits to be interrupted; the second ends on its own.
    const script = 'if [ "$CAIRN_RUN_INDEX" = 0 ]; then echo first run; exec sleep 60; fi; echo second run';
    await rt.submit({
      sessionId: id,
      spec: fargateSpec("spot", ["sh", "-c", script], { queue: SPOT_QUEUE }),
    });
    const running = await rt.waitFor(
      id,
      (s) => s.session.status === "RUNNING" && s.kernels[0]?.taskArn !== undefined,
      "RUNNING with its task",
    );
    const first = running.kernels[0]!.taskArn!;
    await until(
      "run 0's line",
      () =>
        rt.runtime.logs.store
          .eventsOf(KERNEL_LOG_GROUP, runLogStreamName(id, 0, 0, first))
          .some((e) => e.message === "first run") || undefined,
    );
    rt.runtime.ecs.service.interruptSpot(first);
    const done = await rt.waitFor(
      id,
      (s) => s.session.status === "TERMINATED" && s.session.runIndex === 1,
      "TERMINATED on its second run",
      60_000,
    );
    expect(sessionResult(done)).toBe("succeeded");
    expect(done.kernels[0]?.taskArn).not.toBe(first);
    const [run0] = await rt.store.listRuns(id);
    expect(run0).toMatchObject({
      runIndex: 0,
      outcome: "PREEMPTED",
      decision: "retry",
      kernels: [{ index: 0, condition: "Preempted", outcome: "PREEMPTED" }],
    });
    expect(done.session.retry?.preemptionCount).toBe(1);
    expect(lastEventOf(first)?.detail).toMatchObject({ lastStatus: "STOPPED", stopCode: "SpotInterruption" });
    // Each run's output is its own task's stream: the current run's is what `cairn logs` shows,
    // and the earlier run's record keeps its task, so its stream is found too.
    expect(run0?.kernels[0]?.taskArn).toBe(first);
    const logs = await runCairn(rt.dataDir, ["logs", id]);
    expect(logs.code, logs.stderr).toBe(0);
    expect(logs.stdout).toBe("second run\n");
    expect(
      rt.runtime.logs.store.eventsOf(KERNEL_LOG_GROUP, runLogStreamName(id, 0, 0, run0?.kernels[0]?.taskArn)),
    ).toMatchObject([{ message: "first run" }]);
  }, 90_000);

  test("a task that cannot start ends the session FAILED with ECS's reason", async () => {
    const id = newId("nostart");
    await rt.submit({ sessionId: id, spec: fargateSpec("nostart", ["no-such-command-anywhere"]) });
    const done = await rt.waitForEnd(id, 60_000);
    expect(done.session.status).toBe("TERMINATED");
    expect(sessionResult(done)).toBe("failed");
    const [run0, ...more] = await rt.store.listRuns(id);
    expect(more).toEqual([]);
    expect(run0).toMatchObject({
      outcome: "FAILED",
      decision: "finished",
      kernels: [{ index: 0, status: "ERROR", outcome: "FAILED" }],
    });
    // ECS's stoppedReason, as the embedded ECS words it after Fargate's.
    expect(run0?.kernels[0]?.message).toMatch(/^CannotStartContainerError: /);
    expect(run0?.kernels[0]?.message).toContain(
      'exec: "no-such-command-anywhere": executable file not found in $PATH',
    );
    expect(done.kernels[0]?.message).toBe(run0?.kernels[0]?.message);
  }, 90_000);

  test("a cancel of a running Fargate session stops its task: the process is gone, the task STOPPED by the user", async () => {
    const id = newId("cancel");
    const pidFile = join(rt.dataDir, `${id}.pid`);
    await rt.submit({
      sessionId: id,
      spec: fargateSpec("cancel", ["sh", "-c", `echo $$ > ${pidFile}; exec sleep 60`]),
    });
    const running = await rt.waitFor(
      id,
      (s) => s.session.status === "RUNNING" && s.kernels[0]?.taskArn !== undefined,
      "RUNNING with its task",
    );
    const pid = Number(await until("the pid", () => readFileSync(pidFile, "utf8").trim() || undefined));
    expect(alive(pid)).toBe(true);
    await rt.cancel(id, "no longer needed");
    const done = await rt.waitForEnd(id);
    expect(done.session.status).toBe("TERMINATED");
    expect(sessionResult(done)).toBe("cancelled");
    const taskArn = running.kernels[0]!.taskArn!;
    await until("the task STOPPED", () =>
      lastEventOf(taskArn)?.detail.lastStatus === "STOPPED" ? true : undefined,
    );
    expect(lastEventOf(taskArn)?.detail).toMatchObject({
      stopCode: "UserInitiated",
      stoppedReason: "session cancelled",
    });
    await until("the process gone", () => (alive(pid) ? undefined : true));
  }, 60_000);

  test("a force cancel of a running Fargate session stops its task at once and ends the kernel KILLED without waiting", async () => {
    const id = newId("force");
    const pidFile = join(rt.dataDir, `${id}.pid`);
    await rt.submit({
      sessionId: id,
      spec: fargateSpec("force", ["sh", "-c", `echo $$ > ${pidFile}; exec sleep 60`]),
    });
    const running = await rt.waitFor(
      id,
      (s) => s.session.status === "RUNNING" && s.kernels[0]?.taskArn !== undefined,
      "RUNNING with its task",
    );
    const pid = Number(await until("the pid", () => readFileSync(pidFile, "utf8").trim() || undefined));
    await runCairn(rt.dataDir, ["cancel", id, "--force"]);
    const done = await rt.waitForEnd(id);
    expect(done.session.status).toBe("TERMINATED");
    expect(sessionResult(done)).toBe("cancelled");
    expect(done.kernels[0]).toMatchObject({ status: "TERMINATED", outcome: "KILLED" });
    expect(done.kernels[0]?.message).toMatch(/^force cancelled: killed without a grace period/);
    const taskArn = running.kernels[0]!.taskArn!;
    await until("the task STOPPED", () =>
      lastEventOf(taskArn)?.detail.lastStatus === "STOPPED" ? true : undefined,
    );
    expect(lastEventOf(taskArn)?.detail).toMatchObject({
      stopCode: "UserInitiated",
      stoppedReason: "force cancelled",
    });
    await until("the process gone", () => (alive(pid) ? undefined : true));
  }, 60_000);

  test("RunTask answers lost after the tasks were placed start no second task: each kernel runs once", async () => {
    const id = newId("lost");
    const faults = rt.runtime.ecs.service.faults;
    // Both kernels' first answers are lost; the functions' SDK asks again with the same token.
    faults.lostRunTaskAnswers = 2;
    try {
      await rt.submit({
        sessionId: id,
        spec: fargateSpec("lost", ["sh", "-c", "echo once"], { replicas: 2 }),
      });
      const done = await rt.waitForEnd(id, 60_000);
      expect(faults.lostRunTaskAnswers).toBe(0);
      expect(sessionResult(done)).toBe("succeeded");
      const recorded = done.kernels.map((k) => k.taskArn);
      expect(tasksOf(id).sort()).toEqual([...recorded].sort());
      expect(tasksOf(id)).toHaveLength(2);
    } finally {
      faults.lostRunTaskAnswers = 0;
    }
  }, 90_000);

  test("an arm64 image runs from an ARM64 task definition", async () => {
    const id = newId("arm");
    await rt.submit({
      sessionId: id,
      spec: fargateSpec("arm", ["sh", "-c", "echo on graviton"], { architecture: "arm64" }),
    });
    const done = await rt.waitForEnd(id);
    expect(sessionResult(done)).toBe("succeeded");
    const task = rt.runtime.ecs.service.find("cairn", done.kernels[0]!.taskArn!);
    expect(task?.init.definition.runtimePlatform).toEqual({
      cpuArchitecture: "ARM64",
      operatingSystemFamily: "LINUX",
    });
  }, 60_000);

  test("a gang ECS cannot place is retried with ECS's reason, and starts once capacity is back", async () => {
    const id = newId("nocap");
    const faults = rt.runtime.ecs.service.faults.unavailableCapacity;
    faults.add("FARGATE_SPOT");
    try {
      await rt.submit({
        sessionId: id,
        spec: fargateSpec("nocap", ["sh", "-c", "echo placed"], { queue: SPOT_QUEUE, replicas: 2 }),
      });
      const failed = await until("a failed start", async () =>
        (await rt.store.listHistory(id)).find(
          (h) => h.handler === "StartSessions" && h.result === "NEED_RETRY",
        ),
      );
      expect(failed.message).toMatch(/^ECS could not start the kernels' tasks: kernel \d: /);
      // Nothing of the gang was left running.
      expect(tasksOf(id)).toEqual([]);
    } finally {
      faults.delete("FARGATE_SPOT");
    }
    const done = await rt.waitForEnd(id, 60_000);
    expect(sessionResult(done)).toBe("succeeded");
    expect(done.kernels.every((k) => k.taskArn !== undefined)).toBe(true);
  }, 90_000);

  test("a 4-task Fargate gang starts 4 tasks, and one interrupted tears all 4 down together", async () => {
    const id = newId("gang");
    const script = 'if [ "$CAIRN_RUN_INDEX" = 0 ]; then exec sleep 60; fi; echo done';
    await rt.submit({
      sessionId: id,
      spec: fargateSpec("gang", ["sh", "-c", script], { queue: SPOT_QUEUE, replicas: 4, coscheduled: true }),
    });
    const running = await rt.waitFor(
      id,
      (s) => s.session.status === "RUNNING" && s.kernels.every((k) => k.taskArn !== undefined),
      "RUNNING with 4 tasks",
    );
    const tasks = running.kernels.map((k) => k.taskArn!);
    expect(new Set(tasks).size).toBe(4);
    expect(tasksOf(id)).toEqual(expect.arrayContaining(tasks));
    rt.runtime.ecs.service.interruptSpot(tasks[2]!);
    await until("all 4 tasks STOPPED", () =>
      tasks.every((t) => lastEventOf(t)?.detail.lastStatus === "STOPPED") ? true : undefined,
    );
    expect(tasks.map((t) => lastEventOf(t)?.detail.stopCode)).toEqual([
      "UserInitiated",
      "UserInitiated",
      "SpotInterruption",
      "UserInitiated",
    ]);
    const done = await rt.waitFor(
      id,
      (s) => s.session.status === "TERMINATED" && s.session.runIndex === 1,
      "TERMINATED on its second run",
      60_000,
    );
    expect(sessionResult(done)).toBe("succeeded");
    const [run0] = await rt.store.listRuns(id);
    expect(run0).toMatchObject({ runIndex: 0, outcome: "PREEMPTED", decision: "retry" });
  }, 120_000);

  test("on the default queue, which has no Fargate settings, it waits with advice that works as printed", async () => {
    const id = newId("default-queue");
    await rt.submit({
      sessionId: id,
      spec: { ...fargateSpec("on-default", ["sh", "-c", "echo hi"]), queue: "default" },
    });
    const waiting = await rt.waitFor(
      id,
      (s) => (s.session.pendingReason ?? "").includes("cairn queue update"),
      "a pending reason with advice",
    );
    const advice = /`(cairn queue update [^`]+)`/.exec(waiting.session.pendingReason!)![1]!;
    expect(advice).toBe("cairn queue update default --vcpu-quota N");
    // Run as printed, N filled in.
    const argv = advice.replace(/ N$/, " 4").split(" ").slice(1);
    const updated = await runCairn(rt.dataDir, argv);
    expect(updated.code, updated.stderr).toBe(0);
    expect(updated.stdout).toContain("updated queue default");
    const done = await rt.waitForEnd(id, 60_000);
    expect(sessionResult(done)).toBe("succeeded");
  }, 90_000);
});

/** Whether a process with this pid still exists. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
