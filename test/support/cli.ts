/**
 * Runs the real `cairn` binary as a child process against a test runtime, with no AWS settings
 * in its environment, so it finds Cairn through the runtime file alone.
 */
import { spawn, type ChildProcessByStdio } from "node:child_process";
import type { Readable } from "node:stream";
import { join, resolve } from "node:path";

const CLI = resolve("bin/cairn.js");

export interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export function runCairn(dataDir: string, args: readonly string[]): Promise<Run> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith("AWS_")));
  const child = spawn(process.execPath, [CLI, ...args, "--runtime-file", join(dataDir, "runtime.json")], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  return outcomeOf(child);
}

/** A child's exit code and everything it printed, once it has closed its output. */
export function outcomeOf(child: ChildProcessByStdio<null, Readable, Readable>): Promise<Run> {
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((done, fail) => {
    child.on("error", fail);
    child.on("close", (code) => done({ code, stdout, stderr }));
  });
}

/** The run's stdout as JSON, or an error showing what it printed instead. */
export function stdoutJson(run: Run): Record<string, unknown> {
  try {
    return JSON.parse(run.stdout) as Record<string, unknown>;
  } catch {
    throw new Error(`stdout is not JSON (exit ${run.code}):\n${run.stdout}\nstderr:\n${run.stderr}`);
  }
}
