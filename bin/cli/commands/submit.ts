/**
 * `cairn submit`: puts a Session Submitted event for a spec validated beforehand (main.ts reads
 * it before connecting), then, with --wait, follows the session to its end.
 */
import { isDeepStrictEqual } from "node:util";
import { DetailType, toPutEventsEntry, type PutEventsEntry } from "../../../functions/core/events.ts";
import type { SessionSpec } from "../../../functions/core/model.ts";
import { sessionResult } from "../../../functions/core/sessions.ts";
import type { OutputFormat } from "../args.ts";
import { InvalidSpecError, UsageError } from "../errors.ts";
import { ExitCode } from "../exit-codes.ts";
import { followSession } from "../follow.ts";
import { printJson } from "../io.ts";
import type { CommandContext } from "./context.ts";
import { printSession } from "./get.ts";

export interface SubmitRequest {
  readonly sessionId: string;
  /** True when the user chose the id (--id): it may be taken. */
  readonly idChosen: boolean;
  readonly spec: SessionSpec;
  readonly wait: boolean;
  readonly timeoutSeconds?: number;
  readonly output: OutputFormat;
}

/**
 * Builds the event entry, so a spec too large for EventBridge fails before anything is sent
 * (the bus name does not count towards the size).
 */
export function submittedEntry(busName: string, sessionId: string, spec: SessionSpec): PutEventsEntry {
  try {
    return toPutEventsEntry(busName, DetailType.SessionSubmitted, { sessionId, spec });
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === "EVENT_TOO_LARGE" || code === "INVALID_EVENT") {
      throw new InvalidSpecError(`the spec cannot be submitted: ${(error as Error).message}`);
    }
    throw error;
  }
}

export async function runSubmit(request: SubmitRequest, ctx: CommandContext): Promise<ExitCode> {
  const { sessionId, spec } = request;
  const entry = submittedEntry(ctx.api.eventBusName, sessionId, spec);
  // Submission is idempotent on the id: resubmitting the same spec is a no-op, so say so; a
  // different spec under a taken id would be silently ignored by the control plane.
  const existing = request.idChosen ? await ctx.api.store.getSession(sessionId) : undefined;
  if (existing === undefined) {
    await ctx.api.put(entry);
  } else if (isDeepStrictEqual(existing.session.spec, spec)) {
    ctx.io.stderr(
      `session ${sessionId} already exists with this spec (${existing.session.status}); not sent again`,
    );
  } else {
    throw new UsageError(
      `--id ${sessionId} is taken by another session (name "${existing.session.spec.name}", ` +
        `${existing.session.status}); choose another id or leave --id out`,
      "submit",
    );
  }
  if (!request.wait) {
    if (request.output === "json") printJson(ctx.io, { sessionId });
    else ctx.io.stdout(sessionId);
    return ExitCode.Ok;
  }
  ctx.io.stderr(`submitted ${sessionId}; waiting for it to end (Ctrl-C stops waiting, not the session)`);
  const ended = await followSession(sessionId, {
    store: ctx.api.store,
    nowMs: () => ctx.io.nowMs(),
    sleep: (ms) => ctx.io.sleep(ms),
    progress: (line) => ctx.io.stderr(line),
    ...(request.timeoutSeconds === undefined ? {} : { timeoutSeconds: request.timeoutSeconds }),
  });
  await printSession(ended, request.output, ctx);
  return sessionResult(ended) === "succeeded" ? ExitCode.Ok : ExitCode.SessionDidNotSucceed;
}
