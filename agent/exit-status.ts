/** Exit statuses as a container runtime reports them. */
import { constants } from "node:os";

export interface ExitStatus {
  readonly exitCode: number;
  readonly signal?: string;
}

/** A process killed by signal N exits with 128 + N (SIGKILL → 137, SIGTERM → 143). */
export function exitStatus(code: number | null, signal: NodeJS.Signals | null): ExitStatus {
  if (signal !== null) {
    const signo = constants.signals[signal] as number | undefined;
    return { exitCode: 128 + (signo ?? 0), signal };
  }
  return { exitCode: code ?? 0 };
}
