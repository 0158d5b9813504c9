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
  if (found === undefined) throw await sessionNotFound(invocation.sessionId, ctx);
  await printSession(found, invocation.output, ctx);
  return ExitCode.Ok;
}

/**
 * The error for a missing session, pointing at the job commands when the id names a job of
 * independent tasks (whose sessions are `<id>-t<index>`, so no session has the job's id), or
 * saying why the control plane rejected the submission that asked for it.
 */
export async function sessionNotFound(sessionId: string, ctx: CommandContext): Promise<SessionNotFoundError> {
  const job = await ctx.api.store.getJob(sessionId);
  if (job === undefined) {
    // A submission the control plane refused leaves nothing but its rejection, which says why.
    const [latest] = (await ctx.api.store.listRejections?.(sessionId)) ?? [];
    if (latest === undefined) return new SessionNotFoundError(sessionId);
    const at = new Date(latest.atMs).toISOString();
    return new SessionNotFoundError(sessionId, `its submission was rejected at ${at}: ${latest.reason}`);
  }
  const count = job.sessionIds.length;
  const range =
    count === 1
      ? `${job.sessionIds[0] ?? ""}`
      : `${job.sessionIds[0] ?? ""} … ${job.sessionIds.at(-1) ?? ""}`;
  return new SessionNotFoundError(
    sessionId,
    `it is a job of ${job.spec.replicas} independent ${job.spec.replicas === 1 ? "task" : "tasks"} ` +
      `(${count === 1 ? "session" : "sessions"} ${range}); see \`cairn job get ${sessionId}\` and \`cairn tasks ${sessionId}\``,
  );
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
