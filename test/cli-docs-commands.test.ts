/**
 * Every `cairn` command the docs and examples tell a user to type runs as written: each command
 * line in README.md, docs/**\/*.md, the examples' comments and the CLI's own help examples that
 * starts with `cairn` or `npx cairn` goes through the CLI's parser (commander and the checks
 * that build an invocation; nothing is sent, no runtime is needed). An unknown command, an
 * unknown option or a value the CLI refuses fails here. Commands named in running text
 * (`` `cairn job submit` ``) must name a real command and real options.
 *
 * The files are read when the suite runs, so a page added or moved is checked as it is.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import type { Command } from "commander";
import { describe, expect, test } from "vitest";
import { parseCommandLine } from "../bin/cli/args.ts";
import { cairnProgram, COMMANDS } from "../bin/cli/command-table.ts";

const ROOT = process.cwd();

/** Placeholders the docs write for a value, and a value of the right kind for each. */
const PLACEHOLDERS: Readonly<Record<string, string>> = {
  "<session-id>": "hello-abc12345",
  "<id>": "hello-abc12345",
  "<job>": "tasks-abc12345",
  $id: "hello-abc12345",
  SESSION_ID: "hello-abc12345",
  JOB_ID: "tasks-abc12345",
  ID: "hello-abc12345",
  SECONDS: "60",
  N: "2",
  INDEX: "2",
  TEXT: "a reason",
  NAME: "web",
  FILE: "policy.yaml",
  SPEC: "spec.yaml",
  SVC: "svc.yaml",
  DIR: "/var/lib/cairn",
  D: "10s",
  STATUS: "RUNNING",
  "K=V,…": "zone=b",
};
/** An elision: `cairn deployment … --wait`. */
const ELIDED = "…";

const SHELL_FENCES = new Set(["sh", "bash", "shell", "console", "zsh"]);

interface DocCommand {
  /** `README.md:35` */
  readonly where: string;
  readonly line: string;
  /** A command line to parse whole, or a mention in running text to check by name. */
  readonly kind: "command" | "mention";
}

function files(dir: string, suffix: string): string[] {
  let entries;
  try {
    entries = readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true });
  } catch {
    return [];
  }
  return entries
    .filter((e) => e.isFile() && e.name.endsWith(suffix))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)))
    .sort();
}

