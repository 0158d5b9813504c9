/**
 * A session: its status and why (pending reason, cancel reason), the timeline, its runs, retries
 * against each budget, the history, its kernels and their agents, and below them the tail of each
 * task's log (followed by the client script), with a link to the lifecycle execution.
 */
import type { HistoryRecord, RunRecord, SessionWithKernels } from "../functions/core/model.ts";
import type { RetryConfig } from "../functions/core/retry/config.ts";
import { runName } from "../functions/core/retry/naming.ts";
import { sessionResult } from "../functions/core/sessions.ts";
import { jobIdOf } from "../functions/core/jobs.ts";
import { TERMINAL_SESSION_STATUSES } from "../functions/core/status.ts";
import { hpcSessionAdmissionSteps, hpcSessionState } from "../functions/core/hpc-view.ts";
import { budgetTable } from "./budgets.ts";
import { cancelControl } from "./cancel.ts";
import type { Executions, LogLine } from "./deps.ts";
import { duration, html, isoTime, query, type Html } from "./html.ts";
import { sessionBadge, stateBadge } from "./states.ts";
import { buildTimeline, renderTimeline } from "./timeline.ts";

/** A Step Functions execution's ARN: the state machine's, `execution` for `stateMachine`, plus the name. */
export function executionArn(stateMachineArn: string, executionName: string): string | undefined {
  const match = /^(arn:[^:]+:states:[^:]*:[^:]*):stateMachine:([^:]+)$/.exec(stateMachineArn);
  return match === null ? undefined : `${match[1]}:execution:${match[2]}:${executionName}`;
}

/**
 * Where to look at an execution: the console's page (deployed), the dashboard's own page of its
 * history at `localHref` (local; a session's by default), or why it is not shown.
 */
export function executionLink(
  executions: Executions,
  sessionId: string,
  executionName: string,
  localHref = `/sessions/${encodeURIComponent(sessionId)}/execution`,
): Html {
  if (executions.kind === "none") {
    return html`<span class="muted">${executions.why ?? "not known here (no state machine ARN)"}</span>`;
  }
  const arn = executionArn(executions.stateMachineArn, executionName);
  if (arn === undefined) return html`<span class="muted">${executionName}</span>`;
  if (executions.kind === "local") {
    return html`<a class="execution" href="${localHref}">local execution history</a>
      <span class="muted">${arn}</span>`;
  }
  // arn:aws:states:<region>:<account>:execution:…: the console of the execution's own region.
  const region = arn.split(":")[3] ?? "";
  const href = `https://${region}.console.aws.amazon.com/states/home?region=${encodeURIComponent(region)}#/v2/executions/details/${arn}`;
  return html`<a class="execution" href="${href}" rel="noreferrer" target="_blank">Step Functions console</a>
    <span class="muted">${arn}</span>`;
}

export interface SessionPageData {
  readonly found: SessionWithKernels;
  readonly history: readonly HistoryRecord[];
  readonly runs: readonly RunRecord[];
  readonly config: RetryConfig;
  readonly executions: Executions;
  readonly nowMs: number;
  readonly notice?: string;
}

/**
 * The HPC Pack states the submission went through before Cairn stored it (Submitted →
 * Validating → Queued), as `cairn get` shows them; nothing for a session created before
 * validation was recorded.
 */
function admissionSteps({ session }: SessionWithKernels): Html | string {
  const steps = hpcSessionAdmissionSteps(session);
  return steps === undefined ? "" : html` <span class="muted">(admitted ${steps.join(" → ")})</span>`;
}

