/**
 * Jobs and co-scheduled gangs end to end, with real processes on four local agents: a co-scheduled
 * gang torn down (and retried) as one, independent tasks sharing a failure domain, a scheduling
 * timeout, and parent/child cancellation. Task commands branch on CAIRN_TASK_INDEX.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { deriveJobState, jobSettings, jobTasks, type TaskView } from "../functions/core/jobs.ts";
import type { Job } from "../functions/core/model.ts";
import type { SessionSpecInput } from "../functions/core/spec.ts";
import { TERMINAL_SESSION_STATUSES, type JobState } from "../functions/core/status.ts";
import { assertLifecycleInvariants, startTestRuntime, type TestRuntime } from "./support/runtime.ts";

let rt: TestRuntime;
// After every scenario: no session under way without a live execution, no ended one holding a token.
afterEach(() => assertLifecycleInvariants(rt));
let n = 0;
const newId = (label: string) => `job-${label}-${Date.now().toString(36)}-${n++}`;
const sh = (script: string) => ["/bin/sh", "-c", script];

const jobEvents: Record<string, unknown>[] = [];

beforeAll(async () => {
  rt = await startTestRuntime({ agents: 4, agentCapacity: { cpu: 4, memoryMiB: 4096 } });
  rt.runtime.bus.onEvent((e) => {
    if (e["detail-type"] === "Job State Changed") jobEvents.push(e.detail as Record<string, unknown>);
  });
}, 120_000);

afterAll(async () => {
  await rt?.stop();
});

interface JobSnapshot {
  readonly job: Job;
  readonly tasks: TaskView[];
  readonly state: JobState;
}

async function snapshot(jobId: string): Promise<JobSnapshot | undefined> {
  const job = await rt.store.getJob(jobId);
  if (!job) return undefined;
  const tasks = jobTasks(job, await rt.store.getSessions(job.sessionIds));
  return { job, tasks, state: deriveJobState(tasks, jobSettings(job.spec).maxTaskFailures).state };
}

async function waitForJob(
  jobId: string,
  predicate: (s: JobSnapshot) => boolean,
  what: string,
  timeoutMs = 40_000,
): Promise<JobSnapshot> {
  const deadline = Date.now() + timeoutMs;
  let last: JobSnapshot | undefined;
  while (Date.now() < deadline) {
    last = await snapshot(jobId);
    if (last && predicate(last)) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(
    `job ${jobId} did not reach ${what} within ${timeoutMs} ms; last seen: ${JSON.stringify(
      last && { state: last.state, final: last.job.final, tasks: last.tasks.map((t) => [t.state, t.reason]) },
    )}`,
  );
}

/** The job's final state is recorded and every one of its sessions has ended. */
const settled = (s: JobSnapshot) =>
  s.job.final !== undefined && s.tasks.every((t) => TERMINAL_SESSION_STATUSES.has(t.sessionStatus));

async function submit(jobId: string, spec: SessionSpecInput): Promise<void> {
  await rt.submit({ sessionId: jobId, spec });
}

async function noAllocations(sessionIds: readonly string[]): Promise<boolean> {
  for (const id of sessionIds) if ((await rt.store.allocationsOf(id)).length > 0) return false;
  return true;
}

