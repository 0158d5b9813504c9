/**
 * The agent's kernel runner (`cairn agent`, and so every agent of the embedded runtime): runs
 * kernels as real child processes, each in its own process group, container (a cgroup, or the
 * /proc fallback: containment.ts) and work directory, enforces their memory requests, caps
 * their logs on disk (log-capture.ts), removes old runs' directories (work-dir-retention.ts),
 * reports every kernel status change through `onReport`, and probes the deployment replicas
 * among its kernels (replica-health.ts) through `onRouteHealth`. Transport-free: the caller maps
 * commands and reports to events.
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
import { setTimeout as sleep } from "node:timers/promises";
import { promises as fs } from "node:fs";
import { resolve } from "node:path";
import { performance } from "node:perf_hooks";
import {
  createContainment,
  type Containment,
  type ContainmentMode,
  type RunCell,
  type RunMembers,
} from "./containment.ts";
import { buildKernelEnv, DEFAULT_PATH } from "./environment.ts";
import { InvalidAgentInputError } from "./errors.ts";
import { exitStatus } from "./exit-status.ts";
import { resolveExecutable } from "./executable.ts";
import { classifyFailure } from "../functions/core/retry/failure-categories.ts";
import { PermanentFailureCategory } from "../functions/core/retry/permanent-failures.ts";
import {
  checkCapacity,
  checkIndex,
  checkPathComponent,
  checkPositive,
  kernelKey,
  placementKey,
  runKey,
  validateLaunch,
} from "./launch.ts";
import { ReplicaProbes, replicaPort, type RouteHealthSink } from "./replica-health.ts";
import { DEFAULT_LOG_CAP_BYTES, MIN_LOG_CAP_BYTES, RunLogWriter, type CapturedLine } from "./log-capture.ts";
import { followCombinedLog, readCombinedLog, streamCombinedLog } from "./log-reader.ts";
import { capUtf8, readTerminationMessage, TERMINATION_MESSAGE_MAX_BYTES } from "./termination-log.ts";
import { asKernelUser, prepareKernelUserDirs, type KernelUser } from "./kernel-user.ts";
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
import { runLogPaths, writeEndedMarker, writeOwnerMarker } from "./work-dir.ts";
import { WorkDirSweeper, type SweepResult } from "./work-dir-retention.ts";

export interface LocalAgentOptions {
  readonly id: string;
  readonly capacity: AgentCapacity;
  /** Kernels run in `workRoot/<sessionId>/<kernelIndex>/run-<runIndex>/`. */
  readonly workRoot: string;
  /** Receives every kernel status change. A throw is logged; the agent carries on. */
  readonly onReport: (report: KernelReport) => void;
  /**
   * Receives the health probes of deployment replicas (kernels started with a `service`). A
   * throw or rejection means not sent: the probes go with the next report. Absent: replicas
   * still get their CAIRN_PORT, and nobody probes them.
   */
  readonly onRouteHealth?: RouteHealthSink;
  /** How often kernels' memory is checked. @default 100 */
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
  /**
   * Use cgroup v2 where the host allows it (detected at start-up); false forces the /proc
   * fallback. See containment.ts for the modes and what each guarantees. @default true
   */
  readonly cgroups?: boolean;
  /**
   * Bytes of logs on disk per run, across stdout.log, stderr.log, output.jsonl and their
   * previous generations; older output is dropped, the tail kept. At least 1 MiB.
   * @default 64 MiB
   */
  readonly logCapBytes?: number;
  /**
   * Run directories are removed this long after their run ended; 0 keeps them forever.
   * @default 24 h
   */
  readonly workDirRetentionMs?: number;
  /** How often the retention sweep looks at (a bounded number of) run directories. @default 60000 */
  readonly workDirSweepMs?: number;
  /**
   * Run every kernel as this unprivileged user, switched to by `setpriv` at the kernel's exec
   * (kernel-user.ts); the agent must run as root. Absent: kernels run as the agent's user.
   */
  readonly kernelUser?: { readonly user: KernelUser; readonly setpriv: string };
  /** Start-up facts, such as the containment mode. @default console.info */
  readonly info?: (message: string) => void;
}

