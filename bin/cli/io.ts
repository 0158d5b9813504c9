/**
 * Everything the CLI touches outside itself, in one interface: the process supplies the real
 * one (processIo), tests supply their own.
 */
import { randomInt } from "node:crypto";
import { readFileSync } from "node:fs";
import type { AgentOptions } from "./args.ts";
import { readAtMost } from "./bounded-read.ts";
import type { CairnApi } from "./cairn-api.ts";
import type { Connection, StackRequest } from "./target.ts";

export interface CliIo {
  /** Writes `text` and a newline to stdout. */
  stdout(text: string): void;
  /** Writes `text` and a newline to stderr. */
  stderr(text: string): void;
  readonly cwd: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  /**
   * Like fs.readFileSync(path, "utf8"): throws with `code` ENOENT for a missing file, and with
   * `code` EFBIG, having read at most `maxBytes + 1` bytes, when the file holds more.
   */
  readFile(path: string, maxBytes?: number): string;
  readStdin(maxBytes?: number): string;
  nowMs(): number;
  sleep(ms: number): Promise<void>;
  /** In [0, 1). */
  random(): number;
  openApi(connection: Connection): Promise<CairnApi>;
  stackOutputs(request: StackRequest): Promise<Readonly<Record<string, string>>>;
  /** `cairn agent`: runs the agent in this process until it is stopped. */
  runAgent?(options: AgentOptions, connection: Connection): Promise<number>;
}

export function processIo(): CliIo {
  return {
    stdout: (text) => void process.stdout.write(text + "\n"),
    stderr: (text) => void process.stderr.write(text + "\n"),
    cwd: process.cwd(),
    env: process.env,
    readFile: (path, maxBytes) =>
      maxBytes === undefined ? readFileSync(path, "utf8") : readAtMost(path, maxBytes),
    readStdin: (maxBytes) => (maxBytes === undefined ? readFileSync(0, "utf8") : readAtMost(0, maxBytes)),
    nowMs: () => Date.now(),
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    // Session id suffixes: a CSPRNG, so ids made at the same moment on two machines differ.
    random: () => randomInt(2 ** 32) / 2 ** 32,
    // The AWS SDK takes a third of a second to load: help and usage errors do without it.
    openApi: async (connection) => (await import("./cairn-api.ts")).openCairnApi(connection),
    stackOutputs: async (request) => (await import("./cairn-api.ts")).describeStackOutputs(request),
    runAgent: async function (options, connection) {
      return (await import("./commands/agent.ts")).runAgent(options, connection, this);
    },
  };
}

export function printJson(io: CliIo, value: unknown): void {
  io.stdout(JSON.stringify(value, null, 2));
}
