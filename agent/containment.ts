/**
 * Containment: finding, measuring and stopping every process a kernel run starts, including
 * ones that leave its process group and tree (setsid, double fork, re-parented to init).
 *
 * Modes, chosen once at agent start-up (and logged):
 * - "cgroup": cgroup v2 with the memory controller. Each run gets its own cgroup, which the
 *   kernel joins before any of its code runs (a shell step writes its pid, then execs the
 *   program, so argv[0] is the resolved executable path). Everything it forks stays in the
 *   cgroup: `cgroup.kill` (or a `cgroup.procs` walk on kernels before 5.14) stops them all,
 *   `memory.current` is the run's memory, and `memory.max` is its limit, enforced by the
 *   kernel's OOM killer for the whole cgroup (`memory.oom.group`); the run is reported
 *   OOMKilled (exit 137) when `memory.events` counts an OOM kill. Guarantee: no process of a
 *   run escapes, whatever it does (short of privileges to move itself between cgroups).
 * - "cgroup-tracking": cgroup v2 without the memory controller (hybrid hosts, where memory is
 *   bound to a v1 hierarchy, or an own cgroup that holds other processes). Tracking and
 *   stopping as above; memory is measured from /proc (see "Measuring memory without a
 *   cgroup" below), enforced by the agent's poll (SIGKILL of the cgroup above the request).
 * - "proc": no usable cgroup v2 (not mounted, not writable, or disabled by option). Each run is
 *   marked with an inherited environment variable `CAIRN_KERNEL_RUN=<token>` (unique per run);
 *   its processes are its process group, its tree by parent links, and every process whose
 *   `/proc/<pid>/environ` carries its token (readable for this user's processes). Memory is
 *   measured from /proc as in "cgroup-tracking", enforced by the poll. Limits: a process that
 *   clears or replaces its environment (exec with a new env) and escapes the tree and the group
 *   is not found; a process forked and escaped between two polls is found at the next poll; a
 *   pid recycled from an outsider is found at the next full scan (see proc-table.ts).
 *
 * Measuring memory without a cgroup: resident sets double-count pages shared between a run's
 * processes (a 100 MiB parent with four copy-on-write forks sums to about 550 MiB while they
 * hold about 110), so a run is judged by its processes' proportional set size (PSS,
 * smaps_rollup), which divides each shared page among its sharers. PSS costs the kernel a page-table walk (about a
 * millisecond per 100 MiB), and a process's PSS never exceeds its resident set, so each poll sums
 * the cheap resident sets first and reads PSS only when that sum is above the run's request:
 * a run under its request by resident memory is under it by PSS too. A process whose
 * smaps_rollup cannot be read (kernels before 4.14) counts its resident set, and the run's figure
 * is then named resident memory.
 *
 * At start-up the cgroup modes also kill and remove what agent processes that died without
 * cleaning up left behind (`cairn-<id>-<pid>` cgroups whose pid is gone).
 *
 * In every mode a run ends (its TERMINATED report) only after its main process exited and every
 * process still found for it was SIGKILLed and is gone (bounded wait, then a warning): a
 * session's processes must not outlive it, and the capacity it frees must really be free.
 * Stopping signals every process found, not only the group: SIGTERM, then SIGKILL after the
 * grace period.
 */
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { join } from "node:path";
import {
  detectCgroups,
  ensureDir,
  JOIN_AND_EXEC,
  reapStaleAgentCgroups,
  removeCgroup,
  RunCgroup,
  type CgroupBase,
} from "./cgroup.ts";
import { ProcessTreeSampler, readPssBytes, readStat, type ProcSample } from "./proc-table.ts";

/** Inherited by every process of a kernel run; not one of the documented CAIRN_* identity variables. */
export const KERNEL_RUN_TOKEN_ENV = "CAIRN_KERNEL_RUN";

export type ContainmentMode = "cgroup" | "cgroup-tracking" | "proc";

/**
 * What a run's memory figure is: the cgroup's `memory.current` ("cgroup" mode), the summed
 * proportional set size of its processes, or their summed resident sets (an upper bound of the
 * PSS, which is read only when this bound is above the request).
 */
export type MemoryMeasure = "cgroup memory" | "proportional set size" | "resident memory";

/** What a poll found for a run. */
export interface RunMembers {
  /** Its live processes (never zombies). */
  readonly pids: readonly number[];
  readonly memoryBytes: number;
  /** What `memoryBytes` measured; named in OOMKilled messages. */
  readonly measure: MemoryMeasure;
  /** The kernel's OOM killer acted in the run ("cgroup" mode only). */
  readonly oomKilled: boolean;
}

