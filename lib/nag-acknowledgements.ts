/**
 * Every cdk-nag finding Cairn acknowledges, with the reason: the fixed ones below, and the
 * resources that end in a wildcard because what they name is created at run time (agent queues,
 * kernel log streams). test/cdk-stack.test.ts and test/cdk-agents.test.ts keep them honest: the
 * stack must pass AwsSolutionsChecks with nothing else acknowledged, and the wildcard resources
 * these reasons excuse must carry only the actions the reasons name.
 */
import { Stack, Validations } from "aws-cdk-lib";
import type { IConstruct } from "constructs";

export interface NagAcknowledgement {
  readonly id: string;
  readonly reason: string;
}

/** X-Ray actions that Lambda active tracing adds to a function's role. */
export const LAMBDA_XRAY_ACTIONS = ["xray:PutTraceSegments", "xray:PutTelemetryRecords"] as const;
/** Actions each state machine's role holds on `*`: vended-log delivery and X-Ray. */
export const STATE_MACHINE_WILDCARD_ACTIONS = [
  "logs:CreateLogDelivery",
  "logs:GetLogDelivery",
  "logs:UpdateLogDelivery",
  "logs:DeleteLogDelivery",
  "logs:ListLogDeliveries",
  "logs:PutResourcePolicy",
  "logs:DescribeResourcePolicies",
  "logs:DescribeLogGroups",
  "xray:PutTraceSegments",
  "xray:PutTelemetryRecords",
  "xray:GetSamplingRules",
  "xray:GetSamplingTargets",
] as const;

export const NAG_ACKNOWLEDGEMENTS = {
  functionRoleXRay: {
    id: "AwsSolutions-IAM5[Resource::*]",
    reason:
      "The only statement on Resource '*' is the one Lambda active tracing needs (xray:PutTraceSegments, xray:PutTelemetryRecords): X-Ray supports no resource-level permissions for these actions. Every other statement names the table and its indexes, the bus, the state machine, the function's log group or the queue.",
  },
  stateMachineRoleLogsAndXRay: {
    id: "AwsSolutions-IAM5[Resource::*]",
    reason:
      "Resource '*' carries only CloudWatch Logs vended-log delivery (logs:CreateLogDelivery, GetLogDelivery, UpdateLogDelivery, DeleteLogDelivery, ListLogDeliveries, PutResourcePolicy, DescribeResourcePolicies, DescribeLogGroups), which Step Functions logging requires on '*', and X-Ray tracing (xray:PutTraceSegments, PutTelemetryRecords, GetSamplingRules, GetSamplingTargets), which supports no resource-level permissions. lambda:InvokeFunction is scoped to the functions the state machine's definition names (EnterStage; EnterFamilyStage for the deployment and route lifecycles), and states:StartExecution, where the definition renews its execution, to the state machine itself.",
  },
  stateMachineLogsErrorsOnly: {
    id: "AwsSolutions-SF1",
    reason:
      "The state machines log at the stateMachineLogLevel prop, ERROR by default: failed executions and states reach CloudWatch Logs (and the failed-executions alarm fires), while every event of every execution stays in the execution history for 90 days at no charge. ALL would write about a dozen billed log events per session stage (docs/cost.md); set stateMachineLogLevel to ALL to have them.",
  },
  deliveryDeadLetterQueue: {
    id: "AwsSolutions-SQS3",
    reason:
      "This queue is itself a dead-letter queue: the DLQ of every EventBridge rule target and of the sweep target. The rule recognises DLQs only through SQS redrive policies, which EventBridge target DLQs do not use. A DLQ behind it would only move the problem; its messages raise the DeliveryDeadLetterQueueMessagesAlarm.",
  },
  disposableQueue: {
    id: "AwsSolutions-SQS3",
    reason:
      "The heartbeat queue carries only agents' heartbeats and registration requests, which are disposable: a newer heartbeat supersedes an old one and an agent asks again until its registration is answered. A message its consumer keeps failing on expires with the queue's retention (the agent timeout) instead of being dead-lettered, so a lost heartbeat raises no alarm.",
  },
  functionRoleXRayAndEcsTaskDefinitions: {
    id: "AwsSolutions-IAM5[Resource::*]",
    reason:
      "Resource '*' carries Lambda active tracing (xray:PutTraceSegments, xray:PutTelemetryRecords), which X-Ray supports no resource-level permissions for, and the Fargate executor's task definition calls (ecs:RegisterTaskDefinition, ecs:DescribeTaskDefinition), which the Service Authorization Reference for Amazon ECS lists with no resource type: they cannot be scoped. Running a task is scoped to Cairn's task definitions on Cairn's cluster, and iam:PassRole to the two Fargate roles passed to ecs-tasks.amazonaws.com, so registering a definition grants no way to run it elsewhere.",
  },
  taskExecutionRoleEcrToken: {
    id: "AwsSolutions-IAM5[Resource::*]",
    reason:
      "The task execution role's only statement on Resource '*' is ecr:GetAuthorizationToken, which ECR supports no resource-level permissions for: the token authenticates to the registry, and the image pulls (ecr:BatchCheckLayerAvailability, ecr:GetDownloadUrlForLayer, ecr:BatchGetImage) are granted on the image repositories only. Used instead of the managed AmazonECSTaskExecutionRolePolicy, which allows pulls and log writes on '*'.",
  },
  containerInsightsDisabled: {
    id: "AwsSolutions-ECS4",
    reason:
      "CloudWatch Container Insights is turned off on Cairn's Fargate cluster by the fargate.containerInsights prop (ContainerInsights.DISABLED), a cost choice of the deployer; kernels' status reaches Cairn from ECS task state change events and their output the kernel log group either way.",
  },
} as const satisfies Record<string, NagAcknowledgement>;

