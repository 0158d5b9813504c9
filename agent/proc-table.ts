/**
 * Resident memory of kernels' processes, read from Linux /proc: the containment fallback when
 * cgroups are not available (see containment.ts for the modes and their limits).
 *
 * One walk of /proc per tick serves every kernel: list /proc, and learn each process's parent,
 * process group and resident set from /proc/<pid>/stat. Its `rss` field is the same counter
 * as VmRSS in /proc/<pid>/status (both are the kernel's get_mm_rss), in pages, so one small read
 * a process suffices; status costs twice as much to read.
 *
 * Reading stat costs 10-60 µs a process here, so a busy laptop (500 processes) would spend
 * milliseconds a tick on processes that are not ours. They are remembered instead: a
 * process outside every kernel tree stays outside (kernels run in their own session, so no
 * outsider can join their groups, and outsiders' children are outsiders), so only new pids and
 * kernel processes are read again. Every `fullScanEvery` ticks the memory is dropped, which
 * bounds the harm of a pid reused within a tick interval.
 *
 * A kernel's processes are its tree (group and descendants) plus every process carrying its
 * run token in its environment (`/proc/<pid>/environ`): a descendant that called setsid and was
 * re-parented to init has left the tree but still inherits the variable. Environments are read
 * once per process (pid and start time), when it is first seen, and again while one reads as
 * empty: a process caught between two execs (setsid, then its program) has none for a moment.
 *
 * Synchronous on purpose: a few dozen small procfs reads finish well under a millisecond,
 * less than the promise overhead of doing them asynchronously.
 */
import { closeSync, openSync, readdirSync, readSync } from "node:fs";

export interface ProcEntry {
  readonly pid: number;
  readonly ppid: number;
  readonly pgrp: number;
  readonly rssBytes: number;
  /** One-letter state; "Z" is a zombie: exited, holds no memory, cannot be signalled away. */
  readonly state: string;
  /** Clock ticks after boot; with the pid, identifies a process across pid reuse. */
  readonly startTime: string;
}

export type ProcLink = Pick<ProcEntry, "pid" | "ppid" | "pgrp">;

export interface TreeSample {
  /** The root and every process in its group or below it, and every carrier of its token; no zombies. */
  readonly pids: readonly number[];
  readonly rssBytes: number;
}

/** A kernel run to find: its main process while it lives, and its token. */
export interface SampleRoot {
  /** The main pid; absent once it has exited (its pid may be reused: only the token is safe). */
  readonly pid?: number;
  readonly token: string;
}

export interface ProcSample {
  /** By token. */
  readonly trees: ReadonlyMap<string, TreeSample>;
  /** Processes listed in /proc. */
  readonly processCount: number;
  /** Processes whose stat was read this sample (the rest were known outsiders). */
  readonly statReads: number;
  /** Processes whose environment was read this sample (newly seen ones). */
  readonly environReads: number;
}

/** procfs files report size 0, so read into one reused buffer instead of readFileSync. */
const readBuffer = Buffer.alloc(4096);

