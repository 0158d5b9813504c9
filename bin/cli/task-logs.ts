/**
 * Task output for `cairn logs` and `submit --stream-logs`, read from CloudWatch Logs: the agents
 * ship each kernel run's lines to its own stream `<sessionId>/<kernelIndex>/run-<runIndex>`
 * (agent/log-events.ts), locally and on AWS alike; a Fargate kernel's task writes its run's lines
 * through awslogs to the task's own stream, `cairn/kernel/<task id>`, found from the run's task
 * ARN (runLogStreamName). The store says which run is current (and its task) and when it is over;
 * the streams say what it wrote. Lines are handed on page by page (GetLogEvents or
 * FilterLogEvents, at most 1 MB each): a log is never held whole.
 */
import {
  decodeLogMessage,
  LinePartJoiner,
  runLogStreamName,
  type JoinedLine,
} from "../../agent/log-events.ts";
import type { LogLine } from "../../agent/types.ts";
import { isFargateLogStream } from "../../functions/core/fargate-logs.ts";
import { isFargatePool } from "../../functions/core/fargate-pool.ts";
import { taskView } from "../../functions/core/jobs.ts";
import type { Kernel, RunKernelRecord, SessionWithKernels } from "../../functions/core/model.ts";
import { TERMINAL_SESSION_STATUSES } from "../../functions/core/status.ts";
import type { SessionReader } from "./cairn-api.ts";
import type { KernelLogReader } from "./kernel-log-reader.ts";
import type { TaskRef } from "./job-read.ts";
import { iso } from "./views.ts";

/** What a reader or follower hands on: a task's output line, or a note about the task for people. */
export type TaskLogEvent =
  | { readonly kind: "line"; readonly task: number; readonly line: LogLine }
  | { readonly kind: "note"; readonly task: number; readonly text: string };

/** Sessions read on demand; see sharedSessionReads. */
export interface SessionSource {
  get(sessionId: string): Promise<SessionWithKernels | undefined>;
}

/**
 * Reads all of `sessionIds` in one store call at most once per `maxAgeMs`: the followers of a
 * job's tasks each poll, and share one read instead of one each.
 */
export function sharedSessionReads(
  store: Pick<SessionReader, "getSessions">,
  sessionIds: readonly string[],
  nowMs: () => number,
  maxAgeMs: number,
): SessionSource {
  const ids = [...new Set(sessionIds)];
  let cached: { readonly atMs: number; readonly byId: ReadonlyMap<string, SessionWithKernels> } | undefined;
  let inFlight: Promise<ReadonlyMap<string, SessionWithKernels>> | undefined;
  const refresh = async (): Promise<ReadonlyMap<string, SessionWithKernels>> => {
    const atMs = nowMs();
    try {
      const byId = new Map((await store.getSessions(ids)).map((s) => [s.session.id, s]));
      cached = { atMs, byId };
      return byId;
    } finally {
      inFlight = undefined;
    }
  };
  return {
    async get(sessionId) {
      if (cached !== undefined && nowMs() - cached.atMs < maxAgeMs) return cached.byId.get(sessionId);
      inFlight ??= refresh();
      return (await inFlight).get(sessionId);
    },
  };
}

/** Whether a run's stream exists yet; see sharedStreamListing. */
export interface StreamSource {
  exists(streamName: string): Promise<boolean>;
}

/**
 * One DescribeLogStreams listing of every stream under `prefix` (the agents' run streams of the
 * tasks followed), shared by the followers waiting for their runs' streams to appear and taken
 * at most once per `maxAgeMs`. A stream not under `prefix` (a Fargate task's,
 * `cairn/kernel/<task id>`) is looked up by its own name, at most once per `maxAgeMs` each:
 * listing every task stream there is would be every task ever run. A stream, once seen, stays
 * known (streams are not deleted while their run is followed).
 */
