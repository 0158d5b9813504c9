/**
 * The dashboard's HTTP server: server-rendered pages over the injected ports (deps.ts), a small
 * static script that refreshes the live part of a page every 2 s and follows logs, and one
 * write, the cancel POST. Binds 127.0.0.1 unless told otherwise; refuses requests whose Host is
 * not this server (DNS rebinding) and a POST whose Origin is not this server. Every page is
 * sent with a Content-Security-Policy that allows only this server's static files.
 */
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { SESSION_ID_PATTERN } from "../functions/core/events.ts";
import { StateMachineName } from "../functions/topology/index.ts";
import { TERMINAL_SESSION_STATUSES } from "../functions/core/status.ts";
import { isFargatePool } from "../functions/core/fargate-pool.ts";
import { RETRY_CONFIG_DEFAULTS } from "../functions/core/retry/config.ts";
import { renderAgentsPage } from "./agents-page.ts";
import { requestCancel } from "./cancel.ts";
import { renderCatalogPage } from "./catalog-page.ts";
import type { DashboardDeps } from "./deps.ts";
import {
  readDeploymentRows,
  familyExecutions,
  NO_DEPLOYMENTS_WHY,
  renderDeploymentPage,
  renderDeploymentsPage,
} from "./deployments-page.ts";
import { renderExecutionPage } from "./execution-page.ts";
import { html, type Html } from "./html.ts";
import { readJob, renderJobPage } from "./job-page.ts";
import { page } from "./layout.ts";
import { FilterError, parseListFilter, renderListPage } from "./list-page.ts";
import { StatusCounts, type CountsOptions } from "./status-counts.ts";
import { executionArn, renderLogs, renderSessionPage, type LogTail } from "./session-page.ts";

export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const STATIC: Readonly<Record<string, { type: string; body: Buffer }>> = {
  "/static/dashboard.css": {
    type: "text/css; charset=utf-8",
    body: readFileSync(new URL("./static/dashboard.css", import.meta.url)),
  },
  "/static/dashboard.js": {
    type: "text/javascript; charset=utf-8",
    body: readFileSync(new URL("./static/dashboard.js", import.meta.url)),
  },
};

/** Tasks whose logs the session page tails (a gang may have 97). */
const MAX_LOG_TAILS = 8;
/** Lines of each task's log shown when the session page opens. */
const LOG_TAIL_LINES = 200;
const MAX_FORM_BYTES = 8 * 1024;

interface Reply {
  readonly status: number;
  readonly type: string;
  readonly body: string | Buffer;
  readonly headers?: Readonly<Record<string, string>>;
}

class HttpError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

export interface DashboardServer {
  readonly url: string;
  readonly server: Server;
  close(): Promise<void>;
}

export interface DashboardOptions {
  /** @default "127.0.0.1" */
  readonly host?: string;
  /** 0 picks a free port. @default 0 */
  readonly port?: number;
  /** How long the counts per status are kept (status-counts.ts). */
  readonly counts?: Pick<CountsOptions, "liveTtlMs" | "endedTtlMs">;
}

export async function startDashboard(
  deps: DashboardDeps,
  options: DashboardOptions = {},
): Promise<DashboardServer> {
  const host = options.host ?? "127.0.0.1";
  const port = options.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new RangeError(`port must be a whole number from 0 to 65535, got ${port}`);
  }
  const allowedHosts = new Set<string>();
  const handler = dashboardHandler(deps, allowedHosts, options.counts);
  const server = createServer((req, res) => void handler(req, res));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  const hostPart = host.includes(":") ? `[${host}]` : host;
  for (const name of [hostPart, "127.0.0.1", "localhost", "[::1]"]) allowedHosts.add(`${name}:${bound}`);
  return {
    url: `http://${hostPart}:${bound}/`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The request handler alone (the bench renders pages through it without a socket). */
export function dashboardHandler(
  deps: DashboardDeps,
  allowedHosts: ReadonlySet<string>,
  countsOptions: Pick<CountsOptions, "liveTtlMs" | "endedTtlMs"> = {},
): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const counts = new StatusCounts(deps.census, {
    ...countsOptions,
    ...(deps.nowMs === undefined ? {} : { clock: deps.nowMs }),
  });
  return async (req, res) => {
    const started = performance.now();
    let reply: Reply;
    try {
      reply = await route(deps, counts, req, allowedHosts);
    } catch (error) {
      const status = error instanceof HttpError ? error.status : error instanceof FilterError ? 400 : 500;
      const message = error instanceof Error ? error.message : String(error);
      reply = htmlReply(
        status,
        page({
          title: status === 404 ? "Not found" : "Error",
          where: deps.where,
          live: false,
          main: html`<h1>
              ${status === 404 ? "Not found" : status >= 500 ? "Something failed" : "Bad request"}
            </h1>
            <p class="error">${message}</p>
            <p><a href="/">All sessions</a></p>`,
        }),
      );
    }
    res.writeHead(reply.status, {
      "Content-Type": reply.type,
      "Content-Security-Policy": CONTENT_SECURITY_POLICY,
      "X-Content-Type-Options": "nosniff",
      "X-Frame-Options": "DENY",
      "Referrer-Policy": "same-origin",
      "Cache-Control": "no-store",
      "Server-Timing": `render;dur=${(performance.now() - started).toFixed(1)}`,
      ...reply.headers,
    });
    res.end(reply.body);
  };
}

