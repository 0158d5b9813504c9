/**
 * The ECS operations Cairn calls, on the wire: RegisterTaskDefinition, DescribeTaskDefinition,
 * RunTask, StopTask, DescribeTasks and ListTasks, with ECS's request limits and error codes.
 */
import type { AwsJsonOperation } from "../aws-json/index.ts";
import { clientError, clusterNotFound, invalidParameter, serverError } from "./errors.ts";
import { asArray, canonicalJson, optionalString, type Json } from "./input.ts";
import { parseRunTask, parseTags } from "./run-input.ts";
import type { EcsService } from "./service.ts";

export const MAX_STOP_REASON_CHARS = 255;
export const MAX_DESCRIBE_TASKS = 100;

export function ecsOperations(ecs: EcsService): Record<string, AwsJsonOperation> {
  const clusterOf = (input: Json): string => {
    const name = ecs.clusterName(optionalString(input, "cluster"));
    if (!ecs.hasCluster(name)) throw clusterNotFound();
    return name;
  };
  const includesTags = (input: Json) =>
    Array.isArray(input.include) && (input.include as unknown[]).includes("TAGS");

  return {
    RegisterTaskDefinition: (input) => {
      const tags = parseTags(input.tags);
      const taskDefinition = ecs.taskDefinitions.register(input, tags);
      return { taskDefinition, ...(tags.length > 0 ? { tags } : {}) };
    },

    DescribeTaskDefinition: (input) => {
      const reference = optionalString(input, "taskDefinition");
      const taskDefinition = reference === undefined ? undefined : ecs.taskDefinitions.find(reference);
      if (!taskDefinition) throw clientError("Unable to describe task definition.");
      return {
        taskDefinition,
        ...(includesTags(input)
          ? { tags: ecs.taskDefinitions.tagsOf(taskDefinition.taskDefinitionArn) }
          : {}),
      };
    },

    RunTask: (input) => {
      const plan = parseRunTask(input, {
        clusterExists: (name) => ecs.hasCluster(name),
        findDefinition: (reference) => ecs.taskDefinitions.find(reference),
        clusterName: (reference) => ecs.clusterName(reference),
      });
      // The request's identity for its client token: every parameter but the token itself.
      const { clientToken: _token, ...parameters } = input;
      const { tasks, failures } = ecs.runTask(plan, canonicalJson(parameters));
      if (ecs.faults.lostRunTaskAnswers > 0) {
        // Fault switch: the tasks are placed, the answer never arrives (a 500 after the mutation).
        ecs.faults.lostRunTaskAnswers--;
        throw serverError("The RunTask answer was lost after its tasks were placed (fault switch).");
      }
      return { tasks: tasks.map((t) => t.describe(true)), failures };
    },

    StopTask: (input) => {
      const cluster = clusterOf(input);
      const reference = optionalString(input, "task");
      if (reference === undefined || reference === "") throw invalidParameter("task can not be blank.");
      const reason = optionalString(input, "reason");
      if (reason !== undefined && reason.length > MAX_STOP_REASON_CHARS) {
        throw invalidParameter(`Reason can be at most ${MAX_STOP_REASON_CHARS} characters.`);
      }
      const task = ecs.stopTask(cluster, reference, reason);
      if (!task) throw invalidParameter("The referenced task was not found.");
      return { task: task.describe(false) };
    },

    DescribeTasks: (input) => {
      const cluster = clusterOf(input);
      const references = asArray(input.tasks ?? [], "tasks").map(String);
      if (references.length === 0) throw invalidParameter("Tasks cannot be empty.");
      if (references.length > MAX_DESCRIBE_TASKS) {
        throw invalidParameter(`Tasks can have at most ${MAX_DESCRIBE_TASKS} items.`);
      }
      const tasks: Record<string, unknown>[] = [];
      const failures: { arn: string; reason: string }[] = [];
      for (const reference of references) {
        const task = ecs.find(cluster, reference);
        if (task) tasks.push(task.describe(includesTags(input)));
        else failures.push({ arn: reference, reason: "MISSING" });
      }
      return { tasks, failures };
    },

    ListTasks: (input) => {
      const cluster = clusterOf(input);
      const desiredStatus = optionalString(input, "desiredStatus") ?? "RUNNING";
      if (desiredStatus !== "RUNNING" && desiredStatus !== "PENDING" && desiredStatus !== "STOPPED") {
        throw invalidParameter(`desiredStatus must be RUNNING, PENDING or STOPPED, not ${desiredStatus}.`);
      }
      const maxResults = input.maxResults ?? 100;
      if (
        typeof maxResults !== "number" ||
        !Number.isInteger(maxResults) ||
        maxResults < 1 ||
        maxResults > 100
      ) {
        throw invalidParameter("maxResults must be between 1 and 100.");
      }
      const family = optionalString(input, "family");
      const startedBy = optionalString(input, "startedBy");
      const arns = ecs
        .list({
          cluster,
          desiredStatus,
          ...(family !== undefined ? { family } : {}),
          ...(startedBy !== undefined ? { startedBy } : {}),
        })
        .map((t) => t.arn);
      const token = optionalString(input, "nextToken");
      const offset = token === undefined ? 0 : Number(Buffer.from(token, "base64url").toString("utf8"));
      if (!Number.isInteger(offset) || offset < 0) throw invalidParameter("nextToken is not valid.");
      const page = arns.slice(offset, offset + maxResults);
      const next = offset + page.length < arns.length ? offset + page.length : undefined;
      return {
        taskArns: page,
        ...(next !== undefined ? { nextToken: Buffer.from(String(next)).toString("base64url") } : {}),
      };
    },
  };
}