export function sharedStreamListing(
  logs: Pick<KernelLogReader, "listStreams">,
  prefix: string,
  nowMs: () => number,
  maxAgeMs: number,
  pace: () => Promise<void> = () => Promise.resolve(),
): StreamSource {
  const known = new Set<string>();
  /** When each listing (by its prefix) was last taken, and the one under way. */
  const listedAtMs = new Map<string, number>();
  const inFlight = new Map<string, Promise<void>>();
  const list = (listPrefix: string): Promise<void> => {
    const pending = inFlight.get(listPrefix);
    if (pending !== undefined) return pending;
    const refresh = (async () => {
      try {
        await pace();
        const atMs = nowMs();
        for (const name of await logs.listStreams(listPrefix)) known.add(name);
        listedAtMs.set(listPrefix, atMs);
      } finally {
        inFlight.delete(listPrefix);
      }
    })();
    inFlight.set(listPrefix, refresh);
    return refresh;
  };
  return {
    async exists(streamName) {
      if (known.has(streamName)) return true;
      const listPrefix =
        streamName.startsWith(prefix) && !isFargateLogStream(streamName) ? prefix : streamName;
      if (nowMs() - (listedAtMs.get(listPrefix) ?? Number.NEGATIVE_INFINITY) >= maxAgeMs)
        await list(listPrefix);
      return known.has(streamName);
    },
  };
}

/** Spaces calls to at most `perSecond` (CloudWatch Logs' read APIs are rate-limited per account). */
export function callPacer(
  clock: { nowMs(): number; sleep(ms: number): Promise<void> },
  perSecond: number,
): () => Promise<void> {
  let nextAtMs = Number.NEGATIVE_INFINITY;
  return async () => {
    const nowMs = clock.nowMs();
    const atMs = Math.max(nowMs, nextAtMs);
    nextAtMs = atMs + 1000 / perSecond;
    if (atMs > nowMs) await clock.sleep(atMs - nowMs);
  };
}

/** The longest prefix all `names` share. */
export function commonPrefix(names: readonly string[]): string {
  let prefix = names[0] ?? "";
  for (const name of names) {
    let i = 0;
    while (i < prefix.length && i < name.length && prefix[i] === name[i]) i++;
    prefix = prefix.slice(0, i);
  }
  return prefix;
}

const runPrefix = (ref: TaskRef) => `${ref.sessionId}/${ref.kernelIndex}/run-`;

// ---------------------------------------------------------------------------------------------
// Reading what is there.

export type TaskLogRead =
  | {
      readonly started: true;
      readonly runIndex: number;
      readonly streamName: string;
      /** False: the run started but has written nothing yet. */
      readonly exists: boolean;
      /** Set when the run shown is an earlier one (the current one has not started). */
      readonly note?: string;
      /** When the run ended (its kernel's end), if it has. */
      readonly endedAtMs?: number;
      /** Events its stream holds, when its agent said (Kernel.logEventCount). */
      readonly logEventCount?: number;
    }
  | {
      readonly started: false;
      /** The task will not run again. */
      readonly finished: boolean;
      /** The task's state and why: "PENDING: no agent has 8 cpu free". */
      readonly why: string;
    };

export interface ReadDeps {
  readonly store: Pick<SessionReader, "getSession" | "listRuns">;
  readonly logs: KernelLogReader;
}

interface RunCandidate {
  readonly runIndex: number;
  /** The run's stream: its agent's, or its Fargate task's (runLogStreamName). */
  readonly streamName: string;
  /** Set for a Fargate kernel's run that started its task. */
  readonly taskArn?: string;
  /** Its kernel process started (it may have written nothing). */
  readonly started: boolean;
  readonly endedAtMs?: number;
  readonly logEventCount?: number;
}

/**
 * Which run of each task to show: its current run if that started (or wrote), else its latest
 * earlier run that did (a retried task waiting to run again), else why none. One listing of the
 * tasks' agent run streams says which of those wrote anything; a Fargate task's stream is looked
 * up by its name, for the runs a task's choice reads.
 */
