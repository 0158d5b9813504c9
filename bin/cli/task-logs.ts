/**
 * Task output for `cairn logs` and `submit --stream-logs`. Logs stay with the agents that ran
 * the kernels: a run writes `<workRoot>/<sessionId>/<kernelIndex>/run-<runIndex>/output.jsonl`
 * (agent/work-dir.ts), and the local runtime's file says where each agent's work root is.
 * The CLI is another process, so it reads those files with the agents' own reader
 * (agent/log-reader.ts) and learns from the store which run is current and when it is over.
 */
import { followCombinedLog, readCombinedLog } from "../../agent/log-reader.ts";
import type { LogLine, LogPaths } from "../../agent/types.ts";
import { runLogPaths } from "../../agent/work-dir.ts";
import { taskView } from "../../functions/core/jobs.ts";
import type { Kernel, SessionWithKernels } from "../../functions/core/model.ts";
import { TERMINAL_SESSION_STATUSES } from "../../functions/core/status.ts";
import type { SessionReader } from "./cairn-api.ts";
import { LogsUnavailableError } from "./errors.ts";
import type { TaskRef } from "./job-read.ts";
import type { LogAccess } from "./target.ts";
import { iso } from "./views.ts";

/** What a reader or follower hands on: a task's output line, or a note about the task for people. */
export type TaskLogEvent =
  | { readonly kind: "line"; readonly task: number; readonly line: LogLine }
  | { readonly kind: "note"; readonly task: number; readonly text: string };

/** Where each agent keeps its runs' files. */
export class AgentDirectory {
  readonly #roots: ReadonlyMap<string, string>;

  /** Throws LogsUnavailableError when the connection cannot read logs (a deployed stack). */
  constructor(access: LogAccess) {
    if (!access.readable) throw new LogsUnavailableError(access.why);
    this.#roots = new Map(access.agents.map((a) => [a.id, a.workRoot]));
  }

  paths(agentId: string, sessionId: string, kernelIndex: number, runIndex: number): LogPaths {
    const root = this.#roots.get(agentId);
    if (root === undefined) {
      throw new LogsUnavailableError(
        `session ${sessionId} ran on agent ${agentId}, which is not one of this runtime's agents ` +
          `(${[...this.#roots.keys()].join(", ") || "none"}): its logs are with that agent`,
      );
    }
    return runLogPaths(root, sessionId, kernelIndex, runIndex);
  }
}

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

// ---------------------------------------------------------------------------------------------
// Reading what is there.

export type TaskLogRead =
  | {
      readonly started: true;
      readonly runIndex: number;
      readonly lines: readonly LogLine[];
      /** Set when the lines are an earlier run's (the current one has not started). */
      readonly note?: string;
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
  readonly agents: AgentDirectory;
}

/**
 * The task's current run's lines; if that run has not started, the latest earlier run's (a
 * retried task waiting to run again); if none ever started, why not.
 */
export async function readTaskLog(jobId: string, ref: TaskRef, deps: ReadDeps): Promise<TaskLogRead> {
  const found = await deps.store.getSession(ref.sessionId);
  const kernel = found?.kernels.find((k) => k.index === ref.kernelIndex);
  if (found === undefined || kernel === undefined) {
    return { started: false, finished: false, why: "PENDING: being submitted" };
  }
  const read = async (agentId: string, runIndex: number) => {
    const paths = deps.agents.paths(agentId, ref.sessionId, ref.kernelIndex, runIndex);
    return readRun(paths, { sessionId: ref.sessionId, kernelIndex: ref.kernelIndex, runIndex });
  };
  const { runIndex } = found.session;
  const current = kernel.agentId === undefined ? undefined : await read(kernel.agentId, runIndex);
  if (current !== undefined) return { started: true, runIndex, lines: current };
  const state = stateText(jobId, ref, found, kernel);
  if (runIndex > 0) {
    const runs = await deps.store.listRuns(ref.sessionId);
    for (const run of [...runs].reverse()) {
      const part = run.kernels.find((k) => k.index === ref.kernelIndex);
      if (part?.agentId === undefined) continue;
      const lines = await read(part.agentId, run.runIndex);
      if (lines === undefined) continue;
      return {
        started: true,
        runIndex: run.runIndex,
        lines,
        note: `run ${runIndex} has not started (${state}); showing run ${run.runIndex}`,
      };
    }
  }
  return { started: false, finished: taskView(jobId, ref.index, found.session, kernel).finished, why: state };
}

