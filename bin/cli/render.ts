/**
 * Human output: compact blocks and tables built from the JSON views, so both outputs carry the
 * same facts. Pure: the current time comes in (`nowMs`) for ages and running times.
 */
import type { SessionResult } from "../../functions/core/sessions.ts";
import type { Vocabulary } from "./invocation.ts";
import { renderBlockRows, renderTable, renderTableLines } from "./table.ts";
import { printable } from "./terminal-text.ts";
import type {
  HistoryRecordView,
  HistoryView,
  ListView,
  RunView,
  SessionSummaryView,
  SessionView,
} from "./views.ts";

const NONE = "-";
const MAX_CELL = 100;

export function renderSession(view: SessionView, nowMs: number): string {
  const ended = view.result !== null;
  const rows: [string, string][] = [
    // Each state line names its vocabulary: Sokovan's session status here, HPC Pack's below.
    ["status", `${view.status} (${ended ? `${view.result}; ` : ""}Sokovan's session status)`],
    [
      "hpc",
      `${view.hpcState} (HPC Pack's state${view.hpcAdmission === null ? "" : `; admitted ${view.hpcAdmission.join(" → ")}`})`,
    ],
    ["queue", `${view.queue}, priority ${view.priority}`],
    [
      "run",
      `${view.runName} (run ${view.runIndex}), ${view.tries} ${view.tries === 1 ? "try" : "tries"} in this stage`,
    ],
    ["created", `${view.createdAt} (${ago(view.createdAt, nowMs)})`],
    ["updated", `${view.updatedAt} (${ago(view.updatedAt, nowMs)})`],
  ];
  if (!ended) {
    rows.push(["stage", `entered ${view.stage.enteredAt}, expires ${view.stage.expiresAt}`]);
    if (view.pendingReason !== null) rows.push(["waiting", oneLine(view.pendingReason)]);
  }
  if (view.cancelRequestedAt !== null) rows.push(["cancel", `requested ${view.cancelRequestedAt}`]);
  if (view.retry !== null) {
    const r = view.retry;
    rows.push([
      "retries",
      `${r.totalRetries} counted (${r.failureCount} ${r.failureCount === 1 ? "failure" : "failures"}, ` +
        `${r.preemptionCount} ${r.preemptionCount === 1 ? "preemption" : "preemptions"})`,
    ]);
  }
  if (view.avoidAgents.length > 0) rows.push(["avoiding", view.avoidAgents.join(", ")]);
  rows.push(["execution", view.executionArn ?? view.executionName]);
  const kernelTable = renderTable(
    ["KERNEL", "STATUS", "AGENT", "EXIT", "CONDITION", "STARTED", "RAN", "MESSAGE"],
    view.kernels.map((k) => [
      String(k.index),
      k.status,
      k.agent ?? NONE,
      k.exitCode === null ? NONE : String(k.exitCode),
      k.condition ?? NONE,
      k.startedAt ?? NONE,
      ran(k.startedAt, k.finishedAt, nowMs),
      cell(k.message ?? (k.error === null ? null : `preparation failed: ${k.error}`)),
    ]),
  );
  return [
    `session ${view.sessionId} (${view.name})`,
    ...renderBlockRows(rows),
    ...kernelTable.split("\n").map((line) => `  ${line}`),
    ...(view.runs.length === 0
      ? []
      : [
          "  runs:",
          ...renderRuns(view.runs)
            .split("\n")
            .map((l) => `    ${l}`),
        ]),
  ].join("\n");
}

/**
 * Finished runs, one line each: how the run ended, what was decided and why, and its failed
 * kernels (`k<index>@<agent> exit <code> <condition> [<failure category>] "<message>"`); the JSON
 * has every field.
 */
export function renderRuns(runs: readonly RunView[]): string {
  return renderTable(
    ["RUN", "NAME", "OUTCOME", "DECISION", "ENDED", "FAILED KERNELS", "REASON"],
    runs.map((run) => [
      String(run.runIndex),
      run.name,
      run.outcome,
      decisionText(run),
      run.endedAt,
      cell(failedKernelsText(run)),
      cell(run.reason),
    ]),
  );
}

export function decisionText(run: Pick<RunView, "decision" | "delayMs" | "avoidAgentId">): string {
  if (run.decision !== "retry") return run.decision;
  const wait = run.delayMs === null || run.delayMs === 0 ? "" : ` after ${formatDuration(run.delayMs)}`;
  const avoid = run.avoidAgentId === null ? "" : `, avoiding ${run.avoidAgentId}`;
  return `retry${wait}${avoid}`;
}

function failedKernelsText(run: RunView): string | null {
  const failed = run.kernels.filter((k) => k.outcome !== null && k.outcome !== "SUCCEEDED");
  if (failed.length === 0) return null;
  return failed
    .map((k) =>
      [
        `k${k.index}${k.agent === null ? "" : `@${k.agent}`}`,
        k.outcome === "FAILED" ? undefined : k.outcome,
        k.exitCode === null ? undefined : `exit ${k.exitCode}`,
        k.condition ?? undefined,
        k.failureCategory === null ? undefined : `[${k.failureCategory}]`,
        k.message === null ? undefined : JSON.stringify(oneLine(k.message)),
      ]
        .filter((part) => part !== undefined)
        .join(" "),
    )
    .join("; ");
}

