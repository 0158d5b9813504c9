/**
 * Reconciliation of what an agent runs with what Cairn knows (docs/agents.md, "Reconciliation"):
 * each heartbeat lists the agent's kernel processes by run and placement, and every one the
 * table says has ended is named back to the agent, which stops it. A process outlives its
 * session in Cairn's view (a report lost or forged, a stop command lost, a session ended by the
 * control plane while its agent was unreachable) only until the agent's next heartbeat, and the
 * capacity Cairn released is then free on the host too.
 *
 * Pure: the sessions are read by the caller (consistently, so a placement just written is seen).
 */
import type { HeartbeatRun } from "./agent-events.ts";
import type { SessionWithKernels } from "./model.ts";
import { sessionPlacement } from "./sessions.ts";
import { TERMINAL_KERNEL_STATUSES, TERMINAL_SESSION_STATUSES } from "./status.ts";

export interface EndedRun extends HeartbeatRun {
  /** Why Cairn considers the run ended, in words. */
  readonly reason: string;
}

/**
 * The runs among `runs` (what agent `agentId`, incarnation `incarnation`, says it runs) that Cairn
 * considers ended, each with the reason. `sessions` holds every session the runs name that exists.
 */
export function endedRuns(
  agentId: string,
  incarnation: string,
  runs: readonly HeartbeatRun[],
  sessions: ReadonlyMap<string, SessionWithKernels>,
): EndedRun[] {
  const ended: EndedRun[] = [];
  for (const run of runs) {
    const reason = whyEnded(agentId, incarnation, run, sessions.get(run.sessionId));
    if (reason !== undefined) ended.push({ ...run, reason });
  }
  return ended;
}

function whyEnded(
  agentId: string,
  incarnation: string,
  run: HeartbeatRun,
  found: SessionWithKernels | undefined,
): string | undefined {
  const what = `kernel ${run.kernelIndex} of session ${run.sessionId}`;
  if (found === undefined) return `session ${run.sessionId} does not exist`;
  const { session, kernels } = found;
  if (TERMINAL_SESSION_STATUSES.has(session.status)) {
    return `session ${session.id} ended (${session.status})`;
  }
  if (session.runIndex !== run.runIndex) {
    return `run ${run.runIndex} of session ${session.id} has ended (the session is on run ${session.runIndex})`;
  }
  const placement = sessionPlacement(session);
  if (placement !== run.placement) {
    return `placement ${run.placement} of run ${run.runIndex} of session ${session.id} has ended (the session is on placement ${placement})`;
  }
  const kernel = kernels.find((k) => k.index === run.kernelIndex);
  if (kernel === undefined) return `session ${session.id} has no kernel ${run.kernelIndex}`;
  if (kernel.agentId !== agentId) {
    return `${what} is placed on ${kernel.agentId ?? "no agent"}, not on ${agentId}`;
  }
  if (kernel.agentIncarnation !== undefined && kernel.agentIncarnation !== incarnation) {
    return `${what} was placed with incarnation ${kernel.agentIncarnation} of ${agentId}, not ${incarnation}`;
  }
  if (TERMINAL_KERNEL_STATUSES.has(kernel.status)) {
    return `${what} ended (${kernel.status}${kernel.exitCode === undefined ? "" : `, exit code ${kernel.exitCode}`})`;
  }
  return undefined;
}