export async function locateTaskLogs(
  jobId: string,
  refs: readonly TaskRef[],
  deps: ReadDeps,
): Promise<TaskLogRead[]> {
  const found = await Promise.all(
    refs.map(async (ref) => {
      const session = await deps.store.getSession(ref.sessionId);
      const kernel = session?.kernels.find((k) => k.index === ref.kernelIndex);
      if (session === undefined || kernel === undefined) return undefined;
      const candidates: RunCandidate[] = [];
      const { runIndex } = session.session;
      if (kernel.agentId !== undefined) candidates.push(candidate(ref, runIndex, kernel));
      if (runIndex > 0) {
        for (const run of [...(await deps.store.listRuns(ref.sessionId))].reverse()) {
          const part = run.kernels.find((k) => k.index === ref.kernelIndex);
          if (part?.agentId === undefined || run.runIndex >= runIndex) continue;
          candidates.push(candidate(ref, run.runIndex, part));
        }
      }
      return { session, kernel, candidates };
    }),
  );
  const existing = found.some((f) => f?.candidates.some((c) => c.taskArn === undefined))
    ? await deps.logs.listStreams(commonPrefix(refs.map(runPrefix)))
    : new Set<string>();
  const exists = async (c: RunCandidate): Promise<boolean> =>
    c.taskArn === undefined
      ? existing.has(c.streamName)
      : (await deps.logs.listStreams(c.streamName)).has(c.streamName);
  return Promise.all(
    refs.map(async (ref, i): Promise<TaskLogRead> => {
      const task = found[i];
      if (task === undefined) return { started: false, finished: false, why: "PENDING: being submitted" };
      const state = stateText(jobId, ref, task.session, task.kernel);
      let shown: { readonly run: RunCandidate; readonly exists: boolean } | undefined;
      for (const c of task.candidates) {
        const wrote = await exists(c);
        if (c.started || wrote) {
          shown = { run: c, exists: wrote };
          break;
        }
      }
      if (shown === undefined) {
        return {
          started: false,
          finished: taskView(jobId, ref.index, task.session.session, task.kernel).finished,
          why: state,
        };
      }
      const current = task.session.session.runIndex;
      const { run } = shown;
      return {
        started: true,
        runIndex: run.runIndex,
        streamName: run.streamName,
        exists: shown.exists,
        ...(run.endedAtMs !== undefined ? { endedAtMs: run.endedAtMs } : {}),
        ...(run.logEventCount !== undefined ? { logEventCount: run.logEventCount } : {}),
        ...(run.runIndex === current
          ? {}
          : { note: `run ${current} has not started (${state}); showing run ${run.runIndex}` }),
      };
    }),
  );
}

/** A run of the task's kernel (the current kernel or an earlier run's record) to show. */
function candidate(
  ref: TaskRef,
  runIndex: number,
  kernel: {
    readonly taskArn?: string;
    readonly startedAtMs?: number;
    readonly finishedAtMs?: number;
    readonly logEventCount?: number;
  },
): RunCandidate {
  return {
    runIndex,
    streamName: runLogStreamName(ref.sessionId, ref.kernelIndex, runIndex, kernel.taskArn),
    ...(kernel.taskArn !== undefined ? { taskArn: kernel.taskArn } : {}),
    started: kernel.startedAtMs !== undefined,
    ...(kernel.finishedAtMs !== undefined ? { endedAtMs: kernel.finishedAtMs } : {}),
    ...(kernel.logEventCount !== undefined ? { logEventCount: kernel.logEventCount } : {}),
  };
}

/** One run being read, and whose it is. */
export interface RunStream {
  readonly task: number;
  readonly sessionId: string;
  readonly kernelIndex: number;
  readonly runIndex: number;
  readonly streamName: string;
}

/**
 * Every line of `runs` (streams that exist), page by page: GetLogEvents for one stream,
 * FilterLogEvents for several (interleaved by time by CloudWatch Logs, each stream's own order
 * kept). Split lines are joined back. Returns how many events each stream gave (by its name).
 */
