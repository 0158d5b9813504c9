/**
 * A task's identity in its environment, under Cairn's names and Iris's. Iris's co-scheduling
 * design (003_80703a5f739881e1.txt): "info.task_id = "abc123/task-2" / info.task_index = 2 /
 * info.num_tasks = 4 … Environment variables: `IRIS_TASK_ID`, `IRIS_TASK_INDEX`, `IRIS_NUM_TASKS`".
 */
import { describe, expect, test } from "vitest";
import { fargateKernelEnvironment } from "../../functions/core/ecs-task-events.ts";
import { taskIdentityEnv } from "../../functions/core/task-env.ts";

describe("task identity variables", () => {
  test("the seed's example task: abc123/task-2, index 2 of 4, under both names", () => {
    expect(Object.fromEntries(taskIdentityEnv({ jobId: "abc123", taskIndex: 2, numTasks: 4 }))).toEqual({
      CAIRN_JOB_ID: "abc123",
      CAIRN_TASK_ID: "abc123/task-2",
      CAIRN_TASK_INDEX: "2",
      CAIRN_NUM_TASKS: "4",
      IRIS_TASK_ID: "abc123/task-2",
      IRIS_TASK_INDEX: "2",
      IRIS_NUM_TASKS: "4",
    });
  });

  test("a Fargate kernel's task gets the same: an independent task's identity is its job's", () => {
    const env = fargateKernelEnvironment({
      sessionId: "abc123-t2",
      kernelIndex: 0,
      numKernels: 1,
      task: { jobId: "abc123", index: 2, count: 4 },
    });
    expect(env).toContainEqual({ name: "IRIS_TASK_ID", value: "abc123/task-2" });
    expect(env).toContainEqual({ name: "IRIS_TASK_INDEX", value: "2" });
    expect(env).toContainEqual({ name: "IRIS_NUM_TASKS", value: "4" });
  });

  test("a gang's kernels are the tasks of their session", () => {
    const env = new Map(
      fargateKernelEnvironment({ sessionId: "gang", kernelIndex: 1, numKernels: 3 }).map((e) => [
        e.name,
        e.value,
      ]),
    );
    expect([env.get("IRIS_TASK_ID"), env.get("IRIS_TASK_INDEX"), env.get("IRIS_NUM_TASKS")]).toEqual([
      "gang/task-1",
      "1",
      "3",
    ]);
  });
});
