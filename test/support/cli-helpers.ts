/** Helpers for the CLI's unit tests: parsing a simple command line, and a simulated clock. */
import { expect } from "vitest";
import { parseCommandLine, type Invocation } from "../../bin/cli/args.ts";
import { UsageError } from "../../bin/cli/errors.ts";

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