/** The `cairn …` commands in a shell line: after `&&`, `;`, `|` or `$(`, up to the next of those, a redirect or a comment. */
function commandsIn(shell: string): string[] {
  // A comment, or the help's note after a wide gap: `cairn queue update batch --no-fargate   (remove …)`.
  const code = shell.replace(/(^|\s)#.*$/, "").replace(/\s{2,}\(.*$/, "");
  return code
    .split(/&&|\|\||;|\||\$\(|\)/)
    .map((part) => part.replace(/\s[12]?>.*$/, "").trim())
    .map((part) => part.replace(/^(?:\$\s+|Try:\s+|[a-z_]+=)/, "").trim())
    .filter((part) => /^(npx\s+)?cairn(\s|$)/.test(part));
}

function docCommands(): DocCommand[] {
  const found: DocCommand[] = [];
  const markdown = ["README.md", ...files("docs", ".md")];
  for (const file of markdown) {
    let text: string;
    try {
      text = readFileSync(join(ROOT, file), "utf8");
    } catch {
      continue; // README.md moved away: nothing to check there.
    }
    /** Inside a fenced block: its language ("" for none); undefined outside. */
    let fence: string | undefined;
    text.split("\n").forEach((raw, i) => {
      const where = `${file}:${i + 1}`;
      const marker = /^\s*```\s*(\S*)/.exec(raw);
      if (marker !== null) {
        fence = fence === undefined ? (marker[1] ?? "") : undefined;
        return;
      }
      // Shell blocks hold commands; others hold diagrams, output and documents.
      if (fence !== undefined) {
        if (SHELL_FENCES.has(fence)) {
          for (const line of commandsIn(raw)) found.push({ where, line, kind: "command" });
        }
        return;
      }
      for (const match of raw.matchAll(/`((?:npx )?cairn [^`]+)`/g)) {
        found.push({ where, line: match[1] ?? "", kind: "mention" });
      }
    });
  }
  for (const file of [...files("examples", ".yaml"), ...files("examples", ".yml")]) {
    readFileSync(join(ROOT, file), "utf8")
      .split("\n")
      .forEach((raw, i) => {
        const comment = /^\s*#(.*)$/.exec(raw)?.[1];
        if (comment === undefined) return;
        for (const line of commandsIn(comment))
          found.push({ where: `${file}:${i + 1}`, line, kind: "command" });
      });
  }
  for (const [name, def] of Object.entries(COMMANDS)) {
    (def.details ?? "").split("\n").forEach((raw) => {
      for (const line of commandsIn(raw))
        found.push({ where: `cairn ${name} --help`, line, kind: "command" });
    });
  }
  return found;
}

/** The words after `cairn`, with placeholders replaced by values and optional parts made present. */
function argv(line: string): string[] {
  const words = line
    .replace(/^npx\s+/, "")
    .replace(/^cairn\s*/, "")
    .replace(/[[\]]/g, " ")
    .match(/"[^"]*"|'[^']*'|\S+/g);
  return (words ?? [])
    .map((word) => word.replace(/^(["'])(.*)\1$/, "$2"))
    .filter((word) => word !== ELIDED)
    .map((word) => PLACEHOLDERS[word] ?? word);
}

/** A mention names a real command (the words down the tree) and only options that command has. */
function checkMention(program: Command, line: string): void {
  // `create|update` (or `create\|update` in a table): the first of the alternatives.
  const words = argv(line.replace(/\\?\|[^\s`]*/g, ""));
  let command = program;
  let i = 0;
  for (; i < words.length && command.commands.length > 0; i++) {
    const word = words[i] ?? "";
    if (word.startsWith("-")) break;
    // `cairn <command> --help`: a synopsis, not one command.
    if (word.startsWith("<")) return;
    const next = command.commands.find((c) => c.name() === word);
    if (next === undefined) throw new Error(`"${word}" is not a cairn command here (${line})`);
    command = next;
  }
  // A group (`cairn deployment … --wait`): an option of any of its commands.
  const options = [command, ...command.commands].flatMap((c) => c.options);
  const known = new Set([...options, ...program.options].flatMap((o) => [o.long, o.short]));
  known.add("--help");
  for (const word of words.slice(i)) {
    const flag = word.split("=")[0] ?? "";
    if (flag.startsWith("-") && flag !== "-" && !known.has(flag)) {
      throw new Error(`${flag} is not an option of cairn ${command.name()} (${line})`);
    }
  }
}

const found = docCommands();
const commands = found.filter((c) => c.kind === "command");
const mentions = found.filter((c) => c.kind === "mention");

describe("the commands the docs and examples give", () => {
  test("there are commands to check, among them the README's quick start and the examples' own", () => {
    expect(commands.some((c) => c.where.startsWith("examples/"))).toBe(true);
    expect(commands.length).toBeGreaterThan(20);
  });

  test.each(commands.map((c) => [c.where, c.line] as const))("%s: %s", (_where, line) => {
    const words = argv(line);
    // `cairn <command> [options]`: the synopsis of every command, not one to type.
    if (words[0] === "<command>") return;
    expect(() => parseCommandLine(words)).not.toThrow();
  });

  test.each(mentions.map((c) => [c.where, c.line] as const))("%s mentions %s", (_where, line) => {
    expect(() =>
      checkMention(
        cairnProgram(
          () => {},
          () => {},
        ),
        line,
      ),
    ).not.toThrow();
  });
});

describe("the checker itself", () => {
  test("finds the commands of a shell line, after && and $(, before comments and redirects", () => {
    expect(
      commandsIn('id=$(npx cairn submit examples/hello.yaml) && cairn get "$id"   # then cairn list'),
    ).toEqual(["npx cairn submit examples/hello.yaml", 'cairn get "$id"']);
    expect(
      commandsIn("npx cairn template get small > small.yaml && npx cairn template update -f small.yaml"),
    ).toEqual(["npx cairn template get small", "npx cairn template update -f small.yaml"]);
  });

  test("a command that does not exist, or an option it lacks, fails", () => {
    expect(() => parseCommandLine(argv("cairn create -f examples/retry-policies/infra.yaml"))).toThrow(
      'unknown command "create"',
    );
    expect(() => parseCommandLine(argv("cairn list --colour"))).toThrow("unknown option --colour");
    const program = cairnProgram(
      () => {},
      () => {},
    );
    expect(() => checkMention(program, "cairn queue frobnicate")).toThrow(
      '"frobnicate" is not a cairn command',
    );
    expect(() => checkMention(program, "cairn logs --tail")).toThrow("--tail is not an option of cairn logs");
    expect(() => checkMention(program, "cairn logs JOB_ID [--task INDEX] [--follow]")).not.toThrow();
  });
});