function htmlReply(status: number, body: Html): Reply {
  return { status, type: "text/html; charset=utf-8", body: body.text };
}

function idFrom(raw: string, field: string): string {
  let id: string;
  try {
    id = decodeURIComponent(raw);
  } catch {
    throw new HttpError(400, `${field}: "${raw}" is not a valid URL path segment`);
  }
  if (!SESSION_ID_PATTERN.test(id)) {
    throw new HttpError(400, `${field}: "${id}" is not an id (3-63 of a-z, 0-9 and '-')`);
  }
  return id;
}

async function route(
  deps: DashboardDeps,
  counts: StatusCounts,
  req: IncomingMessage,
  allowedHosts: ReadonlySet<string>,
): Promise<Reply> {
  const hostHeader = req.headers.host ?? "";
  if (!allowedHosts.has(hostHeader)) {
    throw new HttpError(
      421,
      `Host "${hostHeader}" is not this dashboard (expected one of ${[...allowedHosts].join(", ")})`,
    );
  }
  const url = new URL(req.url ?? "/", `http://${hostHeader}`);
  const path = url.pathname;
  const fragmentOnly = req.headers["x-cairn-fragment"] === "main";
  const nowMs = (deps.nowMs ?? Date.now)();
  const respond = (title: string, main: Html, live = true, below?: Html): Reply =>
    htmlReply(
      200,
      fragmentOnly ? main : page({ title, where: deps.where, main, live, ...(below ? { below } : {}) }),
    );

  if (req.method === "POST") {
    if (path !== "/cancel") throw new HttpError(404, `no action at ${path}`);
    return cancel(deps, req, hostHeader);
  }
  if (req.method !== "GET" && req.method !== "HEAD")
    throw new HttpError(405, `method ${req.method ?? ""} not allowed`);
  const asset = STATIC[path];
  if (asset !== undefined) return { status: 200, type: asset.type, body: asset.body };

  if (path === "/") {
    const filter = parseListFilter(url.searchParams);
    return respond("Sessions", await renderListPage(deps, counts, filter));
  }
  if (path === "/agents") {
    const agents = await deps.store.listAgents();
    const withAllocations = await Promise.all(
      agents.map(async (agent) => ({ agent, allocations: await deps.store.allocationsOnAgent(agent.id) })),
    );
    return respond("Agents", renderAgentsPage(withAllocations, nowMs, deps.agentTimeoutMs ?? 30_000));
  }
  if (path === "/queues") {
    const [queues, policies, config, categories] = await Promise.all([
      deps.store.listQueues(),
      deps.store.listRetryPolicies(),
      deps.store.getRetryConfig(),
      deps.failureCategories?.listFailureCategories() ?? [],
    ]);
    return respond(
      "Queues and retry policies",
      renderCatalogPage(queues, policies, config ?? RETRY_CONFIG_DEFAULTS, config === undefined, categories),
      false,
    );
  }
  if (path === "/deployments") {
    const rows = deps.deployments === undefined ? undefined : await readDeploymentRows(deps.deployments);
    return respond("Deployments", renderDeploymentsPage(rows, nowMs));
  }
  let match = /^\/deployments\/([^/]+)(?:\/execution|\/routes\/([^/]+)\/execution)?$/.exec(path);
  if (match !== null) return deploymentPage(deps, match, path, nowMs, respond);
  match = /^\/jobs\/([^/]+)$/.exec(path);
  if (match !== null) {
    const jobId = idFrom(match[1] ?? "", "job");
    const lookup = await readJob(deps.store, jobId);
    if (!lookup.found) {
      if (lookup.redirect !== undefined)
        return { status: 303, type: "text/plain", body: "", headers: { Location: lookup.redirect } };
      throw new HttpError(404, `job ${jobId} not found`);
    }
    const notice =
      url.searchParams.get("cancel") === "requested" ? `Cancel requested for job ${jobId}.` : undefined;
    return respond(`Job ${jobId}`, renderJobPage(lookup.job, lookup.sessions, notice, lookup.runs));
  }
  match = /^\/sessions\/([^/]+)(\/execution|\/logs)?$/.exec(path);
  if (match !== null) {
    const sessionId = idFrom(match[1] ?? "", "session");
    if (match[2] === "/logs") return logs(deps, sessionId, url.searchParams);
    const found = await deps.store.getSession(sessionId);
    if (found === undefined) throw new HttpError(404, `session ${sessionId} not found`);
    if (match[2] === "/execution") {
      const executions = deps.executions;
      if (executions.kind !== "local")
        throw new HttpError(404, "the execution history is shown here only for the local runtime");
      const arn = executionArn(executions.stateMachineArn, found.session.executionName);
      if (arn === undefined) throw new HttpError(404, `no execution ARN from ${executions.stateMachineArn}`);
      return respond(
        `Execution ${sessionId}`,
        renderExecutionPage(
          { label: sessionId, href: `/sessions/${encodeURIComponent(sessionId)}` },
          arn,
          await executions.history(arn),
        ),
        false,
      );
    }
    const [history, runs, config] = await Promise.all([
      deps.store.listHistory(sessionId),
      deps.store.listRuns(sessionId),
      deps.store.getRetryConfig(),
    ]);
    const notice =
      url.searchParams.get("cancel") === "requested"
        ? `Cancel requested for session ${sessionId}.`
        : undefined;
    const main = renderSessionPage({
      found,
      history,
      runs,
      config: config ?? RETRY_CONFIG_DEFAULTS,
      executions: deps.executions,
      nowMs,
      ...(notice !== undefined ? { notice } : {}),
    });
    if (fragmentOnly) return respond("", main);
    const runParam = url.searchParams.get("run");
    const runIndex =
      runParam !== null && /^\d{1,6}$/.test(runParam) ? Number(runParam) : found.session.runIndex;
    // A big gang's page tails the first few tasks; `?kernel=N` shows another.
    const kernelParam = url.searchParams.get("kernel");
    const shown =
      kernelParam !== null && /^\d{1,4}$/.test(kernelParam)
        ? found.kernels.filter((k) => k.index === Number(kernelParam))
        : found.kernels.slice(0, MAX_LOG_TAILS);
    const tails: LogTail[] | undefined =
      deps.logs === undefined
        ? undefined
        : await Promise.all(
            shown.map(async (k) => {
              const taskArn =
                runIndex === found.session.runIndex
                  ? k.taskArn
                  : runs.find((r) => r.runIndex === runIndex)?.kernels.find((rk) => rk.index === k.index)
                      ?.taskArn;
              const tail = await deps.logs!.tail(sessionId, k.index, runIndex, LOG_TAIL_LINES, taskArn);
              return {
                kernelIndex: k.index,
                runIndex,
                ...(taskArn !== undefined
                  ? { task: taskArn }
                  : k.agentId !== undefined && isFargatePool(k.agentId)
                    ? { task: POOL_TASK_PENDING }
                    : {}),
                ...(tail ? { lines: tail.lines, next: tail.next } : {}),
              };
            }),
          );
    return respond(
      `Session ${sessionId}`,
      main,
      true,
      renderLogs(sessionId, tails, {
        kernels: found.kernels.length,
        // An ended session's logs are complete: nothing to follow.
        follow: !TERMINAL_SESSION_STATUSES.has(found.session.status) && runIndex === found.session.runIndex,
        why: "The kernels' log group is not known for this connection.",
      }),
    );
  }
  throw new HttpError(404, `no page at ${path}`);
}

