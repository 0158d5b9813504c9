/**
 * `cairn submit`: puts a Session Submitted event for a spec validated beforehand (main.ts reads
 * it before connecting), waits a few seconds for the control plane to accept or reject it (a
 * rejection exits non-zero with the reason), then, with --wait, follows the session (or the job of many tasks) to its
 * end, with --stream-logs printing the tasks' output meanwhile.
 */
import { isDeepStrictEqual } from "node:util";
import { DetailType, toPutEventsEntry, type PutEventsEntry } from "../../../functions/core/events.ts";
import type { SessionSpec } from "../../../functions/core/model.ts";
import type { SessionSpecInput } from "../../../functions/core/spec.ts";
import { jobSettings } from "../../../functions/core/jobs.ts";
import { sessionResult } from "../../../functions/core/sessions.ts";
import { executorOf, Executor } from "../../../functions/core/fargate.ts";
import { isFargatePool } from "../../../functions/core/fargate-pool.ts";
import { submissionFitWarning } from "../../../functions/core/submission-fit.ts";
import { submissionSizeIssue } from "../../../functions/core/submission-size.ts";
import { JobState } from "../../../functions/core/status.ts";
import type { OutputFormat } from "../args.ts";
import { InvalidSpecError, UsageError } from "../errors.ts";
import { ExitCode } from "../exit-codes.ts";
import { followJob } from "../follow-job.ts";
import { awaitVerdict, followSession, rejectionOf, SubmissionRejectedError } from "../follow.ts";
import { printJson } from "../io.ts";
import { isSingleSessionJob, readJob, taskRefs } from "../job-read.ts";
import type { KernelLogReader } from "../kernel-log-reader.ts";
import type { CommandContext } from "./context.ts";
import { printSession } from "./get.ts";
import { printJob } from "./job.ts";
import { followTaskLogs, kernelLogReader, logPrinter } from "./logs.ts";

export interface SubmitRequest {
  readonly sessionId: string;
  /** True when the user chose the id (--id): it may be taken. */
  readonly idChosen: boolean;
  readonly spec: SessionSpec;
  /** The spec as written (before defaults), sent so a job template's defaults apply. */
  readonly written?: unknown;
  readonly wait: boolean;
  readonly timeoutSeconds?: number;
  /** With wait: print every task's output lines as they are written. */
  readonly streamLogs: boolean;
  readonly output: OutputFormat;
}

/**
 * Builds the event entry, so a spec too large for EventBridge fails before anything is sent
 * (the bus name does not count towards the size).
 */
export function submittedEntry(
  busName: string,
  sessionId: string,
  spec: SessionSpec,
  written?: unknown,
): PutEventsEntry {
  // Refused before sending if a message it would cause later (a kernel command) could never be sent.
  const tooLarge = submissionSizeIssue(sessionId, spec);
  if (tooLarge) {
    throw new InvalidSpecError(`the spec cannot be submitted: ${tooLarge.path}: ${tooLarge.message}`, [
      tooLarge,
    ]);
  }
  try {
    return toPutEventsEntry(busName, DetailType.SessionSubmitted, {
      sessionId,
      spec: (written ?? spec) as SessionSpecInput,
    });
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === "EVENT_TOO_LARGE" || code === "INVALID_EVENT") {
      throw new InvalidSpecError(`the spec cannot be submitted: ${(error as Error).message}`);
    }
    throw error;
  }
}

export async function runSubmit(request: SubmitRequest, ctx: CommandContext): Promise<ExitCode> {
  const { sessionId: jobId, spec } = request;
  const entry = submittedEntry(ctx.api.eventBusName, jobId, spec, request.written);
  // Before anything is sent: without a kernel log group there are no logs to stream.
  const logs = request.streamLogs ? kernelLogReader(ctx.api.logs) : undefined;
  // Submission is idempotent on the id: resubmitting the same spec is a no-op, so say so; a
  // different spec under a taken id would be silently ignored by the control plane.
  const existing = request.idChosen ? await storedSubmission(jobId, ctx) : undefined;
  let eventId: string | undefined;
  if (existing === undefined) {
    eventId = (await ctx.api.put(entry)) ?? undefined;
  } else if (isDeepStrictEqual(existing.spec, spec)) {
    ctx.io.stderr(
      `${existing.what} ${jobId} already exists with this spec (${existing.state}); not sent again`,
    );
  } else {
    throw new UsageError(
      `--id ${jobId} is taken by another ${existing.what} (name "${existing.spec.name}", ` +
        `${existing.state}); choose another id or leave --id out`,
      "submit",
    );
  }
  return followSubmission(request, eventId, logs, ctx);
}

/**
 * After a submission's event was put (`eventId`; undefined when nothing was sent): its verdict,
 * then with --wait the session or job to its end. Shared with `cairn job submit` (a draft).
 */
