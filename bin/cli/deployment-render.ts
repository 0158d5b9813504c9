/**
 * `cairn deployment`'s text output, built from the JSON views (deployment-views.ts) so both carry
 * the same facts. Pure: the current time comes in (`nowMs`) for ages. What a user or a replica
 * wrote (commands, reasons, probe and history messages) is printed on one line with control
 * characters escaped, so it cannot move the cursor or recolour the terminal.
 */
import { evictionFailures } from "../../functions/core/deployments/handlers.ts";
import type { DeploymentSpec } from "../../functions/core/deployments/spec.ts";
import { ago, cell } from "./render.ts";
import { renderBlockRows, renderTable } from "./table.ts";
import { printable } from "./terminal-text.ts";
import type {
  DeploymentHistoryRecordView,
  DeploymentSummaryView,
  DeploymentView,
  RouteView,
  RoutesView,
} from "./deployment-views.ts";

const NONE = "-";
/** `deployment get` shows this many of the newest history records (-o json has them all). */
export const HISTORY_SHOWN = 20;

export function renderDeployment(view: DeploymentView, nowMs: number): string {
  const { spec, replicas } = view;
  const check = spec.healthCheck;
  const rows: [string, string][] = [
    ["replicas", `${replicas.asked} asked for: ${replicas.live} live, ${replicas.healthy} healthy`],
    ...(view.reason === null
      ? []
      : [["reason", `${view.reason.reason}: ${printable(view.reason.message)}`] as [string, string]]),
    ["command", printable(commandLine(spec.service.command))],
    ["resources", `${spec.service.resources.cpu} cpu, ${spec.service.resources.memoryMiB} MiB`],
    // The spec's priority: each replica's session runs at it plus the queue's own.
    [
      "queue",
      `${spec.service.queue}, service priority ${spec.service.priority} (the queue's priority is added)`,
    ],
    [
      "port",
      spec.service.port === undefined
        ? "picked by each replica's agent (CAIRN_PORT)"
        : `${spec.service.port} (CAIRN_PORT)`,
    ],
    [
      "health",
      `GET ${printable(check.path)} every ${check.intervalSeconds} s (timeout ${check.timeoutSeconds} s); ` +
        `healthy after ${check.healthyThreshold} passed, unhealthy after ${check.unhealthyThreshold} failed in a row, ` +
        `evicted after ${evictionFailures(check)}`,
    ],
  ];
  if (spec.service.nodeSelector !== undefined) {
    const labels = Object.entries(spec.service.nodeSelector).map(([k, v]) => `${k}=${v}`);
    rows.push(["agents", printable(`labelled ${labels.join(",")}`)]);
  }
  rows.push(
    ["created", `${view.createdAt} (${ago(view.createdAt, nowMs)})`],
    ["updated", `${view.updatedAt} (${ago(view.updatedAt, nowMs)})`],
  );
  if (view.destroyRequest !== null) {
    rows.push(["destroy", `requested ${view.destroyRequest.at}: ${printable(view.destroyRequest.reason)}`]);
  }
  if (view.failedStarts !== null) {
    const { count, last, lastReason, heldUntil } = view.failedStarts;
    rows.push([
      "failed",
      `${count} replica(s) in a row, the latest ${last}${lastReason === null ? "" : ` (${printable(lastReason)})`}; ` +
        `new replicas held back until ${heldUntil}`,
    ]);
  }
  rows.push(["execution", view.executionName]);
  const shown = view.routes.filter((r) => r.status !== "TERMINATED");
  const ended = view.routes.length - shown.length;
  const history = view.history.slice(-HISTORY_SHOWN);
  const earlier = view.history.length - history.length;
  return [
    `deployment ${view.deploymentId}: ${view.status}`,
    ...renderBlockRows(rows),
    ...indent(shown.length === 0 ? "no routes" : renderRouteTable(shown, nowMs), "  "),
    ...(ended === 0
      ? []
      : [
          `  (${ended} terminated ${ended === 1 ? "route" : "routes"} not shown: ` +
            `\`cairn deployment routes ${view.deploymentId} --all\`)`,
        ]),
    ...(view.history.length === 0
      ? ["  no history yet"]
      : [
          `  history${earlier === 0 ? "" : ` (the newest ${history.length}; -o json has all ${view.history.length})`}:`,
          ...indent(renderDeploymentHistory(history), "    "),
        ]),
  ].join("\n");
}

export function renderDeploymentList(deployments: readonly DeploymentSummaryView[], nowMs: number): string {
  if (deployments.length === 0) return "no deployments";
  return renderTable(
    ["NAME", "STATUS", "REPLICAS", "HEALTHY", "AGE"],
    deployments.map((d) => [
      d.deploymentId,
      d.reason === null ? d.status : `${d.status} (${d.reason.reason})`,
      `${d.replicas.live}/${d.replicas.asked}`,
      String(d.replicas.healthy),
      ago(d.createdAt, nowMs),
    ]),
  );
}

export function renderRoutes(view: RoutesView, nowMs: number): string {
  if (view.routes.length === 0) {
    return `deployment ${view.deploymentId} (${view.status}) has no ${view.all ? "" : "live "}routes`;
  }
  return renderRouteTable(view.routes, nowMs);
}

function renderRouteTable(routes: readonly RouteView[], nowMs: number): string {
  return renderTable(
    ["ROUTE", "STATUS", "AGENT:PORT", "SESSION", "LAST PROBE", "IN A ROW", "MESSAGE"],
    routes.map((r) => [
      r.routeId,
      r.status,
      r.agent === null ? NONE : `${r.agent}:${r.port ?? NONE}`,
      r.sessionId,
      r.health.lastProbeAt === null ? NONE : ago(r.health.lastProbeAt, nowMs),
      inARow(r),
      safeCell(r.health.lastMessage),
    ]),
  );
}

function inARow({ health }: RouteView): string {
  if (health.consecutiveSuccesses > 0) return `${health.consecutiveSuccesses} passed`;
  if (health.consecutiveFailures > 0) return `${health.consecutiveFailures} failed`;
  return NONE;
}

function renderDeploymentHistory(records: readonly DeploymentHistoryRecordView[]): string {
  return renderTable(
    ["AT", "OF", "HANDLER", "RESULT", "STATUS", "MESSAGE"],
    records.map((r) => [
      r.at,
      r.id,
      r.handler,
      r.result,
      r.to === null ? `${r.from} (kept)` : r.to === r.from ? r.to : `${r.from} → ${r.to}`,
      safeCell(r.message),
    ]),
  );
}

/** The command as a shell would take it back: words quoted only where they need it. */
export function commandLine(command: DeploymentSpec["service"]["command"]): string {
  return command
    .map((word) => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`))
    .join(" ");
}

/** A table cell (render.ts's cell: one line, at most 100 characters) of printable text. */
export function safeCell(text: string | null): string {
  return cell(text === null ? null : printable(text));
}

function indent(text: string, prefix: string): string[] {
  return text.split("\n").map((line) => `${prefix}${line}`);
}