function readProcFile(path: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch {
    return undefined; // the process exited
  }
  try {
    const bytesRead = readSync(fd, readBuffer, 0, readBuffer.length, 0);
    return readBuffer.toString("latin1", 0, bytesRead);
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

export function readStat(pid: number, procRoot = "/proc"): ProcEntry | undefined {
  const text = readProcFile(`${procRoot}/${pid}/stat`);
  if (text === undefined) return undefined;
  // "pid (comm) state ppid pgrp ..."; comm may hold spaces and parentheses: cut at the last ")".
  const close = text.lastIndexOf(")");
  if (close < 0) return undefined;
  // Fields from the 3rd (state) on; ppid is the 4th, pgrp the 5th, rss (pages) the 24th.
  const fields = text.slice(close + 2).split(" ", 22);
  const ppid = Number(fields[1]);
  const pgrp = Number(fields[2]);
  const rssPages = Number(fields[21]);
  if (!Number.isInteger(ppid) || !Number.isInteger(pgrp)) return undefined;
  return {
    pid,
    ppid,
    pgrp,
    rssBytes: Number.isInteger(rssPages) ? rssPages * pageSizeBytes() : 0,
    state: fields[0] ?? "?",
    startTime: fields[19] ?? "",
  };
}

/** Environments are scanned this far; a variable placed beyond (huge environments) is missed. */
const ENVIRON_SCAN_BYTES = 256 * 1024;
let environBuffer: Buffer | undefined;

/**
 * What a process's initial environment says of `name`:
 * - `{ value }`: it was read; `value` is undefined when the variable is not there;
 * - "unreadable": it cannot be opened or read (another user's process, gone);
 * - "empty": it reads as nothing. Kernel threads have no environment; a process in the middle of
 *   an exec has none for a moment either (the new image's is not set up yet), so this says
 *   nothing about whose it is.
 */
export type EnvironRead = { readonly value: string | undefined } | "unreadable" | "empty";

export function readEnvironValue(pid: number, name: string, procRoot = "/proc"): EnvironRead {
  let fd: number;
  try {
    fd = openSync(`${procRoot}/${pid}/environ`, "r");
  } catch {
    return "unreadable";
  }
  let length = 0;
  try {
    environBuffer ??= Buffer.alloc(ENVIRON_SCAN_BYTES);
    for (;;) {
      const bytesRead = readSync(fd, environBuffer, length, environBuffer.length - length, length);
      if (bytesRead === 0 || (length += bytesRead) === environBuffer.length) break;
    }
  } catch {
    return "unreadable";
  } finally {
    closeSync(fd);
  }
  if (length === 0) return "empty";
  const data = environBuffer.subarray(0, length);
  const prefix = Buffer.from(`${name}=`, "latin1");
  for (let at = 0; at < data.length;) {
    const end = data.indexOf(0, at);
    const stop = end < 0 ? data.length : end;
    if (stop - at >= prefix.length && data.subarray(at, at + prefix.length).equals(prefix)) {
      return { value: data.toString("utf8", at + prefix.length, stop) };
    }
    at = stop + 1;
  }
  return { value: undefined };
}

let pageSize: number | undefined;

/**
 * The memory page size. Node does not expose sysconf(_SC_PAGESIZE), so it is derived once
 * from this process's resident set as statm (pages) and status (kB) report it, rounded to the
 * nearest page size Linux uses; the two reads are microseconds apart, far too close for the
 * ratio to drift from one page size to another.
 */
export function pageSizeBytes(): number {
  if (pageSize !== undefined) return pageSize;
  pageSize = 4096;
  const statm = readProcFile("/proc/self/statm");
  const status = readProcFile("/proc/self/status");
  const residentPages = Number(statm?.split(" ")[1]);
  const vmRssKiB = status ? parseInt(status.slice(status.indexOf("VmRSS:") + 6), 10) : NaN;
  if (residentPages > 0 && vmRssKiB > 0) {
    const ratio = (vmRssKiB * 1024) / residentPages;
    pageSize = [4096, 16384, 65536].reduce((best, size) =>
      Math.abs(Math.log2(size / ratio)) < Math.abs(Math.log2(best / ratio)) ? size : best,
    );
  }
  return pageSize;
}

/** VmRSS of one process in bytes, from /proc/<pid>/status; 0 for a zombie or a gone process. */
export function readRssBytes(pid: number, procRoot = "/proc"): number {
  const text = readProcFile(`${procRoot}/${pid}/status`);
  if (text === undefined) return 0;
  const at = text.indexOf("VmRSS:");
  if (at < 0) return 0; // zombies and kernel threads have no VmRSS line
  const kiB = parseInt(text.slice(at + 6, text.indexOf("\n", at)), 10);
  return Number.isFinite(kiB) ? kiB * 1024 : 0;
}

/**
 * Proportional set size of one process in bytes, from /proc/<pid>/smaps_rollup (Linux 4.14+):
 * each resident page counted divided by the number of processes mapping it. Summed over a run's
 * processes it is what the run really holds: a parent's 100 MiB shared copy-on-write with four
 * forked children that never write it counts 100 MiB, where the summed resident sets count
 * 500 MiB. Pages shared with processes outside the run (libraries) count only their share.
 *
 * Returns 0 for a process that is gone or exiting (its file reads empty), and "unreadable"
 * when the file cannot be read (a kernel before 4.14, or no ptrace access to the process).
 * The kernel walks the process's page tables for this read: about a millisecond per 100 MiB
 * resident on a 2-core VM (3.6 ms for 400 MiB), against microseconds for /proc/<pid>/stat.
 */
export function readPssBytes(pid: number, procRoot = "/proc"): number | "unreadable" {
  let fd: number;
  try {
    fd = openSync(`${procRoot}/${pid}/smaps_rollup`, "r");
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ENOENT" ? 0 : "unreadable";
  }
  let text: string;
  try {
    const bytesRead = readSync(fd, readBuffer, 0, readBuffer.length, 0);
    text = readBuffer.toString("latin1", 0, bytesRead);
  } catch (error) {
    // ESRCH: the process exited between open and read.
    return (error as NodeJS.ErrnoException).code === "ESRCH" ? 0 : "unreadable";
  } finally {
    closeSync(fd);
  }
  if (text === "") return 0; // a zombie or an exiting process: no memory left
  const at = text.indexOf("\nPss:");
  if (at < 0) return "unreadable";
  const kiB = parseInt(text.slice(at + 5), 10);
  return Number.isFinite(kiB) ? kiB * 1024 : "unreadable";
}

export function listPids(procRoot = "/proc"): number[] {
  const pids: number[] = [];
  for (const name of readdirSync(procRoot)) {
    const first = name.charCodeAt(0);
    if (first >= 48 && first <= 57) pids.push(Number(name));
  }
  return pids;
}

/** Every process's parent and group: a full walk, for one-off use (kills). */
export function readProcTable(procRoot = "/proc"): ProcEntry[] {
  const entries: ProcEntry[] = [];
  for (const pid of listPids(procRoot)) {
    const entry = readStat(pid, procRoot);
    if (entry !== undefined) entries.push(entry);
  }
  return entries;
}

/**
 * For each root pid (a kernel's process, leader of its own group): the processes in its group
 * plus every descendant by parent link, which also catches children that left the group.
 */
export function processTrees(table: readonly ProcLink[], rootPids: Iterable<number>): Map<number, number[]> {
  const children = new Map<number, number[]>();
  const groups = new Map<number, number[]>();
  const alive = new Set<number>();
  for (const { pid, ppid, pgrp } of table) {
    alive.add(pid);
    pushTo(children, ppid, pid);
    pushTo(groups, pgrp, pid);
  }
  const trees = new Map<number, number[]>();
  for (const root of rootPids) {
    const seen = new Set<number>();
    const queue: number[] = [];
    if (alive.has(root)) queue.push(root);
    queue.push(...(groups.get(root) ?? []));
    while (queue.length > 0) {
      const pid = queue.pop() as number;
      if (seen.has(pid)) continue;
      seen.add(pid);
      queue.push(...(children.get(pid) ?? []));
    }
    trees.set(root, [...seen]);
  }
  return trees;
}

function pushTo(map: Map<number, number[]>, key: number, value: number): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}

/** Linux's kernel-thread parent: it and its children are kernel threads, never a kernel run's. */
const KTHREADD_PID = 2;

export class ProcessTreeSampler {
  private readonly procRoot: string;
  private readonly fullScanEvery: number;
  private readonly tokenName: string;
  /** Pids known to be outside every kernel: not in a tree, no token of a run being sampled. */
  private outsiders = new Set<number>();
  /** Token (or none) of each process whose environment was read, with its start time. */
  private environs = new Map<number, { readonly startTime: string; readonly token: string | undefined }>();
  private ticks = 0;

  /**
   * @param tokenName the environment variable carrying a run's token.
   * @param fullScanEvery forget known outsiders every this many samples. @default 50
   */
  constructor(options: { tokenName: string; procRoot?: string; fullScanEvery?: number }) {
    this.tokenName = options.tokenName;
    this.procRoot = options.procRoot ?? "/proc";
    this.fullScanEvery = options.fullScanEvery ?? 50;
  }

  /**
   * One /proc walk: each run's processes and their summed resident memory. Pass every run that
   * may still have processes on each call: anything not found for one of them becomes a known
   * outsider, skipped until the next full scan.
   */
  sample(roots: readonly SampleRoot[]): ProcSample {
    const fullScan = this.ticks++ % this.fullScanEvery === 0;
    const known = fullScan ? new Set<number>() : this.outsiders;
    const rootPids = new Set<number>();
    const tokens = new Set<string>();
    for (const root of roots) {
      if (root.pid !== undefined) rootPids.add(root.pid);
      tokens.add(root.token);
    }
    const pids = listPids(this.procRoot);
    const table: ProcEntry[] = [];
    const tokenOf = new Map<number, string>();
    const nextOutsiders = new Set<number>();
    const nextEnvirons = new Map<
      number,
      { readonly startTime: string; readonly token: string | undefined }
    >();
    let environReads = 0;
    /** Processes whose environment read as empty mid-exec: looked at again next time. */
    const unsettled = new Set<number>();
    for (const pid of pids) {
      if (known.has(pid) && !rootPids.has(pid)) {
        nextOutsiders.add(pid);
        const environ = this.environs.get(pid);
        if (environ !== undefined) nextEnvirons.set(pid, environ);
        continue;
      }
      const entry = readStat(pid, this.procRoot);
      if (entry === undefined || entry.state === "Z") continue;
      table.push(entry);
      let environ = this.environs.get(pid);
      if (environ === undefined || environ.startTime !== entry.startTime) {
        environReads++;
        const read = readEnvironValue(pid, this.tokenName, this.procRoot);
        // Read mid-exec, an environment is empty for a moment: neither remembered nor taken as
        // an outsider's, or a run's escaped process caught then would never be found. Kernel
        // threads (children of kthreadd, pid 2) never have one.
        if (read === "empty" && entry.ppid !== KTHREADD_PID && pid !== KTHREADD_PID) {
          unsettled.add(pid);
          continue;
        }
        environ = { startTime: entry.startTime, token: typeof read === "object" ? read.value : undefined };
      }
      nextEnvirons.set(pid, environ);
      if (environ.token !== undefined && tokens.has(environ.token)) tokenOf.set(pid, environ.token);
    }
    this.environs = nextEnvirons;
    const rssByPid = new Map(table.map((entry) => [entry.pid, entry.rssBytes]));
    const trees = processTrees(table, rootPids);
    const membersByToken = new Map<string, Set<number>>();
    for (const root of roots) {
      const members = new Set<number>(root.pid === undefined ? [] : (trees.get(root.pid) ?? []));
      membersByToken.set(root.token, members);
    }
    for (const [pid, token] of tokenOf) membersByToken.get(token)?.add(pid);
    const samples = new Map<string, TreeSample>();
    const members = new Set<number>();
    for (const [token, pidSet] of membersByToken) {
      let rssBytes = 0;
      for (const pid of pidSet) {
        members.add(pid);
        rssBytes += rssByPid.get(pid) ?? 0;
      }
      samples.set(token, { pids: [...pidSet], rssBytes });
    }
    for (const { pid } of table) if (!members.has(pid) && !unsettled.has(pid)) nextOutsiders.add(pid);
    this.outsiders = nextOutsiders;
    return { trees: samples, processCount: pids.length, statReads: table.length, environReads };
  }
}