export async function followSubmission(
  request: SubmitRequest,
  eventId: string | undefined,
  logs: KernelLogReader | undefined,
  ctx: CommandContext,
): Promise<ExitCode> {
  const { sessionId: jobId, spec } = request;
  // The control plane may refuse what the spec's schema allowed (an unknown queue or parent, a
  // taken id): wait a few seconds for its verdict, so a refusal is an error here, not silence.
  let rejection: (() => Promise<string | undefined>) | undefined;
  if (eventId !== undefined) {
    const sentEventId = eventId;
    const verdict = await awaitVerdict(jobId, sentEventId, spec, {
      store: ctx.api.store,
      sleep: (ms) => ctx.io.sleep(ms),
    });
    if (verdict.kind === "rejected") throw new SubmissionRejectedError(jobId, verdict.reason);
    // Accepted (or still pending): say now if it can never run where it would be placed.
    const warning = await fitWarning(spec, ctx);
    if (warning !== undefined) ctx.io.stderr(`cairn: warning: ${jobId} was accepted, but ${warning}`);
    if (verdict.kind === "pending") {
      ctx.io.stderr(
        `${jobId} is not accepted yet after ${verdict.waitedMs / 1000} s; still pending ` +
          `(\`cairn get ${jobId}\` says whether it was accepted or rejected)`,
      );
      rejection = () => rejectionOf(ctx.api.store, jobId, sentEventId);
    }
  }
  if (!request.wait) {
    if (request.output === "json") printJson(ctx.io, { sessionId: jobId });
    else ctx.io.stdout(jobId);
    return ExitCode.Ok;
  }
  const single = isSingleSessionJob(spec);
  ctx.io.stderr(
    single
      ? `submitted ${jobId}; waiting for it to end (Ctrl-C stops waiting, not the session)`
      : `submitted job ${jobId} of ${spec.replicas} ${jobSettings(spec).coscheduled ? "co-scheduled" : "independent"} ` +
          "tasks; waiting for it to end (Ctrl-C stops waiting, not the job)",
  );
  // With --stream-logs, a task's output reaches its log stream (and this process) a little after
  // it was written: status lines from the first one leaving RUNNING on are held until the output
  // is drained, so no task's end is printed before its own lines.
  const held: string[] | undefined = logs === undefined ? undefined : [];
  let holding = false;
  const flush = () => {
    for (const line of held?.splice(0) ?? []) ctx.io.stderr(line);
  };
  const follow = {
    nowMs: () => ctx.io.nowMs(),
    sleep: (ms: number) => ctx.io.sleep(ms),
    progress: (line: string) => {
      holding ||= held !== undefined && LEAVES_RUNNING.test(line);
      if (holding) held!.push(line);
      else ctx.io.stderr(line);
    },
    ...(request.timeoutSeconds === undefined ? {} : { timeoutSeconds: request.timeoutSeconds }),
    ...(rejection === undefined ? {} : { rejection }),
  };
  const stop = new AbortController();
  const streaming = logs === undefined ? undefined : streamLogs(jobId, spec, logs, stop.signal, ctx);
  try {
    if (single) {
      const ended = await followSession(jobId, { ...follow, store: ctx.api.store });
      await streaming;
      flush();
      await printSession(ended, request.output, ctx);
      return sessionResult(ended) === "succeeded" ? ExitCode.Ok : ExitCode.SessionDidNotSucceed;
    }
    const ended = await followJob(jobId, { ...follow, store: ctx.api.store });
    await streaming;
    flush();
    printJob(ended, request.output, ctx);
    return ended.state === JobState.SUCCEEDED ? ExitCode.Ok : ExitCode.SessionDidNotSucceed;
  } finally {
    // A timeout (or any failure) stops the log followers too; after a normal end they are done.
    stop.abort();
    await streaming;
    flush();
  }
}

/** A progress line of a session (or a job's task, `[task N] …`) leaving RUNNING. */
const LEAVES_RUNNING = /^(\[task \d+\] )?RUNNING → /;

/**
 * Why the spec could never be placed on the agents registered now (or its queue's Fargate quota),
 * decided by the core (submission-fit.ts); undefined when it could, or when that cannot be read:
 * the warning is advice, never a reason to fail the submission.
 */
async function fitWarning(spec: SessionSpec, ctx: CommandContext): Promise<string | undefined> {
  try {
    const fargate = executorOf(spec) === Executor.fargate;
    const agents = fargate ? [] : await ctx.api.agents.listAgents();
    const queue = fargate ? await ctx.api.admin.getQueue(spec.queue) : undefined;
    return submissionFitWarning(spec, {
      agents: agents.filter((a) => !isFargatePool(a.id) && a.lostAtMs === undefined && a.draining !== true),
      ...(queue?.fargate !== undefined ? { fargateVcpuQuota: queue.fargate.vcpuQuota } : {}),
    });
  } catch {
    return undefined;
  }
}

/** What is stored under the id: a job (any submission now), or a session from before jobs. */
async function storedSubmission(
  id: string,
  ctx: CommandContext,
): Promise<{ what: string; spec: SessionSpec; state: string } | undefined> {
  const job = await ctx.api.store.getJob(id);
  if (job !== undefined) {
    const { state } = await readJob(ctx.api.store, id);
    return { what: isSingleSessionJob(job.spec) ? "session" : "job", spec: job.spec, state };
  }
  const found = await ctx.api.store.getSession(id);
  return found === undefined
    ? undefined
    : { what: "session", spec: found.session.spec, state: found.session.status };
}

/**
 * Streams every task's lines, `[task N]`-prefixed, while the wait goes on. A failure to read logs
 * is reported and does not end the wait: the job matters more than its output.
 */
async function streamLogs(
  jobId: string,
  spec: SessionSpec,
  logs: KernelLogReader,
  signal: AbortSignal,
  ctx: CommandContext,
): Promise<void> {
  try {
    await followTaskLogs(
      jobId,
      taskRefs(jobId, spec),
      { store: ctx.api.store, logs, io: ctx.io, announceWaiting: false, signal },
      logPrinter(ctx.io, "text", spec.replicas > 1),
    );
  } catch (error) {
    ctx.io.stderr(`cairn: logs: ${error instanceof Error ? error.message : String(error)}`);
  }
}
