/**
 * The local Step Functions endpoint: AWS JSON 1.0 over HTTP (`X-Amz-Target:
 * AWSStepFunctions.<Operation>`), so application code keeps using `@aws-sdk/client-sfn` and
 * only the endpoint differs. Timestamps go out as epoch seconds (the protocol's default), and
 * errors as HTTP 400 `{"__type": code, "message"}`, which the SDK turns into its typed
 * exceptions (`TaskTimedOut`, `ExecutionAlreadyExists`, ...).
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { SfnApiError } from "./errors.ts";
import type { LocalStepFunctions } from "./service.ts";

export interface StepFunctionsServerOptions {
  /** @default a free port */
  readonly port?: number;
  /** @default "127.0.0.1" */
  readonly host?: string;
}

export interface RunningStepFunctionsServer {
  /** e.g. `http://127.0.0.1:54321`, for `new SFNClient({ endpoint })`. */
  readonly endpoint: string;
  close(): Promise<void>;
}

const TARGET_PREFIX = "AWSStepFunctions.";
const CONTENT_TYPE = "application/x-amz-json-1.0";
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
  const host = options.host ?? "127.0.0.1";
  const server = createServer((request, response) => {
    handle(service, request, response).catch((error: unknown) => {
      send(response, 500, { __type: "InternalFailure", message: String(error) });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const hostForUrl = host.includes(":") ? `[${host}]` : host;
  return {
    endpoint: `http://${hostForUrl}:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

async function handle(
  service: LocalStepFunctions,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  if (request.method !== "POST") {
    return send(response, 405, { __type: "UnknownOperationException", message: "only POST is supported" });
  }
  const target = request.headers["x-amz-target"];
  const operationName =
    typeof target === "string" && target.startsWith(TARGET_PREFIX) ? target.slice(TARGET_PREFIX.length) : "";
  const operation = Object.hasOwn(OPERATIONS, operationName) ? OPERATIONS[operationName] : undefined;
  if (!operation) {
    return send(response, 400, {
      __type: "UnknownOperationException",
      message: `unsupported X-Amz-Target ${JSON.stringify(target ?? "")}; supported: ${Object.keys(OPERATIONS).join(", ")}`,
    });
  }
  let body: unknown;
  try {
    const text = await readBody(request);
    body = text.length === 0 ? {} : JSON.parse(text);
  } catch (error) {
    return send(response, 400, { __type: "SerializationException", message: (error as Error).message });
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return send(response, 400, {
      __type: "SerializationException",
      message: "the request body must be a JSON object",
    });
  }
  try {
    const result = await operation(service, body as never);
    send(response, 200, toWire(result));
  } catch (error) {
    if (error instanceof SfnApiError)
      return send(response, 400, { __type: error.code, message: error.message });
    throw error;
  }
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    request.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > MAX_BODY_BYTES) {
        reject(new Error(`request body larger than ${MAX_BODY_BYTES} bytes`));
        request.destroy();
        return;
      }
      chunks.push(chunk);
    });
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    request.on("error", reject);
  });
}

function send(response: ServerResponse, status: number, payload: unknown): void {
  const body = JSON.stringify(payload);
  response.writeHead(status, {
    "Content-Type": CONTENT_TYPE,
    "Content-Length": Buffer.byteLength(body),
    "x-amzn-RequestId": randomUUID(),
  });
  response.end(body);
}

/** Dates become epoch seconds (JSON 1.0's timestamp format); `undefined` members are dropped. */
function toWire(value: unknown): unknown {
  if (value instanceof Date) return value.getTime() / 1000;
  if (Array.isArray(value)) return value.map(toWire);
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [key, member] of Object.entries(value)) if (member !== undefined) out[key] = toWire(member);
    return out;
  }
  return value;
}
