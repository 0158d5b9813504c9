/** Parsing a command line the way a shell would split a simple one, for the CLI's parser tests. */
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
