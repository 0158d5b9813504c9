/**
 * Everything the CLI touches outside itself, in one interface: the process supplies the real
 * one (process-io.ts), tests supply their own.
 */
import type { AgentOptions } from "./args.ts";
import type { CairnApi } from "./cairn-api.ts";
import type { Connection, StackRequest } from "./target.ts";

export interface CliIo {
  /** Writes `text` and a newline to stdout. */
  stdout(text: string): void;
  /** Writes `text` and a newline to stderr. */
  stderr(text: string): void;
  readonly cwd: string;
  /** Colour stdout: it is a terminal and NO_COLOR is not set (https://no-color.org). */
  readonly colour?: boolean;
  /** Stdout is a terminal: kernel output is printed with its control characters escaped. */
  readonly terminal?: boolean;
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
  /** Whether a process with this pid runs on this host; absent: never checked. */
  processAlive?(pid: number): boolean;
  openApi(connection: Connection): Promise<CairnApi>;
  stackOutputs(request: StackRequest): Promise<Readonly<Record<string, string>>>;
  /** `cairn agent`: runs the agent in this process until it is stopped. */
  runAgent?(options: AgentOptions, connection: Connection): Promise<number>;
}

export function printJson(io: CliIo, value: unknown): void {
  io.stdout(JSON.stringify(value, null, 2));
}
