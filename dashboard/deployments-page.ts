/**
 * Deployments (Backend.AI's BEP-1030): the list (status, replicas live of those asked for, healthy routes,
 * age) and a deployment's page (its spec, its routes with their sessions, endpoints and health,
 * its and its routes' history, and where their lifecycle executions can be looked at). What users
 * and replicas wrote (names, commands, probe and history messages) reaches the page only through
 * `html`, escaped.
 */
import { deploymentReason } from "../functions/core/deployments/crash-loop.ts";
import { replacementsHeldUntilMs, replicaCounts } from "../functions/core/deployments/handlers.ts";
import type {
  Deployment,
  DeploymentWithRoutes,
  FamilyHistoryRecord,
  Route,
} from "../functions/core/deployments/model.ts";
import { DeploymentStatus } from "../functions/core/deployments/tables.ts";
import { StateMachineName } from "../functions/topology/index.ts";
import type { DashboardDeployments, Executions } from "./deps.ts";
import { duration, html, isoTime, type Html } from "./html.ts";
import { executionLink } from "./session-page.ts";
import { deploymentBadge, routeBadge } from "./states.ts";

/** The deployment page shows this many of the newest history records. */
export const HISTORY_SHOWN = 200;

export const NO_DEPLOYMENTS_WHY = "Deployments are not readable through this connection.";

/** A deployment in the list; `routes` undefined: not read (a DESTROYED one has no live route). */
export interface DeploymentRow {
  readonly deployment: Deployment;
  readonly routes?: readonly Route[];
}

/** Every deployment by name, with its routes read where they count (as `cairn deployment list`). */
export async function readDeploymentRows(reader: DashboardDeployments): Promise<DeploymentRow[]> {
  const all = await reader.listDeployments();
  const rows = await Promise.all(
    all.map(async (deployment) =>
      deployment.status === DeploymentStatus.DESTROYED
        ? { deployment }
        : { deployment, routes: (await reader.getDeployment(deployment.id))?.routes ?? [] },
    ),
  );
  return rows.sort((a, b) => a.deployment.id.localeCompare(b.deployment.id));
}

export function renderDeploymentsPage(rows: readonly DeploymentRow[] | undefined, nowMs: number): Html {
  if (rows === undefined) {
    return html`<h1>Deployments</h1>
      <p class="muted">${NO_DEPLOYMENTS_WHY}</p>`;
  }
  const body = rows.map(({ deployment: d, routes }) => {
    const counts = replicaCounts(d, routes ?? []);
    const why = routes === undefined ? undefined : deploymentReason(d, routes, nowMs);
    return html`<tr id="deployment-${d.id}" data-deployment="${d.id}">
      <td><a href="/deployments/${encodeURIComponent(d.id)}">${d.id}</a></td>
      <td>
        ${deploymentBadge(d.status)}${d.destroyRequest !== undefined && d.status !== DeploymentStatus.DESTROYED ? html`<span class="reason">destroy requested</span>` : ""}${why === undefined ? "" : html`<span class="reason" title="${why.message}">${why.reason}</span>`}
      </td>
      <td class="num replicas">${counts.live} / ${counts.asked}</td>
      <td class="num healthy">${counts.healthy}</td>
      <td>${duration(Math.max(nowMs - d.createdAtMs, 0))}</td>
      <td>${isoTime(d.updatedAtMs)}</td>
    </tr>`;
  });
  return html`<h1>Deployments</h1>
    <p class="muted">
      ${rows.length} ${rows.length === 1 ? "deployment" : "deployments"}, destroyed ones included, by name.
      Replicas are the routes neither terminating nor terminated, of those the spec asks for.
    </p>
    ${
      rows.length === 0
        ? html`<p class="muted">No deployment yet (<code>cairn deployment create -f service.yaml</code>).</p>`
        : html`<table class="deployments">
            <thead>
              <tr>
                <th>name</th>
                <th>status</th>
                <th class="num">replicas live / asked</th>
                <th class="num">healthy routes</th>
                <th>age</th>
                <th>updated</th>
              </tr>
            </thead>
            <tbody>
              ${body}
            </tbody>
          </table>`
    }`;
}

export type FamilyName = typeof StateMachineName.DeploymentLifecycle | typeof StateMachineName.RouteLifecycle;

/** Longest state machine name Step Functions takes. */
const MAX_STATE_MACHINE_NAME = 80;

