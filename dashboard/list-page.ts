/**
 * The sessions list: counts per status (the census), filters (status, queue, job, name) and a
 * page of sessions, newest first, or one status in queue order. Paging goes through the store's
 * own cursors, so a page costs the same at 10,000 sessions as at 10: the status filter reads its
 * status index, the job filter reads the job's sessions by id, and the queue and name filters,
 * which no index serves, scan at most SCAN_BUDGET sessions per page and say so.
 */
import { jobIdOf } from "../functions/core/jobs.ts";
import type { CensusCount } from "../functions/core/ports/session-census.ts";
import type { Session } from "../functions/core/model.ts";
import { sessionResult, type SessionResult } from "../functions/core/sessions.ts";
import { SESSION_STATUSES, TERMINAL_SESSION_STATUSES, type SessionStatus } from "../functions/core/status.ts";
import type { DashboardDeps } from "./deps.ts";
import { html, isoTime, query, type Html } from "./html.ts";
import { sessionBadge } from "./states.ts";
import type { StatusCounts } from "./status-counts.ts";

export const PAGE_SIZE = 50;
/** Sessions read per page at most when a filter no index serves (queue, name) is set. */
export const SCAN_BUDGET = 1000;
const SCAN_CHUNK = 100;
const JOB_CURSOR = "job:";

export interface ListFilter {
  readonly status?: SessionStatus;
  readonly queue?: string;
  readonly job?: string;
  readonly name?: string;
  readonly cursor?: string;
}

export interface ListResult {
  readonly sessions: readonly Session[];
  readonly cursor?: string;
  /** Sessions read to find these (more than shown when the queue or name filter is set). */
  readonly scanned: number;
  /** The scan stopped at SCAN_BUDGET with more left to read. */
  readonly budgetSpent: boolean;
}

/** Checks the list page's query: unknown statuses and over-long values are refused by name. */
export function parseListFilter(params: URLSearchParams): ListFilter {
  const text = (field: string, max: number): string | undefined => {
    const value = params.get(field)?.trim();
    if (value === undefined || value === "") return undefined;
    if (value.length > max) throw new FilterError(field, `must be at most ${max} characters`);
    return value;
  };
  const status = text("status", 20);
  if (status !== undefined && !(SESSION_STATUSES as readonly string[]).includes(status)) {
    throw new FilterError("status", `must be one of ${SESSION_STATUSES.join(", ")}, got "${status}"`);
  }
  const queue = text("queue", 64);
  const job = text("job", 63);
  const name = text("name", 128);
  const cursor = text("cursor", 2048);
  return {
    ...(status !== undefined ? { status: status as SessionStatus } : {}),
    ...(queue !== undefined ? { queue } : {}),
    ...(job !== undefined ? { job } : {}),
    ...(name !== undefined ? { name } : {}),
    ...(cursor !== undefined ? { cursor } : {}),
  };
}

export class FilterError extends Error {
  override readonly name = "FilterError";
  readonly code = "BAD_FILTER";
  readonly field: string;
  constructor(field: string, reason: string) {
    super(`${field}: ${reason}`);
    this.field = field;
  }
}

function matches(session: Session, filter: ListFilter): boolean {
  if (filter.status !== undefined && session.status !== filter.status) return false;
  if (filter.queue !== undefined && session.spec.queue !== filter.queue) return false;
  if (filter.name !== undefined) {
    const needle = filter.name.toLowerCase();
    if (!session.spec.name.toLowerCase().includes(needle) && !session.id.toLowerCase().includes(needle)) {
      return false;
    }
  }
  return true;
}

