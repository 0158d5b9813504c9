/**
 * The embedded runtime's DynamoDB endpoint for everyone outside the control plane: DynamoDB
 * Local has no IAM of its own, so this gate stands in front of it and does what
 * DynamoDB's front door does — every request signed with SigV4 by a known credential, then every
 * check IAM makes (requests.ts: the table or index, each item of a transaction, and the condition
 * keys LeadingKeys, Attributes, Select and ReturnValues) decided by the runtime's policy — and
 * passes an allowed request on, signed again with the one key DynamoDB Local accepts (the
 * launcher refuses any other: its loopback port is open to every process on the host). A refusal
 * is DynamoDB's: HTTP 400 with `AccessDeniedException`, `UnrecognizedClientException` or
 * `InvalidSignatureException`.
 *
 * The functions run in the runtime's own process and reach DynamoDB Local directly, as Lambda
 * reaches DynamoDB from inside AWS; the CLI, the dashboard and anything else are given this
 * endpoint (the runtime file's `endpoints.dynamoDb`, and the edge's `dynamodb` route).
 */
import { randomUUID } from "node:crypto";
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http";
import {
  authError,
  credentialBook,
  isPlainObject,
  requestContext,
  signRequest,
  verifySigV4,
  type AwsAuthOptions,
  type AwsJsonError,
} from "../aws-json/index.ts";
import { readBody } from "../aws-json/http-body.ts";
import { listenOnLoopback } from "../loopback-server.ts";
import { checksOf, type TableLayout } from "./requests.ts";

export interface DynamoDbGateOptions {
  /** DynamoDB Local's endpoint. */
  readonly upstream: string;
  /** The key DynamoDB Local accepts: every request passed on is signed with it. */
  readonly upstreamCredential: { readonly accessKeyId: string; readonly secretAccessKey: string };
  readonly auth: AwsAuthOptions;
  readonly layout: TableLayout;
  /** @default a free port */
  readonly port?: number;
}

export interface DynamoDbGate {
  readonly endpoint: string;
  close(): Promise<void>;
}

/** DynamoDB's own limit on a request (a BatchWriteItem of 25 items of 400 KB is 10 MB). */
const MAX_BODY_BYTES = 16 * 1024 * 1024;
const TARGET = /^DynamoDB_20120810\.([A-Za-z]+)$/;
/** The headers of a client's request DynamoDB acts on; the rest (its signature) stay here. */
const PASSED_ON = ["content-type", "x-amz-target", "accept-encoding"] as const;

export async function startDynamoDbGate(options: DynamoDbGateOptions): Promise<DynamoDbGate> {
  const upstream = new URL(options.upstream);
  const credentials = credentialBook(options.auth.credentials);

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const body = await readBody(request, MAX_BODY_BYTES);
    if (body === undefined) {
      return refuse(response, 413, "RequestEntityTooLarge", `request body over ${MAX_BODY_BYTES} bytes`);
    }
    const check = await verifySigV4(
      { method: request.method ?? "POST", url: request.url ?? "/", headers: request.headers, body },
      {
        credentials,
        service: "dynamodb",
        ...(options.auth.region !== undefined ? { region: options.auth.region } : {}),
        nowMs: (options.auth.clock ?? Date.now)(),
      },
    );
    if (!check.ok) return refuseWith(response, authError(check.failure, check.message, false));
    const principal = check.credential.principal;
    const operation = TARGET.exec(String(request.headers["x-amz-target"] ?? ""))?.[1];
    let input: unknown;
    try {
      input = JSON.parse(body.toString("utf8") || "{}");
    } catch {
      input = undefined;
    }
    // What DynamoDB Local cannot parse it refuses itself; nothing it could act on passes unchecked.
    if (operation !== undefined && isPlainObject(input) && options.auth.authorize) {
      for (const c of checksOf(operation, input, options.layout)) {
        const denial = options.auth.authorize(principal, {
          operation,
          action: c.action,
          resources: [c.resource],
          conditionValues: requestContext(c.conditionValues, check.credential),
          input,
        });
        if (denial !== undefined) return refuseWith(response, authError("AccessDenied", denial, false));
      }
    }
    await forward(request, response, body, options.auth.region ?? "local");
  }

  /** Only what DynamoDB reads of a request is passed on, signed with DynamoDB Local's key. */
  async function forward(
    request: IncomingMessage,
    response: ServerResponse,
    body: Buffer,
    region: string,
  ): Promise<void> {
    const method = request.method ?? "POST";
    const path = request.url ?? "/";
    const headers: Record<string, string> = { "content-length": String(body.length) };
    for (const name of PASSED_ON) {
      const value = request.headers[name];
      if (typeof value === "string") headers[name] = value;
    }
    const signed = await signRequest(
      { url: new URL(path, upstream), method, headers, body },
      options.upstreamCredential,
      region,
      "dynamodb",
    );
    const out = httpRequest(
      { hostname: upstream.hostname, port: upstream.port, path, method, headers: signed },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    out.on("error", (error) => {
      if (response.headersSent) return void response.destroy();
      refuse(response, 500, "InternalServerError", `DynamoDB Local: ${error.message}`);
    });
    out.end(body);
  }

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (response.headersSent) return void response.destroy();
      refuse(response, 500, "InternalServerError", error instanceof Error ? error.message : String(error));
    });
  });
  return listenOnLoopback(server, options.port);
}

function refuseWith(response: ServerResponse, error: AwsJsonError): void {
  refuse(response, error.httpStatus, error.code, error.message);
}

function refuse(response: ServerResponse, status: number, code: string, message: string): void {
  const text = JSON.stringify({ __type: `com.amazonaws.dynamodb.v20120810#${code}`, message });
  response.writeHead(status, {
    "content-type": "application/x-amz-json-1.0",
    "content-length": Buffer.byteLength(text),
    "x-amzn-requestid": randomUUID(),
    "x-amzn-errortype": code,
  });
  response.end(text);
}