export async function readRunLines(
  runs: readonly RunStream[],
  logs: KernelLogReader,
  emit: (event: TaskLogEvent) => void,
  pace: () => Promise<void> = () => Promise.resolve(),
): Promise<ReadonlyMap<string, number>> {
  const byName = new Map(runs.map((r) => [r.streamName, r]));
  const read = new Map(runs.map((r) => [r.streamName, 0]));
  const joiner = new LinePartJoiner();
  const hand = (run: RunStream, line: JoinedLine | undefined) => {
    if (line !== undefined) emit(lineEvent(run, line));
  };
  const only = runs.length === 1 ? runs[0] : undefined;
  if (only !== undefined) {
    let token: string | undefined;
    for (;;) {
      await pace();
      const page = await logs.forward(only.streamName, token);
      read.set(only.streamName, (read.get(only.streamName) ?? 0) + page.events.length);
      for (const e of page.events) {
        for (const line of joiner.push(only.streamName, e.timestamp, decodeLogMessage(e.message)))
          hand(only, line);
      }
      // Only an unchanged token means the end: AWS may answer an empty page mid-stream.
      if (page.nextForwardToken === token) break;
      token = page.nextForwardToken;
    }
  } else if (runs.length > 1) {
    let token: string | undefined;
    do {
      await pace();
      const page = await logs.filter([...byName.keys()], token);
      for (const e of page.events) {
        const run = byName.get(e.logStreamName);
        if (run === undefined) continue;
        read.set(run.streamName, (read.get(run.streamName) ?? 0) + 1);
        for (const line of joiner.push(run.streamName, e.timestamp, decodeLogMessage(e.message)))
          hand(run, line);
      }
      token = page.nextToken;
    } while (token !== undefined);
  }
  for (const run of runs) hand(run, joiner.end(run.streamName));
  return read;
}

/** A finished run's stream to wait for before reading it whole (`cairn logs`). */
export interface EndedRun {
  readonly streamName: string;
  /** Whether its stream was there when last looked for. */
  readonly exists: boolean;
  readonly endedAtMs?: number;
  /** Events its stream holds, when its agent said. */
  readonly logEventCount?: number;
}

export interface OutputWaitDeps {
  readonly logs: KernelLogReader;
  /** Awaited before each CloudWatch Logs read (shared by the followers). */
  readonly pace: () => Promise<void>;
  readonly sleep: (ms: number) => Promise<void>;
  readonly nowMs: () => number;
  readonly pollMs: number;
  /**
   * How long a run's stream is still read after the run was seen over, when its agent did not
   * say how many events it holds (a Fargate task's stream, an older agent). CloudWatch Logs shows
   * events a while after PutLogEvents accepted them (eventual consistency, with no documented
   * bound), so the agent's last lines, shipped before it reported the run's end, may not be
   * readable when the end is seen: the last read starts this long after it.
   */
  readonly settleMs: number;
  /**
   * How long a run's stream is read at most after the run was seen over, when its agent said how
   * many events it holds (Kernel.logEventCount): reading stops once that many were read, or
   * then, with a note of how many were not readable yet.
   */
  readonly maxWaitMs: number;
}

/**
 * Waits until a run that ended moments ago can be read whole, and says whether its stream
 * exists. CloudWatch Logs shows events a while after it accepted them. A run with a count
 * (its agent's, `logEventCount`) is waited for until its stream shows that many events, or
 * `maxWaitMs` after its end, whichever comes first; one without (a Fargate task's stream, an
 * older agent's) until `settleMs` after its end. A run that ended longer ago than that, or has
 * not ended, is not waited for. The stream is counted by reading it, so a run that ended moments
 * ago is read twice (counted, then shown merged with the other tasks' lines by time); a run that
 * ended longer ago than `maxWaitMs` is read once.
 */
