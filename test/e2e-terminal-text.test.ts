/**
 * What users and kernels write reaches a terminal as text. A kernel's termination log becomes its
 * kernel's message, and a nodeSelector's label values reach the pending reason: free text that
 * `cairn get`, `history` and `list` print. Escape sequences in them (OSC 52 rewrites the
 * clipboard, ESC [2J clears the screen, U+202E reverses what follows) are printed escaped, while
 * `-o json` keeps every character. `cairn logs` prints a kernel's output as written when piped, and
 * on a terminal (a real one: util-linux's `script` gives it a pseudo-terminal) with every control
 * but colours escaped.
 */
import { spawn } from "node:child_process";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { outcomeOf, runCairn, stdoutJson, type Run } from "./support/cli.ts";
import { startTestRuntime, type TestRuntime } from "./support/runtime.ts";

/** Any control character a terminal acts on: C0 but tab and newline, DEL, C1, bidi controls. */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;
/** OSC 52 (clipboard), clear screen, right-to-left override, a C1 CSI. */
const HOSTILE = "\u001b]52;c;ZWNobyBvd25lZA==\u0007\u001b[2Jowned\u202eevil\u009b31m";
/** The same in printf's octal escapes, for the kernel's shell. */
const HOSTILE_PRINTF = "\\033]52;c;ZWNobyBvd25lZA==\\007\\033[2Jowned\\342\\200\\256evil\\302\\23331m";

let rt: TestRuntime;

beforeAll(async () => {
  rt = await startTestRuntime();
});

afterAll(async () => {
  await rt?.stop();
});

function cairn(...args: string[]): Promise<Run> {
  return runCairn(rt.dataDir, args);
}

/** `cairn ARGS` with a pseudo-terminal as its stdout and stderr: what the terminal received. */
async function onTerminal(...args: string[]): Promise<string> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith("AWS_")));
  const line = [
    process.execPath,
    resolve("bin/cairn.js"),
    ...args,
    "--runtime-file",
    join(rt.dataDir, "runtime.json"),
  ];
  const child = spawn("script", ["-qec", line.join(" "), "/dev/null"], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const run = await outcomeOf(child);
  expect(run.code, run.stdout + run.stderr).toBe(0);
  // The terminal's line discipline ends lines with CR LF.
  return run.stdout.replace(/\r\n/g, "\n");
}

/** The text output of a command: it ran, and prints no control character but tab and newline. */
async function printedAsText(...args: string[]): Promise<string> {
  const run = await cairn(...args);
  expect(run.code, run.stderr).toBe(0);
  expect(run.stdout).not.toMatch(CONTROL);
  expect(run.stderr).not.toMatch(CONTROL);
  return run.stdout;
}

describe("free text in the CLI's tables and blocks", { timeout: 150_000 }, () => {
  test("a kernel's termination log with escape sequences: get, history and list print it escaped; JSON keeps it", async () => {
    const id = "terminal-kernel-message";
    await rt.submit({
      sessionId: id,
      spec: {
        name: "hostile",
        resources: { cpu: 1, memoryMiB: 64 },
        command: [
          "/bin/sh",
          "-c",
          `printf '${HOSTILE_PRINTF}' > "$CAIRN_TERMINATION_LOG"; printf '\\033[1;31mred\\033[0m ${HOSTILE_PRINTF}\\n'; exit 1`,
        ],
      },
    });
    const ended = await rt.waitForEnd(id, 90_000);
    expect(ended.kernels[0]?.message).toBe(HOSTILE);

    const get = await printedAsText("get", id);
    expect(get).toContain("\\u001b]52;c;ZWNobyBvd25lZA==\\u0007\\u001b[2Jowned\\u202eevil\\u009b31m");
    await printedAsText("history", id);
    await printedAsText("list");
    const json = stdoutJson(await cairn("get", id, "-o", "json")) as { kernels: { message: string }[] };
    expect(json.kernels[0]?.message).toBe(HOSTILE);

    // Its output: piped, as written; on a terminal, colours kept and every other control escaped.
    const piped = await cairn("logs", id);
    expect(piped.stdout).toContain(`\u001b[1;31mred\u001b[0m ${HOSTILE}`);
    const shown = await onTerminal("logs", id);
    expect(shown).toContain(
      "\u001b[1;31mred\u001b[0m \\u001b]52;c;ZWNobyBvd25lZA==\\u0007\\u001b[2Jowned\\u202eevil\\u009b31m",
    );
    expect(shown.replaceAll("\u001b[1;31m", "").replaceAll("\u001b[0m", "")).not.toMatch(CONTROL);
  });

  test("a nodeSelector label value with escape sequences: the pending reason is printed escaped", async () => {
    const id = "terminal-pending-reason";
    await rt.submit({
      sessionId: id,
      spec: {
        name: "unplaceable",
        resources: { cpu: 1, memoryMiB: 64 },
        command: ["/bin/true"],
        nodeSelector: { gpu: "\u001b[2J\u001b]0;title\u0007" },
      },
    });
    await rt.waitFor(id, (s) => s.session.pendingReason !== undefined, "a pending reason");
    const get = await printedAsText("get", id);
    expect(get).toContain("\\u001b[2J\\u001b]0;title\\u0007");
    await printedAsText("list", "--status", "PENDING");
    await rt.cancel(id);
    await rt.waitForEnd(id, 90_000);
  });
});
