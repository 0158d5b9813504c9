/**
 * Command-line parsing: argv in, a typed invocation out, or a UsageError naming the offending
 * argument. Pure (no I/O): commander (command-table.ts) parses and writes the help, which is
 * returned as text. Before it runs, the command's words are moved to the front, so options may
 * come before, between or after them, and each option is checked so that every message names it.
 */
import { CommanderError, type Command } from "commander";
import { cairnProgram } from "./command-table.ts";
import { UsageError } from "./errors.ts";

export type {
  OutputFormat,
  TargetOptions,
  RetryConfigChanges,
  AgentOptions,
  Invocation,
} from "./invocation.ts";
import type { Invocation } from "./invocation.ts";

export function parseCommandLine(argv: readonly string[]): Invocation {
  let help = "";
  let invocation: Invocation | undefined;
  const program = cairnProgram(
    (text) => (help += text),
    (done) => (invocation = done),
  );
  const { path, rest, helpAsked } = findCommand(program, argv);
  const command = path.at(-1);
  const name = path.map((c) => c.name()).join(" ");
  if (command === undefined) {
    if (!helpAsked) throw new UsageError(`missing command (expected one of ${commandList(program)})`);
  } else if (command.commands.length > 0 && !helpAsked) {
    throw new UsageError(`missing what to do with ${name} (expected one of ${commandList(command)})`, name);
  } else if (!helpAsked) {
    checkOptions(command, rest, name);
  }
  try {
    program.parse([...path.map((c) => c.name()), ...rest, ...(helpAsked ? ["--help"] : [])], {
      from: "user",
    });
  } catch (error) {
    if (error instanceof CommanderError && error.code === "commander.helpDisplayed") {
      return { kind: "help", text: help.trimEnd() };
    }
    if (error instanceof CommanderError && error.code === "commander.missingArgument") {
      const args = command?.registeredArguments.map((arg) => arg.name()).join(" ");
      throw new UsageError(`missing ${args}`, name);
    }
    if (error instanceof CommanderError) throw new UsageError(error.message.replace(/^error: /, ""), name);
    // The checks in command-table.ts leave the command to name to us.
    if (error instanceof UsageError && error.command === undefined) throw new UsageError(error.message, name);
    throw error;
  }
  if (invocation === undefined) throw new Error(`cairn ${name}: no command ran`);
  return invocation;
}

/**
 * The command's words (`get`, `queue create`) wherever they are among the options, the rest of
 * the arguments in order, and whether help was asked for (`--help`, `-h`, `cairn help …`).
 */
function findCommand(
  program: Command,
  argv: readonly string[],
): { path: Command[]; rest: string[]; helpAsked: boolean } {
  // Options that take a value, in any command: `cairn -o json get x` must find `get`, not `json`.
  const valueFlags = new Set(
    leaves(program).flatMap((c) => c.options.filter((o) => o.required).flatMap((o) => [o.long, o.short])),
  );
  const path: Command[] = [];
  const rest: string[] = [];
  let helpAsked = false;
  let parent = program;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    if (arg === "--") {
      rest.push(...argv.slice(i));
      break;
    }
    const isWord = !arg.startsWith("-") || arg === "-";
    if (isWord && path.length === 0 && arg === "help" && !helpAsked) {
      helpAsked = true;
      continue;
    }
    if (isWord && (path.length === 0 || parent.commands.length > 0)) {
      const next = parent.commands.find((c) => c.name() === arg);
      if (next === undefined) throw unknownCommand(parent, path, arg);
      path.push(next);
      parent = next;
      continue;
    }
    rest.push(arg);
    if (arg === "--help" || arg === "-h") helpAsked = true;
    else if (valueFlags.has(arg) && i + 1 < argv.length) rest.push(argv[++i] ?? "");
  }
  return { path, rest, helpAsked };
}

function leaves(command: Command): Command[] {
  return command.commands.length === 0 ? [command] : command.commands.flatMap(leaves);
}

function commandList(command: Command): string {
  return command.commands.map((c) => c.name()).join(", ");
}

function unknownCommand(parent: Command, path: readonly Command[], word: string): UsageError {
  const expected = `(expected one of ${commandList(parent)})`;
  if (path.length === 0) return new UsageError(`unknown command "${word}" ${expected}`);
  const group = path.map((c) => c.name()).join(" ");
  return new UsageError(`unknown ${group} command "${word}" ${expected}`, group);
}

/**
 * Every option is the command's, a switch is given no value, and an option that takes one has
 * one: commander would take `--id --wait` as the id "--wait".
 */
function checkOptions(command: Command, args: readonly string[], name: string): void {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? "";
    if (arg === "--") return;
    if (!arg.startsWith("-") || arg === "-") continue;
    // `-ojson`, `--output=json`: the value in the same argument.
    const short = !arg.startsWith("--") && arg.length > 2 ? arg.slice(0, 2) : undefined;
    const eq = arg.startsWith("--") ? arg.indexOf("=") : -1;
    const flag = short ?? (eq < 0 ? arg : arg.slice(0, eq));
    const option = command.options.find((o) => o.long === flag || o.short === flag);
    if (option === undefined || (short !== undefined && !option.required)) {
      throw new UsageError(`unknown option ${flag}`, name);
    }
    const long = option.long ?? flag;
    if (!option.required) {
      if (eq >= 0) throw new UsageError(`option ${long} takes no value`, name);
      continue;
    }
    if (short !== undefined || eq >= 0) continue;
    const value = args[++i];
    if (value === undefined) {
      const placeholder = /<(.+)>/.exec(option.flags)?.[1] ?? "VALUE";
      throw new UsageError(`option ${long} needs a value (${long} ${placeholder})`, name);
    }
    if (value.startsWith("-") && value !== "-") {
      throw new UsageError(
        `option ${long} needs a value, got "${value}" (write ${long}=${value} if that is the value)`,
        name,
      );
    }
  }
}
