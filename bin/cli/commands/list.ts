/**
 * `cairn list`: recent sessions, or those in one status in queue order, filtered as the
 * dashboard filters them (name or id prefix, queue, job) and by age; `--watch` then prints each
 * session again whenever its state changes, as `kubectl get -w` does, until Ctrl-C.
 *
 * The status filter reads its status index and the job filter the job's sessions; the others
 * are applied to sessions read newest first (by status: in queue order), at most
 * LIST_SCAN_BUDGET per listing, and the listing says when it stopped there with more to read.
 */
import type { Session, SessionWithKernels } from "../../../functions/core/model.ts";
import type { ListInvocation, OutputFormat } from "../invocation.ts";
import type { CairnApi } from "../cairn-api.ts";
import { LIST_SCAN_BUDGET } from "../command-table.ts";
import { ExitCode } from "../exit-codes.ts";
import { printJson } from "../io.ts";
import { listLines, renderList, type ListStyle } from "../render.ts";
import { listView, summaryView, type SessionSummaryView } from "../views.ts";
import type { CommandContext } from "./context.ts";

/** How often --watch reads the list again. */
export const WATCH_INTERVAL_MS = 2000;
const SCAN_CHUNK = 100;

export interface Listing {
  readonly sessions: readonly SessionWithKernels[];
  /** More sessions match than --limit. */
  readonly truncated: boolean;
  /** The scan stopped at LIST_SCAN_BUDGET with sessions left to read. */
  readonly budgetSpent: boolean;
}

export async function runList(
  invocation: Omit<ListInvocation, "kind"> & { readonly output: OutputFormat },
  ctx: CommandContext,
): Promise<ExitCode> {
  const style: ListStyle = { view: invocation.view, colour: ctx.io.colour === true };
  const listing = await readListing(ctx.api, invocation, ctx.io.nowMs());
  const view = listView(listing.sessions, listing.truncated);
  if (invocation.output === "json") {
    if (invocation.watch) for (const s of view.sessions) ctx.io.stdout(JSON.stringify(s));
    else printJson(ctx.io, view);
  } else {
    ctx.io.stdout(renderList(view, invocation.status, ctx.io.nowMs(), style));
    if (listing.budgetSpent) ctx.io.stdout(budgetNote());
  }
  if (!invocation.watch) return ExitCode.Ok;

  const seen = new Map(view.sessions.map((s) => [s.sessionId, signature(s)]));
  // After an empty first listing, the header comes with the first row.
  let headerShown = view.sessions.length > 0;
  for (;;) {
    await ctx.io.sleep(WATCH_INTERVAL_MS);
    const next = await readListing(ctx.api, invocation, ctx.io.nowMs());
    const changed = next.sessions
      .map((found) => summaryView(found))
      .filter((s) => seen.get(s.sessionId) !== signature(s));
    for (const s of changed) seen.set(s.sessionId, signature(s));
    if (changed.length === 0) continue;
    if (invocation.output === "json") {
      for (const s of changed) ctx.io.stdout(JSON.stringify(s));
    } else {
      // The rows alone, as `kubectl get -w` prints them: the header is printed once.
      ctx.io.stdout(
        listLines(changed, ctx.io.nowMs(), style)
          .slice(headerShown ? 1 : 0)
          .join("\n"),
      );
      headerShown = true;
    }
  }
}

/** What a watcher is told about again: a change of state, of how it ended, or of why it waits. */
function signature(s: SessionSummaryView): string {
  return JSON.stringify([s.status, s.result, s.irisState, s.hpcState, s.pendingReason]);
}

function budgetNote(): string {
  return (
    `(read ${LIST_SCAN_BUDGET} sessions, the most a listing reads when filtering by name, queue or age; ` +
    "more may match: narrow it with --status, --job or --since)"
  );
}

export async function readListing(
  api: Pick<CairnApi, "store">,
  query: Omit<ListInvocation, "kind" | "watch" | "view">,
  nowMs: number,
): Promise<Listing> {
  const { store } = api;
  const matches = (s: Session) =>
    (query.status === undefined || s.status === query.status) &&
    (query.queue === undefined || s.spec.queue === query.queue) &&
    (query.namePrefix === undefined ||
      s.spec.name.startsWith(query.namePrefix) ||
      s.id.startsWith(query.namePrefix)) &&
    (query.sinceMs === undefined || s.createdAtMs >= nowMs - query.sinceMs) &&
    (query.olderThanMs === undefined || s.createdAtMs <= nowMs - query.olderThanMs);

  if (query.jobId !== undefined) {
    const job = await store.getJob(query.jobId);
    // A session submitted on its own is the job of its own kernels (core/jobs.ts jobIdOf).
    const ids = job?.sessionIds ?? [query.jobId];
    const found = (await store.getSessions(ids)).filter((s) => matches(s.session));
    return {
      sessions: found.slice(0, query.limit),
      truncated: found.length > query.limit,
      budgetSpent: false,
    };
  }

  const filtered =
    query.queue !== undefined ||
    query.namePrefix !== undefined ||
    query.sinceMs !== undefined ||
    query.olderThanMs !== undefined;
  const found: Session[] = [];
  let scanned = 0;
  let cursor: string | undefined;
  let exhausted = false;
  do {
    const size = filtered ? SCAN_CHUNK : query.limit + 1;
    const page = { limit: size, ...(cursor !== undefined ? { cursor } : {}) };
    const read =
      query.status === undefined
        ? await store.listRecentSessions(page)
        : await store.listSessionsByStatus(query.status, page);
    scanned += read.items.length;
    found.push(...read.items.filter(matches));
    cursor = read.cursor;
    // Newest first: once a session is older than --since, so is every one after it.
    const oldest = read.items.at(-1);
    if (query.status === undefined && query.sinceMs !== undefined && oldest !== undefined) {
      if (oldest.createdAtMs < nowMs - query.sinceMs) exhausted = true;
    }
  } while (
    cursor !== undefined &&
    !exhausted &&
    found.length <= query.limit &&
    (!filtered || scanned < LIST_SCAN_BUDGET)
  );
  const shown = found.slice(0, query.limit);
  const withKernels = await store.getSessions(shown.map((s) => s.id));
  const byId = new Map(withKernels.map((s) => [s.session.id, s]));
  return {
    // In the listing's order; a session deleted meanwhile (none are, today) is shown without kernels.
    sessions: shown.map((s) => byId.get(s.id) ?? { session: s, kernels: [] }),
    truncated: found.length > query.limit,
    budgetSpent: filtered && cursor !== undefined && !exhausted && found.length <= query.limit,
  };
}
