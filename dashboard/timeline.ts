/**
 * A session's timeline, drawn as one SVG (attributes only: no inline style, so the CSP holds):
 * every stage it entered, coloured by status, with the stage's expiry deadline as a dashed
 * marker; each run as a band with its outcome, exit code and condition; the backoff wait before
 * each retried run; and each history record at its time (preemptions and failures stand out).
 * `buildTimeline` is pure (times in, shapes out) so it can be tested without a browser.
 */
import {
  stageKey,
  type HistoryRecord,
  type Kernel,
  type RunRecord,
  type Session,
} from "../functions/core/model.ts";
import { isWaitingStatus, TERMINAL_SESSION_STATUSES, type SessionStatus } from "../functions/core/status.ts";
import { duration, html, isoTime, type Html } from "./html.ts";
import { sessionClass, stateClass } from "./states.ts";

export interface StageSegment {
  readonly status: SessionStatus;
  readonly fromMs: number;
  readonly toMs: number;
  /** The stage's expiry deadline (entered + its timeout); absent for TERMINATED and CANCELLED. */
  readonly deadlineMs?: number;
  readonly timeoutSeconds?: number;
  /** The stage the session is in now. */
  readonly current: boolean;
}

export interface RunBand {
  readonly runIndex: number;
  readonly fromMs: number;
  readonly toMs: number;
  /** Absent for the run under way. */
  readonly record?: RunRecord;
  readonly label: string;
}

export interface BackoffWait {
  readonly afterRun: number;
  readonly fromMs: number;
  readonly toMs: number;
}

export interface HistoryMark {
  readonly record: HistoryRecord;
  readonly kind: "transition" | "preempted" | "failure" | "other";
}

export interface Timeline {
  readonly startMs: number;
  readonly endMs: number;
  readonly stages: readonly StageSegment[];
  readonly runs: readonly RunBand[];
  readonly backoffs: readonly BackoffWait[];
  readonly marks: readonly HistoryMark[];
}

const FAILURE_RESULTS = new Set(["FAILURE", "GIVE_UP", "EXPIRED", "FAILED", "AGENT_LOST"]);

export function runLabel(run: RunRecord): string {
  const failed = run.kernels.find((k) => k.outcome === run.outcome) ?? run.kernels[0];
  const parts = [`run ${run.runIndex}: ${run.outcome}`];
  if (failed?.exitCode !== undefined) parts.push(`exit ${failed.exitCode}`);
  if (failed?.condition !== undefined) parts.push(failed.condition);
  return parts.join(" · ");
}