export async function listSessions(store: DashboardDeps["store"], filter: ListFilter): Promise<ListResult> {
  if (filter.job !== undefined) return listJobSessions(store, filter.job, filter);
  const read = (limit: number, cursor: string | undefined) => {
    const page = { limit, ...(cursor !== undefined ? { cursor } : {}) };
    return filter.status !== undefined
      ? store.listSessionsByStatus(filter.status, page)
      : store.listRecentSessions(page);
  };
  if (filter.queue === undefined && filter.name === undefined) {
    const page = await read(PAGE_SIZE, filter.cursor);
    return {
      sessions: page.items,
      ...(page.cursor !== undefined ? { cursor: page.cursor } : {}),
      scanned: page.items.length,
      budgetSpent: false,
    };
  }
  const found: Session[] = [];
  let scanned = 0;
  let cursor = filter.cursor;
  do {
    const page = await read(SCAN_CHUNK, cursor);
    scanned += page.items.length;
    found.push(...page.items.filter((s) => matches(s, filter)));
    cursor = page.cursor;
  } while (cursor !== undefined && found.length < PAGE_SIZE && scanned < SCAN_BUDGET);
  return {
    sessions: found,
    ...(cursor !== undefined ? { cursor } : {}),
    scanned,
    budgetSpent: cursor !== undefined && found.length < PAGE_SIZE,
  };
}

async function listJobSessions(
  store: DashboardDeps["store"],
  jobId: string,
  filter: ListFilter,
): Promise<ListResult> {
  const job = await store.getJob(jobId);
  // A session submitted before jobs existed is the job of its own kernels (core/jobs.ts jobIdOf).
  const ids = job?.sessionIds ?? [jobId];
  const offset = filter.cursor?.startsWith(JOB_CURSOR) ? Number(filter.cursor.slice(JOB_CURSOR.length)) : 0;
  if (!Number.isInteger(offset) || offset < 0)
    throw new FilterError("cursor", "is not a cursor of this list");
  const slice = ids.slice(offset, offset + PAGE_SIZE);
  const sessions = (await store.getSessions(slice)).map((s) => s.session);
  const next = offset + PAGE_SIZE;
  return {
    sessions: sessions.filter((s) => matches(s, filter)),
    ...(next < ids.length ? { cursor: `${JOB_CURSOR}${next}` } : {}),
    scanned: sessions.length,
    budgetSpent: false,
  };
}

/**
 * How each ended session ended (succeeded, failed, cancelled): TERMINATED alone says only that
 * it is over. One batch read of the ended sessions' kernels, which the result is judged from.
 */
async function howTheyEnded(
  store: DashboardDeps["store"],
  sessions: readonly Session[],
): Promise<ReadonlyMap<string, SessionResult>> {
  const ended = sessions.filter((s) => TERMINAL_SESSION_STATUSES.has(s.status)).map((s) => s.id);
  if (ended.length === 0) return new Map();
  const found = await store.getSessions(ended);
  return new Map(
    found.flatMap((f) => {
      const result = sessionResult(f);
      return result === undefined ? [] : [[f.session.id, result] as const];
    }),
  );
}

function resultBadge(result: SessionResult | undefined): Html | string {
  return result === undefined
    ? ""
    : html` <span class="badge result-${result}" data-result="${result}">${result}</span>`;
}

const NOTE_LENGTH = 160;

function note(session: Session): string {
  const text =
    session.status === "PENDING" && session.pendingReason !== undefined
      ? session.pendingReason
      : (session.cancelReason ?? session.lastHistory?.message ?? "");
  return text.length > NOTE_LENGTH ? `${text.slice(0, NOTE_LENGTH - 1)}…` : text;
}

/** How long the list waits for a count it has never had before it renders without it. */
const COUNT_WAIT_MS = 100;

