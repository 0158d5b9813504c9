/**
 * Who may do what on the embedded runtime's endpoints (docs/agents.md, "Identity"): the same
 * split the stack's IAM policies make. Each run makes fresh credentials for three principals:
 *
 * - `control-plane`: the functions (in this process): everything.
 * - `client`: the CLI. Puts only client events (EventSource.Client); reads kernel logs.
 * - `agent`: `cairn agent` processes. Puts only agent events (EventSource.Agent); receives and deletes on
 *   agent queues; writes kernel log streams.
 *
 * Kernels get none of them: their environment is built from an allow-list (agent/environment.ts).
 * DynamoDB Local has no authentication of its own (issue 11 takes that on).
 */
import { randomBytes } from "node:crypto";
import { EventSource } from "../functions/core/events.ts";
import {
  AGENT_LOG_ACTIONS,
  AGENT_QUEUE_ACTIONS,
  CLIENT_LOG_ACTIONS,
} from "../functions/topology/access-actions.ts";
import type { AwsAuthOptions, AwsCredential } from "./aws-json/index.ts";
import { compilePolicy, type PolicyStatement } from "./aws-json/index.ts";

export interface AccessSettings {
  readonly region: string;
  readonly account: string;
  readonly busArn: string;
  readonly agentQueuePrefix: string;
  readonly kernelLogGroup: string;
}

export interface RuntimeAccess {
  readonly controlPlane: AwsCredential;
  readonly client: AwsCredential;
  readonly agent: AwsCredential;
  /** For every endpoint's `auth` option. */
  readonly auth: AwsAuthOptions;
}

export function runtimeAccess(s: AccessSettings): RuntimeAccess {
  const controlPlane = credential("control-plane");
  const client = credential("client");
  const agent = credential("agent");
  const logGroupArn = `arn:aws:logs:${s.region}:${s.account}:log-group:${s.kernelLogGroup}`;
  const statements: PolicyStatement[] = [
    {
      sid: "ControlPlane",
      principals: ["control-plane"],
      actions: ["events:*", "sqs:*", "logs:*"],
      resources: ["*"],
    },
    {
      sid: "ClientEvents",
      principals: ["client"],
      actions: ["events:PutEvents"],
      resources: [s.busArn],
      conditions: [{ key: "events:source", anyOf: [EventSource.Client] }],
    },
    {
      sid: "ClientLogs",
      principals: ["client"],
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
      sid: "AgentQueues",
      principals: ["agent"],
      actions: [...AGENT_QUEUE_ACTIONS],
      resources: [`arn:aws:sqs:${s.region}:${s.account}:${s.agentQueuePrefix}*`],
    },
    {
      sid: "AgentLogs",
      principals: ["agent"],
      actions: [...AGENT_LOG_ACTIONS],
      resources: [logGroupArn, `${logGroupArn}:log-stream:*`],
    },
  ];
  return {
    controlPlane,
    client,
    agent,
    auth: {
      credentials: [controlPlane, client, agent],
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
