/** Where a kernel run's files live: `workRoot/<sessionId>/<kernelIndex>/run-<runIndex>/`. */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { LogPaths } from "./types.ts";

export const STDOUT_LOG = "stdout.log";
export const STDERR_LOG = "stderr.log";
export const COMBINED_LOG = "output.jsonl";
export const TERMINATION_LOG = "termination-log";
/** Written when the run's directory is made: which agent (id and process) runs it. */
export const OWNER_MARKER = ".cairn-run";
/** Written when the run ends: the time, in ms since the epoch, for the retention sweep. */
export const ENDED_MARKER = ".cairn-ended";

export interface RunOwner {
  readonly agentId: string;
  readonly agentPid: number;
}

export function runLogPaths(
  workRoot: string,
  sessionId: string,
  kernelIndex: number,
  runIndex: number,
): LogPaths {
  const workDir = join(workRoot, sessionId, String(kernelIndex), `run-${runIndex}`);
  return {
    workDir,
    stdout: join(workDir, STDOUT_LOG),
    stderr: join(workDir, STDERR_LOG),
    combined: join(workDir, COMBINED_LOG),
    terminationLog: join(workDir, TERMINATION_LOG),
  };
}

export function writeOwnerMarker(workDir: string, owner: RunOwner): void {
  writeFileSync(join(workDir, OWNER_MARKER), JSON.stringify(owner));
}

/** False when the directory does not exist (the run never got one). */
export function writeEndedMarker(workDir: string, endedAtMs: number): boolean {
  try {
    writeFileSync(join(workDir, ENDED_MARKER), String(endedAtMs));
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw error;
  }
}
