/**
 * Writes the record `npm start` leaves for its user (functions/topology/runtime-record.ts):
 * where the running runtime's file is, whatever its --data-dir, so that `cairn` finds it from
 * any directory (bin/cli/runtime-locate.ts reads it).
 * Removed when that runtime stops cleanly; one killed with SIGKILL leaves it, and the CLI names
 * the dead pid.
 */
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { userRuntimeRecordPath, type UserRuntimeRecord } from "../functions/topology/runtime-record.ts";

/** Records the runtime for its user; returns the record's path (undefined without HOME or XDG_STATE_HOME). */
export function recordRuntimeForUser(
  env: Readonly<Record<string, string | undefined>>,
  dataDir: string,
  pid: number,
): string | undefined {
  const path = userRuntimeRecordPath(env);
  if (path === undefined) return undefined;
  const record: UserRuntimeRecord = {
    runtimeFile: join(resolve(dataDir), "runtime.json"),
    dataDir: resolve(dataDir),
    pid,
  };
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  // Written whole, then renamed: a CLI reading meanwhile sees the old record or the new one.
  writeFileSync(`${path}.${pid}.tmp`, JSON.stringify(record, null, 2) + "\n", { mode: 0o600 });
  renameSync(`${path}.${pid}.tmp`, path);
  return path;
}

/**
 * Removes the record if it still names this runtime: a second `npm start` (another data
 * directory) recorded since then keeps its own.
 */
export function forgetRuntimeForUser(path: string, pid: number): void {
  try {
    const record = JSON.parse(readFileSync(path, "utf8")) as Partial<UserRuntimeRecord>;
    if (record.pid === pid) rmSync(path, { force: true });
  } catch {
    // Gone already, or not ours to judge.
  }
}