describe("co-scheduled gang", () => {
  test("a 4-task gang where one task exits 1 tears down all four and releases their capacity", async () => {
    const id = newId("gang");
    await submit(id, {
      name: "gang",
      replicas: 4,
      coscheduled: true,
      resources: { cpu: 1, memoryMiB: 64 },
      command: sh(`if [ "$CAIRN_TASK_INDEX" = "2" ]; then sleep 1; exit 1; fi; exec sleep 60`),
    });
    const running = await rt.waitFor(
      id,
      (s) => s.kernels.every((k) => k.status === "RUNNING"),
      "all four running",
    );
    // perAgent 1 (the default): one task per agent.
    expect(new Set(running.kernels.map((k) => k.agentId)).size).toBe(4);
    const done = await waitForJob(id, settled, "the gang torn down");
    expect(done.tasks.map((t) => t.state)).toEqual([
      "WORKER_FAILED",
      "WORKER_FAILED",
      "FAILED",
      "WORKER_FAILED",
    ]);
    expect(done.tasks[2]).toMatchObject({ exitCode: 1, finished: true });
    expect(done.job.final).toMatchObject({ state: "FAILED", reason: "1 task failed (maxTaskFailures 0)" });
    await expect
      .poll(() => jobEvents.filter((e) => e["jobId"] === id))
      .toEqual([expect.objectContaining({ state: "FAILED", tasks: { FAILED: 1, WORKER_FAILED: 3 } })]);
    const [run] = await rt.store.listRuns(id);
    expect(run).toMatchObject({ outcome: "FAILED", decision: "finished" });
    await expect.poll(() => noAllocations([id]), { timeout: 5_000 }).toBe(true);
  }, 60_000);

  test("a gang is retried together: every task runs again in the next run", async () => {
    const id = newId("gang-retry");
    await submit(id, {
      name: "gang-retry",
      replicas: 2,
      resources: { cpu: 1, memoryMiB: 64 },
      retry: { maxRetriesFailure: 1 },
      // Task 1 fails on the first run only; task 0 would run for a minute if not stopped.
      command: sh(
        `if [ "$CAIRN_RUN_INDEX" = "0" ]; then if [ "$CAIRN_TASK_INDEX" = "1" ]; then exit 3; fi; exec sleep 60; fi; echo ok`,
      ),
    });
    const done = await waitForJob(id, settled, "the retried gang to finish");
    expect(done.job.final?.state).toBe("SUCCEEDED");
    const runs = await rt.store.listRuns(id);
    expect(runs.map((r) => [r.outcome, r.decision])).toEqual([
      ["FAILED", "retry"],
      ["SUCCEEDED", "finished"],
    ]);
    expect(runs[0]!.kernels.map((k) => k.outcome)).toEqual(["WORKER_FAILED", "FAILED"]);
    expect(runs[1]!.kernels.map((k) => k.outcome)).toEqual(["SUCCEEDED", "SUCCEEDED"]);
    expect(done.tasks.every((t) => t.failureCount === 1)).toBe(true);
  }, 60_000);

  test("a task that exits 0 early does not stop its siblings", async () => {
    const id = newId("gang-early");
    await submit(id, {
      name: "gang-early",
      replicas: 2,
      resources: { cpu: 1, memoryMiB: 64 },
      command: sh(`if [ "$CAIRN_TASK_INDEX" = "0" ]; then exit 0; fi; sleep 2; echo done`),
    });
    const done = await waitForJob(id, settled, "the gang to finish");
    expect(done.tasks.map((t) => t.state)).toEqual(["SUCCEEDED", "SUCCEEDED"]);
    expect(done.job.final?.state).toBe("SUCCEEDED");
  }, 60_000);
});

