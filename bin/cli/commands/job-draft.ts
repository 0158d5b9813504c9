/**
 * Drafts (HPC Pack's Configuring): `cairn job create`, `job edit`, `job submit`
 * and `job delete`. Each validates what it can locally (the spec, as `submit` does; whether the id
 * is a draft), puts its event, and waits a few seconds for the control plane's verdict on that
 * very event: the draft stored at the version it asked for, or the refusal recorded for it.
 * `job submit` then is `submit` from the verdict on (followSubmission), under the draft's id.
 */
import { sameSpec } from "../../../functions/core/jobs.ts";
import type { JobDraft } from "../../../functions/core/drafts.ts";
import {
  DetailType,
  toPutEventsEntry,
  type EventDetailInput,
  type PutEventsEntry,
} from "../../../functions/core/events.ts";
import type { SessionSpec } from "../../../functions/core/model.ts";
import type { SessionSpecInput } from "../../../functions/core/spec.ts";
import { submissionSizeIssue } from "../../../functions/core/submission-size.ts";
import type { OutputFormat } from "../args.ts";
import type { SessionReader } from "../cairn-api.ts";
import { CliError, InvalidSpecError, JobNotFoundError, UsageError } from "../errors.ts";
import { ExitCode } from "../exit-codes.ts";
import { rejectionOf } from "../follow.ts";
import { printJson } from "../io.ts";
import type { CommandContext } from "./context.ts";
import { followSubmission } from "./submit.ts";
import { kernelLogReader } from "./logs.ts";

/** The control plane refused a draft's change; the reason names the field. */
export class DraftRefusedError extends CliError {
  override readonly name = "DraftRefusedError";
  readonly code = "REJECTED";
  readonly exitCode = ExitCode.Usage;
  readonly jobId: string;
  readonly reason: string;
  constructor(jobId: string, what: string, reason: string) {
    super(`${what} of draft ${jobId} was refused: ${reason}`);
    this.jobId = jobId;
    this.reason = reason;
  }
}

type SavedDetail = EventDetailInput<typeof DetailType.JobDraftSaved>;

/**
 * The event a create or an edit puts, checked as a submission's is before anything is sent.
 * `written`: the spec as written (before defaults), sent instead of the parsed one, as `submit` does.
 */
export function draftSavedEntry(
  busName: string,
  detail: SavedDetail & { spec: SessionSpec },
  written?: unknown,
): PutEventsEntry {
  const tooLarge = submissionSizeIssue(detail.jobId, detail.spec);
  if (tooLarge) {
    throw new InvalidSpecError(`the spec cannot be stored: ${tooLarge.path}: ${tooLarge.message}`, [
      tooLarge,
    ]);
  }
  try {
    return toPutEventsEntry(busName, DetailType.JobDraftSaved, {
      ...detail,
      spec: (written ?? detail.spec) as SessionSpecInput,
    });
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === "EVENT_TOO_LARGE" || code === "INVALID_EVENT") {
      throw new InvalidSpecError(`the spec cannot be stored: ${(error as Error).message}`);
    }
    throw error;
  }
}

type DraftStore = Pick<SessionReader, "getJob" | "listRejections" | "getDraft">;

/** What is under the id: the draft, or why there is no draft to change. */
async function requireDraft(store: DraftStore, jobId: string, command: string): Promise<JobDraft> {
  const draft = await store.getDraft?.(jobId);
  if (draft !== undefined) return draft;
  if ((await store.getJob(jobId)) !== undefined) {
    throw new UsageError(
      `job ${jobId} is not a draft: it was submitted (\`cairn job get ${jobId}\` shows it; ` +
        `\`cairn cancel ${jobId}\` cancels it)`,
      command,
    );
  }
  throw new JobNotFoundError(jobId, "there is no draft or job with this id");
}

type Verdict = { readonly kind: "done" } | { readonly kind: "pending"; readonly waitedMs: number };

/**
 * Polls (a bounded number of times, not a clock) until the refusal of this event is recorded
 * (thrown) or `done` holds of the draft as stored.
 */
async function awaitDraftVerdict(
  jobId: string,
  eventId: string | undefined,
  what: string,
  done: (draft: JobDraft | undefined) => boolean,
  ctx: CommandContext,
): Promise<Verdict> {
  const store = ctx.api.store;
  const pollMs = 500;
  const polls = 10;
  for (let poll = 0; ; poll++) {
    if (eventId !== undefined) {
      const reason = await rejectionOf(store, jobId, eventId);
      if (reason !== undefined) throw new DraftRefusedError(jobId, what, reason);
    }
    if (done(await store.getDraft?.(jobId))) return { kind: "done" };
    if (poll >= polls) return { kind: "pending", waitedMs: polls * pollMs };
    await ctx.io.sleep(pollMs);
  }
}

