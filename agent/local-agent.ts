/**
 * The agent's kernel runner (`cairn agent`, and so every agent of the embedded runtime): runs
 * kernels as real child processes, each in its
 * own process group and work directory, enforces their memory requests, and reports every
 * kernel status change through `onReport`. Transport-free: the caller maps commands and
 * reports to events.
 *
 * Rules that keep it safe under at-least-once, unordered command delivery:
 * - Commands for one kernel (session + index) are applied one at a time, in arrival order.
 * - A run (session + index + runIndex) that was started or stopped ends with exactly one
 *   terminal report (TERMINATED, or ERROR from start); commands for a run that has ended are
 *   ignored, so a late duplicate `start` cannot resurrect it. A retry is a new runIndex.
 * - An ERROR from prepare is not final: the control plane may prepare the same run again
 *   (PrepareSessions retries), and the check is then repeated.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { promises as fs } from "node:fs";
import { resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { buildKernelEnv, DEFAULT_PATH } from "./environment.ts";
import { InvalidAgentInputError } from "./errors.ts";
import { exitStatus } from "./exit-status.ts";
import { resolveExecutable } from "./executable.ts";
import {
  checkCapacity,
  checkIndex,
  checkPathComponent,
  checkPositive,
  kernelKey,
  runKey,
  validateLaunch,
} from "./launch.ts";
import { RunLogWriter, type CapturedLine } from "./log-capture.ts";
import { followCombinedLog, readCombinedLog } from "./log-reader.ts";
import { processTrees, ProcessTreeSampler, readProcTable } from "./proc-table.ts";
import { capUtf8, readTerminationMessage, TERMINATION_MESSAGE_MAX_BYTES } from "./termination-log.ts";
import type {
  AgentCapacity,
  AgentCondition,
  AgentUsage,
  KernelLaunch,
  KernelReport,
  KernelReportStatus,
  LogLine,
  LogPaths,
  MemoryPollStats,
  RunningKernel,
  StopOptions,
} from "./types.ts";
import { runLogPaths } from "./work-dir.ts";

export interface LocalAgentOptions {
  readonly id: string;
  readonly capacity: AgentCapacity;
  /** Kernels run in `workRoot/<sessionId>/<kernelIndex>/run-<runIndex>/`. */
  readonly workRoot: string;
  /** Receives every kernel status change. A throw is logged; the agent carries on. */
  readonly onReport: (report: KernelReport) => void;
  /** How often kernels' resident memory is checked. @default 100 */
  readonly memoryPollMs?: number;
  /** Time stamps on reports and log lines. @default Date.now */
  readonly clock?: () => number;
  /** The environment the kernels' minimal base (PATH, HOME, LANG, ...) is taken from. @default process.env */
  readonly baseEnv?: Readonly<Record<string, string | undefined>>;
  /** Relative executables resolve against this. @default process.cwd() */
  readonly cwd?: string;
  /** Trouble the agent recovers from. @default console.warn */
  readonly warn?: (message: string, error?: unknown) => void;
  /** How often a log follower re-reads when nothing woke it. @default 250 */
  readonly followPollMs?: number;
  /** How long to wait for a kernel's output pipes after its main process exited. @default 2000 */
  readonly pipeDrainMs?: number;
}

export type LogListener = (line: LogLine) => void;

const MiB = 1024 * 1024;
const DEFAULT_GRACE_MS = 5000;
/** Terminal reports remembered so that late commands for ended runs are ignored. */
const MAX_FINISHED_RUNS = 10_000;
/** Float tolerance for summed cpu requests (0.1 + 0.2 must fit in 0.3). */
const CAPACITY_EPSILON = 1e-9;

interface Cause {
  readonly condition?: AgentCondition;
  readonly message?: string;
}

interface PreparedKernel {
  readonly phase: "prepared";
  readonly launch: KernelLaunch;
  readonly paths: LogPaths;
}

interface RunningProcess {
  readonly phase: "running";
  readonly launch: KernelLaunch;
  readonly paths: LogPaths;
  readonly child: ChildProcess;
  readonly pid: number;
  readonly startedAtMs: number;
  readonly writer: RunLogWriter;
  readonly exited: Promise<void>;
  readonly resolveExited: () => void;
  rssBytes?: number;
  cause?: Cause;
  stopping: boolean;
  /** The main process has exited (and been reaped): its pid must not be signalled again. */
  exitSeen: boolean;
  killTimer?: NodeJS.Timeout;
  killAtMs?: number;
  drainTimer?: NodeJS.Timeout;
}

