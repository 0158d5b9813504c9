/**
 * A job: its state and the rule that decided it (final once recorded), parent and children, and
 * one row per task with the state name and colour of Iris's task states, why a PENDING task waits, how
 * an ended one ended, its retries against each budget, and a link to the task's session. Then
 * each task's attempt history, as Iris's job page draws it: "Each attempt has its own state
 * badge, and worker failures are annotated with "(worker failure)" in the attempt rows" — one
 * row per run of the task's session (its kernel's part in the run), and the attempt under way.
 */
import {
  deriveJobState,
  jobSettings,
  jobTasks,
  countTaskStates,
  type TaskView,
} from "../functions/core/jobs.ts";
import type { Job, RunRecord, SessionWithKernels } from "../functions/core/model.ts";
import { BUDGET_DEFAULTS } from "../functions/core/retry/budgets.ts";
import {
  AttemptOutcome,
  TaskState,
  TERMINAL_SESSION_STATUSES,
  type TaskState as TaskStateName,
} from "../functions/core/status.ts";
import { budgetSummary } from "./budgets.ts";
import { cancelControl } from "./cancel.ts";
import type { DashboardDeps } from "./deps.ts";
import { html, isoTime, type Html } from "./html.ts";
import { stateBadge, stateClass, stateName } from "./states.ts";

export type JobLookup =
  | {
      readonly found: true;
      readonly job: Job;
      readonly sessions: readonly SessionWithKernels[];
      /** The recorded runs of each session that has any (an ended run, or an earlier one). */
      readonly runs: ReadonlyMap<string, readonly RunRecord[]>;
    }
  /** The id is a task's session: its job is elsewhere. */
  | { readonly found: false; readonly redirect: string }
  | { readonly found: false; readonly redirect?: undefined };

export async function readJob(store: DashboardDeps["store"], jobId: string): Promise<JobLookup> {
  let job = await store.getJob(jobId);
  if (job === undefined) {
    const found = await store.getSession(jobId);
    if (found === undefined) return { found: false };
    if (found.session.task !== undefined) {
      return { found: false, redirect: `/jobs/${encodeURIComponent(found.session.task.jobId)}` };
    }
    // A session submitted before jobs existed is the job of its own kernels (core/jobs.ts jobIdOf).
    const { session } = found;
    job = {
      id: session.id,
      spec: session.spec,
      sessionIds: [session.id],
      childIds: [],
      createdAtMs: session.createdAtMs,
    };
  }
  const sessions = await store.getSessions(job.sessionIds);
  // Only a session that ended or was retried has run records: the others cost no read.
  const withRuns = sessions.filter(
    ({ session }) => session.runIndex > 0 || TERMINAL_SESSION_STATUSES.has(session.status),
  );
  const runs = new Map(
    await Promise.all(
      withRuns.map(async ({ session }) => [session.id, await store.listRuns(session.id)] as const),
    ),
  );
  return { found: true, job, sessions, runs };
}

