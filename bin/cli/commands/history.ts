/** `cairn history SESSION_ID`: the session's lifecycle records and finished runs, as tables or JSON. */
import type { HistoryRecord } from "../../../functions/core/model.ts";
import type { OutputFormat } from "../args.ts";
import type { SessionReader } from "../cairn-api.ts";
import { ExitCode } from "../exit-codes.ts";
import { printJson } from "../io.ts";
import { renderHistory } from "../render.ts";
import { historyView } from "../views.ts";
import type { CommandContext } from "./context.ts";
import { sessionNotFound } from "./get.ts";

/** The store's page size for history reads. */
const PAGE = 1000;

export async function runHistory(
  invocation: { readonly sessionId: string; readonly output: OutputFormat },
  ctx: CommandContext,
): Promise<ExitCode> {
  const { sessionId } = invocation;
  // An empty history and a missing session look alike; only the session item tells them apart.
  if ((await ctx.api.store.getSession(sessionId)) === undefined) throw await sessionNotFound(sessionId, ctx);
  const [records, runs] = await Promise.all([
    allHistory(ctx.api.store, sessionId),
    ctx.api.store.listRuns(sessionId),
  ]);
  const view = historyView(sessionId, records, runs);
  if (invocation.output === "json") printJson(ctx.io, view);
  else ctx.io.stdout(renderHistory(view));
  return ExitCode.Ok;
}

async function allHistory(
  store: Pick<SessionReader, "listHistory">,
  sessionId: string,
): Promise<HistoryRecord[]> {
  const records: HistoryRecord[] = [];
  for (;;) {
    const fromSeq = records.length === 0 ? 0 : (records.at(-1)?.seq ?? 0) + 1;
    const page = await store.listHistory(sessionId, { fromSeq, limit: PAGE });
    records.push(...page);
    if (page.length < PAGE) return records;
  }
}