type KernelSlot = PreparedKernel | RunningProcess;

export class LocalAgent {
  readonly id: string;
  readonly capacity: AgentCapacity;
  readonly workRoot: string;
  private readonly onReport: (report: KernelReport) => void;
  private readonly memoryPollMs: number;
  private readonly clock: () => number;
  private readonly baseEnv: Readonly<Record<string, string | undefined>>;
  private readonly cwd: string;
  private readonly warn: (message: string, error?: unknown) => void;
  private readonly followPollMs: number;
  private readonly pipeDrainMs: number;

  /** What each kernel (session/index) holds now: a prepared run or a live process. */
  private readonly slots = new Map<string, KernelSlot>();
  /** Terminal report of each ended run, oldest first. */
  private readonly finished = new Map<string, KernelReport>();
  /** Tail of each kernel's command queue. Never rejects. */
  private readonly queues = new Map<string, Promise<void>>();
  private readonly logListeners = new Set<LogListener>();
  /** Followers waiting for a run to write or end, by run key. */
  private readonly logWaiters = new Map<string, Set<() => void>>();
  private pollTimer: NodeJS.Timeout | undefined;
  private readonly sampler = new ProcessTreeSampler();
  private pollStats: MemoryPollStats = {
    ticks: 0,
    totalMs: 0,
    lastMs: 0,
    maxMs: 0,
    lastProcessCount: 0,
    lastStatReads: 0,
  };
  private warnedPoll = false;
  private closed = false;

  constructor(options: LocalAgentOptions) {
    if (typeof options.id !== "string" || options.id === "") {
      throw new InvalidAgentInputError("id", "must be a non-empty string");
    }
    if (typeof options.workRoot !== "string" || options.workRoot === "") {
      throw new InvalidAgentInputError("workRoot", "must be a non-empty path");
    }
    if (typeof options.onReport !== "function") {
      throw new InvalidAgentInputError("onReport", "must be a function");
    }
    this.id = options.id;
    this.capacity = checkCapacity("capacity", options.capacity);
    this.cwd = options.cwd ?? process.cwd();
    this.workRoot = resolve(this.cwd, options.workRoot);
    this.onReport = options.onReport;
    this.memoryPollMs = checkPositive("memoryPollMs", options.memoryPollMs ?? 100);
    this.clock = options.clock ?? Date.now;
    this.baseEnv = options.baseEnv ?? process.env;
    this.warn =
      options.warn ?? ((message, error) => console.warn(`[agent ${this.id}] ${message}`, error ?? ""));
    this.followPollMs = checkPositive("followPollMs", options.followPollMs ?? 250);
    this.pipeDrainMs = checkPositive("pipeDrainMs", options.pipeDrainMs ?? 2000);
  }

  // ---- commands -------------------------------------------------------------------------

  /**
   * Creates the run's work directory and checks that its executable exists and can run.
   * Reports PREPARED, or ERROR naming the executable. Repeating it repeats the check.
   */
  async prepare(launch: KernelLaunch): Promise<void> {
    validateLaunch(launch);
    await this.enqueue(kernelKey(launch.sessionId, launch.kernelIndex), () => this.doPrepare(launch));
  }

  /**
   * Spawns the run (preparing it first if needed) and reports RUNNING with its pid, or ERROR.
   * Starting a run that is running or has ended does nothing.
   */
  async start(launch: KernelLaunch): Promise<void> {
    validateLaunch(launch);
    await this.enqueue(kernelKey(launch.sessionId, launch.kernelIndex), () => this.doStart(launch));
  }

