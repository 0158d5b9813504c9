/**
 * The embedded runtime's agents: each one `cairn agent` in its own OS process, started exactly
 * as a user would start it against a deployed stack, only pointed at the runtime file instead
 * of `--stack`. The runtime shares no objects with them: commands reach them through their SQS
 * queues, their reports come back through EventBridge, both over the AWS protocol.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import type { Writable } from "node:stream";
import { fileURLToPath } from "node:url";

const CLI = fileURLToPath(new URL("../bin/cairn.js", import.meta.url));

export interface AgentProcessOptions {
  readonly id: string;
  readonly cpu: number;
  readonly memoryMiB: number;
  readonly labels?: Readonly<Record<string, string>>;
  readonly runtimeFile: string;
  readonly workRoot: string;
  readonly heartbeatMs: number;
  readonly drainGraceMs: number;
  /**
   * The agent's credentials, handed over on a pipe (`--credentials-fd 3`) that the agent reads
   * and closes: not in the runtime file, the environment or argv, where a kernel could read them.
   */
  readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string };
  /** Run its kernels as this user (`--kernel-user`); the runtime must run as root. */
  readonly kernelUser?: string;
  /** Each line the agent writes on stderr. */
  readonly log: (line: string) => void;
  /** How long to wait for the agent to register. @default 30000 */
  readonly readyTimeoutMs?: number;
}

export class AgentProcess {
  readonly id: string;
  readonly options: AgentProcessOptions;
  readonly #child: ChildProcess;
  /** Resolves with the exit code (or the signal's name) when the process has exited. */
  readonly exited: Promise<number | string>;
  /** Every line the agent logged, newest last (bounded). */
  readonly lines: string[] = [];

  private constructor(options: AgentProcessOptions, child: ChildProcess) {
    this.id = options.id;
    this.options = options;
    this.#child = child;
    this.exited = new Promise((resolve) => {
      child.once("exit", (code, signal) => resolve(code ?? signal ?? "unknown"));
    });
  }

  get pid(): number {
    return this.#child.pid ?? -1;
  }

  /** Starts `cairn agent` and resolves once it has registered. */
  static async start(options: AgentProcessOptions): Promise<AgentProcess> {
    const args = [
      CLI,
      "agent",
      "--runtime-file",
      options.runtimeFile,
      "--id",
      options.id,
      "--cpu",
      String(options.cpu),
      "--memory-mib",
      String(options.memoryMiB),
      "--work-root",
      options.workRoot,
      "--heartbeat-seconds",
      String(options.heartbeatMs / 1000),
      "--drain-grace-seconds",
      String(options.drainGraceMs / 1000),
      "--credentials-fd",
      "3",
      ...(options.kernelUser === undefined ? [] : ["--kernel-user", options.kernelUser]),
      ...(options.labels && Object.keys(options.labels).length > 0
        ? [
            "--labels",
            Object.entries(options.labels)
              .map(([k, v]) => `${k}=${v}`)
              .join(","),
          ]
        : []),
    ];
    const child = spawn(process.execPath, args, {
      // A user's shell, not the runtime's: no AWS or Cairn settings leak into the agent.
      env: Object.fromEntries(
        Object.entries(process.env).filter(
          ([name]) => !name.startsWith("AWS_") && !name.startsWith("CAIRN_"),
        ),
      ),
      stdio: ["ignore", "ignore", "pipe", "pipe"],
    });
    const handOver = child.stdio[3] as Writable | null;
    handOver?.on("error", () => {}); // an agent that exits at once says why on stderr
    handOver?.end(
      JSON.stringify({
        accessKeyId: options.credentials.accessKeyId,
        secretAccessKey: options.credentials.secretAccessKey,
      }),
    );
    const agent = new AgentProcess(options, child);
    const ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(`agent ${options.id} did not register within ${options.readyTimeoutMs ?? 30_000} ms`),
          ),
        options.readyTimeoutMs ?? 30_000,
      );
      createInterface({ input: child.stderr! }).on("line", (line) => {
        agent.lines.push(line);
        if (agent.lines.length > 1000) agent.lines.shift();
        options.log(line);
        if (line.includes(`agent ${options.id}: registered (`)) {
          clearTimeout(timer);
          resolve();
        }
      });
      void agent.exited.then((how) => {
        clearTimeout(timer);
        reject(
          new Error(
            `agent ${options.id} exited (${how}) before it registered: ${agent.lines.slice(-5).join(" | ")}`,
          ),
        );
      });
    });
    try {
      await ready;
    } catch (error) {
      child.kill("SIGKILL");
      throw error;
    }
    return agent;
  }

  /** Sends a signal: SIGTERM drains, SIGKILL is a crash. */
  kill(signal: NodeJS.Signals): void {
    this.#child.kill(signal);
  }

  /** Drains (SIGTERM) and waits; SIGKILL after `timeoutMs`. */
  async stop(timeoutMs = 15_000): Promise<void> {
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) return;
    this.kill("SIGTERM");
    const timer = setTimeout(() => this.kill("SIGKILL"), timeoutMs);
    await this.exited;
    clearTimeout(timer);
  }
}