describe("independent tasks", () => {
  test("tasks see their identity: CAIRN_TASK_INDEX, CAIRN_NUM_TASKS, CAIRN_TASK_ID, and Iris's IRIS_TASK_ID, IRIS_TASK_INDEX, IRIS_NUM_TASKS", async () => {
    const id = newId("ident");
    await submit(id, {
      name: "ident",
      replicas: 3,
      coscheduled: false,
      resources: { cpu: 0.5, memoryMiB: 64 },
      command: sh(
        `echo "$CAIRN_TASK_ID $CAIRN_TASK_INDEX/$CAIRN_NUM_TASKS $IRIS_TASK_ID $IRIS_TASK_INDEX/$IRIS_NUM_TASKS" > "$CAIRN_TERMINATION_LOG"`,
      ),
    });
    const done = await waitForJob(id, settled, "all three tasks");
    expect(done.job.final?.state).toBe("SUCCEEDED");
    expect(done.job.sessionIds).toEqual([`${id}-t0`, `${id}-t1`, `${id}-t2`]);
    const sessions = await rt.store.getSessions(done.job.sessionIds);
    const messages = sessions.map((s) => s.kernels[0]?.message?.trim());
    expect(messages).toEqual([0, 1, 2].map((i) => `${id}/task-${i} ${i}/3 ${id}/task-${i} ${i}/3`));
  }, 60_000);

  test("maxTaskFailures 1: the job survives one failed task and fails on the second, killing the rest", async () => {
    const id = newId("domain");
    await submit(id, {
      name: "domain",
      replicas: 3,
      coscheduled: false,
      maxTaskFailures: 1,
      resources: { cpu: 1, memoryMiB: 64 },
      command: sh(`case "$CAIRN_TASK_INDEX" in 0) exit 1;; 1) sleep 4; exit 2;; *) exec sleep 60;; esac`),
    });
    // Task 0 fails at once, perhaps before its siblings run (under load): the job is RUNNING once
    // task 2 runs, and must still be after the first failure.
    const afterFirst = await waitForJob(
      id,
      (s) => s.tasks[0]?.finished === true && (s.tasks[2]?.state === "RUNNING" || s.job.final !== undefined),
      "the first failure, with task 2 running",
    );
    expect(afterFirst.tasks[0]?.state).toBe("FAILED");
    expect(afterFirst.state).toBe("RUNNING");
    expect(afterFirst.job.final).toBeUndefined();
    expect(afterFirst.tasks[2]?.finished).toBe(false);

    const done = await waitForJob(id, settled, "the job to fail");
    expect(done.job.final).toMatchObject({ state: "FAILED", reason: "2 tasks failed (maxTaskFailures 1)" });
    expect(done.tasks.map((t) => t.state)).toEqual(["FAILED", "FAILED", "KILLED"]);
    expect(done.tasks[2]?.reason).toContain(`job ${id} FAILED`);
    await expect.poll(() => noAllocations(done.job.sessionIds), { timeout: 5_000 }).toBe(true);
  }, 60_000);

  test("a task retried under its own budget is not a job failure", async () => {
    const id = newId("budget");
    await submit(id, {
      name: "budget",
      replicas: 2,
      coscheduled: false,
      retry: { maxRetriesFailure: 1 },
      resources: { cpu: 1, memoryMiB: 64 },
      command: sh(
        `if [ "$CAIRN_TASK_INDEX" = "1" ] && [ "$CAIRN_RUN_INDEX" = "0" ]; then exit 1; fi; echo ok`,
      ),
    });
    const done = await waitForJob(id, settled, "the job to finish");
    expect(done.job.final?.state).toBe("SUCCEEDED");
    expect(done.tasks.map((t) => [t.state, t.runIndex, t.failureCount])).toEqual([
      ["SUCCEEDED", 0, 0],
      ["SUCCEEDED", 1, 1],
    ]);
  }, 60_000);

  test("a scheduling timeout makes the job UNSCHEDULABLE and kills the rest", async () => {
    const id = newId("unsched");
    // Four agents of 4 cpu: four tasks of 4 cpu fit, the fifth cannot until one ends.
    await submit(id, {
      name: "unsched",
      replicas: 5,
      coscheduled: false,
      // Long enough for four agent processes to take their tasks on a loaded machine.
      schedulingTimeout: 8,
      resources: { cpu: 4, memoryMiB: 64 },
      command: sh("exec sleep 60"),
    });
    const done = await waitForJob(id, settled, "the job to be unschedulable");
    expect(done.job.final?.state).toBe("UNSCHEDULABLE");
    const states = done.tasks.map((t) => t.state);
    expect(states.filter((s) => s === "UNSCHEDULABLE")).toHaveLength(1);
    expect(states.filter((s) => s === "KILLED")).toHaveLength(4);
    const unschedulable = done.tasks.find((t) => t.state === "UNSCHEDULABLE");
    expect(unschedulable?.reason).toBeTruthy();
    await expect.poll(() => noAllocations(done.job.sessionIds), { timeout: 5_000 }).toBe(true);
  }, 60_000);

  test("cancelling a job of independent tasks by its id kills every task", async () => {
    const id = newId("cancel");
    await submit(id, {
      name: "cancel",
      replicas: 2,
      coscheduled: false,
      resources: { cpu: 0.5, memoryMiB: 64 },
      command: sh("exec sleep 60"),
    });
    await waitForJob(id, (s) => s.tasks.every((t) => t.state === "RUNNING"), "both running");
    await rt.cancel(id, "no longer needed");
    const done = await waitForJob(id, settled, "the job to be killed");
    expect(done.job.final?.state).toBe("KILLED");
    expect(done.tasks.map((t) => [t.state, t.reason])).toEqual([
      ["KILLED", "no longer needed"],
      ["KILLED", "no longer needed"],
    ]);
  }, 60_000);
});

describe("parent and child jobs", () => {
  test("a parent's failure cancels its child, and the child's child", async () => {
    const parent = newId("parent");
    const child = newId("child");
    const grandchild = newId("grandchild");
    await submit(parent, {
      name: "parent",
      resources: { cpu: 0.5, memoryMiB: 64 },
      command: sh("sleep 3; exit 1"),
    });
    await rt.waitFor(parent, () => true, "the parent to exist");
    await waitForJob(parent, () => true, "the parent job");
    await submit(child, {
      name: "child",
      parent,
      replicas: 2,
      coscheduled: false,
      resources: { cpu: 0.5, memoryMiB: 64 },
      command: sh("exec sleep 60"),
    });
    await waitForJob(child, () => true, "the child job");
    await submit(grandchild, {
      name: "grandchild",
      parent: child,
      resources: { cpu: 0.5, memoryMiB: 64 },
      command: sh("exec sleep 60"),
    });
    const parentDone = await waitForJob(parent, settled, "the parent to fail");
    expect(parentDone.job.final?.state).toBe("FAILED");
    expect(parentDone.job.childIds).toEqual([child]);
    const childDone = await waitForJob(child, settled, "the child to be cancelled");
    expect(childDone.job.final?.state).toBe("KILLED");
    expect(childDone.tasks.every((t) => t.state === "KILLED" && t.reason?.includes(parent))).toBe(true);
    const grandDone = await waitForJob(grandchild, settled, "the grandchild to be cancelled");
    expect(grandDone.job.final?.state).toBe("KILLED");

    // A child submitted after its parent failed is cancelled at once.
    const late = newId("late");
    await submit(late, { name: "late", parent, command: sh("exec sleep 60") });
    const lateDone = await waitForJob(late, settled, "the late child to be cancelled");
    expect(lateDone.job.final?.state).toBe("KILLED");
    expect(lateDone.tasks[0]?.sessionStatus).toBe("CANCELLED");
    expect(lateDone.tasks[0]?.reason).toBe(`parent job ${parent} FAILED: 1 task failed (maxTaskFailures 0)`);
  }, 90_000);

  test("a parent that succeeds leaves its children alone", async () => {
    const parent = newId("ok-parent");
    const child = newId("ok-child");
    await submit(parent, { name: "ok-parent", command: sh("sleep 1") });
    await waitForJob(parent, () => true, "the parent job");
    await submit(child, { name: "ok-child", parent, command: sh("sleep 3") });
    expect((await waitForJob(parent, settled, "the parent to succeed")).job.final?.state).toBe("SUCCEEDED");
    expect((await waitForJob(child, settled, "the child to succeed")).job.final?.state).toBe("SUCCEEDED");
  }, 60_000);
});

