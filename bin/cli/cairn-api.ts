/**
 * What the commands need from Cairn: the session store's read side (sessions, jobs, history,
 * runs, rejected submissions), the retry resources operators manage (policies, queues, the retry
 * configuration), deployments and their routes, the kernels' output on CloudWatch Logs, and
 * putting an inbound event on the bus.
 * Built on the application's own store adapter (DynamoSessionStore), so the CLI reads and writes
 * exactly what the control plane does.
 */
import { CloudFormationClient, DescribeStacksCommand } from "@aws-sdk/client-cloudformation";
import { CloudWatchLogsClient } from "@aws-sdk/client-cloudwatch-logs";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { EventBridgeClient, PutEventsCommand } from "@aws-sdk/client-eventbridge";
import { DeploymentItems } from "../../functions/adapters/dynamo/deployment-items.ts";
import { DynamoRequests } from "../../functions/adapters/dynamo/dynamo-requests.ts";
import { DynamoSessionStore } from "../../functions/adapters/dynamo/dynamo-session-store.ts";
import { DynamoSessionCensus } from "../../functions/adapters/dynamo/session-census.ts";
import { storeRetryConfig } from "../../functions/adapters/dynamo/retry.ts";
import type { PutEventsEntry } from "../../functions/core/events.ts";
import type { DeploymentRepository } from "../../functions/core/ports/deployments.ts";
import type { TemplateRepository } from "../../functions/core/ports/templates.ts";
import { TemplateItems } from "../../functions/adapters/dynamo/template-items.ts";
import type { FailureCategoryRepository } from "../../functions/core/ports/failure-categories.ts";
import { FailureCategoryItems } from "../../functions/adapters/dynamo/failure-category-items.ts";
import type { DraftRepository } from "../../functions/core/ports/drafts.ts";
import type { SessionCensus } from "../../functions/core/ports/session-census.ts";
import type { AgentRepository } from "../../functions/core/ports/agents.ts";
import type { JobRepository } from "../../functions/core/ports/jobs.ts";
import type { RetryCatalogRepository } from "../../functions/core/ports/retry-catalog.ts";
import type { SessionRepository } from "../../functions/core/ports/sessions.ts";
import { explainAwsError } from "./aws-errors.ts";
import { UnreachableError } from "./errors.ts";
import { cloudWatchLogReader } from "./kernel-log-reader.ts";
import type { Connection, StackRequest } from "./target.ts";
import type { KernelLogReader } from "./kernel-log-reader.ts";

export type SessionReader = Pick<
  SessionRepository & JobRepository,
  | "getSession"
  | "getSessions"
  | "getJob"
  | "listHistory"
  | "listRuns"
  | "listSessionsByStatus"
  | "listRecentSessions"
> & {
  /** Rejected submissions (refused by the control plane); a reader without it (a test's fake) knows of none. */
  readonly listRejections?: JobRepository["listRejections"];
  /** Drafts (HPC Pack's Configuring); a reader without it (a test's fake) knows of none. */
  readonly getDraft?: DraftRepository["getDraft"];
};

/** Retry policies, queues and the retry configuration, written directly to the store. */
export type RetryAdmin = Pick<
  RetryCatalogRepository,
  | "createRetryPolicy"
  | "updateRetryPolicy"
  | "getRetryPolicy"
  | "listRetryPolicies"
  | "deleteRetryPolicy"
  | "createQueue"
  | "updateQueue"
  | "getQueue"
  | "listQueues"
  | "deleteQueue"
  | "getRetryConfig"
  | "putRetryConfig"
>;

/** Job templates (HPC Pack's Validating), written directly to the store like retry policies. */
export type TemplateAdmin = TemplateRepository;

/** Agents and the capacity sessions hold on them, read by `cairn dashboard`. */
export type AgentReader = Pick<AgentRepository, "listAgents" | "allocationsOnAgent">;

/** Deployments, their routes and history, read by `cairn deployment`; never written. */
export type DeploymentReader = Pick<
  DeploymentRepository,
  "getDeployment" | "listDeployments" | "deploymentHistory"
>;

/** The kernels' output, or why this connection cannot read it (said by `logs` only). */
export type KernelLogsApi =
  | { readonly readable: true; readonly reader: KernelLogReader }
  | { readonly readable: false; readonly why: string };

export interface CairnApi {
  readonly store: SessionReader;
  readonly admin: RetryAdmin;
  /** `cairn template`; a CairnApi without it (a test's fake) manages none. */
  readonly templates?: TemplateAdmin;
  /** `cairn failure-category`; a CairnApi without it (a test's fake) manages none. */
  readonly failureCategories?: FailureCategoryRepository;
  readonly agents: AgentReader;
  /** `cairn deployment`'s reads; a CairnApi without it (a test's fake) knows of no deployment. */
  readonly deployments?: DeploymentReader;
  /** Sessions per status, from the status index (`cairn dashboard`'s counts). */
  readonly census: SessionCensus;
  readonly eventBusName: string;
  readonly stateMachineArn?: string;
  readonly logs: KernelLogsApi;
  /**
   * Puts one inbound event (built by toPutEventsEntry); throws if the bus does not accept it.
   * Returns the event's id, which the control plane's verdict on it names (a rejection is found by it).
   */
  put(entry: PutEventsEntry): Promise<string | undefined | void>;
  /** Releases the clients' sockets so the process can exit. */
  close(): void;
}

