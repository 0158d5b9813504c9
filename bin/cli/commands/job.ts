/** `cairn job get JOB_ID` (a job, or a draft), `cairn tasks JOB_ID` and `cairn task JOB_ID INDEX`. */
import type { OutputFormat } from "../args.ts";
import { JobNotFoundError } from "../errors.ts";
import { ExitCode } from "../exit-codes.ts";
import { printJson } from "../io.ts";
import { readJob, taskOf, type JobSnapshot } from "../job-read.ts";
import { renderJob, renderTask, renderTasks } from "../job-render.ts";
import { jobView, taskDetailView, tasksView } from "../job-views.ts";
import type { CommandContext } from "./context.ts";
import { draftView, renderDraft } from "../draft-views.ts";

interface JobInvocation {
  readonly jobId: string;
  readonly output: OutputFormat;
}

export async function runJobGet(invocation: JobInvocation, ctx: CommandContext): Promise<ExitCode> {
  let snapshot: JobSnapshot;
  try {
    snapshot = await readJob(ctx.api.store, invocation.jobId);
  } catch (error) {
    // No job under the id: a draft is shown as one, Configuring.
    const draft =
      error instanceof JobNotFoundError ? await ctx.api.store.getDraft?.(invocation.jobId) : undefined;
    if (draft === undefined) throw error;
    const view = draftView(draft);
    if (invocation.output === "json") printJson(ctx.io, view);
    else ctx.io.stdout(renderDraft(view, ctx.io.nowMs()));
    return ExitCode.Ok;
  }
  printJob(snapshot, invocation.output, ctx);
  return ExitCode.Ok;
}

/** Shared with `submit --wait` of a job of many tasks, whose final summary is what `job get` prints. */
export function printJob(snapshot: JobSnapshot, output: OutputFormat, ctx: CommandContext): void {
  const view = jobView(snapshot);
  if (output === "json") printJson(ctx.io, view);
  else ctx.io.stdout(renderJob(view, ctx.io.nowMs()));
}

export async function runTasks(invocation: JobInvocation, ctx: CommandContext): Promise<ExitCode> {
  const view = tasksView(await readJob(ctx.api.store, invocation.jobId));
  if (invocation.output === "json") printJson(ctx.io, view);
  else ctx.io.stdout(renderTasks(view, ctx.io.nowMs()));
  return ExitCode.Ok;
}

export async function runTask(
  invocation: JobInvocation & { readonly index: number },
  ctx: CommandContext,
): Promise<ExitCode> {
  const snapshot = await readJob(ctx.api.store, invocation.jobId);
  const task = taskOf(snapshot, invocation.index);
  const kernel = snapshot.sessions
    .find(({ session }) => session.id === task.sessionId)
    ?.kernels.find((k) => k.index === task.kernelIndex);
  const runs = await ctx.api.store.listRuns(task.sessionId);
  const view = taskDetailView(snapshot, task, kernel, runs);
  if (invocation.output === "json") printJson(ctx.io, view);
  else ctx.io.stdout(renderTask(view, ctx.io.nowMs()));
  return ExitCode.Ok;
}