  /**
   * SIGTERMs the kernel's process group, SIGKILLs it after `graceMs`, and resolves once it has
   * exited and its TERMINATED report (carrying `condition` and `reason`) is out. A prepared,
   * unstarted kernel is reported TERMINATED at once. Unknown or ended kernels: resolves at once.
   * A repeated stop may shorten the grace period, never lengthen it.
   */
  async stop(sessionId: string, kernelIndex: number, options: StopOptions = {}): Promise<void> {
    checkPathComponent("sessionId", sessionId);
    checkIndex("kernelIndex", kernelIndex);
    const graceMs = options.graceMs ?? DEFAULT_GRACE_MS;
    if (typeof graceMs !== "number" || !Number.isFinite(graceMs) || graceMs < 0) {
      throw new InvalidAgentInputError("graceMs", "must be a finite number >= 0");
    }
    const key = kernelKey(sessionId, kernelIndex);
    // Let a prepare or start already under way land first, so it cannot spawn after the stop.
    await this.queues.get(key);
    await this.stopSlot(key, graceMs, options);
  }

  /** Stops every kernel; resolves when all have exited. */
  async stopAll(options: StopOptions = {}): Promise<void> {
    await Promise.all(
      [...this.slots.values()].map((slot) =>
        this.stop(slot.launch.sessionId, slot.launch.kernelIndex, options),
      ),
    );
  }

  /**
   * For Ctrl-C: refuses further work (prepare/start report ERROR), stops every kernel, and
   * stops polling. Resolves when every kernel has exited.
   */
  async shutdown(options: StopOptions = {}): Promise<void> {
    this.closed = true;
    await this.stopAll({ reason: `agent ${this.id} shut down`, ...options });
    this.stopPolling();
  }

  /**
   * Last resort for a `process.on("exit")` hook, where nothing asynchronous runs: SIGKILLs
   * every kernel's process group. Kernels run detached, so they would outlive the runtime.
   */
  killAllNow(): void {
    this.closed = true;
    for (const slot of this.slots.values()) {
      if (slot.phase === "running" && !slot.exitSeen) this.signal(-slot.pid, "SIGKILL");
    }
    this.stopPolling();
  }

  // ---- queries --------------------------------------------------------------------------

  running(): RunningKernel[] {
    const kernels: RunningKernel[] = [];
    for (const slot of this.slots.values()) {
      if (slot.phase !== "running") continue;
      const { launch } = slot;
      kernels.push({
        sessionId: launch.sessionId,
        kernelIndex: launch.kernelIndex,
        runIndex: launch.runIndex,
        pid: slot.pid,
        cpu: launch.cpu,
        memoryMiB: launch.memoryMiB,
        startedAtMs: slot.startedAtMs,
        ...(slot.rssBytes !== undefined ? { rssMiB: Math.round((slot.rssBytes / MiB) * 10) / 10 } : {}),
        stopping: slot.stopping,
        workDir: slot.paths.workDir,
      });
    }
    return kernels;
  }

  /** Resources held by running kernels (from spawn until their TERMINATED report). */
  usage(): AgentUsage {
    const allocated = this.allocated();
    return {
      capacity: this.capacity,
      allocated,
      free: {
        cpu: roundCapacity(this.capacity.cpu - allocated.cpu),
        memoryMiB: roundCapacity(this.capacity.memoryMiB - allocated.memoryMiB),
      },
      runningKernels: this.running().length,
    };
  }

  memoryPollStats(): MemoryPollStats {
    return this.pollStats;
  }

  logPaths(sessionId: string, kernelIndex: number, runIndex: number): LogPaths {
    checkPathComponent("sessionId", sessionId);
    checkIndex("kernelIndex", kernelIndex);
    checkIndex("runIndex", runIndex);
    return runLogPaths(this.workRoot, sessionId, kernelIndex, runIndex);
  }

  /** Every line the run has written so far, both streams interleaved in write order. */
  async readLogs(sessionId: string, kernelIndex: number, runIndex: number): Promise<LogLine[]> {
    const paths = this.logPaths(sessionId, kernelIndex, runIndex);
    return readCombinedLog(paths, { sessionId, kernelIndex, runIndex });
  }

  /**
   * The run's lines from the start, then live ones as they are written, ending once the run
   * has ended (or at once, after what is on disk, if this agent is not running it).
   */
  followLogs(
    sessionId: string,
    kernelIndex: number,
    runIndex: number,
    options: { signal?: AbortSignal } = {},
  ): AsyncGenerator<LogLine, void, undefined> {
    const paths = this.logPaths(sessionId, kernelIndex, runIndex);
    const kKey = kernelKey(sessionId, kernelIndex);
    const rKey = runKey(sessionId, kernelIndex, runIndex);
    return followCombinedLog(
      paths,
      { sessionId, kernelIndex, runIndex },
      {
        isLive: () => this.slots.get(kKey)?.launch.runIndex === runIndex && !this.finished.has(rKey),
        waitForActivity: (signal) => this.waitForRunActivity(rKey, signal),
        ...(options.signal ? { signal: options.signal } : {}),
      },
    );
  }

