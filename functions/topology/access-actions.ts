/**
 * The actions of the agent and client policies (lib/agent-access.ts), as plain data with no CDK
 * import, so that the embedded runtime's access rules (local/access.ts) can grant the same.
 * test/cdk-agents.test.ts proves they are exactly what the agent's and the CLI's code send.
 */

/** An agent finds its queue, long-polls it and deletes what it handled (agent/host.ts). */
export const AGENT_QUEUE_ACTIONS = ["sqs:GetQueueUrl", "sqs:ReceiveMessage", "sqs:DeleteMessage"] as const;
/**
 * The principal tag that names the agent a principal is. A principal carrying it (a host's own
 * role, or a session tagged when assumed) may consume only the queue of that agent,
 * `<prefix><tag value>`, so an agent host learns no other agent's signing key; one without it
 * (every host of a stack under one role) may consume every agent queue of the stack.
 */
export const AGENT_ID_TAG = "cairn-agent-id";
/** The condition key of that tag, and the policy variable that reads it. */
export const AGENT_ID_TAG_KEY = `aws:PrincipalTag/${AGENT_ID_TAG}`;
/** The resource name of a tagged agent's own queue: `<prefix>${aws:PrincipalTag/cairn-agent-id}`. */
export function ownAgentQueueName(prefix: string): string {
  return `${prefix}\${${AGENT_ID_TAG_KEY}}`;
}
/** Where an untagged principal's queue statement applies: only where the tag is absent. */
export const UNTAGGED_AGENT_CONDITION = { Null: { [AGENT_ID_TAG_KEY]: "true" } } as const;
/** An agent ships kernel output, one stream per kernel run (agent/log-shipper.ts). */
export const AGENT_LOG_ACTIONS = ["logs:CreateLogStream", "logs:PutLogEvents"] as const;
/** `cairn --stack NAME` (any command, `cairn agent` too) reads the stack's outputs first. */
export const STACK_READ_ACTIONS = ["cloudformation:DescribeStacks"] as const;
/*
 * The CLI's table rights (ClientPolicy's reads, OperatorPolicy's writes) are statements with
 * conditions on key prefixes and attributes: functions/topology/client-access.ts.
 */
/**
 * `cairn logs` and `submit --stream-logs` read kernel output (bin/cli/kernel-log-reader.ts): which
 * runs' streams exist, one stream forward, or several at once.
 */
export const CLIENT_LOG_ACTIONS = [
  "logs:DescribeLogStreams",
  "logs:GetLogEvents",
  "logs:FilterLogEvents",
] as const;

/**
 * The Fargate executor's ECS calls (a kernel as an ECS task), made by the functions that send kernel commands
 * (topology FARGATE.commandSenders). Each list is one grant of lib/fargate.ts, on its own
 * resources and conditions (the Service Authorization Reference for Amazon ECS):
 */
/** Starting a kernel's task: only Cairn's task definitions (`cairn-*`), only on Cairn's cluster. */
export const ECS_RUN_TASK_ACTIONS = ["ecs:RunTask"] as const;
/**
 * RunTask and RegisterTaskDefinition with `tags` are authorised as ecs:TagResource as well (tags
 * on create), with `ecs:CreateAction` naming the call, on the task or task definition it creates.
 */
export const ECS_TAG_ON_CREATE_ACTIONS = ["ecs:TagResource"] as const;
/**
 * Stopping the cluster's tasks. (No ecs:DescribeTasks: the functions learn tasks' states from
 * ECS's events, and send no DescribeTasks; grant it here when they do.)
 */
export const ECS_TASK_ACTIONS = ["ecs:StopTask"] as const;
/**
 * Registering a kernel image's task definition (family `cairn-<hash>`) and reading it back: ECS
 * supports no resource-level permissions for these, so they are granted on `*`.
 */
export const ECS_TASK_DEFINITION_ACTIONS = [
  "ecs:RegisterTaskDefinition",
  "ecs:DescribeTaskDefinition",
] as const;
/** Handing the task execution role and the task role to ECS (RegisterTaskDefinition, RunTask). */
export const ECS_PASS_ROLE_ACTIONS = ["iam:PassRole"] as const;
/**
 * The task execution role: ECS pulls a kernel's image from ECR (an authorization token for the
 * registry, then the image's layers) and ships its output through the `awslogs` driver.
 */
export const ECR_AUTH_ACTIONS = ["ecr:GetAuthorizationToken"] as const;
export const ECR_PULL_ACTIONS = [
  "ecr:BatchCheckLayerAvailability",
  "ecr:GetDownloadUrlForLayer",
  "ecr:BatchGetImage",
] as const;
export const TASK_LOG_ACTIONS = ["logs:CreateLogStream", "logs:PutLogEvents"] as const;