/** The stack's UUID a deployed state machine's name ends with (lib/state-machine.ts stateMachineNameFor). */
const STACK_UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";

/**
 * Where a deployment's or a route's executions are, from the session lifecycle's: the stack names
 * each lifecycle `<prefix>-<declared name>-<stack UUID>`, with one prefix for all of them
 * (lib/state-machine.ts stateMachineNameFor), the local runtime by the declared name alone, so the
 * family's ARN is the session lifecycle's with the declared name replaced. A name that does not
 * have that shape, or whose family name would be too long, is not guessed at.
 */
export function familyExecutions(executions: Executions, family: FamilyName): Executions {
  if (executions.kind === "none") return executions;
  const session = StateMachineName.SessionLifecycle;
  const match = new RegExp(
    `^(arn:[^:]+:states:[^:]*:[^:]*:stateMachine:)(?:([^:]*)-)?${session}(-${STACK_UUID})?$`,
  ).exec(executions.stateMachineArn);
  const name =
    match === null ? "" : `${match[2] === undefined ? "" : `${match[2]}-`}${family}${match[3] ?? ""}`;
  if (match === null || name.length > MAX_STATE_MACHINE_NAME) {
    return {
      kind: "none",
      why: `the ${family} state machine is not known here (${executions.stateMachineArn} does not name it)`,
    };
  }
  return { ...executions, stateMachineArn: `${match[1]}${name}` };
}

export interface DeploymentPageData {
  readonly found: DeploymentWithRoutes;
  /** Oldest first, as the store reads it. */
  readonly history: readonly FamilyHistoryRecord[];
  /** The session lifecycle's (deps.ts); the deployment's and routes' are derived from it. */
  readonly executions: Executions;
  readonly nowMs: number;
}

function deploymentPath(id: string): string {
  return `/deployments/${encodeURIComponent(id)}`;
}

export function deploymentExecutionPath(id: string): string {
  return `${deploymentPath(id)}/execution`;
}

export function routeExecutionPath(deploymentId: string, routeId: string): string {
  return `${deploymentPath(deploymentId)}/routes/${encodeURIComponent(routeId)}/execution`;
}

