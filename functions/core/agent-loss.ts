/**
 * What losing an agent does to a session that had kernels on it (Iris's task state
 * WORKER_FAILED): every kernel of the session still alive on the lost agent ends at once as
 * WORKER_FAILED with the AgentLost condition (no agent will ever report it), and the session
 * leaves its stage without waiting for that stage's timer:
 *
 * - before RUNNING (SCHEDULED … CREATING): back to PENDING to be placed again, capacity released
 *   by the PENDING entry: at no cost from SCHEDULED (Iris's ASSIGNED), charged to the preemption
 *   budget from PREPARING on (Iris's BUILDING; building-loss.ts);
 * - RUNNING: its run has a failed kernel, so DetectTermination ends it (TERMINATING → the run is
 *   judged: WORKER_FAILED retries under the preemption budget); nothing to complete here;
 * - TERMINATING: the kernel was being stopped; now it has ended, PromoteToTerminated moves on.
 *
 * Pure: the caller reads the session and carries the plan out.
 */
import type { KernelPatch } from "./effects.ts";
import { chargeLossBeforeRunning, lossIsFree } from "./building-loss.ts";
import { STAGES } from "./handlers.ts";
import type { SessionWithKernels, StageTransition } from "./model.ts";
import {
  AttemptOutcome,
  isTerminalKernelStatus,
  isWaitingStatus,
  SessionStatus,
  TerminationCondition,
} from "./status.ts";

export interface AgentLossPlan {
  readonly kernels: readonly KernelPatch[];
  /** Present when the session's stage is to be claimed and completed with it. */
  readonly transition?: StageTransition;
}

/** Undefined when the session has nothing alive on the agent (or has already ended). */
export function agentLossPlan(
  { session, kernels }: SessionWithKernels,
  agentId: string,
  reason: string,
  nowMs: number,
): AgentLossPlan | undefined {
  const lost = kernels.filter((k) => k.agentId === agentId && !isTerminalKernelStatus(k.status));
  if (lost.length === 0 || !isWaitingStatus(session.status)) return undefined;
  const patches: KernelPatch[] = lost.map((k) => ({
    index: k.index,
    expectedVersion: k.version ?? 0,
    status: "TERMINATED",
    condition: TerminationCondition.AgentLost,
    message: reason,
    outcome: AttemptOutcome.WORKER_FAILED,
    finishedAtMs: nowMs,
  }));
  const status = session.status;
  if (
    status === SessionStatus.RUNNING ||
    status === SessionStatus.TERMINATING ||
    status === SessionStatus.PENDING
  ) {
    return { kernels: patches };
  }
  const to = STAGES[status].onPreempt ?? SessionStatus.PENDING;
  const free = lossIsFree(status);
  return {
    kernels: patches,
    transition: chargeLossBeforeRunning(
      session,
      {
        from: status,
        to,
        result: "AGENT_LOST",
        handler: "Liveness",
        message: free ? `${reason}: placed again at no cost, it had not started` : reason,
      },
      AttemptOutcome.WORKER_FAILED,
    ),
  };
}