export function buildTimeline(
  session: Session,
  kernels: readonly Kernel[],
  history: readonly HistoryRecord[],
  runs: readonly RunRecord[],
  nowMs: number,
): Timeline {
  const ended = TERMINAL_SESSION_STATUSES.has(session.status);
  const sorted = [...history].sort((a, b) => a.seq - b.seq);
  const lastEventMs = Math.max(
    session.createdAtMs,
    ...sorted.map((h) => h.lastAtMs),
    ...runs.map((r) => r.endedAtMs),
    ...kernels.map((k) => k.finishedAtMs ?? 0),
  );
  const endOfData = ended ? Math.max(lastEventMs, session.updatedAtMs) : Math.max(nowMs, lastEventMs);

  // Stages: each transition record enters its `toStatus` at its first sighting.
  const entries: { status: SessionStatus; atMs: number }[] = [];
  for (const h of sorted) {
    if (h.toStatus !== undefined) entries.push({ status: h.toStatus, atMs: h.firstAtMs });
  }
  if (entries.length === 0 || (entries[0]?.atMs ?? 0) > session.createdAtMs + 1) {
    entries.unshift({ status: "PENDING", atMs: session.createdAtMs });
  }
  const stages: StageSegment[] = entries.map((e, i) => {
    const next = entries[i + 1];
    const current = next === undefined;
    const toMs = next?.atMs ?? (TERMINAL_SESSION_STATUSES.has(e.status) ? e.atMs : endOfData);
    if (!isWaitingStatus(e.status)) return { status: e.status, fromMs: e.atMs, toMs, current };
    const timeoutSeconds = session.spec.timeouts[stageKey(e.status)];
    // The stage the session is in now carries its own recorded deadline.
    const deadlineMs =
      current && session.status === e.status ? session.stage.expiresAtMs : e.atMs + timeoutSeconds * 1000;
    return { status: e.status, fromMs: e.atMs, toMs, deadlineMs, timeoutSeconds, current };
  });

  // Runs: each from the end of the previous one's backoff (or the session's creation) to its end.
  const finished = [...runs].sort((a, b) => a.runIndex - b.runIndex);
  const bands: RunBand[] = [];
  const backoffs: BackoffWait[] = [];
  let runStart = session.createdAtMs;
  for (const run of finished) {
    bands.push({
      runIndex: run.runIndex,
      fromMs: runStart,
      toMs: run.endedAtMs,
      record: run,
      label: runLabel(run),
    });
    // The wait starts when the requeue is applied (the run's TERMINATING → PENDING), which may
    // come a little after the run's end; the state machine then waits `delayMs` in PENDING.
    const requeuedAtMs =
      run.decision === "retry"
        ? (sorted.find(
            (h) => h.result === "REQUEUED" && h.fromStatus === "TERMINATING" && h.firstAtMs >= run.endedAtMs,
          )?.firstAtMs ?? run.endedAtMs)
        : run.endedAtMs;
    const delay = run.decision === "retry" ? (run.delayMs ?? 0) : 0;
    if (delay > 0) {
      backoffs.push({ afterRun: run.runIndex, fromMs: requeuedAtMs, toMs: requeuedAtMs + delay });
    }
    runStart = requeuedAtMs + delay;
  }
  if (!finished.some((r) => r.runIndex === session.runIndex)) {
    bands.push({
      runIndex: session.runIndex,
      fromMs: Math.min(runStart, endOfData),
      toMs: endOfData,
      label: `run ${session.runIndex}: ${ended ? session.status : `${session.status} (under way)`}`,
    });
  }

  const marks: HistoryMark[] = sorted.map((record) => ({
    record,
    kind:
      record.result === "PREEMPTED"
        ? "preempted"
        : FAILURE_RESULTS.has(record.result)
          ? "failure"
          : record.toStatus !== undefined
            ? "transition"
            : "other",
  }));

  const startMs = session.createdAtMs;
  let endMs = Math.max(endOfData, ...backoffs.map((b) => b.toMs), startMs + 1000);
  // A deadline shortly past the end is drawn in range; a far one is an arrow at the right edge.
  const span = endMs - startMs;
  for (const s of stages) {
    if (s.deadlineMs !== undefined && s.deadlineMs > endMs && s.deadlineMs <= endMs + span * 0.25) {
      endMs = s.deadlineMs;
    }
  }
  return { startMs, endMs, stages, runs: bands, backoffs, marks };
}

const WIDTH = 1000;
/** Room a label needs at 11px (about 7 units a character in the 1000-wide view box), or it is left to the tooltip. */
const textWidth = (label: string) => label.length * 6.5 + 8;
/** The first label that fits in `width`, or undefined. */
const fitting = (width: number, labels: readonly string[]) => labels.find((l) => width > textWidth(l));
const LEFT = 64;
const RIGHT = 16;

