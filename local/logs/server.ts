/**
 * A local CloudWatch Logs endpoint speaking AWS JSON 1.1 (`X-Amz-Target: Logs_20140328.<Operation>`),
 * so the real `@aws-sdk/client-cloudwatch-logs` works against it unchanged:
 *
 *   const server = await startLogsServer({ logGroups: ["/cairn/kernels"] });
 *   const client = new CloudWatchLogsClient({ endpoint: server.endpoint, region: "local",
 *     credentials: { accessKeyId: "local", secretAccessKey: "local" } });
 *
 * Signatures are not checked. Errors are `{"__type": code, "message": …}` with the same code in
 * `x-amzn-ErrorType` and AWS's HTTP status, which the SDK turns into exceptions of that name.
 * (Written on its own: the shared AWS JSON server base was not in the tree yet.)
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { LocalLogsError } from "./errors.ts";
import { LOGS_OPERATIONS } from "./operations.ts";
import { LogsStore, type LogsStoreOptions } from "./store.ts";

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
  readonly logger?: Pick<Console, "warn">;
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
  /** Stops listening and drops keep-alive connections. The store stays readable. */
  close(): Promise<void>;
}

const CONTENT_TYPE = "application/x-amz-json-1.1";
const TARGET_PREFIX = "Logs_20140328.";

export async function startLogsServer(options: LogsServerOptions = {}): Promise<LogsServer> {
  const store = options.store ?? new LogsStore(options);
  for (const name of options.logGroups ?? []) store.ensureLogGroup(name);
  const host = options.host ?? "127.0.0.1";
  const maxBodyBytes = options.maxBodyBytes ?? 4 * 1024 * 1024;
  const logger = options.logger ?? console;

  const server = createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      logger.warn(`logs server: unexpected failure: ${err instanceof Error ? err.stack : String(err)}`);
      if (!res.headersSent)
        sendError(res, 500, "ServiceUnavailableException", "internal error in the local CloudWatch Logs");
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== "POST") {
      req.resume();
      return sendError(res, 400, "UnknownOperationException", `${req.method} is not supported; use POST`);
    }
    const target = req.headers["x-amz-target"];
    const name =
      typeof target === "string" && target.startsWith(TARGET_PREFIX)
        ? target.slice(TARGET_PREFIX.length)
        : "";
    const operation = Object.hasOwn(LOGS_OPERATIONS, name) ? LOGS_OPERATIONS[name] : undefined;
    if (operation === undefined) {
      req.resume();
      return sendError(
        res,
        400,
        "UnknownOperationException",
        `Unknown or unsupported operation ${String(target)}`,
      );
    }
    const body = await readBody(req, maxBodyBytes);
    if (body === undefined) {
      return sendError(res, 413, "RequestEntityTooLargeException", `request body over ${maxBodyBytes} bytes`);
    }
    let input: unknown = {};
    if (body.length > 0) {
      try {
        input = JSON.parse(body.toString("utf8"));
      } catch {
        return sendError(res, 400, "SerializationException", "request body is not valid JSON");
      }
    }
    if (typeof input !== "object" || input === null || Array.isArray(input)) {
      return sendError(res, 400, "SerializationException", "request body must be a JSON object");
    }
    const record = input as Record<string, unknown>;
    let output: unknown;
    try {
      const fault = options.fault?.(name, record);
      if (fault !== undefined) throw fault;
      output = operation(store, record);
    } catch (err) {
      if (err instanceof LocalLogsError) return sendError(res, err.status, err.code, err.message);
      throw err;
    }
    send(res, 200, output);
  }

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
    port,
    store,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}

/** Resolves to undefined when the body exceeds the limit. */
function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) tooLarge = true;
      else chunks.push(chunk);
    });
    req.on("end", () => resolve(tooLarge ? undefined : Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  extraHeaders: Record<string, string> = {},
): void {
  const payload = JSON.stringify(body ?? {});
  res.writeHead(status, {
    "content-type": CONTENT_TYPE,
    "content-length": Buffer.byteLength(payload),
    "x-amzn-requestid": randomUUID(),
    ...extraHeaders,
  });
  res.end(payload);
}

function sendError(res: ServerResponse, status: number, code: string, message: string): void {
  send(res, status, { __type: code, message }, { "x-amzn-errortype": code });
}