export async function renderListPage(
  deps: DashboardDeps,
  statusCounts: StatusCounts,
  filter: ListFilter,
): Promise<Html> {
  // The page first, then the counts: a census of a large table must not slow the listing down
  // (both read the same store), and cached counts come back at once.
  const result = await listSessions(deps.store, filter);
  const endings = await howTheyEnded(deps.store, result.sessions);
  const { counts, errors } = await statusCounts.snapshot(COUNT_WAIT_MS);
  const known = SESSION_STATUSES.every((s) => counts[s] !== undefined);
  const total = SESSION_STATUSES.reduce((n, s) => n + (counts[s]?.count ?? 0), 0);
  const exact = SESSION_STATUSES.every((s) => counts[s]?.exact === true);
  const shown = (c: CensusCount | undefined) =>
    c === undefined ? "…" : c.exact ? String(c.count) : `${c.count}+`;
  const failures = Object.entries(errors).map(([s, why]) => `${s}: ${why}`);
  const keep = { queue: filter.queue, job: filter.job, name: filter.name };
  const countLinks: Html[] = [
    html`<a href="/${query(keep)}" class="${filter.status === undefined ? "on" : ""}" data-count="ALL"
      >all <b>${known ? `${total}${exact ? "" : "+"}` : "…"}</b></a
    >`,
    ...SESSION_STATUSES.map(
      (s) =>
        html`<a
          href="/${query({ ...keep, status: s })}"
          class="${filter.status === s ? "on" : ""}"
          data-count="${s}"
          ><span class="${`session-${s.toLowerCase()}`}">${s}</span> <b>${shown(counts[s])}</b></a
        >`,
    ),
  ];
  const rows = result.sessions.map((s) => {
    const job = jobIdOf(s);
    return html`<tr data-session="${s.id}">
      <td><a href="/sessions/${encodeURIComponent(s.id)}">${s.id}</a></td>
      <td class="name">${s.spec.name}</td>
      <td>
        ${sessionBadge(s.status)}${resultBadge(endings.get(s.id))}${s.cancelRequestedAtMs !== undefined && s.status !== "CANCELLED" ? html` <span class="muted">cancel requested</span>` : ""}
      </td>
      <td><a href="/jobs/${encodeURIComponent(job)}">${job}</a></td>
      <td>${s.spec.queue}</td>
      <td class="num">${s.spec.priority}</td>
      <td class="num">${s.runIndex}</td>
      <td>${isoTime(s.createdAtMs)}</td>
      <td class="note">${note(s)}</td>
    </tr>`;
  });
  const nextHref =
    result.cursor !== undefined
      ? `/${query({ ...keep, status: filter.status, cursor: result.cursor })}`
      : undefined;
  return html`<h1>Sessions</h1>
    <div class="counts">${countLinks}</div>
    ${failures.length > 0 ? html`<p class="error">Counting failed (${failures.join("; ")}); the last counts are shown.</p>` : ""}
    <form class="filters" method="get" action="/">
      <label
        >status<select name="status">
          <option value="">any</option>
          ${SESSION_STATUSES.map(
            (s) => html`<option value="${s}" ${filter.status === s ? html` selected` : ""}>${s}</option>`,
          )}
        </select></label
      >
      <label>queue<input name="queue" value="${filter.queue ?? ""}" size="12" /></label>
      <label>job<input name="job" value="${filter.job ?? ""}" size="20" /></label>
      <label>name or id contains<input name="name" value="${filter.name ?? ""}" size="20" /></label>
      <button type="submit">Filter</button>
      <a href="/">clear</a>
    </form>
    ${result.budgetSpent ? html`<p class="notice">Read ${result.scanned} sessions for this page and found ${result.sessions.length} that match; no index serves the queue and name filters, so a page reads at most ${SCAN_BUDGET}. The next page reads on.</p>` : ""}
    <table class="sessions">
      <thead>
        <tr>
          <th>session</th>
          <th>name</th>
          <th>status (Sokovan's)</th>
          <th>job</th>
          <th>queue</th>
          <th class="num">priority</th>
          <th class="num">run</th>
          <th>created</th>
          <th>pending reason / latest</th>
        </tr>
      </thead>
      <tbody>
        ${rows}
      </tbody>
    </table>
    ${result.sessions.length === 0 ? html`<p class="muted">No session matches.</p>` : ""}
    <nav class="pager">
      ${filter.cursor !== undefined ? html`<a href="/${query({ ...keep, status: filter.status })}">« first page</a> ` : ""}${nextHref !== undefined ? html`<a href="${nextHref}" rel="next">next page »</a>` : ""}
    </nav>`;
}
