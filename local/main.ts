/**
 * `npm start`: runs all of Cairn locally until Ctrl-C. Prints `cairn ready` with the endpoints
 * once it accepts submissions; the CLI finds them in .cairn/runtime.json.
 */
import { parseArgs } from "node:util";
import { startRuntime } from "./runtime.ts";

const USAGE = `usage: npm start -- [--agents N] [--agent-cpu N] [--agent-memory-mib N] [--data-dir DIR]
                      [--sfn-port N] [--events-port N] [--sweep-seconds N] [--verbose]`;

function positiveInt(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0 || !Number.isInteger(value)) {
    console.error(`cairn: --${name} must be a non-negative integer, got "${raw}"\n${USAGE}`);
    process.exit(2);
  }
  return value;
}

async function main(): Promise<void> {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        agents: { type: "string" },
        "agent-cpu": { type: "string" },
        "agent-memory-mib": { type: "string" },
        "data-dir": { type: "string" },
        "sfn-port": { type: "string" },
        "events-port": { type: "string" },
        "sweep-seconds": { type: "string" },
        verbose: { type: "boolean", default: false },
        help: { type: "boolean", default: false },
      },
    }));
  } catch (error) {
    console.error(`cairn: ${(error as Error).message}\n${USAGE}`);
    process.exit(2);
  }
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const started = Date.now();
  const runtime = await startRuntime({
    agents: positiveInt("agents", values.agents, 4),
    agentCapacity: {
      cpu: positiveInt("agent-cpu", values["agent-cpu"], 4),
      memoryMiB: positiveInt("agent-memory-mib", values["agent-memory-mib"], 4096),
    },
    ...(values["data-dir"] ? { dataDir: values["data-dir"] } : {}),
    ports: {
      stepFunctions: positiveInt("sfn-port", values["sfn-port"], 0),
      eventBridge: positiveInt("events-port", values["events-port"], 0),
    },
    ...(values["sweep-seconds"]
      ? { sweepMs: positiveInt("sweep-seconds", values["sweep-seconds"], 60) * 1000 }
      : {}),
    handlerLogLevel: values.verbose ? "info" : "warn",
  });
  const { info } = runtime;
  console.log(
    `cairn ready in ${((Date.now() - started) / 1000).toFixed(1)}s: events ${info.endpoints.eventBridge} ` +
      `(bus ${info.eventBusName}), stepfunctions ${info.endpoints.stepFunctions}, dynamodb ${info.endpoints.dynamoDb}, ` +
      `sqs ${info.endpoints.sqs}, logs ${info.endpoints.logs}; ` +
      `${runtime.agents.length} agents (cairn agent processes: ${runtime.agents.map((a) => `${a.id} pid ${a.pid}`).join(", ")})`,
  );
  console.log("submit with: npx cairn submit -f examples/hello.yaml --wait   (Ctrl-C stops)");

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) {
      console.error("cairn: forced exit");
      process.exit(130);
    }
    stopping = true;
    console.error(`cairn: ${signal} received, stopping kernels and services …`);
    runtime.stop().then(
      () => {
        console.error("cairn: stopped");
        process.exit(0);
      },
      (error: unknown) => {
        console.error(`cairn: stop failed: ${String(error)}`);
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", () => shutdown("SIGINT"));
  process.on("SIGTERM", () => shutdown("SIGTERM"));
}

main().catch((error: unknown) => {
  console.error(`cairn: failed to start: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
