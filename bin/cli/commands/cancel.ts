/**
 * `cairn cancel SESSION_ID [--reason TEXT] [--force]`: puts a cancel request for a session, or a
 * job of independent tasks, that exists and has not ended. `--force` asks for HPC Pack's Force
 * Cancel: the run's end is not waited for.
 */
import { DetailType, toPutEventsEntry } from "../../../functions/core/events.ts";
import { sessionResult } from "../../../functions/core/sessions.ts";
import { TERMINAL_SESSION_STATUSES } from "../../../functions/core/status.ts";
import type { OutputFormat } from "../args.ts";
import { SessionNotFoundError } from "../errors.ts";
import { ExitCode } from "../exit-codes.ts";
import { printJson } from "../io.ts";
import { readJob } from "../job-read.ts";
import type { CommandContext } from "./context.ts";

interface CancelInvocation {
  readonly sessionId: string;
  readonly reason?: string;
  readonly force: boolean;
  readonly output: OutputFormat;
}

/** The request's detail: the reason and the force flag only when given. */
function cancelDetail({ sessionId, reason, force }: CancelInvocation) {
  return { sessionId, ...(reason === undefined ? {} : { reason }), ...(force ? { force } : {}) };
}

export async function runCancel(invocation: CancelInvocation, ctx: CommandContext): Promise<ExitCode> {
  const { sessionId } = invocation;
  const found = await ctx.api.store.getSession(sessionId);
  if (found === undefined) {
    // A job of independent tasks has no session of its id; the control plane cancels every task.
    if ((await ctx.api.store.getJob(sessionId)) === undefined) throw new SessionNotFoundError(sessionId);
    return cancelJob(invocation, ctx);
  }
  const status = found.session.status;
  const ended = TERMINAL_SESSION_STATUSES.has(status);
  if (!ended) {
    await ctx.api.put(
      toPutEventsEntry(ctx.api.eventBusName, DetailType.SessionCancelRequested, cancelDetail(invocation)),
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
      `${invocation.force ? "force cancel" : "cancel"} requested for session ${sessionId} (it was ${status}); follow it with \`cairn get ${sessionId}\``,
    );
  }
  return ExitCode.Ok;
}

async function cancelJob(invocation: CancelInvocation, ctx: CommandContext): Promise<ExitCode> {
  const { sessionId: jobId } = invocation;
  const snapshot = await readJob(ctx.api.store, jobId);
  const live =
    snapshot.job.sessionIds.length -
    snapshot.sessions.filter(({ session }) => TERMINAL_SESSION_STATUSES.has(session.status)).length;
  if (live > 0) {
    await ctx.api.put(
      toPutEventsEntry(ctx.api.eventBusName, DetailType.SessionCancelRequested, cancelDetail(invocation)),
    );
  }
  if (invocation.output === "json") {
    printJson(ctx.io, { jobId, cancelRequested: live > 0, state: snapshot.state });
  } else if (live === 0) {
    ctx.io.stdout(`job ${jobId} has already ended (${snapshot.state}); nothing to cancel`);
  } else {
    const count = snapshot.job.sessionIds.length;
    ctx.io.stdout(
      `${invocation.force ? "force cancel" : "cancel"} requested for job ${jobId} (${live} of ${count} ${count === 1 ? "task" : "tasks"} not ended; ` +
        `it was ${snapshot.state}); follow it with \`cairn job get ${jobId}\``,
    );
  }
  return ExitCode.Ok;
}