export async function awaitRunOutput(run: EndedRun, deps: OutputWaitDeps): Promise<boolean> {
  const { endedAtMs, logEventCount: count, streamName } = run;
  let exists = run.exists;
  const look = async () => {
    await deps.pace();
    return (await deps.logs.listStreams(streamName)).has(streamName);
  };
  if (endedAtMs === undefined) return exists;
  if (count === undefined) {
    const waitMs = endedAtMs + deps.settleMs - deps.nowMs();
    if (waitMs <= 0) return exists;
    await deps.sleep(waitMs);
    return exists || (await look());
  }
  const deadlineMs = endedAtMs + deps.maxWaitMs;
  let read = 0;
  let token: string | undefined;
  while (read < count && deps.nowMs() < deadlineMs) {
    if (!exists) exists = await look();
    if (exists) {
      for (;;) {
        await deps.pace();
        const page = await deps.logs.forward(streamName, token);
        read += page.events.length;
        if (page.nextForwardToken === token) break;
        token = page.nextForwardToken;
      }
    }
    if (read >= count) break;
    await deps.sleep(Math.max(0, Math.min(deps.pollMs, deadlineMs - deps.nowMs())));
  }
  return exists;
}

/** The note for a run whose stream showed fewer events than its agent put there. */
export function unreadNote(runIndex: number, count: number, read: number): string {
  return (
    `run ${runIndex}: ${count - read} of its ${count} log events were not readable yet ` +
    "(CloudWatch Logs shows events a while after they are written); `cairn logs` later shows them"
  );
}

