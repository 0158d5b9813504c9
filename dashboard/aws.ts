/**
 * The dashboard's ports over the AWS SDK, as the CLI reaches Cairn: the application's own store
 * adapters (DynamoSessionStore, DeploymentItems) and the status census on DynamoDB, the cancel request on
 * EventBridge (the entry `cairn cancel` puts), kernel logs on CloudWatch Logs, and the lifecycle
 * executions on Step Functions (the console's page when deployed; the history itself from the
 * embedded engine). Only endpoints differ between AWS, LocalStack and the local runtime.
 */
import {
  CloudWatchLogsClient,
  GetLogEventsCommand,
  type OutputLogEvent,
} from "@aws-sdk/client-cloudwatch-logs";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { EventBridgeClient, PutEventsCommand } from "@aws-sdk/client-eventbridge";
import { GetExecutionHistoryCommand, SFNClient, type HistoryEvent } from "@aws-sdk/client-sfn";
import { DeploymentItems } from "../functions/adapters/dynamo/deployment-items.ts";
import { FailureCategoryItems } from "../functions/adapters/dynamo/failure-category-items.ts";
import { DynamoRequests } from "../functions/adapters/dynamo/dynamo-requests.ts";
import { DynamoSessionStore } from "../functions/adapters/dynamo/dynamo-session-store.ts";
import { storeRetryConfig } from "../functions/adapters/dynamo/retry.ts";
import { DynamoSessionCensus } from "../functions/adapters/dynamo/session-census.ts";
import { runLogStreamName } from "../agent/log-events.ts";
import { DetailType, toPutEventsEntry } from "../functions/core/events.ts";
import type { DashboardDeps, ExecutionEvent, Executions, KernelLogs, LogLine } from "./deps.ts";
import { decodeKernelLogEvents } from "./log-lines.ts";

export interface AwsDashboardOptions {
  /** Where the data comes from, for the header. */
  readonly where: string;
  /** Undefined: the SDK's own resolution. */
  readonly region?: string;
  /** Undefined: the SDK's default credential chain (the user's own credentials). */
  readonly credentials?: { readonly accessKeyId: string; readonly secretAccessKey: string };
  /** Per service; undefined: the SDK's default (AWS, or AWS_ENDPOINT_URL_…). */
  readonly endpoints: {
    readonly dynamoDb?: string;
    readonly eventBridge?: string;
    readonly logs?: string;
    readonly stepFunctions?: string;
  };
  readonly tableName: string;
  readonly eventBusName: string;
  readonly shards?: number;
  readonly stateMachineArn?: string;
  /** Undefined: the dashboard shows no logs. */
  readonly kernelLogGroupName?: string;
  /**
   * "console": link each session to its execution in the Step Functions console (deployed);
   * "local": show the execution's history read from the embedded engine.
   */
  readonly executions: "console" | "local";
  readonly agentTimeoutMs?: number;
}

export interface AwsDashboard {
  readonly deps: DashboardDeps;
  /** Releases the clients' sockets. */
  close(): void;
}

export function awsDashboardDeps(options: AwsDashboardOptions): AwsDashboard {
  const common = {
    ...(options.region === undefined ? {} : { region: options.region }),
    ...(options.credentials === undefined ? {} : { credentials: options.credentials }),
  };
  const at = (endpoint: string | undefined) => (endpoint === undefined ? {} : { endpoint });
  const dynamo = new DynamoDBClient({ ...common, ...storeRetryConfig(), ...at(options.endpoints.dynamoDb) });
  const events = new EventBridgeClient({ ...common, ...at(options.endpoints.eventBridge) });
  const logsClient =
    options.kernelLogGroupName === undefined
      ? undefined
      : new CloudWatchLogsClient({ ...common, ...at(options.endpoints.logs) });
  const sfn =
    options.executions === "local"
      ? new SFNClient({ ...common, ...at(options.endpoints.stepFunctions) })
      : undefined;
  const shards = options.shards === undefined ? {} : { shards: options.shards };
  const store = new DynamoSessionStore({ client: dynamo, tableName: options.tableName, ...shards });
  const census = new DynamoSessionCensus({ client: dynamo, tableName: options.tableName, ...shards });
  const deployments = new DeploymentItems(new DynamoRequests(dynamo, options.tableName, undefined));
  let executions: Executions = { kind: "none" };
  if (options.stateMachineArn !== undefined && options.stateMachineArn !== "") {
    const stateMachineArn = options.stateMachineArn;
    executions =
      sfn !== undefined
        ? { kind: "local", stateMachineArn, history: (arn) => executionHistory(sfn, arn) }
        : { kind: "console", stateMachineArn };
  }
  const deps: DashboardDeps = {
    store,
    census,
    deployments,
    failureCategories: new FailureCategoryItems(new DynamoRequests(dynamo, options.tableName, undefined)),
    cancel: async (id, reason, force) => {
      const entry = toPutEventsEntry(options.eventBusName, DetailType.SessionCancelRequested, {
        sessionId: id,
        reason,
        ...(force ? { force } : {}),
      });
      const out = await events.send(new PutEventsCommand({ Entries: [entry] }));
      const result = out.Entries?.[0];
      if ((out.FailedEntryCount ?? 0) > 0 || result?.ErrorCode) {
        throw new Error(
          `the bus ${options.eventBusName} did not accept the cancel request (${result?.ErrorCode ?? "?"}: ${result?.ErrorMessage ?? ""})`,
        );
      }
    },
    ...(logsClient !== undefined && options.kernelLogGroupName !== undefined
      ? { logs: cloudWatchKernelLogs(logsClient, options.kernelLogGroupName) }
      : {}),
    executions,
    where: options.where,
    ...(options.agentTimeoutMs === undefined ? {} : { agentTimeoutMs: options.agentTimeoutMs }),
  };
  return {
    deps,
    close: () => {
      dynamo.destroy();
      events.destroy();
      logsClient?.destroy();
      sfn?.destroy();
    },
  };
}

