/**
 * `npm start`: runs all of Cairn locally until Ctrl-C. Prints `cairn ready` with the endpoints
 * once it accepts submissions; the CLI finds them in `<data dir>/runtime.json`, through the
 * user's record of it (runtime-record.ts) when run from another directory.
 */
import { startLocalDashboard } from "./dashboard.ts";
import { forgetRuntimeForUser, recordRuntimeForUser } from "./runtime-record.ts";
import { startRuntime } from "./runtime.ts";
import { parseStartArgs, START_USAGE, StartUsageError, type StartCommand } from "./start-options.ts";

async function main(): Promise<void> {
  let command: StartCommand;
  try {
    command = parseStartArgs(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof StartUsageError)) throw error;
    console.error(`cairn: ${error.message}\n${START_USAGE}`);
    process.exit(2);
  }
  if (command.kind === "help") {
    console.log(START_USAGE);
    return;
  }
  const started = Date.now();
  const runtime = await startRuntime(command.options);
  const { info } = runtime;
  const dashboard = await startLocalDashboard(info, { port: command.dashboardPort }).catch(
    async (error: unknown) => {
      await runtime.stop();
      throw new Error(`the dashboard did not start on port ${command.dashboardPort}: ${String(error)}`, {
        cause: error,
      });
    },
  );
  const readySeconds = ((Date.now() - started) / 1000).toFixed(1);
  const record = recordRuntimeForUser(process.env, command.options.dataDir, process.pid);
  // Before anything says "ready": a Ctrl-C at once must stop what was started, not kill the
  // process with it all still running.
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) {
      console.error("cairn: forced exit");
      process.exit(130);
    }
    stopping = true;
    console.error(`cairn: ${signal} received, stopping kernels and services …`);
    dashboard
      .close()
      .then(() => runtime.stop())
      .then(
        () => {
          if (record !== undefined) forgetRuntimeForUser(record, process.pid);
          console.error("cairn: stopped");
          process.exit(0);
        },
        (error: unknown) => {
          if (record !== undefined) forgetRuntimeForUser(record, process.pid);
          console.error(`cairn: stop failed: ${String(error)}`);
          process.exit(1);
        },
      );
  };
  process.on("SIGINT", () => shutdown("SIGINT"));
  process.on("SIGTERM", () => shutdown("SIGTERM"));

  console.log(
    `cairn ready in ${readySeconds}s: events ${info.endpoints.eventBridge} ` +
      `(bus ${info.eventBusName}), stepfunctions ${info.endpoints.stepFunctions}, dynamodb ${info.endpoints.dynamoDb}, ` +
      `sqs ${info.endpoints.sqs}, logs ${info.endpoints.logs}; dashboard ${dashboard.url}; ` +
      `${runtime.agents.length} agents (cairn agent processes: ${runtime.agents.map((a) => `${a.id} pid ${a.pid}`).join(", ")})`,
  );
  console.log(`dashboard: ${dashboard.url}`);
  if (record !== undefined)
    console.log(`recorded in ${record}: \`cairn\` finds this runtime from any directory`);
  console.log("submit with: npx cairn submit -f examples/hello.yaml --wait   (Ctrl-C stops)");
}

main().catch((error: unknown) => {
  console.error(`cairn: failed to start: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