export function renderDeploymentPage(d: DeploymentPageData): Html {
  const { deployment, routes } = d.found;
  const { spec } = deployment;
  const check = spec.healthCheck;
  const counts = replicaCounts(deployment, routes);
  const why = deploymentReason(deployment, routes, d.nowMs);
  const deploymentExecutions = familyExecutions(d.executions, StateMachineName.DeploymentLifecycle);
  const routeExecutions = familyExecutions(d.executions, StateMachineName.RouteLifecycle);
  const ended = deployment.status === DeploymentStatus.DESTROYED;
  const shown = d.history.slice(-HISTORY_SHOWN);
  return html`<h1>Deployment ${deployment.id}</h1>
    <p class="status">
      ${deploymentBadge(deployment.status)}
      ${deployment.destroyRequest !== undefined ? html`<span class="muted">destroy requested ${isoTime(deployment.destroyRequest.atMs)}: ${deployment.destroyRequest.reason}</span>` : ""}
    </p>
    <dl class="facts">
      <dt>replicas</dt>
      <dd class="replicas">${counts.asked} asked for: ${counts.live} live, ${counts.healthy} healthy</dd>
      ${
        why === undefined
          ? ""
          : html`<dt>reason</dt>
              <dd class="deployment-reason"><strong>${why.reason}</strong>: ${why.message}</dd>`
      }
      ${
        deployment.failedStarts === undefined
          ? ""
          : html`<dt>failed replicas</dt>
              <dd class="failed-starts">
                ${deployment.failedStarts.count} in a row, the latest
                ${isoTime(deployment.failedStarts.lastAtMs)}${deployment.failedStarts.lastReason === undefined ? "" : html` (${deployment.failedStarts.lastReason})`};
                new replicas held back until ${isoTime(replacementsHeldUntilMs(deployment))}
              </dd>`
      }
      <dt>command</dt>
      <dd class="command">${spec.service.command.map((word) => html`<code>${word}</code> `)}</dd>
      <dt>resources</dt>
      <dd>${spec.service.resources.cpu} cpu, ${spec.service.resources.memoryMiB} MiB</dd>
      <dt>queue / priority</dt>
      <dd>${spec.service.queue} / ${spec.service.priority}</dd>
      <dt>port</dt>
      <dd>
        ${spec.service.port === undefined ? "picked by each replica's agent ($CAIRN_PORT)" : `${spec.service.port} ($CAIRN_PORT)`}
      </dd>
      <dt>health check</dt>
      <dd class="health-check">
        GET <code>${check.path}</code> every ${check.intervalSeconds} s (timeout ${check.timeoutSeconds} s);
        healthy after ${check.healthyThreshold} passed, unhealthy after ${check.unhealthyThreshold} failed in
        a row
      </dd>
      <dt>stage</dt>
      <dd>${deployment.status} since ${isoTime(deployment.stage.enteredAtMs)}</dd>
      <dt>created / updated</dt>
      <dd>
        ${isoTime(deployment.createdAtMs)} (${duration(Math.max(d.nowMs - deployment.createdAtMs, 0))} ago) /
        ${isoTime(deployment.updatedAtMs)}
      </dd>
      <dt>execution</dt>
      <dd>
        ${deployment.execution.name} ${ended ? "" : html`(generation ${deployment.execution.generation}) `}·
        ${executionLink(deploymentExecutions, deployment.id, deployment.execution.name, deploymentExecutionPath(deployment.id))}
      </dd>
    </dl>
    <h2>Routes</h2>
    ${
      routes.length === 0
        ? html`<p class="muted">No route${ended ? "" : " yet"}.</p>`
        : html`<table class="routes">
            <thead>
              <tr>
                <th>route</th>
                <th>status</th>
                <th>agent:port</th>
                <th>session</th>
                <th>last probe</th>
                <th class="num">passed / failed in a row</th>
                <th>last message</th>
                <th>execution</th>
              </tr>
            </thead>
            <tbody>
              ${routes.map((r) => routeRow(deployment.id, r, routeExecutions))}
            </tbody>
          </table>`
    }
    <h2>History</h2>
    ${
      d.history.length === 0
        ? html`<p class="muted">Nothing recorded yet.</p>`
        : html`${d.history.length > shown.length ? html`<p class="muted">The newest ${shown.length} of ${d.history.length} records.</p>` : ""}
            <table class="deployment-history">
              <thead>
                <tr>
                  <th>at</th>
                  <th>of</th>
                  <th>handler</th>
                  <th>result</th>
                  <th>status</th>
                  <th>message</th>
                </tr>
              </thead>
              <tbody>
                ${shown.map(historyRow)}
              </tbody>
            </table>`
    }`;
}

function routeRow(deploymentId: string, r: Route, executions: Executions): Html {
  const { health } = r;
  return html`<tr id="route-${r.id}" data-route="${r.id}">
    <td>${r.id}</td>
    <td>
      ${routeBadge(r.status)}${r.removeRequestedAtMs !== undefined ? html`<span class="reason">removal requested ${isoTime(r.removeRequestedAtMs)}</span>` : ""}
    </td>
    <td class="endpoint">
      ${r.agentId === undefined ? html`<span class="muted">not started</span>` : `${r.agentId}:${r.port ?? "?"}`}
    </td>
    <td><a href="/sessions/${encodeURIComponent(r.sessionId)}">${r.sessionId}</a></td>
    <td>
      ${health.lastProbeAtMs === undefined ? html`<span class="muted">none since ${isoTime(health.checkedSinceMs)}</span>` : isoTime(health.lastProbeAtMs)}
    </td>
    <td class="num">${health.consecutiveSuccesses} / ${health.consecutiveFailures}</td>
    <td class="message">${health.lastMessage ?? ""}</td>
    <td>
      ${executionLink(executions, r.sessionId, r.execution.name, routeExecutionPath(deploymentId, r.id))}
    </td>
  </tr>`;
}

function historyRow(h: FamilyHistoryRecord): Html {
  const to = h.toStatus;
  return html`<tr>
    <td>${isoTime(h.atMs)}</td>
    <td>${h.entity} ${h.id}</td>
    <td>${h.handler}</td>
    <td>${h.result}</td>
    <td>
      ${to === undefined ? `${h.fromStatus} (kept)` : to === h.fromStatus ? to : `${h.fromStatus} → ${to}`}
    </td>
    <td class="message">${h.message ?? ""}</td>
  </tr>`;
}