/** One kernel run's container. */
export interface RunCell {
  readonly token: string;
  /** The run's memory request, above which it is OOMKilled. */
  readonly memoryLimitBytes: number;
  /** Added to the kernel's environment. */
  readonly env: Readonly<Record<string, string>>;
  /** The main process, once spawned; cleared when it has exited (its pid may be reused). */
  mainPid: number | undefined;
}

export interface SpawnPlan {
  readonly file: string;
  readonly args: readonly string[];
  readonly argv0: string;
}

export interface Containment {
  readonly mode: ContainmentMode;
  /** For the start-up log: where, and why this mode. */
  readonly description: string;
  /** The kernel enforces memory limits itself (memory.max); otherwise the agent's poll does. */
  readonly kernelEnforcesMemory: boolean;
  /** Sets up a run's container before its spawn. Throws when it cannot. */
  open(memoryLimitBytes: number): RunCell;
  /** How to spawn the run's command so that it starts inside its container. */
  spawnPlan(cell: RunCell, executable: string, args: readonly string[], argv0: string): SpawnPlan;
  /** One poll of every run given; pass all runs that may still have processes. */
  sample(cells: readonly RunCell[]): Map<RunCell, RunMembers>;
  /** Signals every process of the run (`pids` from a sample just taken). */
  signal(cell: RunCell, signal: "SIGTERM" | "SIGKILL", pids: readonly number[]): void;
  /** Frees the run's container; false while processes remain (try again later). */
  release(cell: RunCell): boolean;
  /** Peak memory of the run, when the mode knows it. */
  peakBytes(cell: RunCell): number | undefined;
  /** Cost of the last sample's /proc walk ("proc" mode), for the poll's stats. */
  readonly lastWalk?: { readonly processCount: number; readonly statReads: number };
}

export interface ContainmentOptions {
  readonly agentId: string;
  /** false forces the "proc" mode. */
  readonly cgroups: boolean;
  readonly signal: (pid: number, signal: NodeJS.Signals) => void;
  /** Told how many kernel runs of agent processes that died (a crash, a SIGKILL) were stopped at start-up. */
  readonly onStaleRunsStopped?: (runs: number) => void;
}

export function createContainment(options: ContainmentOptions): Containment {
  if (!options.cgroups) return new ProcContainment(options.signal, "cgroups disabled by option");
  const name = `cairn-${options.agentId.replace(/[^A-Za-z0-9_.-]/g, "_")}-${process.pid}`;
  const found = detectCgroups(`cairn-probe-${name.slice("cairn-".length)}`);
  if (!found.available) return new ProcContainment(options.signal, found.reason);
  const stale = reapStaleAgentCgroups(found.base.ownDir, (pid) => existsSync(`/proc/${pid}`));
  if (stale > 0) options.onStaleRunsStopped?.(stale);
  return new CgroupContainment(found.base, join(found.base.ownDir, name), options.signal);
}

/**
 * A run's memory without a cgroup's counter: its summed resident sets while they stay within
 * the request (PSS can only be lower), else its summed proportional set size.
 */
export function measureMemory(
  pids: readonly number[],
  rssBytes: number,
  limitBytes: number,
): { readonly memoryBytes: number; readonly measure: MemoryMeasure } {
  if (rssBytes <= limitBytes) return { memoryBytes: rssBytes, measure: "resident memory" };
  let pssBytes = 0;
  let allProportional = true;
  for (const pid of pids) {
    const pss = readPssBytes(pid);
    if (pss === "unreadable") {
      allProportional = false;
      pssBytes += readStat(pid)?.rssBytes ?? 0;
    } else pssBytes += pss;
  }
  return { memoryBytes: pssBytes, measure: allProportional ? "proportional set size" : "resident memory" };
}

function newToken(): string {
  return randomBytes(12).toString("hex");
}

class ProcContainment implements Containment {
  readonly mode = "proc";
  readonly description: string;
  readonly kernelEnforcesMemory = false;
  private readonly sampler = new ProcessTreeSampler({ tokenName: KERNEL_RUN_TOKEN_ENV });
  private readonly signalPid: (pid: number, signal: NodeJS.Signals) => void;
  lastWalk: ProcSample | undefined;

  constructor(signal: (pid: number, signal: NodeJS.Signals) => void, why: string) {
    this.signalPid = signal;
    this.description = `process groups, trees and the ${KERNEL_RUN_TOKEN_ENV} environment mark from /proc (${why})`;
  }

  open(memoryLimitBytes: number): RunCell {
    const token = newToken();
    return { token, memoryLimitBytes, env: { [KERNEL_RUN_TOKEN_ENV]: token }, mainPid: undefined };
  }

  spawnPlan(_cell: RunCell, executable: string, args: readonly string[], argv0: string): SpawnPlan {
    return { file: executable, args, argv0 };
  }

