/**
 * `cairn dashboard`: serves the dashboard (dashboard/) from this process against whatever the
 * global options point at, through the CLI's own API (cairn-api.ts: the store, deployments, the status census,
 * the bus, CloudWatch Logs) with the user's credentials, until SIGINT or SIGTERM. Executions are
 * links to the Step Functions console when Cairn is a deployed stack; through an endpoint (the
 * local runtime, LocalStack) there is no console to link to.
 */
import type { DashboardDeps, DashboardStore, KernelLogs } from "../../../dashboard/deps.ts";
import { decodeKernelLogEvents } from "../../../dashboard/log-lines.ts";
import { startDashboard } from "../../../dashboard/server.ts";
import { runLogStreamName } from "../../../agent/log-events.ts";
import { DetailType, toPutEventsEntry } from "../../../functions/core/events.ts";
import type { KernelLogReader } from "../kernel-log-reader.ts";
import { UnreachableError } from "../errors.ts";
import { ExitCode } from "../exit-codes.ts";
import type { Connection } from "../target.ts";
import type { CommandContext } from "./context.ts";

export function dashboardDeps(connection: Connection, ctx: CommandContext): DashboardDeps {
  const { api } = ctx;
  const local = connection.endpoints.dynamoDb !== undefined;
  return {
    store: dashboardStore(ctx.api),
    census: api.census,
    ...(api.deployments !== undefined ? { deployments: api.deployments } : {}),
    ...(api.failureCategories !== undefined ? { failureCategories: api.failureCategories } : {}),
    cancel: async (id, reason) => {
      await api.put(
        toPutEventsEntry(api.eventBusName, DetailType.SessionCancelRequested, { sessionId: id, reason }),
      );
    },
    ...(api.logs.readable ? { logs: kernelLogs(api.logs.reader) } : {}),
    executions:
      api.stateMachineArn === undefined || api.stateMachineArn === ""
        ? { kind: "none" }
        : local
          ? {
              kind: "none",
              why: `the execution is on ${connection.where}'s Step Functions endpoint (npm start's own dashboard shows its history)`,
            }
          : { kind: "console", stateMachineArn: api.stateMachineArn },
    where: connection.where,
    // The agents page's "live" window: the control plane's own default, which this process cannot
    // read (a stack's agentTimeout, lib/props.ts: 90 s; the local runtime's: 30 s). Only the
    // control plane declares an agent lost; the page shows that from the agent item itself.
    agentTimeoutMs: local ? 30_000 : 90_000,
  };
}

/** The reads the dashboard makes, and nothing else of the CLI's API. */
function dashboardStore({ store, admin, agents }: CommandContext["api"]): DashboardStore {
  return {
    getSession: (id) => store.getSession(id),
    getSessions: (ids) => store.getSessions(ids),
    listHistory: (id, query) => store.listHistory(id, query),
    listRuns: (id) => store.listRuns(id),
    listSessionsByStatus: (status, page) => store.listSessionsByStatus(status, page),
    listRecentSessions: (page) => store.listRecentSessions(page),
    getJob: (id) => store.getJob(id),
    listAgents: () => agents.listAgents(),
    allocationsOnAgent: (id) => agents.allocationsOnAgent(id),
    listQueues: () => admin.listQueues(),
    listRetryPolicies: () => admin.listRetryPolicies(),
    getRetryConfig: () => admin.getRetryConfig(),
  };
}

function kernelLogs(reader: KernelLogReader): KernelLogs {
  return {
    async tail(sessionId, kernelIndex, runIndex, limit, taskArn) {
      const page = await reader.tail(runLogStreamName(sessionId, kernelIndex, runIndex, taskArn), limit);
      return page === undefined
        ? undefined
        : { lines: decodeKernelLogEvents(page.events), next: page.nextForwardToken };
    },
    async follow(sessionId, kernelIndex, runIndex, token, taskArn) {
      const page = await reader.forward(runLogStreamName(sessionId, kernelIndex, runIndex, taskArn), token);
      return { lines: decodeKernelLogEvents(page.events), next: page.nextForwardToken };
    },
  };
}

export async function runDashboard(
  port: number,
  connection: Connection,
  ctx: CommandContext,
): Promise<ExitCode> {
  const deps = dashboardDeps(connection, ctx);
  // Reachable before serving: a wrong table or missing credentials fail here, with the reason.
  await deps.census.countSessions("PENDING", 1);
  let server;
  try {
    server = await startDashboard(deps, { port });
  } catch (error) {
    if ((error as { code?: unknown }).code === "EADDRINUSE") {
      throw new UnreachableError(
        `--port ${port} is in use on 127.0.0.1; choose another or 0 for a free one`,
        error,
      );
    }
    throw error;
  }
  ctx.io.stdout(`cairn dashboard: ${server.url} (${connection.where}; Ctrl-C stops)`);
  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      resolve();
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
  await server.close();
  return ExitCode.Ok;
}
