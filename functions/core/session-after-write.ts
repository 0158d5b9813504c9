/**
 * A session as a `SessionWrite` leaves it, computed from the copy the write was planned from:
 * what a read right after the write would return, without the read. Exact only because the write
 * is guarded: the session by its version, and (stageEntryWrite, patchKernels) every kernel by
 * its version, so the write commits only if the copy was the stored state. test/store.test.ts
 * checks it against DynamoDB Local's read-back for every kind of field.
 */
import { RUN_FIELDS, type KernelPatch, type SessionWrite } from "./effects.ts";
import type { HistoryRecord, Kernel, Session, SessionWithKernels } from "./model.ts";
import type { ReservationRequest } from "./ports/agents.ts";

/** The session and kernels after `write` committed over `before`. */
export function sessionAfterWrite(before: SessionWithKernels, write: SessionWrite): SessionWithKernels {
  return {
    session: sessionItemAfter(before.session, write),
    kernels: kernelsAfter(before.kernels, write.kernels ?? [], write.nowMs),
  };
}

/**
 * The session and kernels after a reservation that claimed the stage (ReservationRequest with
 * claimStage): the stage's token claimed and the version bumped, each placed kernel on its agent
 * (and incarnation). Exact for the same reason: the reservation is guarded by the session's
 * version and by every kernel being unplaced, which the copy must have shown to plan it.
 */
export function sessionAfterPlacement(
  before: SessionWithKernels,
  request: ReservationRequest,
): SessionWithKernels {
  const placed = new Map(request.placements.map((p) => [p.kernelIndex, p]));
  return {
    session: sessionItemAfter(before.session, {
      sessionId: request.sessionId,
      expected: request.expected,
      nowMs: request.nowMs,
      claimStage: true,
      ...(request.claimedToken !== undefined ? { claimedToken: request.claimedToken } : {}),
    }),
    kernels: before.kernels.map((k) => {
      const p = placed.get(k.index);
      if (!p) return k;
      return {
        ...k,
        agentId: p.agentId,
        ...(p.incarnation !== undefined ? { agentIncarnation: p.incarnation } : {}),
        version: (k.version ?? 0) + 1,
      };
    }),
  };
}

/** The kernels after `patches` committed over `before` (the session item untouched). */
export function kernelsAfter(
  before: readonly Kernel[],
  patches: readonly KernelPatch[],
  nowMs: number,
): Kernel[] {
  const byIndex = new Map(patches.map((p) => [p.index, p]));
  return before.map((k) => {
    const patch = byIndex.get(k.index);
    return patch ? kernelAfter(k, patch, nowMs) : k;
  });
}

function sessionItemAfter(s: Session, w: SessionWrite): Session {
  const next: { -readonly [K in keyof Session]: Session[K] } = {
    ...s,
    version: w.expected.version + 1,
    updatedAtMs: w.nowMs,
  };
  if (w.status !== undefined) next.status = w.status;
  if (w.stage !== undefined) next.stage = w.stage;
  if (w.claimStage === true) {
    const { taskToken: _claimed, ...stage } = next.stage;
    next.stage =
      w.claimedToken !== undefined ? { ...stage, claimedToken: w.claimedToken, claimedAtMs: w.nowMs } : stage;
  }
  if (w.tries === "increment") next.tries = s.tries + 1;
  if (w.tries === "reset") next.tries = 0;
  if (w.pendingReason === null) delete next.pendingReason;
  else if (w.pendingReason !== undefined) next.pendingReason = w.pendingReason;
  // The first accepted cancel request wins (if_not_exists in the store).
  if (w.cancelRequestedAtMs !== undefined)
    next.cancelRequestedAtMs = s.cancelRequestedAtMs ?? w.cancelRequestedAtMs;
  if (w.cancelReason !== undefined) next.cancelReason = s.cancelReason ?? w.cancelReason;
  if (w.cancelForcedAtMs !== undefined) next.cancelForcedAtMs = s.cancelForcedAtMs ?? w.cancelForcedAtMs;
  if (w.runIndex === "increment") next.runIndex = s.runIndex + 1;
  if (w.retry !== undefined) next.retry = w.retry;
  if (w.avoidAgentIds === null) delete next.avoidAgentIds;
  else if (w.avoidAgentIds !== undefined) next.avoidAgentIds = [...w.avoidAgentIds];
  if (w.requeue !== undefined) next.requeuedAtMs = s.requeuedAtMs ?? w.requeue.atMs;
  if (w.preemption === null) delete next.preemption;
  else if (w.preemption !== undefined) next.preemption = w.preemption;
  const latest = (w.history ?? []).reduce<HistoryRecord | undefined>(
    (a, b) => (a === undefined || b.seq > a.seq ? b : a),
    undefined,
  );
  if (latest !== undefined) next.lastHistory = latest;
  return next;
}

function kernelAfter(k: Kernel, patch: KernelPatch, nowMs: number): Kernel {
  const next: Record<string, unknown> = { ...k, version: (k.version ?? 0) + 1 };
  if (patch.status !== undefined) {
    next["status"] = patch.status;
    next["statusChangedAtMs"] = nowMs;
  }
  if (patch.agentId === null) {
    delete next["agentId"];
    delete next["agentIncarnation"];
  } else if (patch.agentId !== undefined) next["agentId"] = patch.agentId;
  for (const field of RUN_FIELDS) {
    const value = patch[field];
    if (value === null || (value === undefined && patch.resetRun === true)) delete next[field];
    else if (value !== undefined) next[field] = value;
  }
  return next as unknown as Kernel;
}
