/**
 * Human output of `job get`, `tasks` and `task`, built from the JSON views (job-views.ts) so
 * both outputs carry the same facts. Pure: the current time comes in for ages and run times.
 */
import { TaskState } from "../../functions/core/status.ts";
import type { JobView, TaskDetailView, TaskRowView, TasksView } from "./job-views.ts";
import { ago, cell, decisionText, formatDuration, oneLine, ran } from "./render.ts";
import { renderBlockRows, renderTable } from "./table.ts";

const NONE = "-";

export function renderJob(view: JobView, nowMs: number): string {
  const rows: [string, string][] = [
    ["state", `${view.state} (Iris's job state): ${view.reason}`],
    ["hpc", `${view.hpcState} (HPC Pack's state)`],
    ["tasks", taskCountsText(view)],
    [
      "kind",
      view.coscheduled
        ? `one gang of ${view.replicas} (co-scheduled), at most ${view.perAgent ?? 1} per agent, ` +
          `maxTaskFailures ${view.maxTaskFailures}`
        : `${view.replicas} independent ${view.replicas === 1 ? "task" : "tasks"}, maxTaskFailures ${view.maxTaskFailures}`,
    ],
    [
      "placement",
      `within ${formatDuration(view.schedulingTimeoutSeconds * 1000)}, or the task is UNSCHEDULABLE`,
    ],
    ["queue", `${view.queue}, priority ${view.priority}`],
  ];
  if (view.parent !== null) rows.push(["parent", view.parent]);
  if (view.children.length > 0) rows.push(["children", view.children.join(", ")]);
  rows.push(["created", `${view.createdAt} (${ago(view.createdAt, nowMs)})`]);
  if (view.finishedAt !== null)
    rows.push(["finished", `${view.finishedAt} (${ago(view.finishedAt, nowMs)})`]);
  rows.push(["sessions", sessionsText(view)]);
  return block(`job ${view.jobId} (${view.name})`, rows).concat(
    `\n  tasks: \`cairn tasks ${view.jobId}\`, output: \`cairn logs ${view.jobId}\``,
  );
}

export function renderTasks(view: TasksView, nowMs: number): string {
  return [`job ${view.jobId}: ${view.state} (${oneLine(view.reason)})`, tasksTable(view.tasks, nowMs)].join(
    "\n",
  );
}

function tasksTable(tasks: readonly TaskRowView[], nowMs: number): string {
  return renderTable(
    // Each state column names its vocabulary: Iris's task states, HPC Pack's.
    ["TASK", "STATE (IRIS)", "HPC PACK", "AGENT", "EXIT", "RUN", "RETRIES", "RAN", "REASON"],
    tasks.map((t) => [
      String(t.index),
      t.state,
      t.hpcState,
      t.agent ?? NONE,
      t.exitCode === null ? NONE : String(t.exitCode),
      String(t.runIndex),
      retriesText(t) ?? NONE,
      ran(t.startedAt, t.finishedAt, nowMs),
      cell(t.reason),
    ]),
  );
}

export function renderTask(view: TaskDetailView, nowMs: number): string {
  const pending = view.state === TaskState.PENDING;
  const rows: [string, string][] = [
    // Three vocabularies on one screen: each value names its own.
    ["state", `${view.state}${view.finished ? ", finished" : ""} (Iris's task state)`],
    ["hpc", `${view.hpcState} (HPC Pack's state)`],
    [
      "session",
      view.sessionId === view.jobId
        ? `${view.sessionId}, kernel ${view.kernelIndex} (${view.sessionStatus}: Sokovan's session status)`
        : `${view.sessionId} (${view.sessionStatus}: Sokovan's session status)`,
    ],
    ["run", `${view.runName} (run ${view.runIndex})`],
    ["agent", view.agent ?? NONE],
  ];
  if (view.exitCode !== null) rows.push(["exit code", String(view.exitCode)]);
  if (view.condition !== null) rows.push(["condition", view.condition]);
  rows.push(["retries", retriesText(view) ?? "none"]);
  if (view.startedAt !== null) rows.push(["started", `${view.startedAt} (${ago(view.startedAt, nowMs)})`]);
  if (view.finishedAt !== null) {
    rows.push(["finished", `${view.finishedAt} (ran ${ran(view.startedAt, view.finishedAt, nowMs)})`]);
  }
  if (view.reason !== null) rows.push([pending ? "waiting" : "reason", oneLine(view.reason)]);
  if (view.error !== null) rows.push(["error", `preparation failed: ${oneLine(view.error)}`]);
  const runs =
    view.runs.length === 0
      ? []
      : [
          "  runs:",
          ...renderTable(
            ["RUN", "NAME", "OUTCOME", "AGENT", "EXIT", "DECISION", "ENDED", "MESSAGE", "REASON"],
            view.runs.map((run) => [
              String(run.runIndex),
              run.name,
              run.task?.outcome ?? run.outcome,
              run.task?.agent ?? NONE,
              run.task === null || run.task.exitCode === null ? NONE : String(run.task.exitCode),
              decisionText(run),
              run.endedAt,
              cell(run.task?.message ?? run.task?.condition ?? null),
              cell(run.reason),
            ]),
          )
            .split("\n")
            .map((line) => `    ${line}`),
        ];
  return [block(`task ${view.index} of job ${view.jobId} (job ${view.jobState})`, rows), ...runs].join("\n");
}

// ---------------------------------------------------------------------------------------------

function block(title: string, rows: readonly (readonly [string, string])[]): string {
  return [title, ...renderBlockRows(rows)].join("\n");
}

/** "4 tasks: 2 RUNNING, 1 PENDING, 1 SUCCEEDED", states in the order TaskState lists them. */
function taskCountsText(view: JobView): string {
  const parts = Object.values(TaskState)
    .filter((state) => view.taskCounts[state] > 0)
    .map((state) => `${view.taskCounts[state]} ${state}`);
  return `${view.replicas} ${view.replicas === 1 ? "task" : "tasks"}: ${parts.join(", ")}`;
}

function sessionsText(view: JobView): string {
  if (view.coscheduled) return `${view.jobId} (one session; its kernels are the tasks)`;
  const ids = view.sessions;
  return ids.length <= 4 ? ids.join(", ") : `${ids[0] ?? ""} … ${ids.at(-1) ?? ""} (${ids.length} sessions)`;
}

/** Null when the task was never retried. */
function retriesText(task: Pick<TaskRowView, "failureCount" | "preemptionCount">): string | null {
  const { failureCount: f, preemptionCount: p } = task;
  if (f === 0 && p === 0) return null;
  const parts = [
    ...(f > 0 ? [`${f} ${f === 1 ? "failure" : "failures"}`] : []),
    ...(p > 0 ? [`${p} ${p === 1 ? "preemption" : "preemptions"}`] : []),
  ];
  return parts.join(", ");
}
