/**
 * A task's identity as its kernel's environment carries it. Iris (its co-scheduling design):
 * "Environment variables: `IRIS_TASK_ID`, `IRIS_TASK_INDEX`, `IRIS_NUM_TASKS`", with a task id
 * such as "abc123/task-2". Cairn names the same three `CAIRN_TASK_ID`, `CAIRN_TASK_INDEX` and
 * `CAIRN_NUM_TASKS` and sets Iris's names beside them, with the same values, so a program written
 * for Iris reads its place in the job unchanged. Both kinds of executor (agent/environment.ts and
 * the Fargate task override, ecs-task-events.ts) take them from here. Pure.
 */

export interface TaskPlace {
  readonly jobId: string;
  readonly taskIndex: number;
  readonly numTasks: number;
}

/** Iris's names for a task's identity: a spec may not set them (Cairn does, last). */
export const IRIS_TASK_ENV_NAMES = ["IRIS_TASK_ID", "IRIS_TASK_INDEX", "IRIS_NUM_TASKS"] as const;

/** `<job>/task-<index>`, Iris's form of a task id. */
export function taskIdOf(jobId: string, taskIndex: number): string {
  return `${jobId}/task-${taskIndex}`;
}

/** The job id and the task's identity under Cairn's names, then Iris's, in this order. */
export function taskIdentityEnv(place: TaskPlace): [string, string][] {
  const id = taskIdOf(place.jobId, place.taskIndex);
  const index = String(place.taskIndex);
  const count = String(place.numTasks);
  return [
    ["CAIRN_JOB_ID", place.jobId],
    ["CAIRN_TASK_INDEX", index],
    ["CAIRN_NUM_TASKS", count],
    ["CAIRN_TASK_ID", id],
    ["IRIS_TASK_ID", id],
    ["IRIS_TASK_INDEX", index],
    ["IRIS_NUM_TASKS", count],
  ];
}
