/** `cairn cancel SESSION_ID [--reason TEXT]`: puts a cancel request for a session that exists. */
import { DetailType, toPutEventsEntry } from "../../../functions/core/events.ts";
import { sessionResult } from "../../../functions/core/sessions.ts";
import { TERMINAL_SESSION_STATUSES } from "../../../functions/core/status.ts";
import type { OutputFormat } from "../args.ts";
import { SessionNotFoundError } from "../errors.ts";
import { ExitCode } from "../exit-codes.ts";
import { printJson } from "../io.ts";
import type { CommandContext } from "./context.ts";

export async function runCancel(
  invocation: { readonly sessionId: string; readonly reason?: string; readonly output: OutputFormat },
  ctx: CommandContext,
): Promise<ExitCode> {
  const { sessionId, reason } = invocation;
  const found = await ctx.api.store.getSession(sessionId);
  if (found === undefined) throw new SessionNotFoundError(sessionId);
  const status = found.session.status;
  const ended = TERMINAL_SESSION_STATUSES.has(status);
  if (!ended) {
    await ctx.api.put(
      toPutEventsEntry(ctx.api.eventBusName, DetailType.SessionCancelRequested, {
        sessionId,
        ...(reason === undefined ? {} : { reason }),
      }),
    );
  }
  if (invocation.output === "json") {
    printJson(ctx.io, { sessionId, cancelRequested: !ended, status });
  } else if (ended) {
    ctx.io.stdout(
      `session ${sessionId} has already ended (${status}, ${sessionResult(found) ?? "no result"}); nothing to cancel`,
    );
  } else {
    ctx.io.stdout(
      `cancel requested for session ${sessionId} (it was ${status}); follow it with \`cairn get ${sessionId}\``,
    );
  }
  return ExitCode.Ok;
}