export function renderJobPage(
  job: Job,
  sessions: readonly SessionWithKernels[],
  notice?: string,
  runs: ReadonlyMap<string, readonly RunRecord[]> = new Map(),
): Html {
  const tasks = jobTasks(job, sessions);
  const settings = jobSettings(job.spec);
  const verdict = job.final ?? deriveJobState(tasks, settings.maxTaskFailures);
  const ended =
    sessions.length === job.sessionIds.length &&
    sessions.every(({ session }) => TERMINAL_SESSION_STATUSES.has(session.status));
  const bySession = new Map(sessions.map((s) => [s.session.id, s.session]));
  const counts = countTaskStates(tasks);
  const schedulingTimeout = job.spec.schedulingTimeout ?? job.spec.timeouts.pending;
  const rows = tasks.map((t) => {
    const session = bySession.get(t.sessionId);
    const href = `/sessions/${encodeURIComponent(t.sessionId)}#kernel-${t.kernelIndex}`;
    return html`<tr data-task="${t.index}">
      <td class="num"><a href="${href}">task ${t.index}</a></td>
      <td>
        ${stateBadge(t.state)}${t.state === TaskState.WORKER_FAILED ? html` <span class="muted">(worker failure)</span>` : ""}${t.state === TaskState.PENDING && t.reason !== undefined ? html`<span class="reason pending-reason">${t.reason}</span>` : ""}
      </td>
      <td>${t.finished ? "yes" : "no"}</td>
      <td>
        <a href="/sessions/${encodeURIComponent(t.sessionId)}">${t.sessionId}</a>
        <span class="muted">kernel ${t.kernelIndex}</span>
      </td>
      <td>${t.agentId !== undefined ? html`<a href="/agents#agent-${t.agentId}">${t.agentId}</a>` : ""}</td>
      <td class="num">${t.exitCode ?? ""}</td>
      <td>${t.condition ?? ""}</td>
      <td class="num">${t.runIndex}</td>
      <td>${session !== undefined ? budgetSummary(session) : ""}</td>
      <td>${t.state === TaskState.PENDING ? "" : (t.reason ?? "")}</td>
      <td>${isoTime(t.startedAtMs)}</td>
      <td>${isoTime(t.finishedAtMs)}</td>
    </tr>`;
  });
  return html`${notice !== undefined ? html`<p class="notice">${notice}</p>` : ""}
    <h1>Job ${job.id} <span class="muted">${job.spec.name}</span></h1>
    <p>
      ${stateBadge(verdict.state)} <span class="job-reason">${verdict.reason}</span>
      <span class="muted"
        >${job.final !== undefined ? `(final, recorded ${isoTime(job.final.atMs)})` : "(derived from the tasks now)"}</span
      >
    </p>
    ${ended ? "" : cancelControl("job", job.id, `job ${job.id} (${job.spec.name})`)}
    <dl class="facts">
      <dt>tasks</dt>
      <dd>
        ${job.spec.replicas}
        (${settings.coscheduled ? `co-scheduled: one gang, at most ${settings.perAgent} per agent` : "independent: one session each"})
      </dd>
      <dt>maxTaskFailures</dt>
      <dd>${settings.maxTaskFailures}</dd>
      <dt>scheduling timeout</dt>
      <dd>${schedulingTimeout} s</dd>
      <dt>queue / priority</dt>
      <dd>${job.spec.queue} / ${job.spec.priority}</dd>
      <dt>retry budgets</dt>
      <dd>
        failure ${job.spec.retry?.maxRetriesFailure ?? `${BUDGET_DEFAULTS.maxRetriesFailure} (default)`},
        preemption
        ${job.spec.retry?.maxRetriesPreemption ?? `${BUDGET_DEFAULTS.maxRetriesPreemption} (default)`}${job.spec.retry?.policies !== undefined ? `; policies ${job.spec.retry.policies.join(", ")}` : ""}
      </dd>
      <dt>parent</dt>
      <dd>
        ${job.parentId !== undefined ? html`<a href="/jobs/${encodeURIComponent(job.parentId)}">${job.parentId}</a>` : html`<span class="muted">none</span>`}
      </dd>
      <dt>children</dt>
      <dd>
        ${job.childIds.length === 0 ? html`<span class="muted">none</span>` : job.childIds.map((c, i) => html`${i > 0 ? ", " : ""}<a href="/jobs/${encodeURIComponent(c)}">${c}</a>`)}
      </dd>
      <dt>created</dt>
      <dd>${isoTime(job.createdAtMs)}</dd>
      <dt>sessions</dt>
      <dd><a href="/?job=${encodeURIComponent(job.id)}">${job.sessionIds.length} in the list</a></dd>
    </dl>
    <div class="counts">
      ${Object.values(TaskState)
        .filter((s) => counts[s] > 0)
        .map((s) => html`<span class="${stateClass(s)}">${stateName(s)} <b>${counts[s]}</b></span>`)}
    </div>
    <table class="tasks">
      <thead>
        <tr>
          <th class="num">task</th>
          <th>state</th>
          <th>finished</th>
          <th>session</th>
          <th>agent</th>
          <th class="num">exit</th>
          <th>condition</th>
          <th class="num">run</th>
          <th>retries used</th>
          <th>how it ended</th>
          <th>started</th>
          <th>finished</th>
        </tr>
      </thead>
      <tbody>
        ${rows}
      </tbody>
    </table>
    <h2>Attempts</h2>
    <table class="attempts">
      <thead>
        <tr>
          <th class="num">task</th>
          <th class="num">attempt</th>
          <th>state</th>
          <th>agent</th>
          <th class="num">exit</th>
          <th>condition</th>
          <th>category</th>
          <th>then</th>
          <th>started</th>
          <th>finished</th>
        </tr>
      </thead>
      <tbody>
        ${tasks.flatMap((t) => taskAttempts(t, runs.get(t.sessionId) ?? []).map(attemptRow))}
      </tbody>
    </table>`;
}

