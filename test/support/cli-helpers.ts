/** Helpers for the CLI's unit tests: parsing a simple command line, a simulated clock, a fake CliIo. */
import { expect } from "vitest";
import { parseCommandLine, type Invocation } from "../../bin/cli/args.ts";
import { UsageError } from "../../bin/cli/errors.ts";
import type { CliIo } from "../../bin/cli/io.ts";

export const parseLine = (line: string): Invocation =>
  parseCommandLine(line.split(" ").filter((a) => a !== ""));

/** The UsageError the line is refused with; fails the test if it parses. */
export function usageErrorOf(line: string): UsageError {
  try {
    parseLine(line);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return error as UsageError;
  }
  throw new Error(`"${line}" parsed without error`);
}

/** A clock that jumps forward by whatever is slept, recording each sleep. */
export function simulatedClock(startMs: number) {
  let nowMs = startMs;
  const sleeps: number[] = [];
  return {
    nowMs: () => nowMs,
    sleep: (ms: number) => {
      sleeps.push(ms);
      nowMs += ms;
      return Promise.resolve();
    },
    sleeps,
  };
}

/**
 * A CliIo over an in-memory file system (`/work` is the working directory) that records stdout and
 * stderr; `overrides` supply the clock and the API.
 */
export function fakeCliIo(
  files: Readonly<Record<string, string>>,
  overrides: Pick<CliIo, "nowMs" | "sleep" | "openApi" | "stackOutputs">,
): { io: CliIo; out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  const io: CliIo = {
    stdout: (t) => void out.push(t),
    stderr: (t) => void err.push(t),
    cwd: "/work",
    env: {},
    readFile: (path) => {
      const text = files[path];
      if (text === undefined) throw Object.assign(new Error(`ENOENT: ${path}`), { code: "ENOENT" });
      return text;
    },
    readStdin: () => "",
    random: () => 0,
    ...overrides,
  };
  return { io, out, err };
}
