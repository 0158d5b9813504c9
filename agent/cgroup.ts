/**
 * Linux cgroup v2 for kernel containment: finding the hierarchy this process may use, and the
 * file operations on one cgroup. Synchronous: each is one small cgroupfs read or write.
 *
 * Layout: `<agent's own cgroup>/cairn-<agent id>-<agent pid>/run-<token>/`, one leaf per kernel
 * run, created before the run's spawn and removed once it is empty.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** Where the agent may create its kernels' cgroups, as found at start-up. */
export interface CgroupBase {
  /** The agent's own cgroup directory; its kernels' cgroups go below it. */
  readonly ownDir: string;
  /** The memory controller can be enabled for kernels' cgroups (memory.max, memory.current). */
  readonly memory: boolean;
  /** `cgroup.kill` exists (Linux 5.14+): one write SIGKILLs a whole cgroup, forks included. */
  readonly kill: boolean;
}

export type CgroupDetection =
  | { readonly available: true; readonly base: CgroupBase }
  | { readonly available: false; readonly reason: string };

/** The cgroup v2 mount point and the path of this process's cgroup in it. */
export function findOwnCgroup(
  mountInfo = readText("/proc/self/mountinfo"),
  selfCgroup = readText("/proc/self/cgroup"),
): { readonly dir: string } | { readonly reason: string } {
  if (mountInfo === undefined || selfCgroup === undefined) return { reason: "/proc/self is not readable" };
  const line = selfCgroup.split("\n").find((l) => l.startsWith("0::"));
  if (line === undefined) return { reason: "this process is in no cgroup v2 hierarchy (/proc/self/cgroup)" };
  const path = line.slice(3);
  // mountinfo: id parent dev root mountpoint options [optional...] - fstype source superoptions
  const mounts = mountInfo
    .split("\n")
    .map((l) => l.split(" "))
    .filter((f) => f[f.indexOf("-") + 1] === "cgroup2")
    .map((f) => ({ root: unescapeMount(f[3] ?? "/"), point: unescapeMount(f[4] ?? "") }));
  if (mounts.length === 0) return { reason: "no cgroup2 file system is mounted" };
  // Prefer the unified layout's /sys/fs/cgroup; hybrid hosts mount it at /sys/fs/cgroup/unified.
  mounts.sort((a, b) => Number(b.point === "/sys/fs/cgroup") - Number(a.point === "/sys/fs/cgroup"));
  for (const { root, point } of mounts) {
    if (root === "/") return { dir: join(point, path) };
    if (path === root || path.startsWith(`${root}/`)) return { dir: join(point, path.slice(root.length)) };
  }
  return { reason: `this process's cgroup ${path} is not under a mounted cgroup2 file system` };
}

/**
 * Decides at start-up whether kernels get cgroups: the hierarchy is cgroup2, a child cgroup can
 * be created below this process's own, and a process can move itself into it (checked for
 * real, with the same shell step every kernel's spawn uses). Enables the memory controller for
 * the children when the host allows it; without it cgroups still track and kill every process.
 */
export function detectCgroups(probeName: string): CgroupDetection {
  const own = findOwnCgroup();
  if ("reason" in own) return { available: false, reason: own.reason };
  const probe = join(own.dir, probeName);
  try {
    mkdirSync(probe);
  } catch (error) {
    return { available: false, reason: `cannot create a cgroup in ${own.dir}: ${errorCode(error)}` };
  }
  try {
    const joined = spawnSync("/bin/sh", ["-c", JOIN_AND_EXEC, join(probe, "cgroup.procs"), "true"], {
      stdio: ["ignore", "ignore", "pipe"],
      timeout: 5000,
    });
    if (joined.status !== 0) {
      const why = joined.error?.message ?? (joined.stderr.toString().trim() || `exit ${joined.status}`);
      return { available: false, reason: `cannot move a process into a cgroup in ${own.dir}: ${why}` };
    }
    const kill = existsSync(join(probe, "cgroup.kill"));
    const memory = enableMemory(own.dir, probe);
    return { available: true, base: { ownDir: own.dir, memory, kill } };
  } finally {
    removeCgroup(probe);
  }
}

/**
 * The first step of every kernel in a cgroup: the shell writes its own pid into the cgroup,
 * then becomes the kernel (exec keeps the pid). No kernel code runs outside the cgroup, so
 * nothing it forks can be left behind. `$0` is the cgroup.procs path, `$@` the command.
 */
export const JOIN_AND_EXEC = 'echo $$ > "$0" || exit 125; exec "$@"';

/** Memory accounting for the probe's siblings: the parent's subtree_control must list memory. */
function enableMemory(ownDir: string, probe: string): boolean {
  const controllers = (readText(join(ownDir, "cgroup.controllers")) ?? "").split(/\s+/);
  if (!controllers.includes("memory")) return false;
  const enabled = (readText(join(ownDir, "cgroup.subtree_control")) ?? "").split(/\s+/);
  if (!enabled.includes("memory")) {
    // EBUSY unless ownDir holds no processes (or is the root): v2's "no internal processes" rule.
    if (!tryWrite(join(ownDir, "cgroup.subtree_control"), "+memory")) return false;
  }
  return existsSync(join(probe, "memory.max"));
}

