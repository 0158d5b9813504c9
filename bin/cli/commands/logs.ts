/**
 * `cairn logs JOB_ID [--task INDEX] [--follow]`: the tasks' output, read from CloudWatch Logs
 * where the agents ship it (task-logs.ts), locally and against a stack alike. Program output
 * keeps its stream (stdout lines on stdout, stderr lines on stderr); notes about tasks go to
 * stderr as `cairn: task N: …`.
 */
import type { OutputFormat } from "../args.ts";
import type { SessionReader } from "../cairn-api.ts";
import { JobNotFoundError, LogsUnavailableError, NoLogsError } from "../errors.ts";
import { ExitCode } from "../exit-codes.ts";
import type { CliIo } from "../io.ts";
import { readJob, taskOf, type JobSnapshot, type TaskRef } from "../job-read.ts";
import type { KernelLogsApi } from "../cairn-api.ts";
import {
  awaitRunOutput,
  callPacer,
  followTaskLog,
  locateTaskLogs,
  readRunLines,
  runStreamsPrefix,
  sharedSessionReads,
  sharedStreamListing,
  taskLogJson,
  taskLogText,
  unreadNote,
  type RunStream,
  type TaskLogEvent,
} from "../task-logs.ts";
import type { KernelLogReader } from "../kernel-log-reader.ts";
import type { CommandContext } from "./context.ts";
import { terminalOutputLine } from "../terminal-text.ts";

/** How often followers look at the store and the streams. */
export const LOG_POLL_MS = 250;
/**
 * How long after a task's run ended its output is taken to be all readable, when the run's agent
 * did not say how many events its stream holds (a Fargate task's stream, written by ECS's
 * awslogs driver; an older agent). CloudWatch Logs makes events readable a while after
 * PutLogEvents accepted them (it is eventually consistent and documents no bound; in practice
 * within a second or two), so a follower reads such a run's stream until this long after it saw
 * the run end, and `cairn logs` of a task that ended less than this ago waits out the rest
 * before it reads.
 */
export const LOG_SETTLE_MS = 2_000;
/**
 * How long after a run ended its output is waited for at most, when its agent said how many
 * events its stream holds (Kernel.logEventCount): reading stops as soon as that many were read,
 * so this is paid only while CloudWatch Logs still hides some. Long enough to outlast lags of
 * several seconds with a wide margin, short enough that `submit --wait` and `logs --follow` do
 * not hang on a stream that will not fill (its events expired with the log group's retention):
 * then the CLI says how many events it did not read.
 */
export const LOG_MAX_WAIT_MS = 30_000;
/**
 * CloudWatch Logs reads per second, all followers together: GetLogEvents and DescribeLogStreams
 * are throttled per account and region (tens per second), and the user may run other readers.
 */
export const LOG_READS_PER_SECOND = 10;
/**
 * `logs --follow` right after `submit` may run before the control plane has recorded the job
 * (submission is an event): an unknown job is looked for this long before it is not found.
 */
export const SUBMISSION_GRACE_MS = 10_000;

export interface LogsInvocation {
  readonly jobId: string;
  /** Undefined: every task. */
  readonly task?: number;
  readonly follow: boolean;
  readonly output: OutputFormat;
}

/** The reader, or why this connection has none (thrown before anything is read or sent). */
export function kernelLogReader(logs: KernelLogsApi): KernelLogReader {
  if (!logs.readable) throw new LogsUnavailableError(logs.why);
  return logs.reader;
}

