/**
 * The CPU time (user + system) of a command's whole process tree, for `bench:compare --test-cpu`.
 *
 * What a parent learns when it waits for a child (`/usr/bin/time`'s figure, /proc's cutime and
 * cstime) covers only the descendants that were themselves waited for. A process whose parent
 * ended first is re-parented to init, and its time is lost: `npm test` leaves such processes (an
 * `npm start` killed with SIGKILL leaves its DynamoDB Local, which exits by itself when its stdin
 * closes, and its agents). So where this process may make a cgroup v1 `cpuacct` group (as root on
 * a host that mounts that hierarchy), the command runs in a group of its own, which every process
 * it forks stays in whatever its parent, and the figure is the group's usage once the group is
 * empty. Elsewhere it is the waited-for children's time, and says so.
 *
 * A cgroup v2 group is not used: the agents move their kernels into cgroup v2 groups of their own
 * below the agent's, which in a group made here would change how the tests run.
 */
import { spawn, type ChildProcess, type SpawnOptions } from "node:child_process";
import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** Clock ticks per second of /proc's times (USER_HZ: 100 on every Linux architecture Node runs on). */
const USER_HZ = 100;
const CPUACCT = "/sys/fs/cgroup/cpuacct";

export interface TreeCpu {
  /** CPU seconds of the whole tree where `whole`, of the waited-for children otherwise. */
  readonly seconds: number;
  /** CPU seconds of the children that were waited for (what `/usr/bin/time` would print). */
  readonly waitedSeconds: number;
  /** True when `seconds` counts every process the command started (a cpuacct group). */
  readonly whole: boolean;
}

export interface TreeRun {
  readonly child: ChildProcess;
  /** Resolves once the command has exited and every process it left behind has ended too. */
  readonly done: Promise<{ readonly code: number | null; readonly cpu: TreeCpu }>;
}

/** CPU seconds (user + system) of this process's children that have ended and been waited for. */
export function waitedChildrenCpuSeconds(): number {
  const stat = readFileSync("/proc/self/stat", "utf8");
  // Fields after the command name: state is the first, cutime the 14th, cstime the 15th.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[13]) + Number(fields[14])) / USER_HZ;
}

/** A new, empty cpuacct group, or undefined where this process may not make one. */
function newGroup(name: string): string | undefined {
  const dir = join(CPUACCT, name);
  try {
    mkdirSync(dir);
    return dir;
  } catch {
    return undefined;
  }
}

function groupPids(dir: string): number[] {
  return readFileSync(join(dir, "cgroup.procs"), "utf8").split("\n").filter(Boolean).map(Number);
}

/**
 * Runs `command args` and measures its tree's CPU. `name` names the group (unique per run). The
 * processes it leaves behind get `leftoverMs` to end by themselves (DynamoDB Local notices its
 * stdin closing within a second); any still running then are counted so far and left alone,
 * moved out of the group so that it can be removed.
 */
export function runMeasured(
  name: string,
  command: string,
  args: readonly string[],
  options: SpawnOptions,
  leftoverMs = 30_000,
): TreeRun {
  const group = newGroup(name);
  const before = waitedChildrenCpuSeconds();
  // The shell joins the group before it becomes the command, so the command's first instruction
  // is already counted.
  const child =
    group === undefined
      ? spawn(command, args, options)
      : spawn(
          "/bin/sh",
          ["-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', group, command, ...args],
          options,
        );
  const done = new Promise<{ code: number | null; cpu: TreeCpu }>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code) => {
      const waitedSeconds = waitedChildrenCpuSeconds() - before;
      if (group === undefined) {
        resolve({ code, cpu: { seconds: waitedSeconds, waitedSeconds, whole: false } });
        return;
      }
      void settle(group, leftoverMs).then((seconds) =>
        resolve({ code, cpu: { seconds, waitedSeconds, whole: true } }),
      );
    });
  });
  return { child, done };
}

/** Waits for the group to empty (or `leftoverMs`), reads its usage, removes it. */
async function settle(group: string, leftoverMs: number): Promise<number> {
  const deadline = Date.now() + leftoverMs;
  while (groupPids(group).length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 200));
  }
  const seconds = Number(readFileSync(join(group, "cpuacct.usage"), "utf8").trim()) / 1e9;
  removeGroup(group);
  return seconds;
}

/**
 * Removes a group `runMeasured` made (by its `name`, or its directory), moving any process
 * still in it to the root group first; nothing where there is no such group. For a run stopped
 * early, too.
 */
export function removeGroup(nameOrDir: string): void {
  const group = nameOrDir.startsWith("/") ? nameOrDir : join(CPUACCT, nameOrDir);
  let pids: number[];
  try {
    pids = groupPids(group);
  } catch {
    return;
  }
  for (const pid of pids) {
    try {
      writeFileSync(join(CPUACCT, "cgroup.procs"), String(pid));
    } catch {
      // It ended meanwhile.
    }
  }
  try {
    rmdirSync(group);
  } catch {
    // A process that forked while being moved keeps it; the group is harmless.
  }
}