/** `/deployments/<id>`, its execution (`/execution`) or a route's (`/routes/<route>/execution`). */
async function deploymentPage(
  deps: DashboardDeps,
  match: RegExpExecArray,
  path: string,
  nowMs: number,
  respond: (title: string, main: Html, live?: boolean) => Reply,
): Promise<Reply> {
  const deploymentId = idFrom(match[1] ?? "", "deployment");
  const routeId = match[2] === undefined ? undefined : idFrom(match[2], "route");
  if (deps.deployments === undefined) throw new HttpError(404, NO_DEPLOYMENTS_WHY);
  const found = await deps.deployments.getDeployment(deploymentId);
  if (found === undefined) throw new HttpError(404, `deployment ${deploymentId} not found`);
  if (!path.endsWith("/execution")) {
    const history = await deps.deployments.deploymentHistory(deploymentId);
    return respond(
      `Deployment ${deploymentId}`,
      renderDeploymentPage({ found, history, executions: deps.executions, nowMs }),
    );
  }
  const route = routeId === undefined ? undefined : found.routes.find((r) => r.id === routeId);
  if (routeId !== undefined && route === undefined)
    throw new HttpError(404, `deployment ${deploymentId} has no route ${routeId}`);
  const executions = familyExecutions(
    deps.executions,
    route === undefined ? StateMachineName.DeploymentLifecycle : StateMachineName.RouteLifecycle,
  );
  if (executions.kind !== "local")
    throw new HttpError(404, "the execution history is shown here only for the local runtime");
  const name = route === undefined ? found.deployment.execution.name : route.execution.name;
  const arn = executionArn(executions.stateMachineArn, name);
  if (arn === undefined) throw new HttpError(404, `no execution ARN from ${executions.stateMachineArn}`);
  const of =
    route === undefined
      ? { label: `deployment ${deploymentId}`, href: `/deployments/${encodeURIComponent(deploymentId)}` }
      : {
          label: `route ${route.id}`,
          href: `/deployments/${encodeURIComponent(deploymentId)}#route-${route.id}`,
        };
  return respond(`Execution ${name}`, renderExecutionPage(of, arn, await executions.history(arn)), false);
}

