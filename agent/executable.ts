/**
 * Finds the program a kernel runs, the way execvp would, so a missing or non-executable
 * program is reported at PREPARED time with its name rather than as a spawn error later.
 */
import { constants, promises as fs } from "node:fs";
import { delimiter, isAbsolute, resolve } from "node:path";
import { ExecutableNotFoundError, ExecutableNotRunnableError } from "./errors.ts";

/**
 * Resolves `executable` to an absolute path: as given when it contains a slash (relative to
 * `cwd`), otherwise the first executable regular file of that name on `pathEnv`.
 */
export async function resolveExecutable(executable: string, pathEnv: string, cwd: string): Promise<string> {
  if (executable.includes("/")) {
    const candidate = isAbsolute(executable) ? executable : resolve(cwd, executable);
    const problem = await runnableProblem(candidate);
    if (problem === "missing") throw new ExecutableNotFoundError(executable, `at ${candidate}`);
    if (problem !== undefined) throw new ExecutableNotRunnableError(executable, problem);
    return candidate;
  }
  const dirs = pathEnv.split(delimiter).filter((dir) => dir !== "");
  let firstProblem: string | undefined;
  for (const dir of dirs) {
    const candidate = resolve(cwd, dir, executable);
    const problem = await runnableProblem(candidate);
    if (problem === undefined) return candidate;
    if (problem !== "missing") firstProblem ??= `at ${candidate} ${problem}`;
  }
  // A file that exists but cannot run is the likelier mistake to point out.
  if (firstProblem !== undefined) throw new ExecutableNotRunnableError(executable, firstProblem);
  throw new ExecutableNotFoundError(executable, `on PATH (${pathEnv})`);
}

/** `undefined` when runnable; "missing"; or why it cannot run. */
async function runnableProblem(path: string): Promise<string | undefined> {
  let stats;
  try {
    stats = await fs.stat(path);
  } catch {
    return "missing";
  }
  if (!stats.isFile()) return "is not a regular file";
  try {
    await fs.access(path, constants.X_OK);
  } catch {
    return `is not executable (mode ${(stats.mode & 0o777).toString(8).padStart(4, "0")})`;
  }
  return undefined;
}
