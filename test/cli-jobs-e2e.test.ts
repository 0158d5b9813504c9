/**
 * Jobs of many tasks through the real `cairn` binary against a real embedded runtime with four
 * agents: `job get`, `tasks`, `task`, `logs [--task] [--follow]`, `submit --wait --stream-logs`,
 * and `get`/`cancel` of a job of independent tasks. Each task echoes its $CAIRN_TASK_INDEX, so
 * the logs prove which task wrote what.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { runCairn, stdoutJson, type Run } from "./support/cli.ts";
import { startTestRuntime, type TestRuntime } from "./support/runtime.ts";

const TEST_TIMEOUT_MS = 90_000;
const WAIT_MS = 60_000;

let rt: TestRuntime;

function cairn(...args: string[]): Promise<Run> {
  return runCairn(rt.dataDir, args);
}

const json = stdoutJson;

function spec(name: string, text: string): string {
  const path = join(rt.dataDir, `${name}.yaml`);
  writeFileSync(path, text);
  return path;
}

/** Polls the store until the control plane has recorded the job's final state. */
async function waitForJobEnd(jobId: string): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while ((await rt.store.getJob(jobId))?.final === undefined) {
    if (Date.now() > deadline) throw new Error(`job ${jobId} has no final state after ${WAIT_MS} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

beforeAll(async () => {
  rt = await startTestRuntime({ agents: 4 });
});

afterAll(async () => {
  await rt?.stop();
});

describe("jobs through the CLI", { timeout: TEST_TIMEOUT_MS }, () => {
  test.concurrent(
    "submit --wait --stream-logs of 3 independent tasks: every task's lines, then the job; tasks, task, logs, get",
    async () => {
      // Task 2 fails; maxTaskFailures 1 tolerates it.
      const file = spec(
        "indep",
        [
          "name: indep",
          "replicas: 3",
          "coscheduled: false",
          "maxTaskFailures: 1",
          "resources: { cpu: 0.25, memoryMiB: 64 }",
          "command:",
          "  - /bin/sh",
          "  - -c",
          '  - echo "hello from task $CAIRN_TASK_INDEX of $CAIRN_NUM_TASKS"; echo "warning $CAIRN_TASK_INDEX" >&2; [ "$CAIRN_TASK_INDEX" != 2 ] || exit 3',
        ].join("\n"),
      );
      const run = await cairn("submit", file, "--id", "cj-indep", "--wait", "--stream-logs");
      expect(run.code, run.stderr).toBe(0);
      for (const i of [0, 1, 2]) {
        expect(run.stdout).toContain(`[task ${i}] hello from task ${i} of 3\n`);
        // The program's stderr stays on stderr.
        expect(run.stderr).toContain(`[task ${i}] warning ${i}\n`);
        // In order: a task's output before its end.
        const ended = run.stderr.indexOf(`[task ${i}] RUNNING → TERMINATING`);
        expect(ended, run.stderr).toBeGreaterThan(run.stderr.indexOf(`[task ${i}] warning ${i}\n`));
      }
      // Progress is per task; the final summary is the job, after every line.
      expect(run.stderr).toMatch(/^\[task 1\] PENDING → SCHEDULED \(placed on agent-\d\)$/m);
      expect(run.stderr).toMatch(
        /^job SUCCEEDED: 2 of 3 tasks succeeded; 1 failed within maxTaskFailures 1$/m,
      );
      expect(run.stdout).toMatch(/\n {2}tasks +3 tasks: 2 SUCCEEDED, 1 FAILED\n/);
      expect(
        run.stdout.indexOf("job cj-indep (indep)\n  state      SUCCEEDED (Iris's job state): "),
      ).toBeGreaterThan(run.stdout.lastIndexOf("[task "));

      // Everything below only reads: one process each, all at once.
      // (The text tables are checked exactly in cli-jobs.test.ts; here, what the real store holds.)
      const [tasks, task, detail, one, all, jsonLines, get] = await Promise.all([
        cairn("tasks", "cj-indep", "-o", "json"),
        cairn("task", "cj-indep", "2", "-o", "json"),
        cairn("task", "cj-indep", "2"),
        cairn("logs", "cj-indep", "--task", "1"),
        cairn("logs", "cj-indep"),
        cairn("logs", "cj-indep", "--task", "0", "-o", "json"),
        cairn("get", "cj-indep"),
      ]);
      expect(json(tasks)).toMatchObject({ jobId: "cj-indep", state: "SUCCEEDED" });
      expect(json(tasks)["tasks"]).toEqual([
        expect.objectContaining({ index: 0, state: "SUCCEEDED", sessionId: "cj-indep-t0", exitCode: 0 }),
        expect.objectContaining({ index: 1, state: "SUCCEEDED", sessionId: "cj-indep-t1", exitCode: 0 }),
        expect.objectContaining({ index: 2, state: "FAILED", sessionId: "cj-indep-t2", exitCode: 3 }),
      ]);

      expect(json(task)).toMatchObject({ jobId: "cj-indep", index: 2, state: "FAILED", finished: true });
      expect(json(task)["runs"]).toEqual([
        expect.objectContaining({
          runIndex: 0,
          outcome: "FAILED",
          decision: "finished",
          task: expect.objectContaining({ index: 0, exitCode: 3 }) as unknown,
        }),
      ]);
      expect(detail.stdout).toMatch(
        /^task 2 of job cj-indep \(job SUCCEEDED\)\n {2}state +FAILED, finished \(Iris's task state\)$/m,
      );

      // One task: the text as written. Every task: merged and prefixed.
      expect(one).toMatchObject({ code: 0, stdout: "hello from task 1 of 3\n", stderr: "warning 1\n" });
      expect(all.code, all.stderr).toBe(0);
      expect(all.stdout.split("\n").filter(Boolean).sort()).toEqual([
        "[task 0] hello from task 0 of 3",
        "[task 1] hello from task 1 of 3",
        "[task 2] hello from task 2 of 3",
      ]);
      const records = jsonLines.stdout
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(records).toEqual([
        expect.objectContaining({
          task: 0,
          sessionId: "cj-indep-t0",
          runIndex: 0,
          stream: "stdout",
          text: "hello from task 0 of 3",
        }),
        expect.objectContaining({ task: 0, stream: "stderr", text: "warning 0" }),
      ]);

      // `get` of the job's id points at the job commands.
      expect(get.code).toBe(3);
      expect(get.stderr).toContain("cairn: session cj-indep not found: it is a job of 3 independent tasks");
      expect(get.stderr).toContain("`cairn job get cj-indep`");
    },
  );

  test.concurrent(
    "a co-scheduled gang of 2: submit --wait -o json prints the job; job get, tasks, logs",
    async () => {
      const file = spec(
        "gang",
        [
          "name: gang",
          "replicas: 2",
          "resources: { cpu: 0.25, memoryMiB: 64 }",
          "command: [/bin/sh, -c, 'echo \"gang member $CAIRN_TASK_INDEX\"']",
        ].join("\n"),
      );
      const run = await cairn("submit", file, "--id", "cj-gang", "--wait", "-o", "json");
      expect(run.code, run.stderr).toBe(0);
      expect(json(run)).toMatchObject({
        jobId: "cj-gang",
        name: "gang",
        state: "SUCCEEDED",
        replicas: 2,
        coscheduled: true,
        perAgent: 1,
        maxTaskFailures: 0,
        parent: null,
        children: [],
        sessions: ["cj-gang"],
        taskCounts: expect.objectContaining({ SUCCEEDED: 2, FAILED: 0, PENDING: 0 }) as unknown,
        taskStateProto: expect.objectContaining({ SUCCEEDED: 4, FAILED: 5, PENDING: 1 }) as unknown,
      });
      await waitForJobEnd("cj-gang");
      const [view, tasks, all] = await Promise.all([
        cairn("job", "get", "cj-gang", "-o", "json"),
        cairn("tasks", "cj-gang", "-o", "json"),
        cairn("logs", "cj-gang"),
      ]);
      expect(json(view)).toMatchObject({
        state: "SUCCEEDED",
        final: true,
        finishedAt: expect.any(String) as unknown,
      });
      expect(json(tasks)["tasks"]).toEqual([
        expect.objectContaining({
          index: 0,
          sessionId: "cj-gang",
          kernelIndex: 0,
          state: "SUCCEEDED",
          stateProto: 4,
        }),
        expect.objectContaining({
          index: 1,
          sessionId: "cj-gang",
          kernelIndex: 1,
          state: "SUCCEEDED",
          stateProto: 4,
        }),
      ]);
      expect(all.stdout.split("\n").filter(Boolean).sort()).toEqual([
        "[task 0] gang member 0",
        "[task 1] gang member 1",
      ]);
    },
  );

  test.concurrent(
    "logs --follow of a task that prints over 2 s: every line as written, then exit 0",
    async () => {
      const file = spec(
        "ticks",
        [
          "name: ticks",
          "replicas: 2",
          "coscheduled: false",
          "resources: { cpu: 0.25, memoryMiB: 64 }",
          "command:",
          "  - /bin/sh",
          "  - -c",
          '  - for i in 1 2 3 4; do echo "tick $i of task $CAIRN_TASK_INDEX"; sleep 0.5; done',
        ].join("\n"),
      );
      expect((await cairn("submit", file, "--id", "cj-ticks")).code).toBe(0);
      // Started before the task runs: it waits, then streams until the task has ended.
      const follow = await cairn("logs", "cj-ticks", "--task", "1", "--follow");
      expect(follow.code, follow.stderr).toBe(0);
      expect(follow.stdout).toBe([1, 2, 3, 4].map((i) => `tick ${i} of task 1\n`).join(""));
      expect((await rt.store.getSession("cj-ticks-t1"))?.session.status).toBe("TERMINATED");
    },
  );

  test.concurrent(
    "a task that cannot be placed: why it waits, no logs (exit 3); cancel of the job's id",
    async () => {
      const file = spec(
        "huge",
        [
          "name: huge",
          "replicas: 2",
          "coscheduled: false",
          "resources: { cpu: 64, memoryMiB: 64 }",
          "command: [/bin/true]",
        ].join("\n"),
      );
      expect((await cairn("submit", file, "--id", "cj-huge")).code).toBe(0);
      await rt.waitFor(
        "cj-huge-t1",
        (s) => s.session.pendingReason !== undefined,
        "a pending reason",
        WAIT_MS,
      );
      const [tasks, logs] = await Promise.all([
        cairn("tasks", "cj-huge", "-o", "json"),
        cairn("logs", "cj-huge", "--task", "1"),
      ]);
      expect((json(tasks)["tasks"] as unknown[])[1]).toMatchObject({
        index: 1,
        state: "PENDING",
        agent: null,
        reason: expect.stringMatching(/^no agent matches: a task needs 64 cpu/) as unknown,
      });
      expect(logs.code).toBe(3);
      expect(logs.stderr).toMatch(
        /^cairn: task 1 of job cj-huge has not started yet \(PENDING: no agent matches: a task needs 64 cpu.*\): no logs$/m,
      );

      const cancel = await cairn("cancel", "cj-huge", "--reason", "too big");
      expect(cancel.code, cancel.stderr).toBe(0);
      expect(cancel.stdout).toContain("cancel requested for job cj-huge (2 of 2 tasks not ended");
      await waitForJobEnd("cj-huge");
      const [view, never] = await Promise.all([
        cairn("job", "get", "cj-huge", "-o", "json"),
        cairn("logs", "cj-huge", "--follow"),
      ]);
      expect(json(view)).toMatchObject({
        state: "KILLED",
        taskCounts: expect.objectContaining({ KILLED: 2 }) as unknown,
      });
      expect(never.code).toBe(3);
      expect(never.stderr).toBe(
        "cairn: task 0: never ran (KILLED: too big)\ncairn: task 1: never ran (KILLED: too big)\n" +
          "cairn: no task of job cj-huge ran: no logs\n",
      );
    },
  );
});
