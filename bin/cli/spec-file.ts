/** Reads and validates a spec file for `submit`; every problem becomes one InvalidSpecError. */
import { resolve } from "node:path";
import type { SessionSpec } from "../../functions/core/model.ts";
import { parseSpecText, type ValidationIssue } from "../../functions/core/spec.ts";
import { InvalidSpecError } from "./errors.ts";
import type { CliIo } from "./io.ts";

export function readSpecFile(file: string, io: Pick<CliIo, "cwd" | "readFile" | "readStdin">): SessionSpec {
  const name = file === "-" ? "(stdin)" : file;
  let text: string;
  try {
    text = file === "-" ? io.readStdin() : io.readFile(resolve(io.cwd, file));
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const why =
      code === "ENOENT" ? "no such file" : code === "EISDIR" ? "it is a directory" : (error as Error).message;
    throw new InvalidSpecError(`cannot read the spec ${name}: ${why}`);
  }
  try {
    return parseSpecText(text);
  } catch (error) {
    // Branch on the spec module's stable codes.
    const code = (error as { code?: unknown }).code;
    if (code === "INVALID_SPEC") {
      const issues = (error as { issues: readonly ValidationIssue[] }).issues;
      throw new InvalidSpecError(
        `invalid session spec ${name} (${issues.length} ${issues.length === 1 ? "problem" : "problems"}):\n` +
          issues.map((issue) => `  ${issue.path}: ${issue.message}`).join("\n"),
        issues,
      );
    }
    if (code === "SPEC_SYNTAX") throw new InvalidSpecError(`${name}: ${(error as Error).message}`);
    throw error;
  }
}
