/**
 * What lives outside the stack may do to it: the kernel log group agents write to, and the two
 * managed policies the stack outputs — AgentPolicy for the hosts that run `cairn agent`,
 * ClientPolicy for those who run the CLI. Each allows exactly what that program's code sends
 * (test/cdk-agents.test.ts reads the code and compares both ways).
 *
 * The bus has no resource policy: only these identity policies decide who may put which source.
 * An agent may put only `cairn.agent` events, a client only `cairn.client` ones, so a client cannot
 * forge kernel reports or heartbeats, and an agent cannot submit or cancel sessions.
 */
import { ArnFormat, Stack } from "aws-cdk-lib";
import type * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import type * as events from "aws-cdk-lib/aws-events";
import * as iam from "aws-cdk-lib/aws-iam";
import * as logs from "aws-cdk-lib/aws-logs";
import { Construct } from "constructs";
import { EventSource } from "../functions/core/events.ts";
import { acknowledgeWildcardResource, NAG_WILDCARD_RESOURCES } from "./nag-acknowledgements.ts";
import { BUS_PUT_ACTIONS, indexArns } from "./permissions.ts";
import type { ResolvedCairnProps } from "./props.ts";

/** An agent finds its queue, long-polls it and deletes what it handled (agent/host.ts). */
export const AGENT_QUEUE_ACTIONS = ["sqs:GetQueueUrl", "sqs:ReceiveMessage", "sqs:DeleteMessage"] as const;
/** An agent ships kernel output, one stream per kernel run (agent/log-shipper.ts). */
export const AGENT_LOG_ACTIONS = ["logs:CreateLogStream", "logs:PutLogEvents"] as const;
/** `cairn --stack NAME` (any command, `cairn agent` too) reads the stack's outputs first. */
export const STACK_READ_ACTIONS = ["cloudformation:DescribeStacks"] as const;
/**
 * The CLI reads sessions, jobs, history and runs, and manages retry policies, queues and the retry
 * configuration (bin/cli/cairn-api.ts). Its transactions hold Put, Update and Delete items only,
 * authorised as PutItem, UpdateItem and DeleteItem.
 */
export const CLIENT_TABLE_ITEM_ACTIONS = [
  "dynamodb:GetItem",
  "dynamodb:BatchGetItem",
  "dynamodb:PutItem",
  "dynamodb:UpdateItem",
  "dynamodb:DeleteItem",
] as const;
/** Histories and runs on the table; status, listing and recent-session rosters on the indexes. */
export const CLIENT_TABLE_QUERY_ACTIONS = ["dynamodb:Query"] as const;

export interface CairnAgentAccessProps {
  readonly settings: ResolvedCairnProps;
  readonly table: dynamodb.ITable;
  readonly bus: events.IEventBus;
  /** Every agent queue (permissions.ts agentQueuesArn). */
  readonly agentQueuesArn: string;
}

export class CairnAgentAccess extends Construct {
  readonly kernelLogGroup: logs.LogGroup;
  readonly agentPolicy: iam.ManagedPolicy;
  readonly clientPolicy: iam.ManagedPolicy;

  constructor(scope: Construct, id: string, props: CairnAgentAccessProps) {
    super(scope, id);
    const { settings, table, bus, agentQueuesArn } = props;
    const stack = Stack.of(this);

    // No fixed name: a name CloudFormation generates never collides with a group a destroyed
    // stack retained.
    this.kernelLogGroup = new logs.LogGroup(this, "KernelLogs", {
      retention: settings.logRetention,
      removalPolicy: settings.removalPolicy,
    });
    // Written out rather than the group's Arn attribute (which ends in the same `:*`), so that
    // the wildcard is visible to cdk-nag and acknowledged for what it is.
    const kernelLogStreams = stack.formatArn({
      service: "logs",
      resource: "log-group",
      resourceName: `${this.kernelLogGroup.logGroupName}:*`,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
    // The stack's own ARN (with its unique id): outputs of this stack and no other.
    const readOutputs = new iam.PolicyStatement({
      actions: [...STACK_READ_ACTIONS],
      resources: [stack.stackId],
    });

    this.agentPolicy = new iam.ManagedPolicy(this, "AgentPolicy", {
      description: `Cairn ${stack.stackName}: what a host running \`cairn agent\` needs (attach to its instance role)`,
      statements: [
        new iam.PolicyStatement({ actions: [...AGENT_QUEUE_ACTIONS], resources: [agentQueuesArn] }),
        putEventsAs(bus, EventSource.Agent),
        new iam.PolicyStatement({ actions: [...AGENT_LOG_ACTIONS], resources: [kernelLogStreams] }),
        readOutputs,
      ],
    });
    acknowledgeWildcardResource(this.agentPolicy, agentQueuesArn, NAG_WILDCARD_RESOURCES.agentQueues);
    acknowledgeWildcardResource(this.agentPolicy, kernelLogStreams, NAG_WILDCARD_RESOURCES.kernelLogStreams);

    this.clientPolicy = new iam.ManagedPolicy(this, "ClientPolicy", {
      description: `Cairn ${stack.stackName}: what the cairn CLI needs to submit, follow, cancel and manage retries`,
      statements: [
        new iam.PolicyStatement({ actions: [...CLIENT_TABLE_ITEM_ACTIONS], resources: [table.tableArn] }),
        new iam.PolicyStatement({
          actions: [...CLIENT_TABLE_QUERY_ACTIONS],
          resources: [table.tableArn, ...indexArns(table)],
        }),
        putEventsAs(bus, EventSource.Client),
        readOutputs,
      ],
    });
  }
}

/**
 * PutEvents on the bus for events of one source only. One call carries up to 10 entries, so
 * `events:source` is multivalued: every entry's source must match (ForAllValues, as the
 * EventBridge guide's examples do), and the key must be present, since ForAllValues alone also
 * holds for an empty set.
 */
function putEventsAs(bus: events.IEventBus, source: string): iam.PolicyStatement {
  return new iam.PolicyStatement({
    actions: [...BUS_PUT_ACTIONS],
    resources: [bus.eventBusArn],
    conditions: {
      "ForAllValues:StringEquals": { "events:source": [source] },
      Null: { "events:source": "false" },
    },
  });
}
