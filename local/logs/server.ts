/**
 * A local CloudWatch Logs endpoint speaking AWS JSON 1.1 (`X-Amz-Target: Logs_20140328.<Operation>`)
 * on the shared AWS JSON server base (local/aws-json/), so the real
 * `@aws-sdk/client-cloudwatch-logs` works against it unchanged:
 *
 *   const server = await startLogsServer({ logGroups: ["/cairn/kernels"] });
 *   const client = new CloudWatchLogsClient({ endpoint: server.endpoint, region: "local",
 *     credentials: { accessKeyId: "local", secretAccessKey: "local" } });
 *
 * Errors are `{"__type": code, "message": …}` with AWS's HTTP status, which the SDK turns into
 * exceptions of that name. With `auth`, requests must be SigV4-signed by a known credential and
 * pass `authorize` (action `logs:<Operation>`, resources the log group's and stream's ARNs).
 */
import {
  AwsJsonError,
  startAwsJsonServer,
  type AwsAuthOptions,
  type AwsJsonLogger,
  type AwsJsonOperation,
  type RequestDescription,
} from "../aws-json/index.ts";
import { LocalLogsError } from "./errors.ts";
import { LOGS_OPERATIONS } from "./operations.ts";
import { groupNameOf, LogsStore, type LogsStoreOptions } from "./store.ts";

export interface LogsServerOptions extends LogsStoreOptions {
  /** @default a new LogsStore with the store options given here */
  readonly store?: LogsStore;
  /** Created at start if missing (the runtime's kernel log group). @default none */
  readonly logGroups?: readonly string[];
  /** @default 0 (any free port) */
  readonly port?: number;
  /** @default "127.0.0.1" */
  readonly host?: string;
  /** Largest request body. @default 4 MiB (a 1 MiB batch can double when JSON-escaped) */
  readonly maxBodyBytes?: number;
  /** @default console */
  readonly logger?: AwsJsonLogger;
  /** SigV4 by known credentials, then `authorize` per request. @default none */
  readonly auth?: AwsAuthOptions;
  /**
   * Tests' fault injection: called before each operation; an error it returns is answered
   * instead (ThrottlingError, ServiceUnavailableError, …), and the operation does not run.
   */
  readonly fault?: (
    operation: string,
    input: Readonly<Record<string, unknown>>,
  ) => LocalLogsError | undefined;
}

export interface LogsServer {
  /** `http://host:port`, for the SDK client's `endpoint` (or AWS_ENDPOINT_URL_CLOUDWATCH_LOGS). */
  readonly endpoint: string;
  readonly port: number;
  readonly store: LogsStore;
  /** Stops listening and drops connections. The store stays readable. */
  close(): Promise<void>;
}

export async function startLogsServer(options: LogsServerOptions = {}): Promise<LogsServer> {
  const store = options.store ?? new LogsStore(options);
  for (const name of options.logGroups ?? []) store.ensureLogGroup(name);
  const operations: Record<string, AwsJsonOperation> = {};
  for (const [name, operation] of Object.entries(LOGS_OPERATIONS)) {
    operations[name] = (input) => {
      const fault = options.fault?.(name, input);
      if (fault !== undefined) throw fault;
      return operation(store, input);
    };
  }
  const server = await startAwsJsonServer({
    name: "logs",
    targetPrefix: "Logs_20140328",
    contentType: "application/x-amz-json-1.1",
    operations,
    ...(options.port !== undefined ? { port: options.port } : {}),
    ...(options.host !== undefined ? { host: options.host } : {}),
    maxBodyBytes: options.maxBodyBytes ?? 4 * 1024 * 1024,
    ...(options.logger ? { logger: options.logger } : {}),
    internalErrorCode: "ServiceUnavailableException",
    toServiceError: (error) =>
      error instanceof LocalLogsError
        ? new AwsJsonError(error.code, error.message, { httpStatus: error.status })
        : undefined,
    ...(options.auth
      ? { auth: { ...options.auth, service: "logs", describe: (_op, input) => describe(store, input) } }
      : {}),
  });
  return { endpoint: server.endpoint, port: server.port, store, close: () => server.close() };
}

/** The ARNs a request touches: its log group's, and its stream's when it names one. */
function describe(store: LogsStore, input: Record<string, unknown>): RequestDescription {
  const group = input.logGroupName ?? input.logGroupIdentifier;
  if (typeof group !== "string") return { resources: ["*"] };
  let name: string;
  try {
    name = groupNameOf(group);
  } catch {
    return { resources: ["*"] };
  }
  const groupArn = `arn:aws:logs:${store.region}:${store.accountId}:log-group:${name}`;
  const stream = input.logStreamName;
  return {
    resources: typeof stream === "string" ? [groupArn, `${groupArn}:log-stream:${stream}`] : [groupArn],
  };
}