  /** Subscribes to every kernel's output lines as they arrive. Returns the unsubscribe. */
  onLog(listener: LogListener): () => void {
    this.logListeners.add(listener);
    return () => this.logListeners.delete(listener);
  }

  // ---- command bodies -------------------------------------------------------------------

  private async doPrepare(launch: KernelLaunch): Promise<void> {
    const key = kernelKey(launch.sessionId, launch.kernelIndex);
    if (this.finished.has(runKey(launch.sessionId, launch.kernelIndex, launch.runIndex))) return;
    const slot = this.slots.get(key);
    if (slot?.phase === "running") {
      if (slot.launch.runIndex !== launch.runIndex) this.reportPrepareError(launch, busyMessage(slot));
      return;
    }
    if (this.closed) return this.reportPrepareError(launch, `agent ${this.id} is shutting down`);
    const paths = runLogPaths(this.workRoot, launch.sessionId, launch.kernelIndex, launch.runIndex);
    try {
      await fs.mkdir(paths.workDir, { recursive: true });
      await this.resolveCommand(launch);
    } catch (error) {
      if (slot?.launch.runIndex === launch.runIndex) this.slots.delete(key);
      return this.reportPrepareError(launch, errorText(error));
    }
    this.slots.set(key, { phase: "prepared", launch, paths });
    this.emitReport(launch, "PREPARED", {});
  }

  private async doStart(launch: KernelLaunch): Promise<void> {
    const key = kernelKey(launch.sessionId, launch.kernelIndex);
    if (this.finished.has(runKey(launch.sessionId, launch.kernelIndex, launch.runIndex))) return;
    const slot = this.slots.get(key);
    if (slot?.phase === "running") {
      if (slot.launch.runIndex !== launch.runIndex) this.failRun(launch, busyMessage(slot));
      return;
    }
    const paths = runLogPaths(this.workRoot, launch.sessionId, launch.kernelIndex, launch.runIndex);
    let executable: string;
    try {
      await fs.mkdir(paths.workDir, { recursive: true });
      executable = await this.resolveCommand(launch);
    } catch (error) {
      return this.failRun(launch, errorText(error));
    }
    // From here to the spawn nothing awaits, so the capacity check and the allocation it
    // guards cannot interleave with another kernel's start.
    if (this.closed) return this.failRun(launch, `agent ${this.id} is shutting down`);
    const shortfall = this.capacityShortfall(launch);
    if (shortfall !== undefined) return this.failRun(launch, shortfall);

    const rKey = runKey(launch.sessionId, launch.kernelIndex, launch.runIndex);
    let writer: RunLogWriter;
    try {
      writer = new RunLogWriter(
        paths,
        this.clock,
        (lines) => this.publishLines(launch, rKey, lines),
        this.warn,
      );
    } catch (error) {
      return this.failRun(launch, `cannot open log files in ${paths.workDir}: ${errorText(error)}`);
    }
    const env = buildKernelEnv(
      launch,
      { agentId: this.id, terminationLogPath: paths.terminationLog },
      this.baseEnv,
    );
    let child: ChildProcess;
    try {
      child = spawn(executable, launch.command.slice(1), {
        argv0: launch.command[0],
        cwd: paths.workDir,
        env,
        // Its own process group: signals reach the kernel's whole tree, and a Ctrl-C meant
        // for the runtime does not reach kernels before the agent stops them in order.
        detached: true,
        stdio: ["ignore", "pipe", "pipe"],
      });
    } catch (error) {
      writer.close();
      return this.failRun(launch, `cannot start ${launch.command[0]}: ${errorText(error)}`);
    }
    const spawnError = new Promise<Error>((resolveError) => child.once("error", resolveError));
    if (child.pid === undefined) {
      const error = await spawnError;
      writer.close();
      return this.failRun(launch, `cannot start ${launch.command[0]}: ${errorText(error)}`);
    }
    const { promise: exited, resolve: resolveExited } = Promise.withResolvers<void>();
    const run: RunningProcess = {
      phase: "running",
      launch,
      paths,
      child,
      pid: child.pid,
      startedAtMs: this.clock(),
      writer,
      exited,
      resolveExited,
      stopping: false,
      exitSeen: false,
    };
    this.slots.set(key, run);
    child.on("error", (error) => this.warn(`kernel ${rKey} (pid ${run.pid}): ${errorText(error)}`));
    child.stdout?.on("data", (chunk: Buffer) => writer.write("stdout", chunk));
    child.stderr?.on("data", (chunk: Buffer) => writer.write("stderr", chunk));
    child.once("exit", () => this.onMainExit(run));
    child.once("close", (code, signal) => void this.onClosed(run, code, signal));
    this.emitReport(launch, "RUNNING", { pid: run.pid });
    this.ensurePolling();
  }

