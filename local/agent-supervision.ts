/**
 * What the embedded runtime does when one of its agent processes exits on its own (a crash, a
 * `kill -9`): it says so at once, with the exit code or the signal, and under `npm start`
 * restarts it under the same id, as a service manager would (systemd's `Restart=on-failure`).
 * Restarts back off so that an agent that cannot start does not spin: 1 s after the first exit,
 * doubling with each exit in a row, at most 30 s; an agent that ran 10 minutes before it exited
 * starts the count again. The restarted agent stops the kernels its earlier run left behind and
 * says so (agent/host.ts reapOrphans).
 */
import { AgentProcess, type AgentProcessOptions } from "./agent-processes.ts";

export const AGENT_RESTART_BACKOFF = {
  initialMs: 1_000,
  maxMs: 30_000,
  resetAfterRunningMs: 600_000,
} as const;

/** The wait before restarting an agent that exited after `ranMs`, its `previous` exits in a row before. */
export function agentRestartDelayMs(previous: number, ranMs: number): { delayMs: number; inARow: number } {
  const inARow = ranMs >= AGENT_RESTART_BACKOFF.resetAfterRunningMs ? 1 : previous + 1;
  const delayMs = Math.min(AGENT_RESTART_BACKOFF.initialMs * 2 ** (inARow - 1), AGENT_RESTART_BACKOFF.maxMs);
  return { delayMs, inARow };
}

/** How an agent's exit reads: its code, or the signal that ended it. */
export function exitText(id: string, pid: number, how: number | string): string {
  return typeof how === "number"
    ? `agent ${id} (pid ${pid}) exited with code ${how}`
    : `agent ${id} (pid ${pid}) was killed by ${how}`;
}

export interface SupervisionDeps {
  readonly log: (line: string) => void;
  /** True once the runtime is stopping: exits are expected then, and nothing is restarted. */
  readonly stopping: () => boolean;
  /** Restart agents that exit (`npm start`); otherwise their exit is only reported. */
  readonly restart: boolean;
  /** The agent process has left (it is no longer one of the runtime's agents). */
  readonly removed: (agent: AgentProcess) => void;
  /** A restarted agent has registered and joins the runtime's agents. */
  readonly added: (agent: AgentProcess) => void;
  readonly nowMs?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
}

/** Watches `agent`: reports its exit, and restarts it with backoff when `deps.restart`. */
export function supervise(agent: AgentProcess, deps: SupervisionDeps, inARow = 0): void {
  const nowMs = deps.nowMs ?? Date.now;
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const startedMs = nowMs();
  void agent.exited.then(async (how) => {
    deps.removed(agent);
    if (deps.stopping()) return;
    const ranMs = nowMs() - startedMs;
    const exited = exitText(agent.id, agent.pid, how);
    if (!deps.restart) {
      deps.log(`${exited}; it is not restarted (its kernels are lost once it stops heartbeating)`);
      return;
    }
    let backoff = agentRestartDelayMs(inARow, ranMs);
    deps.log(`${exited}; restarting it in ${backoff.delayMs / 1000} s (${backoff.inARow} exit(s) in a row)`);
    for (;;) {
      await sleep(backoff.delayMs);
      if (deps.stopping()) return;
      const next = await start(agent.options, deps.log);
      if (next !== undefined) {
        deps.log(`agent ${agent.id} restarted (pid ${next.pid})`);
        deps.added(next);
        supervise(next, deps, backoff.inARow);
        return;
      }
      backoff = agentRestartDelayMs(backoff.inARow, 0);
      deps.log(`agent ${agent.id}: trying again in ${backoff.delayMs / 1000} s`);
    }
  });
}

async function start(
  options: AgentProcessOptions,
  log: (line: string) => void,
): Promise<AgentProcess | undefined> {
  try {
    return await AgentProcess.start(options);
  } catch (error) {
    log(`agent ${options.id} did not restart: ${error instanceof Error ? error.message : String(error)}`);
    return undefined;
  }
}