export function openCairnApi(connection: Connection): CairnApi {
  const common = {
    ...(connection.region === undefined ? {} : { region: connection.region }),
    ...(connection.credentials === undefined ? {} : { credentials: connection.credentials }),
  };
  const dynamo = new DynamoDBClient({
    ...common,
    // The store's retries (conflicts, throttling) are the SDK client's own.
    ...storeRetryConfig(),
    ...(connection.endpoints.dynamoDb === undefined ? {} : { endpoint: connection.endpoints.dynamoDb }),
  });
  const events = new EventBridgeClient({
    ...common,
    ...(connection.endpoints.eventBridge === undefined ? {} : { endpoint: connection.endpoints.eventBridge }),
  });
  const store = new DynamoSessionStore({
    client: dynamo,
    tableName: connection.tableName,
    ...(connection.shards === undefined ? {} : { shards: connection.shards }),
  });
  const access = connection.logs;
  const logsClient = access.readable
    ? new CloudWatchLogsClient({
        ...common,
        ...(access.endpoint === undefined ? {} : { endpoint: access.endpoint }),
      })
    : undefined;
  return {
    store,
    admin: store,
    agents: store,
    deployments: new DeploymentItems(new DynamoRequests(dynamo, connection.tableName, undefined)),
    templates: new TemplateItems(new DynamoRequests(dynamo, connection.tableName, undefined)),
    failureCategories: new FailureCategoryItems(new DynamoRequests(dynamo, connection.tableName, undefined)),
    census: new DynamoSessionCensus({
      client: dynamo,
      tableName: connection.tableName,
      ...(connection.shards === undefined ? {} : { shards: connection.shards }),
    }),
    eventBusName: connection.eventBusName,
    ...(connection.stateMachineArn === undefined ? {} : { stateMachineArn: connection.stateMachineArn }),
    logs:
      logsClient === undefined || !access.readable
        ? { readable: false, why: access.readable ? "" : access.why }
        : { readable: true, reader: cloudWatchLogReader(logsClient, access.logGroupName, connection.where) },
    put: (entry) => putOne(events, entry),
    close: () => {
      dynamo.destroy();
      events.destroy();
      logsClient?.destroy();
    },
  };
}

const PUT_ATTEMPTS = 4;

/**
 * One entry, resent while the bus refuses it on its own (an entry's ErrorCode: throttling, an
 * internal failure), as the control plane's publisher does; returns the id the bus gave it.
 */
async function putOne(client: EventBridgeClient, entry: PutEventsEntry): Promise<string | undefined> {
  let why = "";
  for (let attempt = 1; attempt <= PUT_ATTEMPTS; attempt++) {
    if (attempt > 1) await new Promise((r) => setTimeout(r, 50 * 2 ** attempt));
    const out = await client.send(new PutEventsCommand({ Entries: [entry] }));
    const result = out.Entries?.[0];
    if (!result?.ErrorCode) return result?.EventId;
    why = `${result.ErrorCode}: ${result.ErrorMessage ?? ""}`;
  }
  throw new Error(`the event was not accepted by the bus after ${PUT_ATTEMPTS} attempts (${why})`);
}

/** The outputs of a CloudFormation stack, by key. */
export async function describeStackOutputs(request: StackRequest): Promise<Readonly<Record<string, string>>> {
  const client = new CloudFormationClient({
    ...(request.region === undefined ? {} : { region: request.region }),
    ...(request.endpoint === undefined ? {} : { endpoint: request.endpoint }),
  });
  const where = `stack ${request.stack}${request.endpoint === undefined ? "" : ` at ${request.endpoint}`}`;
  try {
    const out = await client.send(new DescribeStacksCommand({ StackName: request.stack }));
    const stack = out.Stacks?.[0];
    if (stack === undefined) throw new UnreachableError(`${where} not found`);
    return Object.fromEntries(
      (stack.Outputs ?? []).flatMap((o) =>
        o.OutputKey === undefined || o.OutputValue === undefined ? [] : [[o.OutputKey, o.OutputValue]],
      ),
    );
  } catch (error) {
    // CloudFormation answers a missing stack with a generic ValidationError.
    const message = error instanceof Error ? error.message : "";
    if (/does not exist/.test(message)) {
      const region = request.region === undefined ? "" : ` in region ${request.region}`;
      throw new UnreachableError(`${where} not found${region} (deploy it with \`cdk deploy\`)`, error);
    }
    const hint =
      request.endpoint === undefined
        ? "check the stack name, the region and your credentials"
        : "is the endpoint (LocalStack) running?";
    throw explainAwsError(error, { where, hint }) ?? error;
  } finally {
    client.destroy();
  }
}
