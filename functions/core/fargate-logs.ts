/**
 * Where a Fargate kernel's output is on CloudWatch Logs: every Cairn task definition
 * sends its kernel container's output through awslogs with one constant stream prefix, so
 * awslogs names a task's stream `cairn/kernel/<task id>`, and a run's stream is found from the
 * run's task ARN (Kernel.taskArn, RunKernelRecord.taskArn).
 *
 * The prefix is constant, not the run's own name, so that a task definition's content (and its
 * hash, adapters/ecs/task-definition.ts) is the same for every run with the same image, size,
 * roles and log group: one RegisterTaskDefinition serves them all. ECS allows that call at about
 * one per second sustained (a burst of 20) per account and Region
 * (https://docs.aws.amazon.com/AmazonECS/latest/developerguide/request-throttling.html), so one
 * registration per run would throttle a burst of sessions.
 */
import { KERNEL_CONTAINER_NAME } from "./ecs-task-events.ts";

/** The awslogs stream prefix of every Cairn task definition. */
export const FARGATE_LOG_STREAM_PREFIX = "cairn";

/**
 * The stream awslogs writes a task's kernel container to: `<prefix>/<container>/<task id>`, the
 * task id being the last path segment of the task's ARN
 * (https://docs.aws.amazon.com/AmazonECS/latest/developerguide/using_awslogs.html).
 */
export function fargateLogStreamName(taskArn: string): string {
  const taskId = taskArn.slice(taskArn.lastIndexOf("/") + 1);
  return `${FARGATE_LOG_STREAM_PREFIX}/${KERNEL_CONTAINER_NAME}/${taskId}`;
}

/** Whether `streamName` is a task's (an agent's run streams are `<session>/<kernel index>/run-<n>`). */
export function isFargateLogStream(streamName: string): boolean {
  return streamName.startsWith(`${FARGATE_LOG_STREAM_PREFIX}/${KERNEL_CONTAINER_NAME}/`);
}