  sample(cells: readonly RunCell[]): Map<RunCell, RunMembers> {
    const sample = this.sampler.sample(
      cells.map((cell) =>
        cell.mainPid === undefined ? { token: cell.token } : { pid: cell.mainPid, token: cell.token },
      ),
    );
    this.lastWalk = sample;
    const members = new Map<RunCell, RunMembers>();
    for (const cell of cells) {
      const tree = sample.trees.get(cell.token);
      const pids = tree?.pids ?? [];
      members.set(cell, {
        pids,
        ...measureMemory(pids, tree?.rssBytes ?? 0, cell.memoryLimitBytes),
        oomKilled: false,
      });
    }
    return members;
  }

  signal(cell: RunCell, signal: "SIGTERM" | "SIGKILL", pids: readonly number[]): void {
    if (cell.mainPid !== undefined) this.signalPid(-cell.mainPid, signal);
    for (const pid of pids) if (pid !== cell.mainPid) this.signalPid(pid, signal);
  }

  release(): boolean {
    return true;
  }

  peakBytes(): undefined {
    return undefined;
  }
}

interface CgroupCell extends RunCell {
  readonly cgroup: RunCgroup;
}

class CgroupContainment implements Containment {
  readonly mode: ContainmentMode;
  readonly description: string;
  readonly kernelEnforcesMemory: boolean;
  private readonly base: CgroupBase;
  private readonly agentDir: string;
  private readonly signalPid: (pid: number, signal: NodeJS.Signals) => void;
  private readonly cells = new Set<CgroupCell>();

  constructor(base: CgroupBase, agentDir: string, signal: (pid: number, signal: NodeJS.Signals) => void) {
    this.base = base;
    this.agentDir = agentDir;
    this.signalPid = signal;
    this.mode = base.memory ? "cgroup" : "cgroup-tracking";
    this.kernelEnforcesMemory = base.memory;
    this.description = base.memory
      ? `cgroup v2 in ${agentDir}: memory.max per run, cgroup.kill`
      : `cgroup v2 in ${agentDir} without the memory controller: processes tracked and killed by cgroup, ` +
        `memory measured from /proc (proportional set size)`;
  }

  open(memoryLimitBytes: number): RunCell {
    ensureDir(this.agentDir, this.base.memory);
    const token = newToken();
    const cgroup = new RunCgroup(this.agentDir, `run-${token}`, this.base, memoryLimitBytes);
    const cell: CgroupCell = {
      token,
      memoryLimitBytes,
      env: { [KERNEL_RUN_TOKEN_ENV]: token },
      mainPid: undefined,
      cgroup,
    };
    this.cells.add(cell);
    return cell;
  }

  spawnPlan(cell: RunCell, executable: string, args: readonly string[]): SpawnPlan {
    return {
      file: "/bin/sh",
      args: ["-c", JOIN_AND_EXEC, this.of(cell).cgroup.procsPath, executable, ...args],
      argv0: "sh",
    };
  }

  sample(cells: readonly RunCell[]): Map<RunCell, RunMembers> {
    const members = new Map<RunCell, RunMembers>();
    for (const cell of cells) {
      const { cgroup } = this.of(cell);
      const pids: number[] = [];
      let rssBytes = 0;
      for (const pid of cgroup.pids()) {
        const stat = readStat(pid);
        if (stat === undefined || stat.state === "Z") continue;
        pids.push(pid);
        rssBytes += stat.rssBytes;
      }
      const current = this.base.memory ? cgroup.memoryBytes() : undefined;
      const memory =
        current !== undefined
          ? { memoryBytes: current, measure: "cgroup memory" as const }
          : measureMemory(pids, rssBytes, cell.memoryLimitBytes);
      members.set(cell, { pids, ...memory, oomKilled: this.base.memory && cgroup.oomKilled() });
    }
    return members;
  }

  signal(cell: RunCell, signal: "SIGTERM" | "SIGKILL", pids: readonly number[]): void {
    const { cgroup } = this.of(cell);
    if (cell.mainPid !== undefined) this.signalPid(-cell.mainPid, signal);
    if (signal === "SIGKILL" && cgroup.kill()) return;
    for (const pid of new Set([...pids, ...cgroup.pids()]))
      if (pid !== cell.mainPid) this.signalPid(pid, signal);
  }

  release(cell: RunCell): boolean {
    const own = this.of(cell);
    if (!own.cgroup.remove()) return false;
    this.cells.delete(own);
    // The agent's cgroup goes with its last run, so an idle or stopped agent leaves nothing behind.
    if (this.cells.size === 0) removeCgroup(this.agentDir);
    return true;
  }

  peakBytes(cell: RunCell): number | undefined {
    return this.base.memory ? this.of(cell).cgroup.peakBytes() : undefined;
  }

  private of(cell: RunCell): CgroupCell {
    if (!("cgroup" in cell)) throw new Error(`run ${cell.token} was not opened by this containment`);
    return cell as CgroupCell;
  }
}
