/**
 * The embedded runtime's pid file (`<data dir>/pids.json`): the runtime, its DynamoDB Local JVM
 * and its agents, each with its start time so that a recycled pid is never mistaken for one of
 * them. A runtime killed with SIGKILL cannot stop its children; the next start with the same
 * data directory reads the file, stops what is left (the agents, then their kernels through
 * the agent's own orphan reaper) and says so.
 */
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { reapOrphans } from "../agent/host.ts";

export interface RecordedProcess {
  readonly pid: number;
  /** /proc/<pid>/stat's start time (clock ticks since boot): the process's identity with its pid. */
  readonly startTicks: string;
}

export interface PidFileContents {
  readonly runtime: RecordedProcess;
  readonly dynamoDb?: RecordedProcess;
  readonly agents: readonly (RecordedProcess & { readonly id: string; readonly workRoot: string })[];
}

export function pidFilePath(dataDir: string): string {
  return join(dataDir, "pids.json");
}

/** The process's start time, or undefined when it does not exist (or this is not Linux). */
export function startTicks(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces and parentheses); start time is 22nd.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}

export function recordProcess(pid: number): RecordedProcess {
  return { pid, startTicks: startTicks(pid) ?? "" };
}

function alive(p: RecordedProcess): boolean {
  return p.pid > 0 && p.startTicks !== "" && startTicks(p.pid) === p.startTicks;
}

export function writePidFile(dataDir: string, contents: PidFileContents): void {
  const file = pidFilePath(dataDir);
  writeFileSync(`${file}.tmp`, JSON.stringify(contents, null, 2) + "\n", { mode: 0o600 });
  renameSync(`${file}.tmp`, file);
}

export class RuntimeAlreadyRunningError extends Error {
  override readonly name = "RuntimeAlreadyRunningError";
  readonly code = "RUNTIME_ALREADY_RUNNING";
  readonly pid: number;
  constructor(dataDir: string, pid: number) {
    super(
      `another embedded runtime (pid ${pid}) is running with data directory ${dataDir}: stop it first (Ctrl-C in its terminal, or kill ${pid})`,
    );
    this.pid = pid;
  }
}

/**
 * Stops whatever an earlier runtime with this data directory left running, and removes its
 * stale files. Returns one line saying what it stopped and removed (none when it had stopped
 * cleanly). Throws
 * RuntimeAlreadyRunningError when that runtime is still alive.
 */
export function recoverStaleRuntime(dataDir: string): string[] {
  const file = pidFilePath(dataDir);
  if (!existsSync(file)) return [];
  let contents: PidFileContents;
  try {
    contents = JSON.parse(readFileSync(file, "utf8")) as PidFileContents;
  } catch {
    rmSync(file, { force: true });
    return [`ignored an unreadable pid file ${file}`];
  }
  if (contents.runtime.pid !== process.pid && alive(contents.runtime)) {
    throw new RuntimeAlreadyRunningError(dataDir, contents.runtime.pid);
  }
  const lines: string[] = [];
  const kill = (p: RecordedProcess, what: string) => {
    if (!alive(p)) return;
    try {
      // No grace: their runtime is gone, so a drain could report nothing.
      process.kill(p.pid, "SIGKILL");
      lines.push(`stopped ${what} (pid ${p.pid})`);
    } catch {
      // Gone meanwhile.
    }
  };
  for (const agent of contents.agents) kill(agent, `agent ${agent.id}`);
  if (contents.dynamoDb) kill(contents.dynamoDb, "DynamoDB Local");
  for (const agent of contents.agents) {
    const reaped = reapOrphans(agent.id, agent.workRoot);
    if (reaped.length > 0)
      lines.push(
        `stopped ${reaped.length} kernel process(es) of agent ${agent.id} (pids ${reaped.join(", ")})`,
      );
  }
  const runtimeFile = join(dataDir, "runtime.json");
  if (existsSync(runtimeFile)) {
    rmSync(runtimeFile, { force: true });
    lines.push(`removed the stale ${runtimeFile}`);
  }
  rmSync(file, { force: true });
  if (lines.length === 0) return [];
  // One line that says what happened and what was done about it, whatever else is printed.
  return [
    `the earlier runtime (pid ${contents.runtime.pid}) did not stop cleanly; cleaned up after it: ${lines.join("; ")}`,
  ];
}
