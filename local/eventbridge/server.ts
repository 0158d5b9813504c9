/**
 * A local EventBridge endpoint speaking AWS JSON 1.1 (`X-Amz-Target: AWSEvents.<Operation>`),
 * so the real `@aws-sdk/client-eventbridge` works against it unchanged:
 *
 *   const server = await startEventBridgeServer([bus]);
 *   const client = new EventBridgeClient({ endpoint: server.endpoint, region: "local",
 *     credentials: { accessKeyId: "local", secretAccessKey: "local" } });
 *
 * Signatures are not checked. Errors are HTTP 400 `{"__type": code, "message": …}` with the
 * same code in `x-amzn-ErrorType`, which the SDK turns into exceptions of that name.
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { EventBusLogger, LocalEventBus } from "./bus.ts";
import { LocalEventBridgeError } from "./errors.ts";
import { isPlainObject } from "./pattern-leaf.ts";
import { BusRegistry, OPERATIONS } from "./operations.ts";

export interface EventBridgeServerOptions {
  /** @default 0 (any free port) */
  readonly port?: number;
  /** @default "127.0.0.1" */
  readonly host?: string;
  /** Largest request body accepted. @default 4 MiB (entries are limited to 256 KiB, JSON escaping can double that). */
  readonly maxBodyBytes?: number;
  /** @default console */
  readonly logger?: EventBusLogger;
}

export interface EventBridgeServer {
  /** `http://host:port`, for the SDK client's `endpoint`. */
  readonly endpoint: string;
  readonly port: number;
  /** Stops listening and drops idle keep-alive connections. The buses stay open. */
  close(): Promise<void>;
}

const CONTENT_TYPE = "application/x-amz-json-1.1";
const TARGET_PREFIX = "AWSEvents.";

export async function startEventBridgeServer(
  buses: LocalEventBus | readonly LocalEventBus[],
  options: EventBridgeServerOptions = {},
): Promise<EventBridgeServer> {
  const registry = new BusRegistry(Array.isArray(buses) ? buses : [buses as LocalEventBus]);
  const host = options.host ?? "127.0.0.1";
  const maxBodyBytes = options.maxBodyBytes ?? 4 * 1024 * 1024;
  const logger = options.logger ?? console;

  const server = createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      logger.warn(
        `eventbridge server: unexpected failure: ${err instanceof Error ? err.stack : String(err)}`,
      );
      if (!res.headersSent)
        sendError(res, 500, "InternalException", "internal error in the local EventBridge");
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== "POST") {
      req.resume();
      return sendError(res, 400, "UnknownOperationException", `${req.method} is not supported; use POST`);
    }
    const target = req.headers["x-amz-target"];
    const operationName =
      typeof target === "string" && target.startsWith(TARGET_PREFIX)
        ? target.slice(TARGET_PREFIX.length)
        : "";
    const operation = Object.hasOwn(OPERATIONS, operationName) ? OPERATIONS[operationName] : undefined;
    if (!operation) {
      req.resume();
      return sendError(
        res,
        400,
        "UnknownOperationException",
        `Unknown or unsupported operation ${String(target)}`,
      );
    }
    const body = await readBody(req, maxBodyBytes);
    if (body === undefined)
      return sendError(res, 413, "RequestEntityTooLargeException", `request body over ${maxBodyBytes} bytes`);
    let input: unknown = {};
    if (body.length > 0) {
      try {
        input = JSON.parse(body.toString("utf8"));
      } catch {
        return sendError(res, 400, "SerializationException", "request body is not valid JSON");
      }
    }
    if (!isPlainObject(input))
      return sendError(res, 400, "SerializationException", "request body must be a JSON object");
    let output: unknown;
    try {
      output = operation(registry, input);
    } catch (err) {
      if (err instanceof LocalEventBridgeError) return sendError(res, 400, err.code, err.message);
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
