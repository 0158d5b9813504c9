/** `cairn get SESSION_ID`: one session with its finished runs, as a block or as JSON. */
import type { SessionWithKernels } from "../../../functions/core/model.ts";
import type { OutputFormat } from "../args.ts";
import { SessionNotFoundError } from "../errors.ts";
import { ExitCode } from "../exit-codes.ts";
import { printJson } from "../io.ts";
import { renderSession } from "../render.ts";
import { sessionView } from "../views.ts";
import type { CommandContext } from "./context.ts";

export async function runGet(
  invocation: { readonly sessionId: string; readonly output: OutputFormat },
  ctx: CommandContext,
): Promise<ExitCode> {
  const found = await ctx.api.store.getSession(invocation.sessionId);
  if (found === undefined) throw new SessionNotFoundError(invocation.sessionId);
  await printSession(found, invocation.output, ctx);
  return ExitCode.Ok;
}

/** Shared with `submit --wait`, whose final summary is exactly what `get` prints. */
export async function printSession(
  found: SessionWithKernels,
  output: OutputFormat,
  ctx: CommandContext,
): Promise<void> {
  const runs = await ctx.api.store.listRuns(found.session.id);
  const view = sessionView(found, ctx.api.stateMachineArn, runs);
  if (output === "json") printJson(ctx.io, view);
  else ctx.io.stdout(renderSession(view, ctx.io.nowMs()));
}