function lineEvent(run: RunStream, line: JoinedLine): TaskLogEvent {
  return {
    kind: "line",
    task: run.task,
    line: {
      sessionId: run.sessionId,
      kernelIndex: run.kernelIndex,
      runIndex: run.runIndex,
      stream: line.stream,
      text: line.text,
      atMs: line.atMs,
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Following.

export interface FollowDeps extends OutputWaitDeps {
  readonly sessions: SessionSource;
  readonly store: Pick<SessionReader, "listRuns">;
  /** Whether a run's stream exists yet (shared by the followers). */
  readonly streams: StreamSource;
  readonly signal?: AbortSignal;
  /** Say once that a task waits to start, and why (`cairn logs --follow`). */
  readonly announceWaiting: boolean;
}

/**
 * Streams the task's output from its current run on (or its latest earlier run, while a retry
 * waits to start), then every later run's, until its session has ended and the last run's
 * stream is drained. A run is over for the follower when its session ends or moves to the next
 * run; the agent ships a run's last lines before it reports the run's end with their count, and
 * the follower reads until it has read that many (or `maxWaitMs`; without a count, `settleMs`
 * after the end). Resolves true if the
 * task ran (some run of it was followed), false if it ended without running or the follow was
 * aborted first.
 */
export async function followTaskLog(
  jobId: string,
  ref: TaskRef,
  deps: FollowDeps,
  emit: (event: TaskLogEvent) => void,
): Promise<boolean> {
  const note = (text: string) => emit({ kind: "note", task: ref.index, text });
  let followed: number | undefined;
  let announced = false;
  for (;;) {
    if (deps.signal?.aborted) return followed !== undefined;
    const found = await deps.sessions.get(ref.sessionId);
    const kernel = found?.kernels.find((k) => k.index === ref.kernelIndex);
    if (found !== undefined && kernel !== undefined) {
      const { runIndex } = found.session;
      if (kernel.agentId !== undefined && (followed === undefined || runIndex > followed)) {
        if (followed !== undefined) note(`run ${runIndex} started on ${kernel.agentId}`);
        followed = runIndex;
        await tailRun(
          ref,
          {
            agentId: kernel.agentId,
            runIndex,
            taskArn: kernel.taskArn,
            logEventCount: kernel.logEventCount,
          },
          !isTerminal(found),
          deps,
          emit,
        );
        continue;
      }
      if (followed === undefined && runIndex > 0) {
        // A retry waits to be placed: show how the previous run went first.
        const previous = await latestRun(deps.store, ref);
        if (previous !== undefined) {
          note(`run ${runIndex} has not started; run ${previous.runIndex} (on ${previous.agentId}) wrote:`);
          followed = previous.runIndex;
          await tailRun(ref, previous, false, deps, emit);
          continue;
        }
      }
      if (isTerminal(found)) {
        if (followed === undefined) note(`never ran (${stateText(jobId, ref, found, kernel)})`);
        return followed !== undefined;
      }
      if (deps.announceWaiting && !announced && followed === undefined) {
        announced = true;
        note(`waiting to start (${stateText(jobId, ref, found, kernel)})`);
      }
    }
    await deps.sleep(deps.pollMs);
  }
}

/**
 * A run of the task's kernel: where it ran, its ECS task if it ran as one (and started it), and
 * the events its stream holds if it is over and its agent said.
 */
interface TaskRun {
  readonly agentId: string;
  readonly runIndex: number;
  readonly taskArn: string | undefined;
  readonly logEventCount: number | undefined;
}

/**
 * Reads the run's stream as it grows; returns once the run is over and its stream drained: once
 * it has read as many events as the run's agent said its stream holds, or, when the agent did
 * not say, with a last read that starts `settleMs` after the run was seen over, so lines shipped
 * before its end but not yet readable then are read too. With a count, reading stops at
 * `maxWaitMs` after the end at the latest, with a note of what was not readable yet. A
 * Fargate kernel's stream is its task's, so it is known once the kernel has its task: the task
 * is taken from the session as the run goes on, or from the run's record once it is over.
 */
async function tailRun(
  ref: TaskRef,
  { agentId, runIndex, taskArn: startTaskArn, logEventCount: startCount }: TaskRun,
  liveAtStart: boolean,
  deps: FollowDeps,
  emit: (event: TaskLogEvent) => void,
): Promise<void> {
  let taskArn = startTaskArn;
  const streamName = () => runLogStreamName(ref.sessionId, ref.kernelIndex, runIndex, taskArn);
  let run: RunStream = {
    task: ref.index,
    sessionId: ref.sessionId,
    kernelIndex: ref.kernelIndex,
    runIndex,
    streamName: streamName(),
  };
  const joiner = new LinePartJoiner();
  let live = liveAtStart;
  /** When the run was first seen over (the follower's clock). */
  let overAtMs = live ? undefined : deps.nowMs();
  /** Events the run's stream holds, once it is over and if its agent said; and events read. */
  let count = live ? undefined : startCount;
  let read = 0;
  let exists = false;
  let token: string | undefined;
  for (;;) {
    if (deps.signal?.aborted) return;
    // Sampled before reading: the read that starts `settleMs` (or `maxWaitMs`) after the run was
    // seen over is the last.
    const wasLive = live;
    const waitMs = count === undefined ? deps.settleMs : deps.maxWaitMs;
    const last = overAtMs !== undefined && deps.nowMs() >= overAtMs + waitMs;
    if (!exists) {
      if (!wasLive && taskArn === undefined && isFargatePool(agentId)) {
        taskArn = (await recordedKernel(deps.store, ref, runIndex))?.taskArn;
      }
      const name = streamName();
      exists = wasLive
        ? await deps.streams.exists(name)
        : // The last look must come after the run's end was seen: a listing of its own.
          (await deps.pace(), (await deps.logs.listStreams(name)).has(name));
      if (exists) run = { ...run, streamName: name };
    }
    if (exists) {
      for (;;) {
        await deps.pace();
        const page = await deps.logs.forward(run.streamName, token);
        read += page.events.length;
        for (const e of page.events) {
          for (const line of joiner.push(run.streamName, e.timestamp, decodeLogMessage(e.message))) {
            emit(lineEvent(run, line));
          }
        }
        const moved = page.nextForwardToken !== token;
        token = page.nextForwardToken;
        if (!moved || deps.signal?.aborted) break;
      }
    }
    const drained = !wasLive && count !== undefined && read >= count;
    if (last || drained) {
      const rest = joiner.end(run.streamName);
      if (rest !== undefined) emit(lineEvent(run, rest));
      if (count !== undefined && read < count) {
        emit({ kind: "note", task: ref.index, text: unreadNote(runIndex, count, read) });
      } else if (!exists) {
        emit({ kind: "note", task: ref.index, text: `run ${runIndex} on ${agentId}: no output` });
      }
      return;
    }
    await deps.sleep(
      overAtMs === undefined
        ? deps.pollMs
        : Math.min(deps.pollMs, Math.max(0, overAtMs + waitMs - deps.nowMs())),
    );
    if (deps.signal?.aborted) return;
    if (!wasLive) continue;
    const now = await deps.sessions.get(ref.sessionId);
    const kernel =
      now?.session.runIndex === runIndex ? now.kernels.find((k) => k.index === ref.kernelIndex) : undefined;
    live = now !== undefined && !isTerminal(now) && kernel?.agentId === agentId;
    if (!live) {
      overAtMs = deps.nowMs();
      // The count its agent reported with the run's end: on the kernel while the session is on
      // this run, on the run's record once it has moved on.
      count =
        kernel?.agentId === agentId
          ? kernel.logEventCount
          : kernel === undefined
            ? (await recordedKernel(deps.store, ref, runIndex))?.logEventCount
            : undefined;
    }
    // The kernel's task until its stream is found (a gang's rollback may give it another).
    if (!exists) taskArn = kernel?.taskArn ?? taskArn;
  }
}

/** The task's kernel in a finished run, from the run's record. */
async function recordedKernel(
  store: Pick<SessionReader, "listRuns">,
  ref: TaskRef,
  runIndex: number,
): Promise<RunKernelRecord | undefined> {
  const run = (await store.listRuns(ref.sessionId)).find((r) => r.runIndex === runIndex);
  return run?.kernels.find((k) => k.index === ref.kernelIndex);
}

async function latestRun(store: Pick<SessionReader, "listRuns">, ref: TaskRef): Promise<TaskRun | undefined> {
  const runs = await store.listRuns(ref.sessionId);
  for (const run of [...runs].reverse()) {
    const kernel = run.kernels.find((k) => k.index === ref.kernelIndex);
    if (kernel?.agentId !== undefined) {
      return {
        agentId: kernel.agentId,
        runIndex: run.runIndex,
        taskArn: kernel.taskArn,
        logEventCount: kernel.logEventCount,
      };
    }
  }
  return undefined;
}

/** The prefix every run stream of `refs` shares: the followers' one listing. */
export function runStreamsPrefix(refs: readonly TaskRef[]): string {
  return commonPrefix(refs.map(runPrefix));
}

function isTerminal(found: SessionWithKernels): boolean {
  return TERMINAL_SESSION_STATUSES.has(found.session.status);
}

function stateText(jobId: string, ref: TaskRef, found: SessionWithKernels, kernel: Kernel): string {
  const task = taskView(jobId, ref.index, found.session, kernel);
  return task.reason === undefined ? task.state : `${task.state}: ${task.reason.replace(/\s+/g, " ").trim()}`;
}

// ---------------------------------------------------------------------------------------------
// Printing.

/** `[task 2] text` when several tasks' lines are mixed, else the text as the program wrote it. */
export function taskLogText(event: Extract<TaskLogEvent, { kind: "line" }>, prefixed: boolean): string {
  return prefixed ? `[task ${event.task}] ${event.line.text}` : event.line.text;
}

/** One JSON Lines record per output line (`logs -o json`). */
export function taskLogJson(event: Extract<TaskLogEvent, { kind: "line" }>): string {
  const { line } = event;
  return JSON.stringify({
    task: event.task,
    sessionId: line.sessionId,
    kernelIndex: line.kernelIndex,
    runIndex: line.runIndex,
    stream: line.stream,
    text: line.text,
    // An event that is not one of the agent's keeps its text but may have no time.
    at: line.atMs > 0 ? iso(line.atMs) : null,
  });
}