/** Pages a tail reads back at most for its lines (a stream whose newest events are far back). */
const MAX_TAIL_PAGES = 10;

function lines(events: readonly OutputLogEvent[] | undefined): LogLine[] {
  return decodeKernelLogEvents(
    (events ?? []).map((e) => ({ timestamp: e.timestamp ?? 0, message: e.message ?? "" })),
  );
}

function cloudWatchKernelLogs(client: CloudWatchLogsClient, logGroupName: string): KernelLogs {
  return {
    async tail(sessionId, kernelIndex, runIndex, limit, taskArn) {
      const logStreamName = runLogStreamName(sessionId, kernelIndex, runIndex, taskArn);
      try {
        const newest = await client.send(
          new GetLogEventsCommand({ logGroupName, logStreamName, startFromHead: false, limit }),
        );
        const events = [...(newest.events ?? [])];
        // CloudWatch Logs splits pages by time: a page read backward may be short or empty while
        // older events remain, for as long as its backward token moves (the API reference).
        let token = newest.nextBackwardToken;
        for (let pages = 1; events.length < limit && token !== undefined && pages < MAX_TAIL_PAGES; pages++) {
          const older = await client.send(
            new GetLogEventsCommand({
              logGroupName,
              logStreamName,
              startFromHead: false,
              nextToken: token,
              limit: limit - events.length,
            }),
          );
          events.unshift(...(older.events ?? []));
          if (older.nextBackwardToken === token) break;
          token = older.nextBackwardToken;
        }
        return { lines: lines(events.slice(-limit)), next: newest.nextForwardToken ?? "" };
      } catch (error) {
        if ((error as { name?: unknown }).name === "ResourceNotFoundException") return undefined;
        throw error;
      }
    },
    async follow(sessionId, kernelIndex, runIndex, token, taskArn) {
      const page = await client.send(
        new GetLogEventsCommand({
          logGroupName,
          logStreamName: runLogStreamName(sessionId, kernelIndex, runIndex, taskArn),
          startFromHead: true,
          nextToken: token,
        }),
      );
      return { lines: lines(page.events), next: page.nextForwardToken ?? token };
    },
  };
}

async function executionHistory(
  client: SFNClient,
  executionArn: string,
): Promise<ExecutionEvent[] | undefined> {
  const out: ExecutionEvent[] = [];
  let nextToken: string | undefined;
  try {
    do {
      const page = await client.send(
        new GetExecutionHistoryCommand({ executionArn, nextToken, maxResults: 1000 }),
      );
      out.push(...(page.events ?? []).map(executionEvent));
      nextToken = page.nextToken;
    } while (nextToken !== undefined && out.length < 25_000);
  } catch (error) {
    if ((error as { name?: unknown }).name === "ExecutionDoesNotExist") return undefined;
    throw error;
  }
  return out;
}

function executionEvent(e: HistoryEvent): ExecutionEvent {
  const state = e.stateEnteredEventDetails?.name ?? e.stateExitedEventDetails?.name;
  // Any failure-like details (TaskFailed, ExecutionFailed, TaskTimedOut, …) carry error and cause.
  let detail: string | undefined;
  for (const [key, value] of Object.entries(e)) {
    if (!key.endsWith("EventDetails") || value === null || typeof value !== "object") continue;
    const { error, cause } = value as { error?: unknown; cause?: unknown };
    if (typeof error === "string") detail = `${error}${typeof cause === "string" ? `: ${cause}` : ""}`;
  }
  return {
    id: e.id ?? 0,
    timestamp: e.timestamp?.getTime() ?? 0,
    type: e.type ?? "",
    ...(state !== undefined ? { state } : {}),
    ...(detail !== undefined ? { detail } : {}),
  };
}
