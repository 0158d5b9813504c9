/**
 * What a runtime killed with SIGKILL leaves of its ECS tasks: their containers' process groups
 * (detached, so they outlive it) and work directories. Each container's pid is recorded with
 * its start time in its task's work directory, so a recycled pid is never mistaken for it; the
 * next runtime with the same data directory kills what is left and removes the directories.
 */
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { recordProcess, startTicks, type RecordedProcess } from "../pid-file.ts";

const PID_SUFFIX = ".pid.json";

export function recordContainerProcess(workDir: string, container: string, pid: number): void {
  writeFileSync(join(workDir, `${container}${PID_SUFFIX}`), JSON.stringify(recordProcess(pid)), {
    mode: 0o600,
  });
}

/** Kills the recorded container process groups still alive under `workRoot`; one line for each. */
export function reapStaleEcsTasks(workRoot: string): string[] {
  if (!existsSync(workRoot)) return [];
  const lines: string[] = [];
  for (const taskId of readdirSync(workRoot)) {
    const dir = join(workRoot, taskId);
    let files: string[] = [];
    try {
      files = readdirSync(dir).filter((f) => f.endsWith(PID_SUFFIX));
    } catch {
      continue;
    }
    for (const file of files) {
      try {
        const p = JSON.parse(readFileSync(join(dir, file), "utf8")) as RecordedProcess;
        if (p.pid > 0 && p.startTicks !== "" && startTicks(p.pid) === p.startTicks) {
          process.kill(-p.pid, "SIGKILL");
          lines.push(
            `stopped container ${file.slice(0, -PID_SUFFIX.length)} of ECS task ${taskId} (pid ${p.pid})`,
          );
        }
      } catch {
        // Unreadable, or gone meanwhile: nothing to stop.
      }
    }
    rmSync(dir, { recursive: true, force: true });
  }
  return lines;
}