export function renderHistory(view: HistoryView): string {
  if (view.records.length === 0) return `session ${view.sessionId} has no history yet`;
  const records = renderTable(
    ["SEQ", "AT", "HANDLER", "RESULT", "STATUS", "COUNT", "MESSAGE"],
    view.records.map((r) => [
      String(r.seq),
      r.firstAt,
      r.handler,
      r.result,
      r.to === null ? `${r.from} (kept)` : r.to === r.from ? r.to : `${r.from} → ${r.to}`,
      String(r.count),
      cell(messageText(r)),
    ]),
  );
  return view.runs.length === 0 ? records : `${records}\n\nruns:\n${renderRuns(view.runs)}`;
}

/** A record's message; the submission's record first names the HPC Pack states it stands for. */
function messageText(r: HistoryRecordView): string | null {
  if (r.hpc === null) return r.message;
  const steps = `HPC ${r.hpc.join(" → ")}`;
  return r.message === null ? steps : `${steps}: ${r.message}`;
}

/** The state column of each vocabulary, named. */
export const VOCABULARY_COLUMNS: Readonly<Record<Vocabulary, string>> = {
  sokovan: "STATUS (SOKOVAN)",
  iris: "STATE (IRIS)",
  hpc: "STATE (HPC PACK)",
};

export interface ListStyle {
  readonly view: Vocabulary;
  /** ANSI colours for how ended sessions ended (a terminal without NO_COLOR). */
  readonly colour: boolean;
}

/** `succeeded` green, `failed` red, `cancelled` yellow: the dashboard's palette in ANSI. */
const RESULT_COLOURS: Readonly<Record<SessionResult, string>> = {
  succeeded: "\u001b[32m",
  failed: "\u001b[31m",
  cancelled: "\u001b[33m",
};
const RESET = "\u001b[0m";

export function renderList(
  view: ListView,
  status: string | undefined,
  nowMs: number,
  style: ListStyle = { view: "sokovan", colour: false },
): string {
  if (view.sessions.length === 0) return status === undefined ? "no sessions" : `no sessions in ${status}`;
  const table = listLines(view.sessions, nowMs, style).join("\n");
  return view.truncated ? `${table}\n(more sessions match; raise --limit)` : table;
}

/** The list's header line, then one line per session. */
export function listLines(
  sessions: readonly SessionSummaryView[],
  nowMs: number,
  style: ListStyle,
): string[] {
  const headers = [
    "SESSION",
    "NAME",
    VOCABULARY_COLUMNS[style.view],
    "QUEUE",
    "PRIORITY",
    "CREATED",
    "WAITING",
  ];
  const rows = sessions.map((s) => [
    s.sessionId,
    s.name,
    listState(s, style.view),
    s.queue,
    String(s.priority),
    ago(s.createdAt, nowMs),
    cell(s.result !== null ? null : s.pendingReason),
  ]);
  const paint = (row: number, column: number, text: string) => {
    const result = sessions[row]?.result ?? null;
    return column === 2 && style.colour && result !== null
      ? `${RESULT_COLOURS[result]}${text}${RESET}`
      : text;
  };
  return renderTableLines(headers, rows, paint);
}

/** The state in the view's vocabulary; Sokovan's with how the session ended, once it has. */
function listState(s: SessionSummaryView, view: Vocabulary): string {
  if (view === "iris") return s.irisState;
  if (view === "hpc") return s.hpcState;
  return s.result === null ? s.status : `${s.status} (${s.result})`;
}

/** One line of `submit --wait` progress for a history record. */
export function renderProgress(record: HistoryRecordView): string {
  const why = record.message === null ? "" : ` (${oneLine(record.message)})`;
  if (record.to !== null && record.to !== record.from) return `${record.from} → ${record.to}${why}`;
  if (record.result === "SUBMITTED") return `${record.from}: submitted${why}`;
  return `${record.from}: ${record.handler} ${record.result}${why}`;
}

// ---------------------------------------------------------------------------------------------

/** "12s ago", "3m04s ago"; "just now" for clock skew into the future. */
export function ago(isoTime: string, nowMs: number): string {
  const elapsedMs = nowMs - Date.parse(isoTime);
  return elapsedMs < 0 ? "just now" : `${formatDuration(elapsedMs)} ago`;
}

export function ran(startedAt: string | null, finishedAt: string | null, nowMs: number): string {
  if (startedAt === null) return NONE;
  const endMs = finishedAt === null ? nowMs : Date.parse(finishedAt);
  const duration = formatDuration(Math.max(0, endMs - Date.parse(startedAt)));
  return finishedAt === null ? `${duration}…` : duration;
}

/** 0.4s, 12.3s, 3m04s, 2h05m, 3d04h. */
export function formatDuration(ms: number): string {
  const seconds = ms / 1000;
  if (seconds < 60) return `${seconds.toFixed(1)}s`;
  const totalSeconds = Math.floor(seconds);
  const minutes = Math.floor(totalSeconds / 60);
  if (minutes < 60) return `${minutes}m${pad2(totalSeconds % 60)}s`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${hours}h${pad2(minutes % 60)}m`;
  return `${Math.floor(hours / 24)}d${pad2(hours % 24)}h`;
}

function pad2(n: number): string {
  return String(n).padStart(2, "0");
}

/** One line of text for the terminal: whitespace folded, control characters escaped (terminal-text.ts). */
export function oneLine(text: string): string {
  return printable(text);
}

/** A table cell: one line, at most MAX_CELL characters (the JSON output has it all). */
export function cell(text: string | null): string {
  if (text === null || text.trim() === "") return NONE;
  const line = oneLine(text);
  return line.length > MAX_CELL ? `${line.slice(0, MAX_CELL - 1)}…` : line;
}
