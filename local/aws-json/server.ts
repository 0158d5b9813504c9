/**
 * One HTTP server for every embedded AWS JSON endpoint (JSON 1.0 and 1.1: EventBridge, Step
 * Functions, SQS): `POST` with `X-Amz-Target: <prefix>.<Operation>`, a JSON object in, a JSON
 * object out, errors as `{"__type", "message"}` with `x-amzn-errortype` (and, for
 * query-compatible services, `x-amzn-query-error`). With `auth`, every request must carry a
 * valid SigV4 signature by a known credential and pass `authorize`; without it nothing is
 * checked, as the local endpoints always behaved.
 *
 *   const server = await startAwsJsonServer({ targetPrefix: "AmazonSQS",
 *     contentType: "application/x-amz-json-1.0", operations: { ListQueues: (input, ctx) => … } });
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { authError, credentialBook, type AuthorizationRequest, type AwsAuthOptions } from "./auth.ts";
import { AwsJsonError, AwsProtocolErrorCode } from "./errors.ts";
import { isPlainObject, readBody, toWire } from "./http-body.ts";
import { requestContext, verifySigV4, type AwsCredential } from "./sigv4.ts";

export interface AwsJsonOperationContext {
  /** The operation name from `X-Amz-Target`, e.g. `ReceiveMessage`. */
  readonly operation: string;
  /** The authenticated principal; undefined when the server runs without `auth`. */
  readonly principal: string | undefined;
  /** The signing access key id, when the request carried one (verified only with `auth`). */
  readonly accessKeyId: string | undefined;
  /** Aborted when the client goes away or the server closes: long polls end on it. */
  readonly signal: AbortSignal;
}

export type AwsJsonOperation = (input: Record<string, unknown>, context: AwsJsonOperationContext) => unknown;

/** Resources and condition values of one request, for policy decisions. */
export interface RequestDescription {
  readonly resources: readonly string[];
  readonly conditionValues?: Readonly<Record<string, readonly string[]>>;
}

export interface AwsJsonLogger {
  warn(message: string): void;
}

export interface AwsJsonServerAuth extends AwsAuthOptions {
  /** The SigV4 signing name and IAM action prefix: `sqs`, `events`, `states`. */
  readonly service: string;
  /** What a request touches. @default `["*"]`, no condition values */
  readonly describe?: (operation: string, input: Record<string, unknown>) => RequestDescription;
  /**
   * The IAM action an operation is authorised as, where it is not `<service>:<operation>` (SQS's
   * batch operations are authorised as their single-message action). @default the operation
   */
  readonly actionOf?: (operation: string) => string;
}

export interface AwsJsonServerOptions {
  /** The `X-Amz-Target` prefix before the dot: `AmazonSQS`, `AWSEvents`, `AWSStepFunctions`. */
  readonly targetPrefix: string;
  /** `application/x-amz-json-1.0` or `-1.1`. */
  readonly contentType: string;
  readonly operations: Readonly<Record<string, AwsJsonOperation>>;
  /** @default 0 (any free port) */
  readonly port?: number;
  /** @default "127.0.0.1" */
  readonly host?: string;
  /** Largest request body accepted. @default 4 MiB */
  readonly maxBodyBytes?: number;
  /** @default console */
  readonly logger?: AwsJsonLogger;
  /** @default no authentication */
  readonly auth?: AwsJsonServerAuth;
  /** Sends `x-amzn-query-error` and the awsQuery auth codes (SQS). @default false */
  readonly queryCompatible?: boolean;
  /** Prefixes `__type` (`com.amazonaws.sqs#QueueDoesNotExist`), as some services do. @default none */
  readonly errorTypeNamespace?: string;
  /** Maps a service's own errors to their wire form. @default only AwsJsonError */
  readonly toServiceError?: (error: unknown) => AwsJsonError | undefined;
  /** The code of unexpected failures. @default "InternalFailure" */
  readonly internalErrorCode?: string;
  /** Names the service in logs. @default targetPrefix */
  readonly name?: string;
}

export interface AwsJsonServer {
  /** `http://host:port`, for an SDK client's `endpoint`. */
  readonly endpoint: string;
  readonly port: number;
  /**
   * Stops listening, ends pending long polls (their signal aborts, so they answer at once),
   * waits briefly for those answers to go out, then drops every connection.
   */
  close(): Promise<void>;
}

/** How long close() lets aborted operations answer before it cuts their connections. */
const CLOSE_GRACE_MS = 2_000;

