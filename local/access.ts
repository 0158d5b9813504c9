/**
 * Who may do what on the embedded runtime's endpoints (docs/agents.md, "Identity"): the same
 * split the stack's IAM policies make. Each run makes fresh credentials for four principals:
 *
 * - `control-plane`: the functions (in this process): everything. The runtime's own DynamoDB
 *   Local accepts this key alone (local/dynamodb-local.ts), and the gate signs with it what it
 *   lets through.
 * - `client`: the stack's ClientPolicy. Reads what the CLI shows on the table (agents without
 *   their signing keys), puts only client events (EventSource.Client), reads kernel logs and the
 *   executions of the state machines.
 * - `operator`: ClientPolicy and OperatorPolicy: also writes templates, retry policies, queues
 *   and the retry configuration. The CLI of the runtime's own user runs as it.
 * - `agent`: `cairn agent` processes. Puts only agent events (EventSource.Agent); receives and deletes on
 *   agent queues; writes kernel log streams. Each agent the runtime starts gets a credential of its
 *   own, tagged with its id (`cairn-agent-id`), that consumes only its own queue: as AgentPolicy
 *   allows a tagged principal, so no agent reads another's signing key.
 *
 * The table statements are the stack's own (functions/topology/client-access.ts), evaluated by
 * the DynamoDB gate in front of DynamoDB Local (local/dynamodb-gate), which checks only the
 * signature. Kernels get none of the credentials: their environment is built
 * from an allow-list (agent/environment.ts).
 */
import { randomBytes } from "node:crypto";
import { EventSource } from "../functions/core/events.ts";
import {
  AGENT_ID_TAG,
  AGENT_LOG_ACTIONS,
  AGENT_QUEUE_ACTIONS,
  CLIENT_LOG_ACTIONS,
  ownAgentQueueName,
  UNTAGGED_AGENT_CONDITION,
} from "../functions/topology/access-actions.ts";
import {
  CLIENT_EXECUTION_ACTIONS,
  CLIENT_TABLE_STATEMENTS,
  OPERATOR_TABLE_STATEMENTS,
  type TableStatement,
} from "../functions/topology/client-access.ts";
import { TABLE_SCHEMA } from "../functions/topology/table-schema.ts";
import type { AwsAuthOptions, AwsCredential } from "./aws-json/index.ts";
import { compilePolicy, type PolicyStatement } from "./aws-json/index.ts";

export interface AccessSettings {
  readonly region: string;
  readonly account: string;
  readonly busArn: string;
  readonly agentQueuePrefix: string;
  readonly kernelLogGroup: string;
  readonly tableName: string;
  /** The state machines whose executions clients may read. */
  readonly stateMachineNames: readonly string[];
}

export interface RuntimeAccess {
  readonly controlPlane: AwsCredential;
  readonly client: AwsCredential;
  readonly operator: AwsCredential;
  /** An agent principal without the agent id tag: it may consume every agent queue. */
  readonly agent: AwsCredential;
  /**
   * The credential of the agent `agentId`, made on first request and the same after: tagged
   * `cairn-agent-id`, so it consumes only that agent's queue.
   */
  agentCredential(agentId: string): AwsCredential;
  /** For every endpoint's `auth` option. */
  readonly auth: AwsAuthOptions;
}

export function runtimeAccess(s: AccessSettings): RuntimeAccess {
  const controlPlane = credential("control-plane");
  const client = credential("client");
  const operator = credential("operator");
  const agent = credential("agent");
  const logGroupArn = `arn:aws:logs:${s.region}:${s.account}:log-group:${s.kernelLogGroup}`;
  const tableArn = `arn:aws:dynamodb:${s.region}:${s.account}:table/${s.tableName}`;
  const table = (principals: string[], statement: TableStatement): PolicyStatement => ({
    sid: statement.sid,
    principals,
    actions: [...statement.actions],
    resources: statement.resources.flatMap((kind) =>
      kind === "table"
        ? [tableArn]
        : TABLE_SCHEMA.globalSecondaryIndexes.map((g) => `${tableArn}/index/${g.indexName}`),
    ),
    ...(statement.condition === undefined ? {} : { condition: statement.condition }),
  });
  // An operator is a client with more rights: ClientPolicy and OperatorPolicy attached together.
  const clients = ["client", "operator"];
  const statements: PolicyStatement[] = [
    {
      sid: "ControlPlane",
      principals: ["control-plane"],
      actions: ["events:*", "sqs:*", "logs:*", "dynamodb:*", "states:*"],
      resources: ["*"],
    },
    ...CLIENT_TABLE_STATEMENTS.map((st) => table(clients, st)),
    ...OPERATOR_TABLE_STATEMENTS.map((st) => table(["operator"], st)),
    {
      sid: "ClientExecutions",
      principals: clients,
      actions: [...CLIENT_EXECUTION_ACTIONS],
      resources: s.stateMachineNames.map(
        (name) => `arn:aws:states:${s.region}:${s.account}:execution:${name}:*`,
      ),
    },
    {
      sid: "ClientEvents",
      principals: clients,
      actions: ["events:PutEvents"],
      resources: [s.busArn],
      conditions: [{ key: "events:source", anyOf: [EventSource.Client] }],
    },
    {
      sid: "ClientLogs",
      principals: clients,
      actions: [...CLIENT_LOG_ACTIONS],
      resources: [logGroupArn, `${logGroupArn}:*`],
    },
    {
      sid: "AgentEvents",
      principals: ["agent"],
      actions: ["events:PutEvents"],
      resources: [s.busArn],
      conditions: [{ key: "events:source", anyOf: [EventSource.Agent] }],
    },
    {
      sid: "AgentOwnQueue",
      principals: ["agent"],
      actions: [...AGENT_QUEUE_ACTIONS],
      resources: [`arn:aws:sqs:${s.region}:${s.account}:${ownAgentQueueName(s.agentQueuePrefix)}`],
    },
    {
      sid: "UntaggedAgentQueues",
      principals: ["agent"],
      actions: [...AGENT_QUEUE_ACTIONS],
      resources: [`arn:aws:sqs:${s.region}:${s.account}:${s.agentQueuePrefix}*`],
      condition: UNTAGGED_AGENT_CONDITION,
    },
    {
      sid: "AgentLogs",
      principals: ["agent"],
      actions: [...AGENT_LOG_ACTIONS],
      resources: [logGroupArn, `${logGroupArn}:log-stream:*`],
    },
  ];
  const book = new Map([controlPlane, client, operator, agent].map((c) => [c.accessKeyId, c]));
  const agents = new Map<string, AwsCredential>();
  return {
    controlPlane,
    client,
    operator,
    agent,
    agentCredential: (agentId) => {
      let own = agents.get(agentId);
      if (own === undefined) {
        own = { ...credential("agent"), tags: { [AGENT_ID_TAG]: agentId } };
        agents.set(agentId, own);
        book.set(own.accessKeyId, own);
      }
      return own;
    },
    auth: {
      credentials: book,
      authorize: compilePolicy(statements),
      region: s.region,
    },
  };
}

function credential(principal: string): AwsCredential {
  return {
    principal,
    accessKeyId: `ALOC${principal
      .replace(/[^a-z]/g, "")
      .toUpperCase()
      .slice(0, 8)}${randomBytes(5).toString("hex").toUpperCase()}`,
    secretAccessKey: randomBytes(30).toString("base64url"),
  };
}
