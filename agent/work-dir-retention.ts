/**
 * Removes the work directories of runs that ended longer ago than the retention period, a few
 * per tick, so a long-running agent does not fill its host's disk with old runs' logs.
 *
 * Which runs may go: a run directory is judged by the markers the agent writes in it
 * (work-dir.ts): `.cairn-ended` (the time its run ended) makes it removable once that is
 * older than the retention. A directory without it whose owner (`.cairn-run`: agent id and
 * process) is gone, or is this agent and no longer runs it, never ended cleanly (the agent
 * crashed, or a prepare failed): it goes once its newest file is older than the retention.
 * Anything else is kept: a run of another live agent sharing the work root, a running one, a
 * directory the agent did not make. Several agents may share one work root (npm start does).
 */
import { promises as fs, type Dir } from "node:fs";
import { join } from "node:path";
import { ENDED_MARKER, OWNER_MARKER, type RunOwner } from "./work-dir.ts";

export interface SweepOptions {
  readonly workRoot: string;
  readonly retentionMs: number;
  readonly clock: () => number;
  /** This agent's id: its own unmarked runs are judged by `isActive`. */
  readonly agentId: string;
  /** True for a run directory this agent is preparing or running: never removed. */
  readonly isActive: (workDir: string) => boolean;
  /** Run directories looked at per tick. @default 100 */
  readonly maxRunsPerTick?: number;
  readonly warn: (message: string, error?: unknown) => void;
}

export interface SweepResult {
  readonly examined: number;
  readonly removed: readonly string[];
  /** The walk reached the end of the work root (the next tick starts over). */
  readonly completed: boolean;
}

interface RunDir {
  readonly session: string;
  readonly kernel: string;
  readonly run: string;
}

export class WorkDirSweeper {
  private readonly options: SweepOptions;
  private readonly maxRunsPerTick: number;
  /** Where the last tick stopped; a walk spans as many ticks as it needs. */
  private cursor: AsyncGenerator<RunDir, void, undefined> | undefined;
  private running: Promise<SweepResult> | undefined;

  constructor(options: SweepOptions) {
    this.options = options;
    this.maxRunsPerTick = options.maxRunsPerTick ?? 100;
  }

  /** Looks at the next few run directories and removes the expired ones. One tick at a time. */
  tick(): Promise<SweepResult> {
    this.running ??= this.doTick().finally(() => (this.running = undefined));
    return this.running;
  }

  /** Ends a walk in progress (closes its open directories). */
  async close(): Promise<void> {
    await this.running?.catch(() => undefined);
    await this.cursor?.return();
    this.cursor = undefined;
  }

  private async doTick(): Promise<SweepResult> {
    const removed: string[] = [];
    let examined = 0;
    this.cursor ??= walkRuns(this.options.workRoot);
    while (examined < this.maxRunsPerTick) {
      const next = await this.cursor.next();
      if (next.done === true) {
        this.cursor = undefined;
        return { examined, removed, completed: true };
      }
      examined++;
      const { session, kernel, run } = next.value;
      const workDir = join(this.options.workRoot, session, kernel, run);
      try {
        if (!(await this.expired(workDir))) continue;
        await fs.rm(workDir, { recursive: true, force: true });
        removed.push(workDir);
        await this.removeIfEmptyAndOld(join(this.options.workRoot, session, kernel));
        await this.removeIfEmptyAndOld(join(this.options.workRoot, session));
      } catch (error) {
        this.options.warn(`removing the old work directory ${workDir} failed`, error);
      }
    }
    return { examined, removed, completed: false };
  }

  private async expired(workDir: string): Promise<boolean> {
    if (this.options.isActive(workDir)) return false;
    const now = this.options.clock();
    const ended = Number(await readText(join(workDir, ENDED_MARKER)));
    if (Number.isFinite(ended) && ended > 0) return now - ended >= this.options.retentionMs;
    const owner = parseOwner(await readText(join(workDir, OWNER_MARKER)));
    if (owner === undefined || this.ownerMayRunIt(owner)) return false;
    return now - (await newestMtimeMs(workDir)) >= this.options.retentionMs;
  }

  /** True when the owning agent may still be running the directory's run. */
  private ownerMayRunIt(owner: RunOwner): boolean {
    if (owner.agentPid === process.pid) return owner.agentId !== this.options.agentId; // isActive said no
    try {
      process.kill(owner.agentPid, 0);
      return true; // alive (or its pid reused: keep, the safe side)
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === "EPERM";
    }
  }

  /**
   * A session's or kernel's directory once its last run is gone; only when it has not changed
   * for the retention period, so that it is not pulled from under a run being created in it.
   */
  private async removeIfEmptyAndOld(dir: string): Promise<void> {
    try {
      const { mtimeMs } = await fs.stat(dir);
      if (this.options.clock() - mtimeMs < this.options.retentionMs) return;
      await fs.rmdir(dir);
    } catch {
      // Not empty, or gone: either way nothing to do.
    }
  }
}

/** Every `<session>/<kernel>/run-<n>` under the root, read lazily (bounded memory). */
async function* walkRuns(root: string): AsyncGenerator<RunDir, void, undefined> {
  for await (const session of directories(root)) {
    for await (const kernel of directories(join(root, session))) {
      if (!/^\d+$/.test(kernel)) continue;
      for await (const run of directories(join(root, session, kernel))) {
        if (/^run-\d+$/.test(run)) yield { session, kernel, run };
      }
    }
  }
}

async function* directories(path: string): AsyncGenerator<string, void, undefined> {
  let dir: Dir;
  try {
    dir = await fs.opendir(path);
  } catch {
    return; // removed meanwhile, or not a directory
  }
  for await (const entry of dir) if (entry.isDirectory()) yield entry.name;
}

async function newestMtimeMs(dir: string): Promise<number> {
  let newest = (await fs.stat(dir)).mtimeMs;
  for (const name of await fs.readdir(dir)) {
    try {
      newest = Math.max(newest, (await fs.lstat(join(dir, name))).mtimeMs);
    } catch {
      // gone meanwhile
    }
  }
  return newest;
}

function parseOwner(text: string | undefined): RunOwner | undefined {
  if (text === undefined) return undefined;
  try {
    const owner = JSON.parse(text) as Partial<RunOwner>;
    if (typeof owner.agentId === "string" && Number.isInteger(owner.agentPid)) return owner as RunOwner;
  } catch {
    // a damaged marker: not ours to judge
  }
  return undefined;
}

async function readText(path: string): Promise<string | undefined> {
  try {
    return await fs.readFile(path, "utf8");
  } catch {
    return undefined;
  }
}