export async function runLogs(invocation: LogsInvocation, ctx: CommandContext): Promise<ExitCode> {
  // Before any read: without a log group there is nothing to find, whatever the job.
  const logs = kernelLogReader(ctx.api.logs);
  const { jobId } = invocation;
  const snapshot = invocation.follow
    ? await readJobOnceRecorded(ctx.api.store, jobId, ctx.io)
    : await readJob(ctx.api.store, jobId);
  const tasks = invocation.task === undefined ? snapshot.tasks : [taskOf(snapshot, invocation.task)];
  const refs: TaskRef[] = tasks.map((t) => ({
    index: t.index,
    sessionId: t.sessionId,
    kernelIndex: t.kernelIndex,
  }));
  const print = logPrinter(
    ctx.io,
    invocation.output,
    invocation.task === undefined && snapshot.tasks.length > 1,
  );

  if (invocation.follow) {
    const ran = await followTaskLogs(
      jobId,
      refs,
      { store: ctx.api.store, logs, io: ctx.io, announceWaiting: true },
      print,
    );
    // Every task ended without running (the notes said why): as without --follow, nothing to show.
    if (ran === 0) {
      throw new NoLogsError(
        refs.length === 1
          ? `task ${refs[0]?.index ?? 0} of job ${jobId} never ran: no logs`
          : `no task of job ${jobId} ran: no logs`,
      );
    }
    return ExitCode.Ok;
  }
  const reads = await locateTaskLogs(jobId, refs, { store: ctx.api.store, logs });
  if (reads.every((r) => !r.started)) {
    const first = reads[0];
    const why = first === undefined || first.started ? "" : first.why;
    const never = first !== undefined && !first.started && first.finished;
    throw new NoLogsError(
      invocation.task !== undefined || refs.length === 1
        ? `task ${refs[0]?.index ?? 0} of job ${jobId} ${never ? "never ran" : "has not started yet"} (${why}): no logs`
        : `no task of job ${jobId} has started yet (task 0: ${why}): no logs`,
    );
  }
  // A run that ended moments ago may have lines CloudWatch Logs does not show yet: each is waited
  // for (all at once) until its stream shows as many events as its agent put there.
  const pace = callPacer(ctx.io, LOG_READS_PER_SECOND);
  const found = await Promise.all(
    reads.map((read) =>
      read.started
        ? awaitRunOutput(read, {
            logs,
            pace,
            sleep: (ms) => ctx.io.sleep(ms),
            nowMs: () => ctx.io.nowMs(),
            pollMs: LOG_POLL_MS,
            settleMs: LOG_SETTLE_MS,
            maxWaitMs: LOG_MAX_WAIT_MS,
          })
        : Promise.resolve(false),
    ),
  );
  // Notes first, in task order; then the lines, merged by time.
  const runs: RunStream[] = [];
  const counts = new Map<
    string,
    { readonly task: number; readonly runIndex: number; readonly count: number }
  >();
  reads.forEach((read, i) => {
    const ref = refs[i]!;
    if (!read.started) {
      print({
        kind: "note",
        task: ref.index,
        text: `${read.finished ? "never ran" : "has not started yet"} (${read.why})`,
      });
      return;
    }
    if (read.note !== undefined) print({ kind: "note", task: ref.index, text: read.note });
    if (read.logEventCount !== undefined) {
      counts.set(read.streamName, { task: ref.index, runIndex: read.runIndex, count: read.logEventCount });
    }
    if (found[i] === true) {
      runs.push({
        task: ref.index,
        sessionId: ref.sessionId,
        kernelIndex: ref.kernelIndex,
        runIndex: read.runIndex,
        streamName: read.streamName,
      });
    }
  });
  const read = await readRunLines(runs, logs, print, pace);
  // Last, so it is not lost among the lines: what the reads did not get yet.
  for (const [streamName, { task, runIndex, count }] of counts) {
    const got = read.get(streamName) ?? 0;
    if (got < count) print({ kind: "note", task, text: unreadNote(runIndex, count, got) });
  }
  return ExitCode.Ok;
}

async function readJobOnceRecorded(
  store: Parameters<typeof readJob>[0],
  jobId: string,
  io: Pick<CliIo, "nowMs" | "sleep">,
): Promise<JobSnapshot> {
  const deadlineMs = io.nowMs() + SUBMISSION_GRACE_MS;
  for (;;) {
    try {
      return await readJob(store, jobId);
    } catch (error) {
      // Only a plain miss may be a submission on its way (not a task's id, not a missing task).
      if (!(error instanceof JobNotFoundError) || error.hint !== undefined || io.nowMs() >= deadlineMs)
        throw error;
    }
    await io.sleep(LOG_POLL_MS * 2);
  }
}

export interface StreamDeps {
  readonly store: Pick<SessionReader, "getSessions" | "listRuns">;
  readonly logs: KernelLogReader;
  readonly io: Pick<CliIo, "nowMs" | "sleep">;
  readonly announceWaiting: boolean;
  readonly signal?: AbortSignal;
}

/**
 * Follows every task in `refs` at once; resolves when all of them are over and drained, with how
 * many of them ran.
 */
export async function followTaskLogs(
  jobId: string,
  refs: readonly TaskRef[],
  deps: StreamDeps,
  emit: (event: TaskLogEvent) => void,
): Promise<number> {
  const sessions = sharedSessionReads(
    deps.store,
    refs.map((r) => r.sessionId),
    () => deps.io.nowMs(),
    // Followers waking together share one read.
    LOG_POLL_MS / 2,
  );
  const pace = callPacer(deps.io, LOG_READS_PER_SECOND);
  const streams = sharedStreamListing(
    deps.logs,
    runStreamsPrefix(refs),
    () => deps.io.nowMs(),
    LOG_POLL_MS / 2,
    pace,
  );
  const ran = await Promise.all(
    refs.map((ref) =>
      followTaskLog(
        jobId,
        ref,
        {
          sessions,
          store: deps.store,
          logs: deps.logs,
          streams,
          pace,
          sleep: (ms) => deps.io.sleep(ms),
          nowMs: () => deps.io.nowMs(),
          pollMs: LOG_POLL_MS,
          settleMs: LOG_SETTLE_MS,
          maxWaitMs: LOG_MAX_WAIT_MS,
          announceWaiting: deps.announceWaiting,
          ...(deps.signal === undefined ? {} : { signal: deps.signal }),
        },
        emit,
      ),
    ),
  );
  return ran.filter(Boolean).length;
}

/**
 * Text: each line on the stream the program wrote it to, `[task N] `-prefixed when several tasks'
 * lines mix; on a terminal, with control characters but colours escaped (terminal-text.ts), as
 * the kernel is anyone's code; piped, as written. JSON: one JSON Lines record per line on stdout.
 * Notes: stderr, either way.
 */
export function logPrinter(
  io: Pick<CliIo, "stdout" | "stderr" | "terminal">,
  output: OutputFormat,
  prefixed: boolean,
): (event: TaskLogEvent) => void {
  const shown = io.terminal === true ? terminalOutputLine : (text: string) => text;
  return (event) => {
    if (event.kind === "note") io.stderr(`cairn: task ${event.task}: ${event.text}`);
    else if (output === "json") io.stdout(taskLogJson(event));
    else if (event.line.stream === "stderr") io.stderr(shown(taskLogText(event, prefixed)));
    else io.stdout(shown(taskLogText(event, prefixed)));
  };
}