export function renderSessionPage(d: SessionPageData): Html {
  const { session, kernels } = d.found;
  const ended = TERMINAL_SESSION_STATUSES.has(session.status);
  const result = sessionResult(d.found);
  const job = jobIdOf(session);
  const timeline = buildTimeline(session, kernels, d.history, d.runs, d.nowMs);
  const runRows = [...d.runs]
    .sort((a, b) => a.runIndex - b.runIndex)
    .map(
      (r) =>
        html`<tr data-run-row="${r.runIndex}">
          <td class="num">
            ${r.runIndex}
            <a href="/sessions/${encodeURIComponent(session.id)}?run=${r.runIndex}#logs">logs</a>
          </td>
          <td>${r.name}</td>
          <td>${stateBadge(r.outcome)}</td>
          <td>
            ${r.kernels.map((k, i) => html`${i > 0 ? html`<br />` : ""}kernel ${k.index}: ${k.outcome ?? k.status}${k.exitCode !== undefined ? ` exit ${k.exitCode}` : ""}${k.condition !== undefined ? ` ${k.condition}` : ""}${k.failureCategory !== undefined ? ` [${k.failureCategory}]` : ""}${k.agentId !== undefined ? ` on ${k.agentId}` : ""}`)}
          </td>
          <td>${isoTime(r.startedAtMs)}</td>
          <td>${isoTime(r.endedAtMs)}</td>
          <td>
            ${r.decision === "retry" ? `retried after ${r.delayMs !== undefined && r.delayMs > 0 ? `a backoff of ${duration(r.delayMs)}` : "no wait"}` : "finished"}${r.avoidAgentId !== undefined ? `, avoiding ${r.avoidAgentId}` : ""}
          </td>
          <td>${r.reason}</td>
        </tr>`,
    );
  const kernelRows = kernels.map(
    (k) =>
      html`<tr id="kernel-${k.index}" data-kernel="${k.index}">
        <td class="num">${k.index}</td>
        <td>${k.status}</td>
        <td>${k.outcome !== undefined ? stateBadge(k.outcome) : ""}</td>
        <td>
          ${k.agentId !== undefined ? html`<a href="/agents#agent-${k.agentId}">${k.agentId}</a>` : html`<span class="muted">not placed</span>`}
        </td>
        <td>${k.resources.cpu} cpu, ${k.resources.memoryMiB} MiB</td>
        <td class="num">${k.exitCode ?? ""}</td>
        <td>${k.condition ?? ""}</td>
        <td>
          ${k.message ?? k.error ?? ""}${k.failureCategory !== undefined ? html` <span class="muted">(${k.failureCategory})</span>` : ""}
        </td>
        <td>${isoTime(k.startedAtMs)}</td>
        <td>${isoTime(k.finishedAtMs)}</td>
      </tr>`,
  );
  const historyRows = [...d.history]
    .sort((a, b) => a.seq - b.seq)
    .map(
      (h) =>
        html`<tr data-seq="${h.seq}">
          <td class="num">${h.seq}</td>
          <td>
            ${isoTime(h.firstAtMs)}${h.count > 1 ? html`<br /><span class="muted">to ${isoTime(h.lastAtMs)}</span>` : ""}
          </td>
          <td>${h.handler}</td>
          <td>${h.result}</td>
          <td>${h.fromStatus} → ${h.toStatus ?? "(kept)"}</td>
          <td class="num">${h.count}</td>
          <td class="message">${h.message ?? ""}</td>
        </tr>`,
    );
  return html`${d.notice !== undefined ? html`<p class="notice">${d.notice}</p>` : ""}
    <h1>Session ${session.id} <span class="muted session-name">${session.spec.name}</span></h1>
    <p>
      ${sessionBadge(session.status)}${result !== undefined ? html` <b class="result">${result}</b>` : ""}${session.cancelRequestedAtMs !== undefined ? html` <span class="muted">cancel requested ${isoTime(session.cancelRequestedAtMs)}${session.cancelReason !== undefined ? `: ${session.cancelReason}` : ""}</span>` : ""}
    </p>
    ${session.status === "PENDING" && session.pendingReason !== undefined ? html`<p class="pending-reason"><b>Waiting because:</b> ${session.pendingReason}</p>` : ""}
    ${session.preemption !== undefined ? html`<p class="notice">Preempted at ${isoTime(session.preemption.atMs)} by session <a href="/sessions/${encodeURIComponent(session.preemption.by)}">${session.preemption.by}</a> (priority ${session.preemption.byPriority}).</p>` : ""}
    ${ended ? "" : cancelControl("session", session.id, `session ${session.id} (${session.spec.name})`)}
    <dl class="facts">
      <dt>job</dt>
      <dd>
        <a href="/jobs/${encodeURIComponent(job)}">${job}</a
        >${session.task !== undefined ? ` (task ${session.task.index} of ${session.task.count})` : ""}
      </dd>
      <dt>HPC Pack's state</dt>
      <dd>${hpcSessionState(session, kernels)}${admissionSteps(d.found)}</dd>
      ${
        session.admission !== undefined
          ? html`<dt>validation</dt>
              <dd class="admission">${session.admission}</dd>`
          : ""
      }
      <dt>queue / priority</dt>
      <dd>${session.spec.queue} / ${session.spec.priority}</dd>
      <dt>run</dt>
      <dd>${session.runIndex} (${runName(session.id, session.runIndex)})</dd>
      <dt>stage</dt>
      <dd>
        ${session.status} since
        ${isoTime(session.stage.enteredAtMs)}${ended ? "" : `, expires ${isoTime(session.stage.expiresAtMs)} (in ${duration(Math.max(session.stage.expiresAtMs - d.nowMs, 0))})`};
        ${session.tries} ${session.tries === 1 ? "try" : "tries"} in this stage
      </dd>
      <dt>created / updated</dt>
      <dd>${isoTime(session.createdAtMs)} / ${isoTime(session.updatedAtMs)}</dd>
      <dt>execution</dt>
      <dd>${executionLink(d.executions, session.id, session.executionName)}</dd>
      ${
        session.avoidAgentIds !== undefined && session.avoidAgentIds.length > 0
          ? html`<dt>avoids agents</dt>
              <dd>${session.avoidAgentIds.join(", ")}</dd>`
          : ""
      }
    </dl>
    <h2>Timeline</h2>
    ${renderTimeline(timeline)}
    <h2>Runs</h2>
    ${
      d.runs.length === 0
        ? html`<p class="muted">No run has finished yet.</p>`
        : html`<table class="runs">
            <thead>
              <tr>
                <th class="num">run</th>
                <th>name</th>
                <th>outcome</th>
                <th>kernels</th>
                <th>started</th>
                <th>ended</th>
                <th>then</th>
                <th>why</th>
              </tr>
            </thead>
            <tbody>
              ${runRows}
            </tbody>
          </table>`
    }
    <h2>Retries against each budget</h2>
    ${budgetTable(session, d.config)}
    <h2>Kernels</h2>
    <table class="kernels">
      <thead>
        <tr>
          <th class="num">kernel</th>
          <th>status</th>
          <th>outcome</th>
          <th>agent</th>
          <th>resources</th>
          <th class="num">exit</th>
          <th>condition</th>
          <th>message</th>
          <th>started</th>
          <th>finished</th>
        </tr>
      </thead>
      <tbody>
        ${kernelRows}
      </tbody>
    </table>
    <h2>History</h2>
    <table class="history">
      <thead>
        <tr>
          <th class="num">#</th>
          <th>at</th>
          <th>handler</th>
          <th>result</th>
          <th>status</th>
          <th class="num">count</th>
          <th>message</th>
        </tr>
      </thead>
      <tbody>
        ${historyRows}
      </tbody>
    </table>`;
}