/**
 * IAM5 findings on a resource ARN with a wildcard. The finding's id carries the ARN as cdk-nag
 * flattens it, so the acknowledgement is made for one ARN: `acknowledgeWildcardResource`.
 */
export const NAG_WILDCARD_RESOURCES = {
  functionAgentQueues: {
    reason:
      "Agent queues are created at run time, one per agent, when the agent registers, so their ARNs are known only by the stack's agent queue prefix: the resource is `<prefix>*` and names no other queue. The Coordinator creates them (sqs:CreateQueue, sqs:TagQueue for the cairn:agent-id tag, sqs:GetQueueUrl, and sqs:SetQueueAttributes to bring a queue an earlier version made with other attributes to this version's); the Coordinator and EnterStage send kernel commands (sqs:GetQueueUrl, sqs:SendMessage, which also authorises SendMessageBatch).",
  },
  agentQueues: {
    reason:
      "Each agent's queue is created at run time by the control plane when the agent registers, so the agent policy can name the queues only by the stack's agent queue prefix (`<prefix>*`), and does so only for a principal without the `cairn-agent-id` tag (a tagged one gets its own queue alone). It allows only finding and consuming commands (sqs:GetQueueUrl, sqs:ReceiveMessage, sqs:DeleteMessage); only the control plane creates queues or sends to them.",
  },
  kernelLogStreams: {
    reason:
      "Kernel output goes to one log stream per kernel run (`<sessionId>/<kernelIndex>/run-<runIndex>`), created by the agent as the run starts, so the streams are known only by their log group: the resource is the kernel log group's streams (`log-group:<name>:*`), never another log group, with only logs:CreateLogStream and logs:PutLogEvents.",
  },
  kernelLogReads: {
    reason:
      "The CLI reads kernel output from streams created at run time, one per kernel run, so it can name them only by their log group: the resource is the kernel log group's streams (`log-group:<name>:*`), never another log group, with only reads (logs:DescribeLogStreams, logs:GetLogEvents, logs:FilterLogEvents).",
  },
  clientExecutionReads: {
    reason:
      "Executions are started at run time, one per session, deployment or route and named by its id, so a client can name them only by their state machine: the resource is `execution:<state machine name>:*` of this stack's state machines and no other, with only reads (states:DescribeExecution, states:GetExecutionHistory), which docs/deploy.md tells CLI users to run on a session's execution.",
  },
  fargateTaskDefinitions: {
    reason:
      "Cairn registers one task definition per kernel image at run time, family `cairn-<hash of the image>`, so the functions that start kernels can name them only by that prefix: the resource is `task-definition/cairn-*` (every revision of Cairn's families, no other family), with only ecs:RunTask, and only with the condition ecs:cluster equal to Cairn's cluster, and ecs:TagResource only as RegisterTaskDefinition's tags on create (ecs:CreateAction RegisterTaskDefinition: the definition's content-hash tag).",
  },
  fargateTasks: {
    reason:
      "Kernels' ECS tasks are started at run time, so the functions can name them only by their cluster: the resource is `task/<Cairn's cluster name>/*`, with ecs:StopTask conditioned on ecs:cluster being Cairn's cluster, and ecs:TagResource only as RunTask's tags on create (ecs:CreateAction RunTask).",
  },
  taskLogStreams: {
    reason:
      "Each kernel task's output goes to a log stream the awslogs driver creates at run time in the kernel log group, so the task execution role can name the streams only by their group: the resource is the kernel log group's streams (`log-group:<name>:*`), never another group, with only logs:CreateLogStream and logs:PutLogEvents.",
  },
  imageRepositories: {
    reason:
      "Kernel images are named per session at run time, so without the fargate.imageRepositories prop the task execution role may pull from any ECR repository of the stack's account in its region (`repository/*`), with only the pull actions (ecr:BatchCheckLayerAvailability, ecr:GetDownloadUrlForLayer, ecr:BatchGetImage); the imageRepositories prop narrows it to named repositories.",
  },
} as const satisfies Record<string, { readonly reason: string }>;