/** Undefined when the run never got a work directory (it was not started on its agent). */
async function readRun(paths: LogPaths, run: Parameters<typeof readCombinedLog>[1]) {
  try {
    return await readCombinedLog(paths, run);
  } catch (error) {
    if ((error as { code?: unknown }).code === "LogsNotFound") return undefined;
    throw error;
  }
}

/** Lines of several tasks as one timeline: by write time, each task's own order kept. */
export function mergeByTime(reads: readonly (readonly TaskLogEvent[])[]): TaskLogEvent[] {
  const at = (e: TaskLogEvent) => (e.kind === "line" ? e.line.atMs : 0);
  // Array.prototype.sort is stable: equal times keep task order, then line order.
  return reads.flat().sort((a, b) => at(a) - at(b));
}

// ---------------------------------------------------------------------------------------------
// Following.

export interface FollowDeps {
  readonly sessions: SessionSource;
  readonly store: Pick<SessionReader, "listRuns">;
  readonly agents: AgentDirectory;
  readonly sleep: (ms: number) => Promise<void>;
  readonly pollMs: number;
  readonly signal?: AbortSignal;
  /** Say once that a task waits to start, and why (`cairn logs --follow`). */
  readonly announceWaiting: boolean;
}

/**
 * Streams the task's output from its current run on (or its latest earlier run, while a retry
 * waits to start), then every later run's, until its session has ended and the last run's lines
 * are drained. A run is over for the follower when its session ends or moves to the next run.
 * Resolves true if the task ran (some run of it was followed), false if it ended without running
 * or the follow was aborted first.
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
        await tailRun(ref, kernel.agentId, runIndex, !isTerminal(found), deps, emit);
        continue;
      }
      if (followed === undefined && runIndex > 0) {
        // A retry waits to be placed: show how the previous run went first.
        const previous = await latestRun(deps.store, ref);
        if (previous !== undefined) {
          note(`run ${runIndex} has not started; run ${previous.runIndex} (on ${previous.agentId}) wrote:`);
          followed = previous.runIndex;
          await tailRun(ref, previous.agentId, previous.runIndex, false, deps, emit);
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

async function tailRun(
  ref: TaskRef,
  agentId: string,
  runIndex: number,
  liveAtStart: boolean,
  deps: FollowDeps,
  emit: (event: TaskLogEvent) => void,
): Promise<void> {
  const paths = deps.agents.paths(agentId, ref.sessionId, ref.kernelIndex, runIndex);
  let live = liveAtStart;
  try {
    const lines = followCombinedLog(
      paths,
      { sessionId: ref.sessionId, kernelIndex: ref.kernelIndex, runIndex },
      {
        // Sampled before each read: the read after `live` turns false drains the file, and the
        // agent writes every line before it reports the kernel's end.
        isLive: () => live,
        waitForActivity: async (signal) => {
          await deps.sleep(deps.pollMs);
          if (signal?.aborted) return;
          const now = await deps.sessions.get(ref.sessionId);
          live =
            now !== undefined &&
            !isTerminal(now) &&
            now.session.runIndex === runIndex &&
            now.kernels.find((k) => k.index === ref.kernelIndex)?.agentId === agentId;
        },
        ...(deps.signal === undefined ? {} : { signal: deps.signal }),
      },
    );
    for await (const line of lines) emit({ kind: "line", task: ref.index, line });
  } catch (error) {
    if ((error as { code?: unknown }).code !== "LogsNotFound") throw error;
    emit({
      kind: "note",
      task: ref.index,
      text: `run ${runIndex} ended before it started on ${agentId}: no output`,
    });
  }
}

async function latestRun(
  store: Pick<SessionReader, "listRuns">,
  ref: TaskRef,
): Promise<{ runIndex: number; agentId: string } | undefined> {
  const runs = await store.listRuns(ref.sessionId);
  for (const run of [...runs].reverse()) {
    const agentId = run.kernels.find((k) => k.index === ref.kernelIndex)?.agentId;
    if (agentId !== undefined) return { runIndex: run.runIndex, agentId };
  }
  return undefined;
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
    // A record the reader could not parse keeps its text but has no time.
    at: line.atMs > 0 ? iso(line.atMs) : null,
  });
}
