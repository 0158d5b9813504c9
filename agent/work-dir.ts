/** Where a kernel run's files live: `workRoot/<sessionId>/<kernelIndex>/run-<runIndex>/`. */
import { join } from "node:path";
import type { LogPaths } from "./types.ts";

export const STDOUT_LOG = "stdout.log";
export const STDERR_LOG = "stderr.log";
export const COMBINED_LOG = "output.jsonl";
export const TERMINATION_LOG = "termination-log";

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