  private async stopSlot(key: string, graceMs: number, options: StopOptions): Promise<void> {
    const slot = this.slots.get(key);
    if (slot === undefined) return;
    const cause: Cause = {
      ...(options.condition ? { condition: options.condition } : {}),
      ...(options.reason ? { message: options.reason } : {}),
    };
    if (slot.phase === "prepared") {
      this.slots.delete(key);
      this.finishRun(slot.launch, "TERMINATED", {
        ...cause,
        message: options.reason ?? "stopped before it started",
      });
      return;
    }
    if (slot.cause === undefined && (cause.condition || cause.message)) slot.cause = cause;
    if (!slot.exitSeen) {
      if (graceMs === 0) {
        this.killTree(slot);
      } else {
        if (!slot.stopping) this.signal(-slot.pid, "SIGTERM");
        const killAtMs = performance.now() + graceMs;
        if (slot.killAtMs === undefined || killAtMs < slot.killAtMs) {
          clearTimeout(slot.killTimer);
          slot.killAtMs = killAtMs;
          slot.killTimer = setTimeout(() => this.killTree(slot), graceMs);
        }
      }
    }
    slot.stopping = true;
    await slot.exited;
  }

  // ---- process lifecycle ----------------------------------------------------------------

  /** The main process is gone: like a container whose PID 1 exited, the rest of its group goes too. */
  private onMainExit(run: RunningProcess): void {
    run.exitSeen = true;
    clearTimeout(run.killTimer);
    this.signal(-run.pid, "SIGKILL");
    // A descendant that escaped the group could hold the pipes open forever; stop waiting.
    run.drainTimer = setTimeout(() => {
      run.child.stdout?.destroy();
      run.child.stderr?.destroy();
    }, this.pipeDrainMs);
  }

  /** Exit seen and output drained: write the terminal report. */
  private async onClosed(
    run: RunningProcess,
    code: number | null,
    signal: NodeJS.Signals | null,
  ): Promise<void> {
    try {
      clearTimeout(run.drainTimer);
      clearTimeout(run.killTimer);
      run.writer.close();
      const status = exitStatus(code, signal);
      const terminationMessage = await readTerminationMessage(run.paths.terminationLog);
      const message = [run.cause?.message, terminationMessage].filter((m) => m !== undefined).join("\n");
      const key = kernelKey(run.launch.sessionId, run.launch.kernelIndex);
      if (this.slots.get(key) === run) this.slots.delete(key);
      this.finishRun(run.launch, "TERMINATED", {
        exitCode: status.exitCode,
        ...(status.signal ? { signal: status.signal } : {}),
        ...(run.cause?.condition ? { condition: run.cause.condition } : {}),
        ...(message !== "" ? { message: capUtf8(message, TERMINATION_MESSAGE_MAX_BYTES) } : {}),
        pid: run.pid,
      });
    } catch (error) {
      this.warn(`finishing kernel ${run.pid} failed`, error);
    } finally {
      run.resolveExited();
      if (!this.hasRunning()) this.stopPolling();
    }
  }

