/**
 * `cairn dashboard`: serves the dashboard (dashboard/) from this process against whatever the
 * global options point at, through the AWS SDK with the user's own credentials, until SIGINT or
 * SIGTERM. Executions: the Step Functions console for a stack; the history itself where a Step
 * Functions endpoint is known (the local runtime, LocalStack).
 */
import { awsDashboardDeps } from "../../../dashboard/aws.ts";
import { startDashboard } from "../../../dashboard/server.ts";
import { UnreachableError } from "../errors.ts";
import { ExitCode } from "../exit-codes.ts";
import type { CliIo } from "../io.ts";
import type { Connection } from "../target.ts";

export async function runDashboard(port: number, connection: Connection, io: CliIo): Promise<ExitCode> {
  const logs = connection.logs;
  const aws = await awsDashboardDeps({
    where: connection.where,
    ...(connection.region === undefined ? {} : { region: connection.region }),
    ...(connection.credentials === undefined ? {} : { credentials: connection.credentials }),
    endpoints: {
      ...(connection.endpoints.dynamoDb === undefined ? {} : { dynamoDb: connection.endpoints.dynamoDb }),
      ...(connection.endpoints.eventBridge === undefined
        ? {}
        : { eventBridge: connection.endpoints.eventBridge }),
      ...(connection.endpoints.stepFunctions === undefined
        ? {}
        : { stepFunctions: connection.endpoints.stepFunctions }),
      ...(logs.readable && logs.endpoint !== undefined ? { logs: logs.endpoint } : {}),
    },
    tableName: connection.tableName,
    eventBusName: connection.eventBusName,
    ...(connection.shards === undefined ? {} : { shards: connection.shards }),
    ...(connection.stateMachineArn === undefined ? {} : { stateMachineArn: connection.stateMachineArn }),
    ...(logs.readable ? { kernelLogGroupName: logs.logGroupName } : {}),
    executions: connection.endpoints.stepFunctions === undefined ? "console" : "local",
  });
  let server;
  try {
    // Reachable before serving: a wrong table or missing credentials fail here, with the reason.
    await aws.deps.census.countSessions("PENDING");
    server = await startDashboard(aws.deps, { port });
  } catch (error) {
    aws.close();
    if ((error as { code?: unknown }).code === "EADDRINUSE") {
      throw new UnreachableError(
        `--port ${port} is in use on 127.0.0.1; choose another or 0 for a free one`,
        error,
      );
    }
    throw error;
  }
  io.stdout(`cairn dashboard: ${server.url} (${connection.where}; Ctrl-C stops)`);
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
  aws.close();
  return ExitCode.Ok;
}