export type LogListener = (line: LogLine) => void;

const MiB = 1024 * 1024;
const DEFAULT_GRACE_MS = 5000;
const DEFAULT_RETENTION_MS = 24 * 60 * 60 * 1000;
/** After a run's main process exited: how long its other processes get to die of SIGKILL. */
const REAP_TIMEOUT_MS = 5000;
const REAP_POLL_MS = 20;
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
  readonly cell: RunCell;
  readonly exited: Promise<void>;
  readonly resolveExited: () => void;
  /** A deployment replica's port (CAIRN_PORT). */
  readonly port: number | undefined;
  rssBytes?: number;
  cause?: Cause;
  stopping: boolean;
  /** A stop command came before the process exited: its end is the control plane's decision. */
  stopRequested?: true;
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
  private readonly logCapBytes: number;
  private readonly containment: Containment;
  private readonly kernelUser: LocalAgentOptions["kernelUser"];
  private readonly sweeper: WorkDirSweeper | undefined;
  /** Probers of the running deployment replicas; absent without `onRouteHealth`. */
  private readonly replicas: ReplicaProbes | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;

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
  /** Containers not yet released: running runs, ending ones, and ones that would not go yet. */
  private readonly cells = new Set<RunCell>();
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
    this.kernelUser = options.kernelUser;
    this.warn =
      options.warn ?? ((message, error) => console.warn(`[agent ${this.id}] ${message}`, error ?? ""));
    this.followPollMs = checkPositive("followPollMs", options.followPollMs ?? 250);
    this.pipeDrainMs = checkPositive("pipeDrainMs", options.pipeDrainMs ?? 2000);
    this.logCapBytes = options.logCapBytes ?? DEFAULT_LOG_CAP_BYTES;
    if (!Number.isSafeInteger(this.logCapBytes) || this.logCapBytes < MIN_LOG_CAP_BYTES) {
      throw new InvalidAgentInputError("logCapBytes", `must be an integer >= ${MIN_LOG_CAP_BYTES} (1 MiB)`);
    }
    const retentionMs = options.workDirRetentionMs ?? DEFAULT_RETENTION_MS;
    if (typeof retentionMs !== "number" || !Number.isFinite(retentionMs) || retentionMs < 0) {
      throw new InvalidAgentInputError(
        "workDirRetentionMs",
        "must be a finite number >= 0 (0 keeps run directories)",
      );
    }
    if (options.onRouteHealth !== undefined && typeof options.onRouteHealth !== "function") {
      throw new InvalidAgentInputError("onRouteHealth", "must be a function");
    }
    this.replicas =
      options.onRouteHealth &&
      new ReplicaProbes({
        agentId: this.id,
        onReport: options.onRouteHealth,
        clock: this.clock,
        warn: this.warn,
      });
    const sweepMs = checkPositive("workDirSweepMs", options.workDirSweepMs ?? 60_000);
    if (options.cgroups !== undefined && typeof options.cgroups !== "boolean") {
      throw new InvalidAgentInputError("cgroups", "must be a boolean");
    }
    const info = options.info ?? ((message) => console.info(`[agent ${this.id}] ${message}`));
    this.containment = createContainment({
      agentId: this.id,
      cgroups: options.cgroups ?? true,
      signal: (pid, signal) => this.signal(pid, signal),
      onStaleRunsStopped: (runs) =>
        info(
          `containment: stopped the processes of ${runs} kernel run(s) an agent process that died left behind`,
        ),
    });
    info(`containment: ${this.containment.mode}: ${this.containment.description}`);
    if (retentionMs > 0) {
      this.sweeper = new WorkDirSweeper({
        workRoot: this.workRoot,
        retentionMs,
        clock: this.clock,
        agentId: this.id,
        isActive: (workDir) => [...this.slots.values()].some((slot) => slot.paths.workDir === workDir),
        warn: this.warn,
      });
      this.sweepTimer = setInterval(() => {
        this.sweepWorkDirs().catch((error: unknown) => this.warn("the work directory sweep failed", error));
      }, sweepMs);
      this.sweepTimer.unref();
    }
  }

  /** How this agent contains its kernels, as detected at start-up. */
  get containmentMode(): ContainmentMode {
    return this.containment.mode;
  }

  /**
   * One tick of the retention sweep (it also runs every `workDirSweepMs`): looks at the next
   * few run directories and removes those whose run ended more than `workDirRetentionMs` ago.
   */
  async sweepWorkDirs(): Promise<SweepResult> {
    if (this.sweeper === undefined) return { examined: 0, removed: [], completed: true };
    return this.sweeper.tick();
  }

  // ---- commands -------------------------------------------------------------------------

  /**
   * Creates the run's work directory and checks that its executable exists and can run.
   * Reports PULLING as it begins (Iris's BUILDING: "the worker sets this during bundle download
   * and dependency sync"), then PREPARED, or ERROR naming the executable. Repeating it repeats
   * the check, and both reports.
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

  /**
   * Stops the kernel like `stop`, only if its live process is exactly this run and placement:
   * what the control plane says has ended must not stop a later run of the same kernel. Resolves
   * false (at once) when no such process runs.
   */
  async stopRun(
    run: {
      readonly sessionId: string;
      readonly kernelIndex: number;
      readonly runIndex: number;
      readonly placement: number;
    },
    options: StopOptions = {},
  ): Promise<boolean> {
    const slot = this.slots.get(kernelKey(run.sessionId, run.kernelIndex));
    if (
      slot?.phase !== "running" ||
      slot.exitSeen ||
      slot.launch.runIndex !== run.runIndex ||
      (slot.launch.placement ?? 0) !== run.placement
    ) {
      return false;
    }
    await this.stop(run.sessionId, run.kernelIndex, options);
    return true;
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
    this.stopSweeping();
    await this.stopAll({ reason: `agent ${this.id} shut down`, ...options });
    this.replicas?.forgetAll();
    this.releaseCells();
    if (this.cells.size === 0) this.stopPolling();
    await this.sweeper?.close();
  }

  /**
   * Last resort for a `process.on("exit")` hook, where nothing asynchronous runs: SIGKILLs
   * every kernel's process group. Kernels run detached, so they would outlive the runtime.
   */
  killAllNow(): void {
    this.closed = true;
    this.stopSweeping();
    this.replicas?.forgetAll();
    for (const slot of this.slots.values()) {
      if (slot.phase === "running" && !slot.exitSeen) this.signal(-slot.pid, "SIGKILL");
    }
    // Then every process found for any run, escaped ones included.
    const members = this.sampleCells();
    for (const cell of this.cells) this.containment.signal(cell, "SIGKILL", members?.get(cell)?.pids ?? []);
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
        placement: launch.placement ?? 0,
        pid: slot.pid,
        cpu: launch.cpu,
        memoryMiB: launch.memoryMiB,
        startedAtMs: slot.startedAtMs,
        ...(slot.port !== undefined ? { port: slot.port } : {}),
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

  /**
   * Every line the run has written so far, one at a time in bounded memory (both streams
   * interleaved in write order; a note first if the log cap dropped earlier output).
   */
  streamLogs(
    sessionId: string,
    kernelIndex: number,
    runIndex: number,
  ): AsyncGenerator<LogLine, void, undefined> {
    return streamCombinedLog(this.logPaths(sessionId, kernelIndex, runIndex), {
      sessionId,
      kernelIndex,
      runIndex,
    });
  }

  /** Every line the run has written so far, collected: see `streamLogs` for big logs. */
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
        isLive: () => {
          const slot = this.slots.get(kKey);
          return slot?.launch.runIndex === runIndex && !this.finished.has(placementKey(slot.launch));
        },
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
    if (this.finished.has(placementKey(launch))) return;
    const slot = this.slots.get(key);
    if (slot?.phase === "running") {
      if (slot.launch.runIndex !== launch.runIndex) this.reportPrepareError(launch, busyMessage(slot));
      return;
    }
    if (this.closed) return this.reportPrepareError(launch, `agent ${this.id} is shutting down`);
    this.emitReport(launch, "PULLING", {});
    const paths = runLogPaths(this.workRoot, launch.sessionId, launch.kernelIndex, launch.runIndex);
    try {
      await this.makeWorkDir(paths.workDir);
      await this.resolveCommand(launch);
    } catch (error) {
      if (slot?.launch.runIndex === launch.runIndex) this.slots.delete(key);
      return this.reportPrepareError(launch, errorText(error), permanentCategory(error));
    }
    this.slots.set(key, { phase: "prepared", launch, paths });
    this.emitReport(launch, "PREPARED", {});
  }

  private async doStart(launch: KernelLaunch): Promise<void> {
    const key = kernelKey(launch.sessionId, launch.kernelIndex);
    if (this.finished.has(placementKey(launch))) return;
    const slot = this.slots.get(key);
    if (slot?.phase === "running") {
      if (slot.launch.runIndex !== launch.runIndex) this.failRun(launch, busyMessage(slot));
      return;
    }
    const paths = runLogPaths(this.workRoot, launch.sessionId, launch.kernelIndex, launch.runIndex);
    let executable: string;
    let port: number | undefined;
    let cwd = paths.workDir;
    try {
      await this.makeWorkDir(paths.workDir);
      executable = await this.resolveCommand(launch);
      if (launch.service !== undefined) port = await replicaPort(launch.service);
      if (this.kernelUser)
        cwd = prepareKernelUserDirs(paths.workDir, paths.terminationLog, this.kernelUser.user);
    } catch (error) {
      return this.failRun(launch, errorText(error), permanentCategory(error));
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
        this.logCapBytes,
      );
    } catch (error) {
      return this.failRun(launch, `cannot open log files in ${paths.workDir}: ${errorText(error)}`);
    }
    let cell: RunCell;
    try {
      cell = this.containment.open(launch.memoryMiB * MiB);
    } catch (error) {
      writer.close();
      return this.failRun(
        launch,
        `cannot create the kernel's ${this.containment.mode} container: ${errorText(error)}`,
      );
    }
    this.cells.add(cell);
    const env = {
      ...buildKernelEnv(
        launch,
        { agentId: this.id, terminationLogPath: paths.terminationLog, port },
        // The kernel user's own HOME, USER and LOGNAME, under what the spec sets.
        this.kernelUser ? { ...this.baseEnv, ...kernelUserEnv(this.kernelUser.user) } : this.baseEnv,
      ),
      ...cell.env,
    };
    // As the kernel user: the container is joined first (as root), then setpriv switches and execs.
    const target = this.kernelUser
      ? asKernelUser(this.kernelUser.user, this.kernelUser.setpriv, executable, launch.command.slice(1))
      : { file: executable, args: launch.command.slice(1) };
    const plan = this.containment.spawnPlan(cell, target.file, target.args, launch.command[0] as string);
    const abandon = (error: unknown): void => {
      writer.close();
      this.cells.delete(cell);
      if (!this.containment.release(cell)) this.warn(`the container of ${rKey} could not be removed`);
      this.failRun(
        launch,
        `cannot start ${launch.command[0]}: ${errorText(error)}`,
        permanentCategory(error),
      );
    };
    let child: ChildProcess;
    try {
      child = spawn(plan.file, plan.args, {
        argv0: plan.argv0,
        cwd,
        env,
        // Its own process group: signals reach the kernel's whole tree, and a Ctrl-C meant
        // for the runtime does not reach kernels before the agent stops them in order.
        detached: true,
        stdio: ["ignore", "pipe", "pipe"],
      });
    } catch (error) {
      return abandon(error);
    }
    const spawnError = new Promise<Error>((resolveError) => child.once("error", resolveError));
    if (child.pid === undefined) {
      return abandon(await spawnError);
    }
    cell.mainPid = child.pid;
    const { promise: exited, resolve: resolveExited } = Promise.withResolvers<void>();
    const run: RunningProcess = {
      phase: "running",
      launch,
      paths,
      child,
      pid: child.pid,
      startedAtMs: this.clock(),
      writer,
      cell,
      exited,
      resolveExited,
      port,
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
    if (launch.service !== undefined && port !== undefined) {
      this.replicas?.watch(rKey, {
        sessionId: launch.sessionId,
        runIndex: launch.runIndex,
        port,
        service: launch.service,
      });
    }
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
      const category = classifyFailure({ status: "TERMINATED", stopRequested: true, ...cause });
      this.finishRun(slot.launch, "TERMINATED", {
        ...cause,
        message: options.reason ?? "stopped before it started",
        ...(category !== undefined ? { failureCategory: category } : {}),
      });
      return;
    }
    if (slot.cause === undefined && (cause.condition || cause.message)) slot.cause = cause;
    if (!slot.exitSeen) slot.stopRequested = true;
    this.replicas?.forget(runKey(slot.launch.sessionId, slot.launch.kernelIndex, slot.launch.runIndex));
    if (!slot.exitSeen) {
      if (graceMs === 0) {
        this.killTree(slot);
      } else {
        if (!slot.stopping) this.signalRun(slot, "SIGTERM");
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
    this.replicas?.forget(runKey(run.launch.sessionId, run.launch.kernelIndex, run.launch.runIndex));
    this.signal(-run.pid, "SIGKILL");
    // The pid is reaped and may be reused: from now on the run is found by its container only.
    run.cell.mainPid = undefined;
    this.signalRun(run, "SIGKILL");
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
      await this.reapRun(run);
      const status = exitStatus(code, signal);
      const terminationMessage = await readTerminationMessage(run.paths.terminationLog);
      const message = [run.cause?.message, terminationMessage].filter((m) => m !== undefined).join("\n");
      const key = kernelKey(run.launch.sessionId, run.launch.kernelIndex);
      if (this.slots.get(key) === run) this.slots.delete(key);
      const category = classifyFailure({
        status: "TERMINATED",
        exitCode: status.exitCode,
        ...(status.signal ? { signal: status.signal } : {}),
        ...(run.cause?.condition ? { condition: run.cause.condition } : {}),
        ...(run.stopRequested ? { stopRequested: true } : {}),
      });
      this.finishRun(run.launch, "TERMINATED", {
        exitCode: status.exitCode,
        ...(status.signal ? { signal: status.signal } : {}),
        ...(run.cause?.condition ? { condition: run.cause.condition } : {}),
        ...(message !== "" ? { message: capUtf8(message, TERMINATION_MESSAGE_MAX_BYTES) } : {}),
        ...(category !== undefined ? { failureCategory: category } : {}),
        pid: run.pid,
      });
    } catch (error) {
      this.warn(`finishing kernel ${run.pid} failed`, error);
    } finally {
      run.resolveExited();
      if (!this.hasRunning() && this.cells.size === 0) this.stopPolling();
    }
  }

  /**
   * The main process has exited: SIGKILLs whatever of the run is left (escaped descendants)
   * until nothing is, so that the run's end means its processes are gone, then frees its
   * container. Bounded: a process stuck in the kernel (D state) is warned about, not waited for.
   */
  private async reapRun(run: RunningProcess): Promise<void> {
    const deadline = performance.now() + REAP_TIMEOUT_MS;
    let left: readonly number[] = [];
    for (;;) {
      const members = this.sampleCells()?.get(run.cell);
      if (members?.oomKilled && run.cause?.condition !== "OOMKilled") run.cause = this.oomCause(run, members);
      left = members?.pids ?? [];
      if (left.length === 0 || performance.now() > deadline) break;
      this.containment.signal(run.cell, "SIGKILL", left);
      await sleep(REAP_POLL_MS);
    }
    if (left.length > 0) {
      this.warn(`kernel ${run.pid}: processes ${left.join(", ")} survived SIGKILL for ${REAP_TIMEOUT_MS} ms`);
    }
    // One that will not go yet (a process stuck) stays in `cells`: polled, killed and retried.
    if (this.containment.release(run.cell)) this.cells.delete(run.cell);
  }

  /** Frees the containers of ended runs that could not be freed when they ended. */
  private releaseCells(): void {
    const held = new Set<RunCell>();
    for (const slot of this.slots.values()) if (slot.phase === "running") held.add(slot.cell);
    for (const cell of this.cells) {
      if (!held.has(cell) && this.containment.release(cell)) this.cells.delete(cell);
    }
  }

  /** SIGKILLs the kernel's group and every process found for it, escaped ones included. */
  private killTree(run: RunningProcess, knownPids?: readonly number[]): void {
    if (run.exitSeen) return;
    if (knownPids === undefined) this.signalRun(run, "SIGKILL");
    else this.containment.signal(run.cell, "SIGKILL", knownPids);
  }

  /** Signals every process of the run: its group, and all its container holds. */
  private signalRun(run: RunningProcess, signal: "SIGTERM" | "SIGKILL"): void {
    const pids = this.sampleCells()?.get(run.cell)?.pids ?? [];
    this.containment.signal(run.cell, signal, pids);
  }

  /** One sample of every unreleased container; undefined (warned once) when it fails. */
  private sampleCells(): Map<RunCell, RunMembers> | undefined {
    try {
      return this.containment.sample([...this.cells]);
    } catch (error) {
      if (!this.warnedPoll) this.warn(`sampling kernels' processes (${this.containment.mode}) failed`, error);
      this.warnedPoll = true;
      return undefined;
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

  /**
   * One sample of every kernel's processes: SIGKILL any run above its memory request (unless
   * the kernel's cgroup limit does it), and report a run the OOM killer hit as OOMKilled.
   */
  private pollMemory(): void {
    this.pollTimer = undefined;
    const runs: RunningProcess[] = [];
    for (const slot of this.slots.values()) {
      if (slot.phase === "running" && !slot.exitSeen) runs.push(slot);
    }
    if (runs.length === 0 && this.cells.size === 0) return;
    const startedMs = performance.now();
    const sample = this.sampleCells();
    if (sample !== undefined) {
      let processCount = 0;
      for (const members of sample.values()) processCount += members.pids.length;
      for (const run of runs) {
        const members = sample.get(run.cell);
        if (members === undefined || run.exitSeen) continue;
        run.rssBytes = members.memoryBytes;
        if (run.cause?.condition === "OOMKilled") continue;
        const limitBytes = run.launch.memoryMiB * MiB;
        const over = !this.containment.kernelEnforcesMemory && members.memoryBytes > limitBytes;
        if (over || members.oomKilled) {
          run.cause = this.oomCause(run, members);
          run.stopping = true;
          this.killTree(run, members.pids);
        }
      }
      // Leftovers of ended runs: kill again, free once empty.
      for (const [cell, members] of sample) {
        if (runs.some((run) => run.cell === cell) || members.pids.length === 0) continue;
        this.containment.signal(cell, "SIGKILL", members.pids);
      }
      this.releaseCells();
      const tookMs = performance.now() - startedMs;
      const stats = this.pollStats;
      this.pollStats = {
        ticks: stats.ticks + 1,
        totalMs: stats.totalMs + tookMs,
        lastMs: tookMs,
        maxMs: Math.max(stats.maxMs, tookMs),
        lastProcessCount: this.containment.lastWalk?.processCount ?? processCount,
        lastStatReads: this.containment.lastWalk?.statReads ?? processCount,
      };
    }
    this.ensurePolling();
  }

  private oomCause(run: RunningProcess, members: RunMembers): Cause {
    const request = `${run.launch.memoryMiB} MiB request`;
    if (!members.oomKilled) {
      return {
        condition: "OOMKilled",
        // Rounded up: a tree 0.3 MiB over a 96 MiB request must not read "96 MiB exceeded 96 MiB".
        message: `${members.measure} ${Math.ceil(members.memoryBytes / MiB)} MiB exceeded the ${request}`,
      };
    }
    const peak = this.containment.peakBytes(run.cell);
    return {
      condition: "OOMKilled",
      message:
        `memory reached the ${request}` +
        (peak === undefined ? "" : ` (peak ${Math.round(peak / MiB)} MiB)`) +
        "; the kernel's OOM killer ended it",
    };
  }

  private stopSweeping(): void {
    clearInterval(this.sweepTimer);
    this.sweepTimer = undefined;
  }

  private async makeWorkDir(workDir: string): Promise<void> {
    await fs.mkdir(workDir, { recursive: true });
    writeOwnerMarker(workDir, { agentId: this.id, agentPid: process.pid });
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

  /**
   * ERROR without ending the run: a later prepare or start of it is still carried out. A
   * `category` marks an error no retry can clear: the control plane ends the run FAILED at once.
   */
  private reportPrepareError(
    launch: KernelLaunch,
    message: string,
    category?: PermanentFailureCategory,
  ): void {
    this.emitReport(launch, "ERROR", {
      message: capUtf8(message, TERMINATION_MESSAGE_MAX_BYTES),
      ...(category !== undefined ? { failureCategory: category } : {}),
    });
  }

  /**
   * ERROR that ends the run, with its failure category: `permanent` (as for a preparation error)
   * or `start_failed` (core/retry/failure-categories.ts).
   */
  private failRun(launch: KernelLaunch, message: string, permanent?: PermanentFailureCategory): void {
    const category = classifyFailure({ status: "ERROR", ...(permanent !== undefined ? { permanent } : {}) });
    this.finishRun(launch, "ERROR", {
      message: capUtf8(message, TERMINATION_MESSAGE_MAX_BYTES),
      ...(category !== undefined ? { failureCategory: category } : {}),
    });
  }

  private finishRun(
    launch: KernelLaunch,
    status: "TERMINATED" | "ERROR",
    details: Omit<KernelReport, ReportIdentity>,
  ): void {
    this.markEnded(launch);
    const report = this.emitReport(launch, status, details);
    this.finished.set(placementKey(launch), report);
    if (this.finished.size > MAX_FINISHED_RUNS) {
      const oldest = this.finished.keys().next();
      if (!oldest.done) this.finished.delete(oldest.value);
    }
    this.wakeFollowers(runKey(launch.sessionId, launch.kernelIndex, launch.runIndex));
  }

  /** For the retention sweep: the run's directory may go `workDirRetentionMs` from now. */
  private markEnded(launch: KernelLaunch): void {
    const { workDir } = runLogPaths(this.workRoot, launch.sessionId, launch.kernelIndex, launch.runIndex);
    try {
      writeEndedMarker(workDir, this.clock());
    } catch (error) {
      this.warn(`marking ${workDir} as ended failed; the retention sweep will judge it by age`, error);
    }
  }

  private emitReport(
    launch: KernelLaunch,
    status: KernelReportStatus,
    details: Omit<KernelReport, ReportIdentity>,
  ): KernelReport {
    const report: KernelReport = {
      agentId: this.id,
      sessionId: launch.sessionId,
      kernelIndex: launch.kernelIndex,
      runIndex: launch.runIndex,
      ...(launch.placement !== undefined ? { placement: launch.placement } : {}),
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

/** What emitReport fills in from the launch and the agent: a report's identity and time. */
type ReportIdentity = "agentId" | "sessionId" | "kernelIndex" | "runIndex" | "placement" | "status" | "atMs";

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

/**
 * The failure category of an error no retry can clear, read from its code (the agent's own
 * `ExecutableNotFound`, or the `E2BIG` exec returns for an oversized command line).
 */
function permanentCategory(error: unknown): PermanentFailureCategory | undefined {
  const code = typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined;
  if (code === "ExecutableNotFound") return PermanentFailureCategory.ExecutableNotFound;
  if (code === "E2BIG") return PermanentFailureCategory.ArgumentsTooLarge;
  return undefined;
}

/** Who the kernel is, in its environment, when it runs as the kernel user. */
function kernelUserEnv(user: KernelUser): Record<string, string> {
  return { HOME: user.home, USER: user.name, LOGNAME: user.name };
}