  /** SIGKILLs the kernel's group and any descendant that left it. */
  private killTree(run: RunningProcess, knownPids?: readonly number[]): void {
    if (run.exitSeen) return;
    this.signal(-run.pid, "SIGKILL");
    let pids = knownPids;
    if (pids === undefined) {
      try {
        pids = processTrees(readProcTable(), [run.pid]).get(run.pid) ?? [];
      } catch {
        pids = [];
      }
    }
    for (const pid of pids) {
      if (pid !== run.pid) this.signal(pid, "SIGKILL");
    }
  }

  // ---- memory enforcement ---------------------------------------------------------------

  private ensurePolling(): void {
    if (this.pollTimer !== undefined || this.closed) return;
    this.pollTimer = setTimeout(() => this.pollMemory(), this.memoryPollMs);
    this.pollTimer.unref();
  }

  private stopPolling(): void {
    clearTimeout(this.pollTimer);
    this.pollTimer = undefined;
  }

  /** One /proc walk for every running kernel; SIGKILL any tree above its memory request. */
  private pollMemory(): void {
    this.pollTimer = undefined;
    const runs: RunningProcess[] = [];
    for (const slot of this.slots.values()) {
      if (slot.phase === "running" && !slot.exitSeen) runs.push(slot);
    }
    if (runs.length === 0) return;
    const startedMs = performance.now();
    try {
      const sample = this.sampler.sample(runs.map((run) => run.pid));
      for (const run of runs) {
        const tree = sample.trees.get(run.pid);
        if (tree === undefined || run.exitSeen) continue;
        run.rssBytes = tree.rssBytes;
        const limitBytes = run.launch.memoryMiB * MiB;
        if (tree.rssBytes > limitBytes && run.cause?.condition !== "OOMKilled") {
          run.cause = {
            condition: "OOMKilled",
            message: `resident memory ${Math.round(tree.rssBytes / MiB)} MiB exceeded the ${run.launch.memoryMiB} MiB request`,
          };
          run.stopping = true;
          this.killTree(run, tree.pids);
        }
      }
      const tookMs = performance.now() - startedMs;
      const stats = this.pollStats;
      this.pollStats = {
        ticks: stats.ticks + 1,
        totalMs: stats.totalMs + tookMs,
        lastMs: tookMs,
        maxMs: Math.max(stats.maxMs, tookMs),
        lastProcessCount: sample.processCount,
        lastStatReads: sample.statReads,
      };
    } catch (error) {
      if (!this.warnedPoll)
        this.warn("reading /proc for memory enforcement failed; memory is not enforced", error);
      this.warnedPoll = true;
    }
    this.ensurePolling();
  }

  // ---- helpers --------------------------------------------------------------------------

  /** Signals a process (pid > 0) or a process group (pid < 0); never throws. */
  private signal(pid: number, signal: NodeJS.Signals): void {
    try {
      process.kill(pid, signal);
    } catch (error) {
      // ESRCH: already gone, which is what we wanted.
      if ((error as NodeJS.ErrnoException).code !== "ESRCH")
        this.warn(`kill(${pid}, ${signal}) failed`, error);
    }
  }

  private async resolveCommand(launch: KernelLaunch): Promise<string> {
    const pathEnv = launch.env.PATH ?? this.baseEnv.PATH ?? DEFAULT_PATH;
    return resolveExecutable(launch.command[0] as string, pathEnv, this.cwd);
  }

  private allocated(): AgentCapacity {
    let cpu = 0;
    let memoryMiB = 0;
    for (const slot of this.slots.values()) {
      if (slot.phase !== "running") continue;
      cpu += slot.launch.cpu;
      memoryMiB += slot.launch.memoryMiB;
    }
    return { cpu: roundCapacity(cpu), memoryMiB: roundCapacity(memoryMiB) };
  }

  private capacityShortfall(launch: KernelLaunch): string | undefined {
    const { cpu, memoryMiB } = this.allocated();
    const freeCpu = roundCapacity(this.capacity.cpu - cpu);
    const freeMemoryMiB = roundCapacity(this.capacity.memoryMiB - memoryMiB);
    if (launch.cpu <= freeCpu + CAPACITY_EPSILON && launch.memoryMiB <= freeMemoryMiB + CAPACITY_EPSILON) {
      return undefined;
    }
    return (
      `insufficient capacity on agent ${this.id}: the kernel requests cpu ${launch.cpu}, memory ${launch.memoryMiB} MiB; ` +
      `free are cpu ${freeCpu}, memory ${freeMemoryMiB} MiB`
    );
  }