export async function startAwsJsonServer(options: AwsJsonServerOptions): Promise<AwsJsonServer> {
  const host = options.host ?? "127.0.0.1";
  const maxBodyBytes = options.maxBodyBytes ?? 4 * 1024 * 1024;
  const logger = options.logger ?? console;
  const name = options.name ?? options.targetPrefix;
  const targetPrefix = `${options.targetPrefix}.`;
  const queryCompatible = options.queryCompatible ?? false;
  const credentials = credentialBook(options.auth?.credentials ?? []);
  const closing = new AbortController();
  const inFlight = new Set<Promise<void>>();

  const server = createServer((request, response) => {
    const done = serve(request, response).finally(() => inFlight.delete(done));
    inFlight.add(done);
  });

  async function serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const abort = new AbortController();
    const onClosing = () => abort.abort(closing.signal.reason);
    closing.signal.addEventListener("abort", onClosing, { once: true });
    response.once("close", () => {
      if (!response.writableFinished) abort.abort(new Error("client went away"));
    });
    try {
      await handle(request, response, abort.signal);
    } catch (error) {
      logger.warn(
        `${name} server: unexpected failure: ${error instanceof Error ? error.stack : String(error)}`,
      );
      if (!response.headersSent) {
        sendError(
          response,
          new AwsJsonError(
            options.internalErrorCode ?? "InternalFailure",
            `internal error in the local ${name}`,
            {
              httpStatus: 500,
            },
          ),
        );
      } else response.destroy();
    } finally {
      closing.signal.removeEventListener("abort", onClosing);
    }
    if (!response.writableFinished && !response.destroyed) {
      await new Promise<void>((resolve) => response.once("close", resolve).once("finish", resolve));
    }
  }

  async function handle(
    request: IncomingMessage,
    response: ServerResponse,
    signal: AbortSignal,
  ): Promise<void> {
    if (request.method !== "POST") {
      request.resume();
      return sendError(
        response,
        new AwsJsonError(
          AwsProtocolErrorCode.UnknownOperation,
          `${request.method} is not supported; use POST`,
        ),
      );
    }
    const body = await readBody(request, maxBodyBytes);
    if (body === undefined) {
      return sendError(
        response,
        new AwsJsonError(
          AwsProtocolErrorCode.RequestEntityTooLarge,
          `request body over ${maxBodyBytes} bytes`,
          {
            httpStatus: 413,
          },
        ),
      );
    }
    let principal: string | undefined;
    let credential: AwsCredential | undefined;
    if (options.auth) {
      const check = await verifySigV4(
        { method: "POST", url: request.url ?? "/", headers: request.headers, body },
        {
          credentials,
          service: options.auth.service,
          ...(options.auth.region !== undefined ? { region: options.auth.region } : {}),
          nowMs: (options.auth.clock ?? Date.now)(),
        },
      );
      if (!check.ok) return sendError(response, authError(check.failure, check.message, queryCompatible));
      principal = check.credential.principal;
      credential = check.credential;
    }

    const target = request.headers["x-amz-target"];
    const operationName =
      typeof target === "string" && target.startsWith(targetPrefix) ? target.slice(targetPrefix.length) : "";
    const operation = Object.hasOwn(options.operations, operationName)
      ? options.operations[operationName]
      : undefined;
    if (!operation) {
      return sendError(
        response,
        new AwsJsonError(
          AwsProtocolErrorCode.UnknownOperation,
          `Unknown or unsupported operation ${JSON.stringify(target ?? "")}; supported: ${Object.keys(options.operations).join(", ")}`,
        ),
      );
    }
    let input: unknown = {};
    if (body.length > 0) {
      try {
        input = JSON.parse(body.toString("utf8"));
      } catch {
        return sendError(
          response,
          new AwsJsonError(AwsProtocolErrorCode.Serialization, "request body is not valid JSON"),
        );
      }
    }
    if (!isPlainObject(input)) {
      return sendError(
        response,
        new AwsJsonError(AwsProtocolErrorCode.Serialization, "request body must be a JSON object"),
      );
    }

    try {
      if (options.auth && credential !== undefined) {
        const denial = authorizeRequest(options.auth, credential, operationName, input);
        if (denial !== undefined)
          return sendError(response, authError("AccessDenied", denial, queryCompatible));
      }
      const output = await operation(input, {
        operation: operationName,
        principal,
        accessKeyId: accessKeyIdOf(request),
        signal,
      });
      send(response, 200, toWire(output ?? {}));
    } catch (error) {
      const serviceError = error instanceof AwsJsonError ? error : options.toServiceError?.(error);
      if (serviceError) return sendError(response, serviceError);
      throw error;
    }
  }

  function send(
    response: ServerResponse,
    status: number,
    payload: unknown,
    headers: Record<string, string> = {},
  ) {
    const text = JSON.stringify(payload);
    response.writeHead(status, {
      "content-type": options.contentType,
      "content-length": Buffer.byteLength(text),
      "x-amzn-requestid": randomUUID(),
      ...headers,
    });
    response.end(text);
  }

  function sendError(response: ServerResponse, error: AwsJsonError): void {
    const type = options.errorTypeNamespace ? `${options.errorTypeNamespace}#${error.code}` : error.code;
    const headers: Record<string, string> = { "x-amzn-errortype": error.code };
    if (queryCompatible) headers["x-amzn-query-error"] = `${error.queryCode};${error.fault}`;
    send(response, error.httpStatus, { ...error.members, __type: type, message: error.message }, headers);
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
  let closed: Promise<void> | undefined;
  return {
    endpoint: `http://${hostForUrl}:${port}`,
    port,
    close: () => {
      closed ??= (async () => {
        const stopped = new Promise<void>((resolve, reject) =>
          server.close((error) => (error ? reject(error) : resolve())),
        );
        closing.abort(new Error(`the local ${name} is closing`));
        server.closeIdleConnections();
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          Promise.allSettled([...inFlight]),
          new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_GRACE_MS))),
        ]);
        clearTimeout(timer);
        server.closeAllConnections();
        await stopped;
      })();
      return closed;
    },
  };
}

function authorizeRequest(
  auth: AwsJsonServerAuth,
  credential: AwsCredential,
  operation: string,
  input: Record<string, unknown>,
): string | undefined {
  if (!auth.authorize) return undefined;
  const description = auth.describe?.(operation, input) ?? { resources: ["*"] };
  const request: AuthorizationRequest = {
    operation,
    action: `${auth.service}:${auth.actionOf?.(operation) ?? operation}`,
    resources: description.resources,
    conditionValues: requestContext(description.conditionValues ?? {}, credential),
    input,
  };
  return auth.authorize(credential.principal, request);
}

function accessKeyIdOf(request: IncomingMessage): string | undefined {
  const header = request.headers.authorization;
  return header ? /Credential=([^/,\s]+)\//.exec(header)?.[1] : undefined;
}
