/**
 * Which local runtime the CLI talks to when no --stack or --endpoint is given, looked for the way
 * git finds its repository: `--runtime-file PATH`, then the environment's CAIRN_RUNTIME_FILE,
 * then the nearest `.cairn/runtime.json` in the working directory or a directory above it, then
 * the record `npm start` leaves in the user's state directory (whatever its --data-dir), so that
 * `cairn` works from any directory. Pure: files, the environment and the process table are
 * passed in.
 */
import { dirname, isAbsolute, join, resolve } from "node:path";
import { userRuntimeRecordPath, type UserRuntimeRecord } from "../../functions/topology/runtime-record.ts";
import { UnreachableError } from "./errors.ts";

export { userRuntimeRecordPath };

export const DEFAULT_RUNTIME_FILE = ".cairn/runtime.json";

export interface LocateDeps {
  readonly cwd: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Throws (with `code` ENOENT for a missing file) like fs.readFileSync. */
  readFile(path: string): string;
  /** Whether a process with this pid runs on this host; undefined: not checked. */
  processAlive?(pid: number): boolean;
}

export interface LocatedRuntime {
  /** The runtime file's path, as the user would write it (relative when it is under the cwd's .cairn). */
  readonly shown: string;
  /** Its contents, not yet parsed. */
  readonly text: string;
}

const NO_RUNTIME_HINT = "start one with `npm start`, or pass --stack/--endpoint";

/** Finds the runtime file and reads it; throws UnreachableError saying where it looked. */
export function locateRuntimeFile(explicit: string | undefined, deps: LocateDeps): LocatedRuntime {
  if (explicit !== undefined) return readGiven(explicit, explicit, deps);
  const fromEnv = deps.env["CAIRN_RUNTIME_FILE"]?.trim();
  if (fromEnv !== undefined && fromEnv !== "") {
    return readGiven(fromEnv, `${fromEnv} (CAIRN_RUNTIME_FILE)`, deps);
  }
  for (let dir = resolve(deps.cwd); ; dir = dirname(dir)) {
    const path = join(dir, DEFAULT_RUNTIME_FILE);
    const text = readIfExists(path, deps);
    if (text !== undefined) {
      const shown = dir === resolve(deps.cwd) ? DEFAULT_RUNTIME_FILE : path;
      checkAlive(text, shown, deps);
      return { shown, text };
    }
    if (dirname(dir) === dir) break;
  }
  const recordPath = userRuntimeRecordPath(deps.env);
  const looked = `no ${DEFAULT_RUNTIME_FILE} in ${resolve(deps.cwd)} or a directory above it`;
  const recordText = recordPath === undefined ? undefined : readIfExists(recordPath, deps);
  if (recordPath === undefined || recordText === undefined) {
    const where = recordPath === undefined ? "" : `, and no runtime recorded in ${recordPath}`;
    throw new UnreachableError(`no local runtime found: ${looked}${where} — ${NO_RUNTIME_HINT}`);
  }
  const record = parseRecord(recordText, recordPath);
  if (deps.processAlive !== undefined && !deps.processAlive(record.pid)) {
    throw new UnreachableError(
      `the runtime recorded in ${recordPath} (pid ${record.pid}, data directory ${record.dataDir}) ` +
        `is no longer running: it did not stop cleanly — start it again with \`npm start\``,
    );
  }
  const text = readIfExists(record.runtimeFile, deps);
  if (text === undefined) {
    throw new UnreachableError(
      `the runtime recorded in ${recordPath} (pid ${record.pid}) has no runtime file ` +
        `${record.runtimeFile} any more — start it again with \`npm start\``,
    );
  }
  checkAlive(text, record.runtimeFile, deps);
  return { shown: record.runtimeFile, text };
}

function readGiven(path: string, shown: string, deps: LocateDeps): LocatedRuntime {
  let text: string;
  try {
    text = deps.readFile(resolve(deps.cwd, path));
  } catch (error) {
    if ((error as { code?: unknown }).code === "ENOENT") {
      throw new UnreachableError(`no local runtime found at ${shown} — ${NO_RUNTIME_HINT}`);
    }
    throw new UnreachableError(`cannot read the runtime file ${shown}: ${(error as Error).message}`, error);
  }
  checkAlive(text, shown, deps);
  return { shown, text };
}

function readIfExists(path: string, deps: LocateDeps): string | undefined {
  try {
    return deps.readFile(path);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    // ENOTDIR: a file named .cairn on the way up; EACCES: another user's directory.
    if (code === "ENOENT" || code === "ENOTDIR" || code === "EACCES") return undefined;
    throw new UnreachableError(`cannot read ${path}: ${(error as Error).message}`, error);
  }
}

/**
 * A runtime killed with SIGKILL leaves its file behind: name the dead pid rather than let the
 * first request fail with "connection refused". A file without a pid is left to the request.
 */
function checkAlive(text: string, shown: string, deps: LocateDeps): void {
  if (deps.processAlive === undefined) return;
  let pid: unknown;
  try {
    pid = (JSON.parse(text) as { pid?: unknown } | null)?.pid;
  } catch {
    return; // The schema check names what is wrong with it.
  }
  if (typeof pid !== "number" || !Number.isInteger(pid) || pid <= 0) return;
  if (!deps.processAlive(pid)) {
    throw new UnreachableError(
      `the runtime file ${shown} was written by runtime pid ${pid}, which is no longer running ` +
        `(it did not stop cleanly) — start it again with \`npm start\`, or pass --stack/--endpoint`,
    );
  }
}

function parseRecord(text: string, path: string): UserRuntimeRecord {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new UnreachableError(
      `the runtime record ${path} is not JSON — start the runtime again (\`npm start\`)`,
    );
  }
  const record = json as Partial<Record<keyof UserRuntimeRecord, unknown>> | null;
  if (
    typeof record?.runtimeFile !== "string" ||
    !isAbsolute(record.runtimeFile) ||
    typeof record.dataDir !== "string" ||
    typeof record.pid !== "number"
  ) {
    throw new UnreachableError(
      `the runtime record ${path} is not one \`npm start\` wrote (it needs runtimeFile, an absolute path, ` +
        "dataDir and pid) — start the runtime again (`npm start`)",
    );
  }
  return { runtimeFile: record.runtimeFile, dataDir: record.dataDir, pid: record.pid };
}