/** Acknowledges the IAM5 finding that `resource` (an ARN ending in a wildcard) raises under `scope`. */
export function acknowledgeWildcardResource(
  scope: IConstruct,
  resource: string,
  acknowledgement: { readonly reason: string },
): void {
  acknowledge(scope, { id: wildcardFindingId(scope, resource), reason: acknowledgement.reason });
}

/** The id of the IAM5 finding `resource` raises: `AwsSolutions-IAM5[Resource::<flattened ARN>]`. */
export function wildcardFindingId(scope: IConstruct, resource: string): string {
  return `AwsSolutions-IAM5[Resource::${flattenReference(Stack.of(scope).resolve(resource))}]`;
}

/**
 * A resolved CloudFormation value as cdk-nag writes it in finding ids (its flattenCfnReference):
 * `Ref` → `<Id>`, `Fn::GetAtt` → `<Id.Attr>`, `Fn::Join` joined, `${…}` → `<…>`.
 */
function flattenReference(node: unknown): string {
  if (node === undefined) return "";
  if (typeof node === "string") return node.replace(/\$\{/g, "<").replace(/\}/g, ">");
  if (typeof node === "object" && node !== null) {
    const o = node as Record<string, unknown>;
    if (Array.isArray(o["Fn::Join"])) {
      const [delimiter, items] = o["Fn::Join"] as [string, unknown[]];
      return items.map(flattenReference).join(delimiter);
    }
    if (o["Fn::Sub"] !== undefined) return flattenReference(o["Fn::Sub"]);
    if (Array.isArray(o["Fn::GetAtt"])) {
      const [resource, attribute] = o["Fn::GetAtt"] as [unknown, unknown];
      return `<${flattenReference(resource)}.${flattenReference(attribute)}>`;
    }
    if (o["Fn::ImportValue"] !== undefined) return flattenReference(o["Fn::ImportValue"]);
    if (o["Ref"] !== undefined) return `<${flattenReference(o["Ref"])}>`;
  }
  return JSON.stringify(node);
}

export function acknowledge(scope: IConstruct, acknowledgement: NagAcknowledgement): void {
  Validations.of(scope).acknowledge({ id: acknowledgement.id, reason: acknowledgement.reason });
}