async function logs(deps: DashboardDeps, sessionId: string, params: URLSearchParams): Promise<Reply> {
  if (deps.logs === undefined)
    throw new HttpError(404, "the kernels' log group is not known for this connection");
  const kernel = params.get("kernel") ?? "";
  const run = params.get("run") ?? "";
  if (!/^\d{1,4}$/.test(kernel)) throw new HttpError(400, "kernel: must be a kernel index");
  if (!/^\d{1,6}$/.test(run)) throw new HttpError(400, "run: must be a run index");
  const after = params.get("after");
  // The page says whose stream it is: an agent kernel's run (no `task`), a Fargate task (its ARN),
  // or a Fargate kernel still waiting for its task, whose run is looked up on each read until it
  // has one. Only that last case reads the store: following a log must not read the session.
  const task = params.get("task");
  if (task !== null && task !== POOL_TASK_PENDING && !TASK_ARN.test(task))
    throw new HttpError(400, "task: must be an ECS task ARN");
  const taskArn =
    task === POOL_TASK_PENDING
      ? await runTaskArn(deps, sessionId, Number(kernel), Number(run))
      : (task ?? undefined);
  const out =
    after === null || after === ""
      ? ((await deps.logs.tail(sessionId, Number(kernel), Number(run), LOG_TAIL_LINES, taskArn)) ?? {
          lines: [],
          next: "",
        })
      : await deps.logs.follow(sessionId, Number(kernel), Number(run), after, taskArn);
  return { status: 200, type: "application/json; charset=utf-8", body: JSON.stringify(out) };
}

/** A Fargate kernel's log whose task is not known yet (LogTail.task). */
const POOL_TASK_PENDING = "pool";
const TASK_ARN = /^arn:aws[a-z-]*:ecs:[a-z0-9-]+:\d{12}:task\/[A-Za-z0-9_-]+\/[A-Za-z0-9-]+$/;

/**
 * The ECS task a Fargate kernel's run ran as (its output is that task's stream), read afresh: a
 * kernel placed on a Fargate pool has its task only once it started. Undefined for an agent's.
 */
async function runTaskArn(
  deps: DashboardDeps,
  sessionId: string,
  kernelIndex: number,
  runIndex: number,
): Promise<string | undefined> {
  const found = await deps.store.getSession(sessionId);
  if (found === undefined) return undefined;
  if (runIndex === found.session.runIndex) return found.kernels.find((k) => k.index === kernelIndex)?.taskArn;
  const runs = await deps.store.listRuns(sessionId);
  return runs.find((r) => r.runIndex === runIndex)?.kernels.find((k) => k.index === kernelIndex)?.taskArn;
}

async function cancel(deps: DashboardDeps, req: IncomingMessage, hostHeader: string): Promise<Reply> {
  // Same origin: a page of this dashboard posted it, not another site in the same browser.
  const origin = req.headers.origin;
  const fetchSite = req.headers["sec-fetch-site"];
  const sameOrigin = origin !== undefined ? origin === `http://${hostHeader}` : fetchSite === "same-origin";
  if (!sameOrigin) {
    throw new HttpError(
      403,
      `cancel refused: Origin ${origin ?? "(none)"} is not this dashboard (http://${hostHeader})`,
    );
  }
  const type = (req.headers["content-type"] ?? "").split(";")[0]?.trim();
  if (type !== "application/x-www-form-urlencoded") {
    throw new HttpError(
      415,
      `cancel refused: Content-Type must be application/x-www-form-urlencoded, got "${type ?? ""}"`,
    );
  }
  const form = new URLSearchParams(await readBody(req));
  const outcome = await requestCancel(deps, form);
  if (!outcome.done) throw new HttpError(outcome.status, outcome.message);
  return {
    status: 303,
    type: "text/plain; charset=utf-8",
    body: outcome.message,
    headers: { Location: outcome.location },
  };
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > MAX_FORM_BYTES) throw new HttpError(413, `the form is larger than ${MAX_FORM_BYTES} bytes`);
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}
