/**
 * The stack `cdk.json` deploys: one Cairn and the outputs the CLI reads
 * (`cairn --stack NAME` looks up TableName, EventBusName and StateMachineArn).
 */
import { CfnOutput, Stack, type StackProps } from "aws-cdk-lib";
import type { Construct } from "constructs";
import { Cairn } from "./cairn.ts";
import type { CairnProps } from "./props.ts";

export interface CairnStackProps extends StackProps {
  /**
   * Props of the Cairn construct.
   *
   * @default - the construct's defaults
   */
  readonly cairn?: CairnProps;
}

/** Output keys; the CLI relies on the first three. */
export const StackOutput = {
  TableName: "TableName",
  EventBusName: "EventBusName",
  StateMachineArn: "StateMachineArn",
  StateMachineName: "StateMachineName",
  DashboardName: "DashboardName",
  CoordinatorQueueUrl: "CoordinatorQueueUrl",
  DeadLetterQueueUrls: "DeadLetterQueueUrls",
  Shards: "Shards",
} as const;

export class CairnStack extends Stack {
  readonly cairn: Cairn;

  constructor(scope: Construct, id: string, props: CairnStackProps = {}) {
    super(scope, id, {
      description:
        "Cairn: a serverless control plane that carries compute sessions through a durable lifecycle",
      ...props,
    });
    const cairn = new Cairn(this, "Cairn", props.cairn);
    this.cairn = cairn;
    const output = (key: keyof typeof StackOutput, value: string, description: string) =>
      new CfnOutput(this, StackOutput[key], { value, description });
    output("TableName", cairn.table.tableName, "Sessions table");
    output("EventBusName", cairn.bus.eventBusName, "Bus that submissions, cancels and agent reports go to");
    output(
      "StateMachineArn",
      cairn.stateMachine.stateMachineArn,
      "Session lifecycle; executions are named by session id",
    );
    output("StateMachineName", cairn.stateMachine.stateMachineName, "Session lifecycle state machine name");
    output("DashboardName", cairn.dashboard.dashboardName, "CloudWatch dashboard");
    output(
      "CoordinatorQueueUrl",
      [...cairn.queues.values()].map((q) => q.queueUrl).join(","),
      "Queue feeding the coordinator",
    );
    output(
      "DeadLetterQueueUrls",
      [...cairn.deadLetterQueues.values()].map((q) => q.queueUrl).join(","),
      "Dead-letter queues (undeliverable events, failed coordinator batches)",
    );
    output(
      "Shards",
      String(cairn.settings.shards),
      "Shards of the status indexes (CAIRN_SHARDS for clients)",
    );
  }
}
