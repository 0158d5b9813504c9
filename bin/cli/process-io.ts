/** The real CliIo: this process's streams, files, clock and randomness, and the lazily loaded AWS side. */
import { randomInt } from "node:crypto";
import { readFileSync } from "node:fs";
import { readAtMost } from "./bounded-read.ts";
import type { CliIo } from "./io.ts";

export function processIo(): CliIo {
  return {
    stdout: (text) => void process.stdout.write(text + "\n"),
    stderr: (text) => void process.stderr.write(text + "\n"),
    cwd: process.cwd(),
    colour: process.stdout.isTTY && !process.env["NO_COLOR"],
    terminal: process.stdout.isTTY,
    env: process.env,
    readFile: (path, maxBytes) =>
      maxBytes === undefined ? readFileSync(path, "utf8") : readAtMost(path, maxBytes),
    readStdin: (maxBytes) => (maxBytes === undefined ? readFileSync(0, "utf8") : readAtMost(0, maxBytes)),
    nowMs: () => Date.now(),
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    // Session id suffixes: a CSPRNG, so ids made at the same moment on two machines differ.
    random: () => randomInt(2 ** 32) / 2 ** 32,
    processAlive: (pid) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch (error) {
        // EPERM: it runs, as another user.
        return (error as { code?: unknown }).code === "EPERM";
      }
    },
    // The AWS SDK takes a third of a second to load: help and usage errors do without it.
    openApi: async (connection) => (await import("./cairn-api.ts")).openCairnApi(connection),
    stackOutputs: async (request) => (await import("./cairn-api.ts")).describeStackOutputs(request),
    runAgent: async function (options, connection) {
      return (await import("./commands/agent.ts")).runAgent(options, connection, this);
    },
  };
}
