/**
 * A container of an embedded ECS task, run as a local child process: the image is recorded,
 * never pulled, so the command runs on this machine with this machine's programs. The process
 * leads its own process group, so stopping the task signals everything it started, as stopping
 * a container ends every process in it.
 */
import { spawn } from "node:child_process";
import { constants } from "node:os";

export interface ContainerExit {
  /** Docker's convention: the exit status, or 128 + the signal's number when a signal ended it. */
  readonly exitCode: number;
  readonly atMs: number;
}

export interface ContainerProcess {
  readonly pid: number;
  readonly exited: Promise<ContainerExit>;
  /** Signals the process group; a group already gone is not an error. */
  signal(signal: "SIGTERM" | "SIGKILL"): void;
}

export interface ContainerLaunch {
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  /** One call per line of output, without its newline, in order per stream. */
  readonly onLine: (stream: "stdout" | "stderr", line: string, atMs: number) => void;
  readonly clock: () => number;
}

/** Why a process could not be started, as the OS said it (ENOENT, EACCES, …). */
export class SpawnFailure extends Error {
  readonly errno: string;
  constructor(errno: string, message: string) {
    super(message);
    this.name = "SpawnFailure";
    this.errno = errno;
  }
}

/** Resolves once the process runs; rejects with SpawnFailure when it cannot be started. */
export function startContainerProcess(launch: ContainerLaunch): Promise<ContainerProcess> {
  const [file, ...args] = launch.argv;
  if (file === undefined) return Promise.reject(new SpawnFailure("ENOENT", "no command"));
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      env: { ...launch.env },
      cwd: launch.cwd,
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    const lines = (stream: "stdout" | "stderr") => {
      let partial = "";
      const source = child[stream];
      source.setEncoding("utf8");
      source.on("data", (chunk: string) => {
        const parts = (partial + chunk).split("\n");
        partial = parts.pop() ?? "";
        for (const line of parts) launch.onLine(stream, line, launch.clock());
      });
      return new Promise<void>((done) =>
        source.once("close", () => {
          if (partial !== "") launch.onLine(stream, partial, launch.clock());
          done();
        }),
      );
    };
    child.once("error", (error: NodeJS.ErrnoException) => {
      reject(new SpawnFailure(error.code ?? "UNKNOWN", error.message));
    });
    child.once("spawn", () => {
      const pid = child.pid!;
      const output = Promise.all([lines("stdout"), lines("stderr")]);
      const exited = new Promise<ContainerExit>((done) => {
        child.once("exit", (code, signal) => {
          const atMs = launch.clock();
          const exitCode = code ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 0);
          // When a container's main process ends, the rest of the container goes with it.
          try {
            process.kill(-pid, "SIGKILL");
          } catch {
            // Nothing else was left running.
          }
          // The last lines are shipped before the exit is reported, as awslogs flushes first.
          void output.then(() => done({ exitCode, atMs }));
        });
      });
      resolve({
        pid,
        exited,
        signal: (sig) => {
          try {
            process.kill(-pid, sig);
          } catch {
            // The group is gone already.
          }
        },
      });
    });
  });
}
