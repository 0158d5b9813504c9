/**
 * The stack `cdk.json` deploys: one Cairn and the outputs the CLI reads (`cairn --stack NAME`
 * looks up TableName, EventBusName, StateMachineArn, AgentQueuePrefix and KernelLogGroupName),
 * and the managed policies to attach to agents' and clients' roles.
 */
import { CfnOutput, Stack, type StackProps } from "aws-cdk-lib";
import type { Construct } from "constructs";
import { QUEUES } from "../functions/topology/index.ts";
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

/**
 * Output keys. The CLI reads TableName, EventBusName, StateMachineArn, AgentQueuePrefix and
 * KernelLogGroupName (bin/cli/target.ts); each queue has its own `<name>Url` output besides these.
 */
export const StackOutput = {
  TableName: "TableName",
  EventBusName: "EventBusName",
  StateMachineArn: "StateMachineArn",
  StateMachineName: "StateMachineName",
  DashboardName: "DashboardName",
  Shards: "Shards",
  AgentQueuePrefix: "AgentQueuePrefix",
  KernelLogGroupName: "KernelLogGroupName",
  AgentPolicyArn: "AgentPolicyArn",
  ClientPolicyArn: "ClientPolicyArn",
  OperatorPolicyArn: "OperatorPolicyArn",
  FargateClusterArn: "FargateClusterArn",
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
    if (cairn.dashboard) output("DashboardName", cairn.dashboard.dashboardName, "CloudWatch dashboard");
    output(
      "Shards",
      String(cairn.settings.shards),
      "Shards of the status indexes (CAIRN_SHARDS for clients)",
    );
    output(
      "AgentQueuePrefix",
      cairn.settings.agentQueuePrefix,
      "Agent queues are <prefix><agentId>, created by the control plane when an agent registers",
    );
    output(
      "KernelLogGroupName",
      cairn.kernelLogGroup.logGroupName,
      "Kernel output, one stream per kernel run",
    );
    output(
      "AgentPolicyArn",
      cairn.agentPolicy.managedPolicyArn,
      "Managed policy for the role of a host that runs `cairn agent`",
    );
    output(
      "ClientPolicyArn",
      cairn.clientPolicy.managedPolicyArn,
      "Managed policy for those who run the cairn CLI against this stack",
    );
    output(
      "OperatorPolicyArn",
      cairn.operatorPolicy.managedPolicyArn,
      "Managed policy, beside ClientPolicy, for those who also manage templates, retry policies, queues and the retry configuration",
    );
    if (cairn.fargate !== undefined) {
      output("FargateClusterArn", cairn.fargate.clusterArn, "ECS cluster Fargate kernels run in");
    }
    // One output per queue (a URL each, not a joined list): CoordinatorQueueUrl, HeartbeatQueueUrl,
    // DeliveryDeadLetterQueueUrl, CoordinatorQueueDeadLetterQueueUrl, …
    for (const [name, queue] of cairn.queues) {
      const consumer = QUEUES.find((q) => q.name === name)?.consumer ?? "its consumer";
      new CfnOutput(this, `${name}Url`, {
        value: queue.queueUrl,
        description: `Queue feeding the ${consumer} function (${name})`,
      });
    }
    for (const [name, queue] of cairn.deadLetterQueues) {
      new CfnOutput(this, `${name}Url`, {
        value: queue.queueUrl,
        description:
          queue === cairn.deadLetterQueues.get("DeliveryDeadLetterQueue")
            ? "Dead-letter queue of events EventBridge could not deliver to a rule or sweep target"
            : `Dead-letter queue of messages its consumer failed ${cairn.settings.maxReceiveCount} times (${name})`,
      });
    }
  }
}
