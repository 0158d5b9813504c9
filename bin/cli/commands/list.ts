/** `cairn list [--status S] [--limit N]`: recent sessions, or those in one status in queue order. */
import type { SessionStatus } from "../../../functions/core/status.ts";
import type { OutputFormat } from "../args.ts";
import { ExitCode } from "../exit-codes.ts";
import { printJson } from "../io.ts";
import { renderList } from "../render.ts";
import { listView } from "../views.ts";
import type { CommandContext } from "./context.ts";

export async function runList(
  invocation: { readonly status?: SessionStatus; readonly limit: number; readonly output: OutputFormat },
  ctx: CommandContext,
): Promise<ExitCode> {
  const { status, limit } = invocation;
  const page =
    status === undefined
      ? await ctx.api.store.listRecentSessions({ limit })
      : await ctx.api.store.listSessionsByStatus(status, { limit });
  const view = listView(page.items, page.cursor !== undefined);
  if (invocation.output === "json") printJson(ctx.io, view);
  else ctx.io.stdout(renderList(view, status, ctx.io.nowMs()));
  return ExitCode.Ok;
}
