/**
 * Throughput of the embedded Step Functions runtime on a trivial 5-state machine with one
 * callback state (Pass → waitForTaskToken Task → Choice → Pass → Succeed): executions/s and
 * state transitions/s, with the token completed in-process and through the real SDK client
 * over the local endpoint. Prints figures; asserts nothing.
 *
 *   npx node bench/sfn-engine.ts [--executions 2000] [--concurrency 100]
 */
import { SendTaskSuccessCommand, SFNClient, StartExecutionCommand } from "@aws-sdk/client-sfn";
import {
  LocalStepFunctions,
  startStepFunctionsServer,
  type JsonValue,
} from "../local/stepfunctions/index.ts";

function arg(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  return at > 0 ? Number(process.argv[at + 1]) : fallback;
}
const EXECUTIONS = arg("executions", 2000);
const CONCURRENCY = arg("concurrency", 100);

const DEFINITION = {
  StartAt: "Accept",
  States: {
    Accept: { Type: "Pass", Parameters: { "id.$": "$.id", stage: "accepted" }, Next: "Await" },
    Await: {
      Type: "Task",
      Resource: "arn:aws:states:::lambda:invoke.waitForTaskToken",
      Parameters: { FunctionName: "notify", Payload: { "id.$": "$.id", "token.$": "$$.Task.Token" } },
      TimeoutSeconds: 300,
      ResultPath: "$.answer",
      Next: "Route",
    },
    Route: {
      Type: "Choice",
      Choices: [{ Variable: "$.answer.ok", BooleanEquals: true, Next: "Record" }],
      Default: "Record",
    },
    Record: { Type: "Pass", Result: "done", ResultPath: "$.stage", Next: "Finish" },
    Finish: { Type: "Succeed" },
  },
};

type Mode = "in-process" | "sdk";

async function run(label: string, mode: Mode): Promise<void> {
  const inFlight = new Set<Promise<unknown>>();
  let failedCallbacks = 0;
  let complete: (token: string) => Promise<unknown> = () => Promise.resolve();
  const service = new LocalStepFunctions({
    notify: (payload: JsonValue) => {
      // Completed from outside the handler, as the coordinator does, not from within it.
      const token = (payload as { token: string }).token;
      setImmediate(() => {
        const sent = complete(token).catch(() => failedCallbacks++);
        inFlight.add(sent);
        void sent.finally(() => inFlight.delete(sent));
      });
      return null;
    },
  });
  const { stateMachineArn } = await service.createStateMachine({ name: "bench", definition: DEFINITION });
  const server = mode === "sdk" ? await startStepFunctionsServer(service) : undefined;
  const sfn = server
    ? new SFNClient({
        endpoint: server.endpoint,
        region: "local",
        credentials: { accessKeyId: "l", secretAccessKey: "l" },
      })
    : undefined;
  complete = (taskToken) =>
    sfn
      ? sfn.send(new SendTaskSuccessCommand({ taskToken, output: '{"ok":true}' }))
      : service.sendTaskSuccess({ taskToken, output: '{"ok":true}' });

  let next = 0;
  let transitions = 0;
  const startedMs = performance.now();
  async function worker(): Promise<void> {
    while (next < EXECUTIONS) {
      const name = `${mode}-${next++}`;
      const input = JSON.stringify({ id: name });
      const arn = sfn
        ? (await sfn.send(new StartExecutionCommand({ stateMachineArn, name, input }))).executionArn!
        : (await service.startExecution({ stateMachineArn, name, input })).executionArn!;
      const done = await service.waitForExecution(arn, 120_000);
      if (done.status !== "SUCCEEDED")
        throw new Error(`${name} ended ${done.status}: ${done.error} ${done.cause}`);
      transitions += done.stateTransitions;
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const seconds = (performance.now() - startedMs) / 1000;
  console.log(
    `${label.padEnd(34)} ${EXECUTIONS} executions in ${seconds.toFixed(2)} s: ` +
      `${(EXECUTIONS / seconds).toFixed(0)} executions/s, ${(transitions / seconds).toFixed(0)} transitions/s, ` +
      `${(transitions / EXECUTIONS).toFixed(1)} transitions/execution` +
      (failedCallbacks > 0 ? `, ${failedCallbacks} callbacks failed` : ""),
  );
  await Promise.allSettled([...inFlight]);
  sfn?.destroy();
  await server?.close();
  await service.close();
}

console.log(`node ${process.version}, ${EXECUTIONS} executions, ${CONCURRENCY} at a time`);
await run("in-process (start + callback)", "in-process");
await run("@aws-sdk/client-sfn over HTTP", "sdk");
