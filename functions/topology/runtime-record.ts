/**
 * The record `npm start` leaves for its user and the CLI reads (a contract between the two):
 * where the running embedded runtime's file is, whatever its --data-dir, so that `cairn` finds
 * it from any directory. Kept in the user's state directory as the XDG Base Directory
 * specification places it: `$XDG_STATE_HOME/cairn/runtime.json`, else
 * `~/.local/state/cairn/runtime.json`.
 */

export interface UserRuntimeRecord {
  /** The runtime file's absolute path (`<data dir>/runtime.json`). */
  readonly runtimeFile: string;
  readonly dataDir: string;
  /** The runtime's process: a record whose process has ended is stale. */
  readonly pid: number;
}

/** The record's path; undefined with neither XDG_STATE_HOME nor HOME set. */
export function userRuntimeRecordPath(env: Readonly<Record<string, string | undefined>>): string | undefined {
  const xdg = env["XDG_STATE_HOME"]?.trim();
  // The specification ignores a relative XDG_STATE_HOME.
  if (xdg !== undefined && xdg.startsWith("/")) return `${xdg.replace(/\/+$/, "")}/cairn/runtime.json`;
  const home = env["HOME"]?.trim();
  if (home === undefined || home === "") return undefined;
  return `${home.replace(/\/+$/, "")}/.local/state/cairn/runtime.json`;
}
