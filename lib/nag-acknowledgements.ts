/**
 * Every cdk-nag finding Cairn acknowledges, with the reason. There are exactly three kinds, and
 * test/cdk-nag.test.ts keeps them honest: the stack must pass AwsSolutionsChecks with nothing
 * else acknowledged, and the `*` resources these reasons excuse must carry only the actions the
 * reasons name.
 */
import { Validations } from "aws-cdk-lib";
import type { IConstruct } from "constructs";

export interface NagAcknowledgement {
  readonly id: string;
  readonly reason: string;
}

/** X-Ray actions that Lambda active tracing adds to a function's role. */
export const LAMBDA_XRAY_ACTIONS = ["xray:PutTraceSegments", "xray:PutTelemetryRecords"] as const;
/** Actions the state machine's role holds on `*`: vended-log delivery and X-Ray. */
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
      "Resource '*' carries only CloudWatch Logs vended-log delivery (logs:CreateLogDelivery, GetLogDelivery, UpdateLogDelivery, DeleteLogDelivery, ListLogDeliveries, PutResourcePolicy, DescribeResourcePolicies, DescribeLogGroups), which Step Functions logging requires on '*', and X-Ray tracing (xray:PutTraceSegments, PutTelemetryRecords, GetSamplingRules, GetSamplingTargets), which supports no resource-level permissions. lambda:InvokeFunction is scoped to the EnterStage function.",
  },
  deliveryDeadLetterQueue: {
    id: "AwsSolutions-SQS3",
    reason:
      "This queue is itself a dead-letter queue: the DLQ of every EventBridge rule target and of the sweep target. The rule recognises DLQs only through SQS redrive policies, which EventBridge target DLQs do not use. A DLQ behind it would only move the problem; its messages raise the DeliveryDeadLetterQueueMessagesAlarm.",
  },
} as const satisfies Record<string, NagAcknowledgement>;

export function acknowledge(scope: IConstruct, acknowledgement: NagAcknowledgement): void {
  Validations.of(scope).acknowledge({ id: acknowledgement.id, reason: acknowledgement.reason });
}