/** One kernel run's cgroup. */
export class RunCgroup {
  readonly dir: string;
  readonly procsPath: string;
  private readonly base: CgroupBase;

  /** Creates the cgroup; with the memory controller, caps it at `memoryLimitBytes` (no swap). */
  constructor(agentDir: string, name: string, base: CgroupBase, memoryLimitBytes: number) {
    this.base = base;
    this.dir = join(agentDir, name);
    this.procsPath = join(this.dir, "cgroup.procs");
    mkdirSync(this.dir);
    if (!base.memory) return;
    try {
      writeFileSync(join(this.dir, "memory.max"), String(memoryLimitBytes));
      // Swap would let a kernel run past its request slowly instead of failing fast.
      tryWrite(join(this.dir, "memory.swap.max"), "0");
      // The kernel's OOM killer takes the whole run, as it does a container: no half-dead kernel.
      tryWrite(join(this.dir, "memory.oom.group"), "1");
    } catch (error) {
      removeCgroup(this.dir);
      throw error;
    }
  }

  /** Live processes in the cgroup (exited ones have left it). */
  pids(): number[] {
    const text = readText(this.procsPath);
    if (text === undefined) return [];
    return text
      .split("\n")
      .filter((l) => l !== "")
      .map(Number);
  }

  /** memory.current: everything the run is charged for (anonymous memory, page cache, kernel). */
  memoryBytes(): number | undefined {
    return readNumber(join(this.dir, "memory.current"));
  }

  /** memory.peak (Linux 5.19+), for the OOM message. */
  peakBytes(): number | undefined {
    return readNumber(join(this.dir, "memory.peak"));
  }

  /** The kernel's OOM killer acted in this cgroup (memory.events `oom_kill`). */
  oomKilled(): boolean {
    const events = readText(join(this.dir, "memory.events"));
    const count = /^oom_kill (\d+)$/m.exec(events ?? "")?.[1];
    return count !== undefined && Number(count) > 0;
  }

  /** No process is left (cgroup.events `populated 0`). */
  empty(): boolean {
    const events = readText(join(this.dir, "cgroup.events"));
    if (events === undefined) return true;
    return /^populated 0$/m.test(events);
  }

  /** SIGKILL via cgroup.kill, which also catches processes forked while it runs. */
  kill(): boolean {
    return this.base.kill && tryWrite(join(this.dir, "cgroup.kill"), "1");
  }

  /** Removes the cgroup; false while processes remain in it. */
  remove(): boolean {
    return removeCgroup(this.dir);
  }
}

/** The agent's own cgroup for its runs, created when a run first needs it. */
export function ensureDir(dir: string, memory: boolean): void {
  if (existsSync(dir)) return;
  mkdirSync(dir);
  if (memory) writeFileSync(join(dir, "cgroup.subtree_control"), "+memory");
}

/**
 * Cgroups left by agent processes that died without cleaning up (SIGKILL, a crash): their
 * runs' processes are killed (a session's processes must not outlive its agent) and the
 * cgroups removed. Recognised by name, `cairn-<id>-<pid>`, with that pid gone. Returns how many
 * runs were found.
 */
export function reapStaleAgentCgroups(ownDir: string, isAlive: (pid: number) => boolean): number {
  let runs = 0;
  let names: string[];
  try {
    names = readdirSync(ownDir);
  } catch {
    return 0;
  }
  for (const name of names) {
    const pid = Number(/^cairn-.+-(\d+)$/.exec(name)?.[1]);
    if (!Number.isSafeInteger(pid) || pid === process.pid || isAlive(pid)) continue;
    const dir = join(ownDir, name);
    let children: string[] = [];
    try {
      children = readdirSync(dir).filter((child) => child.startsWith("run-"));
    } catch {
      continue;
    }
    for (const child of children) {
      runs++;
      tryWrite(join(dir, child, "cgroup.kill"), "1");
      removeCgroup(join(dir, child));
    }
    removeCgroup(dir); // fails while a killed process is still dying: the next start retries
  }
  return runs;
}

export function removeCgroup(dir: string): boolean {
  try {
    rmdirSync(dir);
    return true;
  } catch (error) {
    return errorCode(error) === "ENOENT";
  }
}

function tryWrite(path: string, value: string): boolean {
  try {
    writeFileSync(path, value);
    return true;
  } catch {
    return false;
  }
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

function readNumber(path: string): number | undefined {
  const text = readText(path);
  if (text === undefined) return undefined;
  const value = Number(text.trim());
  return Number.isFinite(value) ? value : undefined;
}

/** mountinfo escapes spaces and a few other characters as octal. */
function unescapeMount(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

function errorCode(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? String(error);
}
