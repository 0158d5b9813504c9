/** Building a new session, and what a session's outcome is, from its kernels. Pure. */
import type { Kernel, Session, SessionSpec, SessionWithKernels } from "./model.ts";
import { AttemptOutcome, KernelStatus, SessionStatus } from "./status.ts";

export function newSession(id: string, spec: SessionSpec, nowMs: number): SessionWithKernels {
  const session: Session = {
    id,
    spec,
    status: SessionStatus.PENDING,
    version: 0,
    createdAtMs: nowMs,
    updatedAtMs: nowMs,
    executionName: id,
    stage: { enteredAtMs: nowMs, expiresAtMs: nowMs + spec.timeouts.pending * 1000 },
    tries: 0,
    runIndex: 0,
  };
  const kernels: Kernel[] = Array.from({ length: spec.replicas }, (_, index) => ({
    sessionId: id,
    index,
    status: KernelStatus.PENDING,
    resources: spec.resources,
    statusChangedAtMs: nowMs,
  }));
  return { session, kernels };
}

/**
 * The session's current placement within its run: returns to PENDING are counted per session
 * (`retry.freeReturns`), so each placement has its own number. Kernel commands carry it, and a
 * kernel report answering another placement is refused (Agents.checkReport).
 */
export function sessionPlacement(session: Session): number {
  return session.retry?.freeReturns ?? 0;
}

export type SessionResult = "succeeded" | "failed" | "cancelled";

/** Undefined while the session is not finished. Succeeded means every kernel exited 0. */
export function sessionResult({ session, kernels }: SessionWithKernels): SessionResult | undefined {
  if (session.status === SessionStatus.CANCELLED) return "cancelled";
  if (session.status !== SessionStatus.TERMINATED) return undefined;
  if (session.cancelRequestedAtMs !== undefined) return "cancelled";
  // A kernel its run-time limit killed is not a success, whatever it exited with.
  const succeeded =
    kernels.length > 0 &&
    kernels.every(
      (k) =>
        k.status === KernelStatus.TERMINATED &&
        k.exitCode === 0 &&
        (k.outcome === undefined || k.outcome === AttemptOutcome.SUCCEEDED),
    );
  return succeeded ? "succeeded" : "failed";
}