export function renderTimeline(t: Timeline): Html {
  const span = Math.max(t.endMs - t.startMs, 1);
  const x = (ms: number) =>
    LEFT + (Math.min(Math.max(ms, t.startMs), t.endMs) - t.startMs) * ((WIDTH - LEFT - RIGHT) / span);
  const w = (from: number, to: number) => Math.max(x(to) - x(from), 2);
  const fixed = (n: number) => n.toFixed(1);
  const stageRects = t.stages.map((s) => {
    const width = w(s.fromMs, s.toMs);
    const title = `${s.status} from ${isoTime(s.fromMs)}${s.current ? " (now)" : ` for ${duration(s.toMs - s.fromMs)}`}${s.deadlineMs !== undefined ? `; expires ${isoTime(s.deadlineMs)} (timeout ${s.timeoutSeconds ?? "?"} s)` : ""}`;
    return html`<g class="stage-entry" data-status="${s.status}"
      ><rect
        class="stage ${sessionClass(s.status)}"
        x="${fixed(x(s.fromMs))}"
        y="8"
        width="${fixed(width)}"
        height="22"
        ><title>${title}</title></rect
      >${width > textWidth(s.status) ? html`<text class="in" x="${fixed(x(s.fromMs) + 3)}" y="23">${s.status}</text>` : ""}</g
    >`;
  });
  const deadlines = t.stages.flatMap((s) => {
    if (s.deadlineMs === undefined) return [];
    const beyond = s.deadlineMs > t.endMs;
    const at = fixed(beyond ? WIDTH - RIGHT + 4 : x(s.deadlineMs));
    const title = `${s.status} expiry deadline ${isoTime(s.deadlineMs)} (timeout ${s.timeoutSeconds ?? "?"} s)${beyond ? ", past the right edge" : ""}`;
    return [
      beyond
        ? html`<path
            class="deadline beyond"
            data-status="${s.status}"
            d="M ${at} 19 l -8 -7 v 14 z"
            fill="#cf222e"
            ><title>${title}</title></path
          >`
        : html`<line class="deadline" data-status="${s.status}" x1="${at}" x2="${at}" y1="2" y2="36"
            ><title>${title}</title></line
          >`,
    ];
  });
  const runRects = t.runs.map((r) => {
    const width = w(r.fromMs, r.toMs);
    const cls = r.record !== undefined ? stateClass(r.record.outcome) : "current";
    const detail =
      r.record !== undefined
        ? `${r.label}; ${r.record.decision === "retry" ? "retried" : "finished"}: ${r.record.reason}`
        : r.label;
    const label = fitting(width, [r.label, r.label.split(" · ")[0] ?? "", `run ${r.runIndex}`]);
    return html`<g data-run="${r.runIndex}"
      ><rect class="run-band ${cls}" x="${fixed(x(r.fromMs))}" y="42" width="${fixed(width)}" height="22"
        ><title>${detail}</title></rect
      >${label !== undefined ? html`<text x="${fixed(x(r.fromMs) + 3)}" y="57">${label}</text>` : ""}</g
    >`;
  });
  const backoffRects = t.backoffs.map((b) => {
    const width = w(b.fromMs, b.toMs);
    const label = `backoff ${duration(b.toMs - b.fromMs)}`;
    return html`<g data-backoff-after="${b.afterRun}"
      ><rect class="backoff" x="${fixed(x(b.fromMs))}" y="42" width="${fixed(width)}" height="22"
        ><title>${label} after run ${b.afterRun}, until ${isoTime(b.toMs)}</title></rect
      >${width > textWidth(label) ? html`<text x="${fixed(x(b.fromMs) + 3)}" y="57">${label}</text>` : ""}</g
    >`;
  });
  const marks = t.marks.map((m, i) => {
    const h = m.record;
    const y = 78 + (i % 3) * 7;
    const title = `#${h.seq} ${isoTime(h.firstAtMs)} ${h.handler} ${h.result} ${h.fromStatus} → ${h.toStatus ?? "(kept)"}${h.count > 1 ? ` ×${h.count} until ${isoTime(h.lastAtMs)}` : ""}${h.message !== undefined ? `: ${h.message}` : ""}`;
    return html`<g class="history-mark" data-result="${h.result}"
      >${h.count > 1 ? html`<line class="axis" x1="${fixed(x(h.firstAtMs))}" x2="${fixed(x(h.lastAtMs))}" y1="${y}" y2="${y}"></line>` : ""}<circle
        class="history ${m.kind}"
        cx="${fixed(x(h.firstAtMs))}"
        cy="${y}"
        r="4"
        ><title>${title}</title></circle
      ></g
    >`;
  });
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => {
    const at = t.startMs + span * f;
    const label = f === 0 ? isoTime(t.startMs) : `+${duration(at - t.startMs)}`;
    return html`<line class="axis" x1="${fixed(x(at))}" x2="${fixed(x(at))}" y1="100" y2="104"></line
      ><text x="${fixed(Math.min(x(at), WIDTH - 70))}" y="116">${label}</text>`;
  });
  return html`<svg class="timeline" viewBox="0 0 ${WIDTH} 122" role="img" aria-label="session timeline">
      <text x="2" y="23">stages</text>
      <text x="2" y="57">runs</text>
      <text x="2" y="88">history</text>
      ${stageRects}${deadlines}${runRects}${backoffRects}${marks}
      <line class="axis" x1="${LEFT}" x2="${WIDTH - RIGHT}" y1="100" y2="100"></line>
      ${ticks}
    </svg>
    <p class="legend">
      ${[...new Set(t.stages.map((s) => s.status))].map(
        (status) => html`<span class="${sessionClass(status)}">■ ${status}</span> `,
      )}
    </p>
    <p class="legend">
      Stages in their status colour; dashed red line: the stage's expiry deadline (an arrow at the right edge:
      later than shown). Runs as bands (outcome colour), yellow dashed: backoff before the next run. Dots:
      history records (blue: status change, red: failure/expiry/give-up, orange: preemption, grey: kept
      status). Hover for details.
    </p>`;
}