export interface LogTail {
  readonly kernelIndex: number;
  readonly runIndex: number;
  /**
   * Where a Fargate kernel's run writes (its task, whose stream it is), or "pool" while the
   * kernel waits for its task: the follow then asks for it. Undefined for an agent's kernel.
   */
  readonly task?: string;
  /** Undefined: the stream does not exist (yet). */
  readonly lines?: readonly LogLine[];
  readonly next?: string;
}

/** The tail of each task's log for one run, with a follow switch (static/dashboard.js). */
export function renderLogs(
  sessionId: string,
  tails: readonly LogTail[] | undefined,
  options: { readonly follow: boolean; readonly why: string; readonly kernels: number },
): Html {
  const why = options.why;
  if (tails === undefined)
    return html`<section class="below logs" id="logs">
      <h2>Logs</h2>
      <p class="muted">${why}</p>
    </section>`;
  const shown = new Set(tails.map((t) => t.kernelIndex));
  const others = Array.from({ length: options.kernels }, (_, i) => i).filter((i) => !shown.has(i));
  const run = tails[0]?.runIndex;
  return html`<section class="below logs" id="logs">
    <h2>Logs</h2>
    ${
      others.length > 0
        ? html`<p class="muted">
            Other kernels' logs:
            ${others.map(
              (i) =>
                html`<a href="/sessions/${encodeURIComponent(sessionId)}${query({ kernel: i, run })}#logs"
                  >${i}</a
                > `,
            )}
          </p>`
        : ""
    }
    ${tails.map((t) => {
      const src = `/sessions/${encodeURIComponent(sessionId)}/logs${query({ kernel: t.kernelIndex, run: t.runIndex, task: t.task })}`;
      return html`<h3>kernel ${t.kernelIndex}, run ${t.runIndex}</h3>
        ${t.lines === undefined ? html`<p class="muted log-missing">No output yet (the stream appears once the task writes).</p>` : ""}
        <label
          ><input
            type="checkbox"
            class="follow"
            data-target="log-${t.kernelIndex}"
            ${options.follow ? " checked" : ""}
          />
          follow</label
        >
        <pre class="log" id="log-${t.kernelIndex}" data-src="${src}" data-next="${t.next ?? ""}">
${(t.lines ?? []).map((l) => `${l.message}\n`)}</pre>`;
    })}
  </section>`;
}
