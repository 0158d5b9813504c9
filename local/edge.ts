/**
 * One port for every embedded endpoint, as LocalStack's edge port is: a request is passed on,
 * unchanged, to the endpoint of the service its SigV4 credential scope names (`…/local/sqs/
 * aws4_request` → SQS). So a program that takes one `--endpoint URL` (the CLI, `cairn agent`)
 * reaches the whole runtime exactly as it would reach LocalStack; signatures stay valid because
 * the Host header is passed on as the client signed it.
 */
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http";
import { listenOnLoopback, type LoopbackServer } from "./loopback-server.ts";

export type EdgeServer = LoopbackServer;

/** `upstreams`: SigV4 signing name (dynamodb, events, sqs, logs, states, ecs) → endpoint URL. */
export async function startEdgeServer(upstreams: Readonly<Record<string, string>>): Promise<EdgeServer> {
  return listenOnLoopback(createServer((req, res) => forward(req, res, upstreams)));
}

function forward(
  req: IncomingMessage,
  res: ServerResponse,
  upstreams: Readonly<Record<string, string>>,
): void {
  const service = signingService(req.headers.authorization);
  const upstream = service === undefined ? undefined : upstreams[service];
  if (upstream === undefined) {
    req.resume();
    const message =
      service === undefined
        ? "the edge routes signed requests only: no SigV4 Authorization header"
        : `no embedded endpoint serves "${service}" (served: ${Object.keys(upstreams).join(", ")})`;
    res.writeHead(400, { "content-type": "application/json", "x-amzn-errortype": "UnknownServiceException" });
    res.end(JSON.stringify({ __type: "UnknownServiceException", message }));
    return;
  }
  const target = new URL(req.url ?? "/", upstream);
  const out = httpRequest(target, { method: req.method, headers: req.headers }, (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.headers);
    answer.pipe(res);
  });
  out.on("error", (error) => {
    if (res.headersSent) return void res.destroy();
    res.writeHead(502, { "content-type": "application/json" });
    res.end(JSON.stringify({ __type: "ServiceUnavailable", message: `${service}: ${error.message}` }));
  });
  req.pipe(out);
}

/** `AWS4-HMAC-SHA256 Credential=AKID/20261123/local/sqs/aws4_request, …` → `sqs`. */
function signingService(authorization: string | undefined): string | undefined {
  const scope = /Credential=[^/,\s]+\/\d{8}\/[^/,\s]+\/([^/,\s]+)\/aws4_request/.exec(authorization ?? "");
  return scope?.[1];
}
