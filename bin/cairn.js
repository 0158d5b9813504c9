#!/usr/bin/env node
/**
 * `cairn …` (or `npx cairn …`): submit, follow and cancel Cairn sessions. Everything lives in
 * bin/cli/; this file only connects it to the process. It is JavaScript so that Node has no
 * TypeScript to strip before the compile cache is on: the cache keeps the CLI's modules with
 * their types stripped, and a start that finds them all there never loads Node's type stripper
 * (about a quarter of a start's CPU: 0.59 – 0.64 s of CPU for `cairn --help` instead of 0.77 –
 * 0.79 s).
 *
 * Installed as a command (`npm install -g` of a checkout, or `npm link`), it starts on whatever
 * `node` is first on the PATH, maybe one that cannot run TypeScript (Node 20): it then runs
 * itself again on the Node 24 that the package's `node` devDependency installed.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import module from "node:module";
import { fileURLToPath } from "node:url";

if (!process.features.typescript) {
  await runOnOwnNode();
} else {
  // Node's on-disk compile cache (in the OS temp directory; NODE_DISABLE_COMPILE_CACHE=1 turns it
  // off): every later run of the CLI, and every `cairn agent` start, skips compiling its modules
  // again, about half of a start's CPU. Only modules loaded after this call are cached, so the
  // CLI is imported below, not statically. A stale entry is detected by its checksum and replaced.
  module.enableCompileCache?.();

  const { runCli } = await import("./cli/main.ts");
  const { processIo } = await import("./cli/process-io.ts");

  // exitCode rather than process.exit(): pending stdout writes to a pipe still get flushed.
  process.exitCode = await runCli(process.argv.slice(2), processIo());
}

/** Runs this file on the package's own Node and ends as it ends. */
async function runOnOwnNode() {
  // This file's real path (Node resolves the symlink an installed command is), so the checkout's.
  const ownNode = fileURLToPath(new URL("../node_modules/node/bin/node", import.meta.url));
  if (!existsSync(ownNode)) {
    process.stderr.write(
      `cairn: this is Node ${process.version}, which cannot run the CLI's TypeScript, and the Node 24 ` +
        `that \`npm ci\` installs is missing (${ownNode}): run \`npm ci\` (or \`npm start\`) in the ` +
        `checkout, or put Node 24 or newer first on the PATH\n`,
    );
    process.exitCode = 1;
    return;
  }
  const child = spawn(ownNode, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: "inherit",
  });
  // Ctrl-C reaches the child itself (one process group): passing SIGINT on would deliver it twice,
  // and a second interrupt is a forced stop for `cairn agent`. Signals sent to this process alone
  // are passed on.
  process.on("SIGINT", () => {});
  for (const signal of ["SIGTERM", "SIGHUP", "SIGQUIT"]) process.on(signal, () => child.kill(signal));
  const [code, signal] = await new Promise((done, fail) => {
    child.once("error", fail);
    child.once("exit", (exitCode, exitSignal) => done([exitCode, exitSignal]));
  });
  if (signal !== null) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  }
  process.exitCode = code ?? 1;
}
