/**
 * The dashboard of the embedded runtime (`npm start`): the product's dashboard (dashboard/) over
 * the runtime's own endpoints, with the client's credentials, exactly as `cairn dashboard` would
 * reach them; the executions' history comes from the embedded Step Functions engine.
 */
import { awsDashboardDeps } from "../dashboard/aws.ts";
import { startDashboard, type DashboardOptions, type DashboardServer } from "../dashboard/server.ts";
import type { RuntimeInfo } from "./runtime.ts";

export interface LocalDashboardOptions {
  /** 0 picks a free port. @default 0 */
  readonly port?: number;
  /** The runtime's agent liveness window (CAIRN_AGENT_TIMEOUT_MS), for the agents page. */
  readonly agentTimeoutMs?: number;
  /** How long the list's counts per status are kept (dashboard/status-counts.ts). */
  readonly counts?: DashboardOptions["counts"];
}

/** What the dashboard reads the runtime with: its endpoints and the client's credentials only. */
export function runtimeDashboardDeps(
  info: RuntimeInfo,
  where: string,
  agentTimeoutMs?: number,
): ReturnType<typeof awsDashboardDeps> {
  return awsDashboardDeps({
    where,
    region: info.region,
    credentials: info.credentials.client,
    endpoints: {
      dynamoDb: info.endpoints.dynamoDb,
      eventBridge: info.endpoints.eventBridge,
      logs: info.endpoints.logs,
      stepFunctions: info.endpoints.stepFunctions,
    },
    tableName: info.tableName,
    eventBusName: info.eventBusName,
    stateMachineArn: info.stateMachineArn,
    kernelLogGroupName: info.kernelLogGroupName,
    executions: "local",
    ...(agentTimeoutMs === undefined ? {} : { agentTimeoutMs }),
  });
}

export async function startLocalDashboard(
  info: RuntimeInfo,
  options: LocalDashboardOptions = {},
): Promise<DashboardServer> {
  const aws = runtimeDashboardDeps(info, `the local runtime (pid ${info.pid})`, options.agentTimeoutMs);
  try {
    const server = await startDashboard(aws.deps, {
      port: options.port ?? 0,
      ...(options.counts === undefined ? {} : { counts: options.counts }),
    });
    return {
      ...server,
      close: async () => {
        await server.close();
        aws.close();
      },
    };
  } catch (error) {
    aws.close();
    throw error;
  }
}