  private hasRunning(): boolean {
    for (const slot of this.slots.values()) if (slot.phase === "running") return true;
    return false;
  }

  /** Runs `task` after every earlier command for the same kernel. */
  private async enqueue(key: string, task: () => Promise<void>): Promise<void> {
    const previous = this.queues.get(key) ?? Promise.resolve();
    const result = previous.then(task);
    const tail = result.catch(() => undefined);
    this.queues.set(key, tail);
    void tail.then(() => {
      if (this.queues.get(key) === tail) this.queues.delete(key);
    });
    return result;
  }

  /** ERROR without ending the run: a later prepare or start of it is still carried out. */
  private reportPrepareError(launch: KernelLaunch, message: string): void {
    this.emitReport(launch, "ERROR", { message: capUtf8(message, TERMINATION_MESSAGE_MAX_BYTES) });
  }

  /** ERROR that ends the run. */
  private failRun(launch: KernelLaunch, message: string): void {
    this.finishRun(launch, "ERROR", { message: capUtf8(message, TERMINATION_MESSAGE_MAX_BYTES) });
  }

  private finishRun(
    launch: KernelLaunch,
    status: "TERMINATED" | "ERROR",
    details: Omit<KernelReport, "agentId" | "sessionId" | "kernelIndex" | "runIndex" | "status" | "atMs">,
  ): void {
    const rKey = runKey(launch.sessionId, launch.kernelIndex, launch.runIndex);
    const report = this.emitReport(launch, status, details);
    this.finished.set(rKey, report);
    if (this.finished.size > MAX_FINISHED_RUNS) {
      const oldest = this.finished.keys().next();
      if (!oldest.done) this.finished.delete(oldest.value);
    }
    this.wakeFollowers(rKey);
  }

  private emitReport(
    launch: KernelLaunch,
    status: KernelReportStatus,
    details: Omit<KernelReport, "agentId" | "sessionId" | "kernelIndex" | "runIndex" | "status" | "atMs">,
  ): KernelReport {
    const report: KernelReport = {
      agentId: this.id,
      sessionId: launch.sessionId,
      kernelIndex: launch.kernelIndex,
      runIndex: launch.runIndex,
      status,
      ...details,
      atMs: this.clock(),
    };
    try {
      const result: unknown = this.onReport(report);
      if (result instanceof Promise) {
        result.catch((error: unknown) => this.warn(`onReport rejected a ${status} report`, error));
      }
    } catch (error) {
      this.warn(`onReport threw on a ${status} report; carrying on`, error);
    }
    return report;
  }

  private publishLines(launch: KernelLaunch, rKey: string, lines: readonly CapturedLine[]): void {
    for (const line of lines) {
      const logLine: LogLine = {
        sessionId: launch.sessionId,
        kernelIndex: launch.kernelIndex,
        runIndex: launch.runIndex,
        ...line,
      };
      for (const listener of this.logListeners) {
        try {
          listener(logLine);
        } catch (error) {
          this.warn("a log listener threw; carrying on", error);
        }
      }
    }
    this.wakeFollowers(rKey);
  }

  private wakeFollowers(rKey: string): void {
    const waiters = this.logWaiters.get(rKey);
    if (waiters === undefined) return;
    this.logWaiters.delete(rKey);
    for (const wake of waiters) wake();
  }

  private waitForRunActivity(rKey: string, signal?: AbortSignal): Promise<void> {
    return new Promise((resolveWait) => {
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        this.logWaiters.get(rKey)?.delete(done);
        resolveWait();
      };
      const timer = setTimeout(done, this.followPollMs);
      signal?.addEventListener("abort", done, { once: true });
      let waiters = this.logWaiters.get(rKey);
      if (waiters === undefined) this.logWaiters.set(rKey, (waiters = new Set()));
      waiters.add(done);
    });
  }
}

function busyMessage(slot: RunningProcess): string {
  const { sessionId, kernelIndex, runIndex } = slot.launch;
  return `kernel ${kernelIndex} of session ${sessionId} is still running run ${runIndex} (pid ${slot.pid})`;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function roundCapacity(value: number): number {
  return Math.round(value * 1e6) / 1e6;
}