function pendingNote(ctx: CommandContext, jobId: string, what: string, verdict: Verdict): void {
  if (verdict.kind === "pending") {
    ctx.io.stderr(
      `${what} of draft ${jobId} is not confirmed after ${verdict.waitedMs / 1000} s; still pending ` +
        `(\`cairn job get ${jobId}\` shows the draft as stored)`,
    );
  }
}

export interface DraftSaveRequest {
  readonly jobId: string;
  readonly spec: SessionSpec;
  /** The spec as written (before defaults): what is sent. */
  readonly written?: unknown;
  readonly output: OutputFormat;
}

export async function runJobCreate(request: DraftSaveRequest, ctx: CommandContext): Promise<ExitCode> {
  const { jobId, spec } = request;
  const entry = draftSavedEntry(ctx.api.eventBusName, { jobId, spec }, request.written);
  const eventId = (await ctx.api.put(entry)) ?? undefined;
  const verdict = await awaitDraftVerdict(
    jobId,
    eventId,
    "creation",
    (d) => d !== undefined && d.version === 1 && sameSpec(d.spec, spec),
    ctx,
  );
  pendingNote(ctx, jobId, "creation", verdict);
  if (verdict.kind === "done")
    ctx.io.stderr(`draft ${jobId} stored (Configuring); \`cairn job submit ${jobId}\` queues it`);
  if (request.output === "json") printJson(ctx.io, { jobId, version: 1 });
  else ctx.io.stdout(jobId);
  return ExitCode.Ok;
}

export async function runJobEdit(request: DraftSaveRequest, ctx: CommandContext): Promise<ExitCode> {
  const { jobId, spec } = request;
  const stored = await requireDraft(ctx.api.store, jobId, "job edit");
  if (stored.submitting !== undefined) {
    throw new UsageError(`draft ${jobId} is being submitted; it can no longer change`, "job edit");
  }
  const version = stored.version + 1;
  const eventId =
    (await ctx.api.put(
      draftSavedEntry(
        ctx.api.eventBusName,
        { jobId, spec, expectedVersion: stored.version },
        request.written,
      ),
    )) ?? undefined;
  const verdict = await awaitDraftVerdict(
    jobId,
    eventId,
    "the edit",
    (d) => d !== undefined && d.version >= version && sameSpec(d.spec, spec),
    ctx,
  );
  pendingNote(ctx, jobId, "the edit", verdict);
  if (verdict.kind === "done") ctx.io.stderr(`draft ${jobId} is now version ${version}`);
  if (request.output === "json") printJson(ctx.io, { jobId, version });
  else ctx.io.stdout(jobId);
  return ExitCode.Ok;
}

export async function runJobDelete(
  request: { readonly jobId: string; readonly output: OutputFormat },
  ctx: CommandContext,
): Promise<ExitCode> {
  const { jobId } = request;
  const stored = await requireDraft(ctx.api.store, jobId, "job delete");
  const eventId =
    (await ctx.api.put(
      toPutEventsEntry(ctx.api.eventBusName, DetailType.JobDraftDeleted, {
        jobId,
        expectedVersion: stored.version,
      }),
    )) ?? undefined;
  const verdict = await awaitDraftVerdict(jobId, eventId, "deletion", (d) => d === undefined, ctx);
  pendingNote(ctx, jobId, "deletion", verdict);
  if (request.output === "json") printJson(ctx.io, { jobId, deleted: verdict.kind === "done" });
  else ctx.io.stdout(verdict.kind === "done" ? `deleted draft ${jobId}` : jobId);
  return ExitCode.Ok;
}

export interface DraftSubmitRequest {
  readonly jobId: string;
  readonly wait: boolean;
  readonly timeoutSeconds?: number;
  readonly streamLogs: boolean;
  readonly output: OutputFormat;
}

/** `cairn job submit`: from the verdict on, exactly `cairn submit` of the draft's spec under its id. */
export async function runJobSubmit(request: DraftSubmitRequest, ctx: CommandContext): Promise<ExitCode> {
  const { jobId } = request;
  const draft = await requireDraft(ctx.api.store, jobId, "job submit");
  const logs = request.streamLogs ? kernelLogReader(ctx.api.logs) : undefined;
  const eventId =
    (await ctx.api.put(toPutEventsEntry(ctx.api.eventBusName, DetailType.JobDraftSubmitted, { jobId }))) ??
    undefined;
  return followSubmission(
    {
      sessionId: jobId,
      idChosen: true,
      spec: draft.spec,
      wait: request.wait,
      streamLogs: request.streamLogs,
      output: request.output,
      ...(request.timeoutSeconds === undefined ? {} : { timeoutSeconds: request.timeoutSeconds }),
    },
    eventId,
    logs,
    ctx,
  );
}