test("submissions naming a missing parent, or too long an id for independent tasks, are rejected", async () => {
  const events: { detailType: string; reason: string }[] = [];
  rt.runtime.bus.onEvent((e) => {
    if (e["detail-type"] === "Event Rejected")
      events.push(e.detail as { detailType: string; reason: string });
  });
  await submit(newId("orphan"), { name: "orphan", parent: "no-such-job", command: sh("true") });
  await submit(`long-${"x".repeat(55)}`, {
    name: "long",
    replicas: 12,
    coscheduled: false,
    command: sh("true"),
  });
  await expect.poll(() => events.length, { timeout: 10_000 }).toBe(2);
  expect(events.map((e) => e.reason).sort()).toEqual([
    "detail.sessionId: must be at most 59 characters for 12 independent tasks (their sessions are <id>-t<index>)",
    "detail.spec.parent: no job no-such-job",
  ]);
}, 30_000);

describe("task ids nobody can squat", () => {
  /** Collects the Event Rejected reasons from now on. */
  function rejections(): string[] {
    const reasons: string[] = [];
    rt.runtime.bus.onEvent((e) => {
      if (e["detail-type"] === "Event Rejected") reasons.push((e.detail as { reason: string }).reason);
    });
    return reasons;
  }

  test("an independent job x does not adopt an existing session named x-t0", async () => {
    const reasons = rejections();
    const x = newId("squat");
    // Given a session of its own named like task 0 of job x
    await submit(`${x}-t0`, { name: "first", command: sh("sleep 20") });
    await rt.waitFor(`${x}-t0`, () => true, "the first session to exist");
    // When job x of independent tasks is submitted
    await submit(x, { name: "squatter", replicas: 2, coscheduled: false, command: sh("echo squat") });
    // Then it is refused, and the session stays the first job's
    await expect
      .poll(() => reasons.filter((r) => r.includes(x)), { timeout: 10_000 })
      .toEqual([
        `detail.sessionId: session ${x}-t0 already exists as job ${x}-t0; task 0 of job ${x} cannot take it (choose another id)`,
      ]);
    expect(await rt.store.getJob(x)).toBeUndefined();
    expect(await rt.store.getSession(`${x}-t1`)).toBeUndefined();
    const first = await rt.store.getSession(`${x}-t0`);
    expect(first?.session.spec.name).toBe("first");
    expect(first?.session.task).toBeUndefined();
    await rt.cancel(`${x}-t0`);
    await rt.waitForEnd(`${x}-t0`);
  }, 40_000);

  test("a job named like another job's task is refused, and a different spec under a taken id too", async () => {
    const reasons = rejections();
    const y = newId("owner");
    await submit(y, { name: "owner", replicas: 2, coscheduled: false, command: sh("sleep 20") });
    await waitForJob(
      y,
      (s) => s.tasks.every((t) => t.state !== "PENDING" || t.reason !== "being submitted"),
      "its tasks",
    );
    await submit(`${y}-t1`, { name: "squatter", command: sh("echo squat") });
    await submit(y, { name: "other", command: sh("echo other") });
    await expect
      .poll(() => reasons.filter((r) => r.includes(y)).sort(), { timeout: 10_000 })
      .toEqual([
        `detail.sessionId: ${y} is taken by another submission (name "owner"); choose another id`,
        `detail.sessionId: session ${y}-t1 already exists as task 1 of job ${y}; job ${y}-t1 cannot take it (choose another id)`,
      ]);
    expect(await rt.store.getJob(`${y}-t1`)).toBeUndefined();
    const task = await rt.store.getSession(`${y}-t1`);
    expect(task?.session.spec.name).toBe("owner");
    await rt.cancel(y);
    await waitForJob(y, settled, "the job to end");
  }, 40_000);
});