/** One attempt of a task: a run of its session, seen from the task's kernel. */
interface Attempt {
  readonly task: number;
  readonly runIndex: number;
  readonly state: TaskStateName;
  readonly agentId?: string;
  readonly exitCode?: number;
  readonly condition?: string;
  /** How the run's end classified its failure (the operators' categories, else the agent's). */
  readonly failureCategory?: string;
  readonly then: string;
  readonly startedAtMs?: number;
  readonly finishedAtMs?: number;
}

/** The task's attempts, oldest first: its session's recorded runs, then the one under way. */
export function taskAttempts(t: TaskView, runs: readonly RunRecord[]): Attempt[] {
  const recorded = [...runs]
    .sort((a, b) => a.runIndex - b.runIndex)
    .map((r): Attempt => {
      const k = r.kernels.find((rk) => rk.index === t.kernelIndex);
      return {
        task: t.index,
        runIndex: r.runIndex,
        // A kernel the run ended without an outcome of its own (a sibling's end) reads as the run.
        state: k?.outcome ?? r.outcome,
        ...(k?.agentId !== undefined ? { agentId: k.agentId } : {}),
        ...(k?.exitCode !== undefined ? { exitCode: k.exitCode } : {}),
        ...(k?.condition !== undefined ? { condition: k.condition } : {}),
        ...(k?.failureCategory !== undefined ? { failureCategory: k.failureCategory } : {}),
        then: r.decision === "retry" ? "retried" : "finished",
        ...(k?.startedAtMs !== undefined ? { startedAtMs: k.startedAtMs } : {}),
        finishedAtMs: k?.finishedAtMs ?? r.endedAtMs,
      };
    });
  const current = recorded.some((a) => a.runIndex === t.runIndex);
  if (current || t.state === TaskState.PENDING) return recorded;
  return [
    ...recorded,
    {
      task: t.index,
      runIndex: t.runIndex,
      state: t.state,
      ...(t.agentId !== undefined ? { agentId: t.agentId } : {}),
      ...(t.exitCode !== undefined ? { exitCode: t.exitCode } : {}),
      ...(t.condition !== undefined ? { condition: t.condition } : {}),
      then: t.finished ? "finished" : "under way",
      ...(t.startedAtMs !== undefined ? { startedAtMs: t.startedAtMs } : {}),
      ...(t.finishedAtMs !== undefined ? { finishedAtMs: t.finishedAtMs } : {}),
    },
  ];
}

function attemptRow(a: Attempt): Html {
  return html`<tr data-attempt="${a.task}/${a.runIndex}">
    <td class="num">task ${a.task}</td>
    <td class="num">${a.runIndex}</td>
    <td>
      ${stateBadge(a.state)}${a.state === AttemptOutcome.WORKER_FAILED ? html` <span class="muted">(worker failure)</span>` : ""}
    </td>
    <td>${a.agentId ?? ""}</td>
    <td class="num">${a.exitCode ?? ""}</td>
    <td>${a.condition ?? ""}</td>
    <td>${a.failureCategory ?? ""}</td>
    <td>${a.then}</td>
    <td>${isoTime(a.startedAtMs)}</td>
    <td>${isoTime(a.finishedAtMs)}</td>
  </tr>`;
}
