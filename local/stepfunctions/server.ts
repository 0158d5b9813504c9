/**
 * The local Step Functions endpoint: AWS JSON 1.0 over HTTP (`X-Amz-Target:
 * AWSStepFunctions.<Operation>`), so application code keeps using `@aws-sdk/client-sfn` and
 * only the endpoint differs. Timestamps go out as epoch seconds (the protocol's default), and
 * errors as HTTP 400 `{"__type": code, "message"}`, which the SDK turns into its typed
 * exceptions (`TaskTimedOut`, `ExecutionAlreadyExists`, ...).
 */
import { startAwsJsonServer, type AwsAuthOptions, type AwsJsonOperation } from "../aws-json/index.ts";
import { AwsJsonError } from "../aws-json/errors.ts";
import { SfnApiError } from "./errors.ts";
import type { LocalStepFunctions } from "./service.ts";

export interface StepFunctionsServerOptions {
  /** @default a free port */
  readonly port?: number;
  /** @default "127.0.0.1" */
  readonly host?: string;
  /** SigV4 by known credentials, then `authorize` (resource: the state machine or execution ARN). @default none */
  readonly auth?: AwsAuthOptions;
}

export interface RunningStepFunctionsServer {
  /** e.g. `http://127.0.0.1:54321`, for `new SFNClient({ endpoint })`. */
  readonly endpoint: string;
  close(): Promise<void>;
}

/** Well above the 256 KiB payloads plus their JSON escaping. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;

type Operation = (service: LocalStepFunctions, body: never) => Promise<unknown>;

const OPERATIONS: Readonly<Record<string, Operation>> = {
  StartExecution: (s, b) => s.startExecution(b),
  DescribeExecution: (s, b) => s.describeExecution(b),
  ListExecutions: (s, b) => s.listExecutions(b),
  GetExecutionHistory: (s, b) => s.getExecutionHistory(b),
  StopExecution: (s, b) => s.stopExecution(b),
  SendTaskSuccess: (s, b) => s.sendTaskSuccess(b),
  SendTaskFailure: (s, b) => s.sendTaskFailure(b),
  SendTaskHeartbeat: (s, b) => s.sendTaskHeartbeat(b),
  DescribeStateMachine: (s, b) => s.describeStateMachine(b),
  ListStateMachines: (s, b) => s.listStateMachines(b),
};

export async function startStepFunctionsServer(
  service: LocalStepFunctions,
  options: StepFunctionsServerOptions = {},
): Promise<RunningStepFunctionsServer> {
  const operations: Record<string, AwsJsonOperation> = {};
  for (const [name, operation] of Object.entries(OPERATIONS)) {
    operations[name] = (input) => operation(service, input as never);
  }
  return startAwsJsonServer({
    name: "stepfunctions",
    targetPrefix: "AWSStepFunctions",
    contentType: "application/x-amz-json-1.0",
    operations,
    ...(options.port !== undefined ? { port: options.port } : {}),
    ...(options.host !== undefined ? { host: options.host } : {}),
    maxBodyBytes: MAX_BODY_BYTES,
    toServiceError: (error) =>
      error instanceof SfnApiError ? new AwsJsonError(error.code, error.message) : undefined,
    ...(options.auth
      ? {
          auth: {
            ...options.auth,
            service: "states",
            describe: (_operation, input) => {
              const arn = input.executionArn ?? input.stateMachineArn;
              return { resources: [typeof arn === "string" ? arn : "*"] };
            },
          },
        }
      : {}),
  });
}
