/**
 * What lives outside the stack may do to it: the kernel log group agents write to, and the three
 * managed policies the stack outputs — AgentPolicy for the hosts that run `cairn agent`,
 * ClientPolicy for those who run the CLI, and OperatorPolicy, attached beside ClientPolicy, for
 * those who also manage templates, retry policies, queues and the retry configuration. Each allows
 * exactly what that program's code sends (test/cdk-agents.test.ts reads the code and compares
 * both ways); the table statements are functions/topology/client-access.ts, which the embedded
 * runtime enforces too. No client reads an agent's signing key or writes a session.
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
import type * as sfn from "aws-cdk-lib/aws-stepfunctions";
import {
  AGENT_LOG_ACTIONS,
  AGENT_QUEUE_ACTIONS,
  CLIENT_LOG_ACTIONS,
  ownAgentQueueName,
  STACK_READ_ACTIONS,
  UNTAGGED_AGENT_CONDITION,
} from "../functions/topology/access-actions.ts";
import {
  CLIENT_EXECUTION_ACTIONS,
  CLIENT_TABLE_STATEMENTS,
  OPERATOR_TABLE_STATEMENTS,
  type TableStatement,
} from "../functions/topology/client-access.ts";
import { BUS_PUT_ACTIONS, executionsArn, indexArns } from "./permissions.ts";
import type { ResolvedCairnProps } from "./props.ts";

export interface CairnAgentAccessProps {
  readonly settings: ResolvedCairnProps;
  readonly table: dynamodb.ITable;
  readonly bus: events.IEventBus;
  /** Every agent queue (permissions.ts agentQueuesArn). */
  readonly agentQueuesArn: string;
  /** The stack's state machines: clients may read their executions (docs/deploy.md). */
  readonly stateMachines: readonly sfn.IStateMachine[];
}

export class CairnAgentAccess extends Construct {
  readonly kernelLogGroup: logs.LogGroup;
  readonly agentPolicy: iam.ManagedPolicy;
  readonly clientPolicy: iam.ManagedPolicy;
  readonly operatorPolicy: iam.ManagedPolicy;

  constructor(scope: Construct, id: string, props: CairnAgentAccessProps) {
    super(scope, id);
    const { settings, table, bus, agentQueuesArn, stateMachines } = props;
    const stack = Stack.of(this);

    // No fixed name: a name CloudFormation generates never collides with a group a destroyed
    // stack retained.
    this.kernelLogGroup = new logs.LogGroup(this, "KernelLogs", {
      retention: settings.logRetention,
      removalPolicy: settings.removalPolicy,
    });
    // The group's streams, `log-group:<name>:*`, which is also how CloudWatch Logs authorises the
    // group-level reads (DescribeLogStreams, FilterLogEvents). Written out rather than the group's
    // Arn attribute (the same value), so that cdk-nag sees the wildcard and it is acknowledged.
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
        // A principal tagged with its agent's id consumes that agent's queue only; an untagged
        // one (every host under one role) every agent queue of the stack (docs/agents.md).
        new iam.PolicyStatement({
          sid: "ConsumeOwnAgentQueue",
          actions: [...AGENT_QUEUE_ACTIONS],
          resources: [
            stack.formatArn({ service: "sqs", resource: ownAgentQueueName(settings.agentQueuePrefix) }),
          ],
        }),
        new iam.PolicyStatement({
          sid: "ConsumeAgentQueuesUntagged",
          actions: [...AGENT_QUEUE_ACTIONS],
          resources: [agentQueuesArn],
          conditions: UNTAGGED_AGENT_CONDITION,
        }),
        putEventsAs(bus, EventSource.Agent),
        new iam.PolicyStatement({ actions: [...AGENT_LOG_ACTIONS], resources: [kernelLogStreams] }),
        readOutputs,
      ],
    });
    acknowledgeWildcardResource(this.agentPolicy, agentQueuesArn, NAG_WILDCARD_RESOURCES.agentQueues);
    acknowledgeWildcardResource(this.agentPolicy, kernelLogStreams, NAG_WILDCARD_RESOURCES.kernelLogStreams);

    const executions = stateMachines.map(executionsArn);
    this.clientPolicy = new iam.ManagedPolicy(this, "ClientPolicy", {
      description: `Cairn ${stack.stackName}: what the cairn CLI needs to submit, follow and cancel sessions and read what it shows`,
      statements: [
        ...CLIENT_TABLE_STATEMENTS.map((s) => tableStatement(s, table)),
        putEventsAs(bus, EventSource.Client),
        new iam.PolicyStatement({ actions: [...CLIENT_LOG_ACTIONS], resources: [kernelLogStreams] }),
        new iam.PolicyStatement({ actions: [...CLIENT_EXECUTION_ACTIONS], resources: executions }),
        readOutputs,
      ],
    });
    acknowledgeWildcardResource(this.clientPolicy, kernelLogStreams, NAG_WILDCARD_RESOURCES.kernelLogReads);
    for (const arn of executions)
      acknowledgeWildcardResource(this.clientPolicy, arn, NAG_WILDCARD_RESOURCES.clientExecutionReads);

    this.operatorPolicy = new iam.ManagedPolicy(this, "OperatorPolicy", {
      description: `Cairn ${stack.stackName}: with ClientPolicy, what the cairn CLI needs to manage templates, retry policies, queues and the retry configuration`,
      statements: OPERATOR_TABLE_STATEMENTS.map((s) => tableStatement(s, table)),
    });
  }
}

/** A table statement of client-access.ts on this stack's table or its indexes (one ARN each). */
function tableStatement(statement: TableStatement, table: dynamodb.ITable): iam.PolicyStatement {
  return new iam.PolicyStatement({
    sid: statement.sid,
    actions: [...statement.actions],
    resources: statement.resources.flatMap((kind) =>
      kind === "table" ? [table.tableArn] : indexArns(table),
    ),
    ...(statement.condition === undefined
      ? {}
      : { conditions: JSON.parse(JSON.stringify(statement.condition)) as Record<string, unknown> }),
  });
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
