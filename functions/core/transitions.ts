/**
 * Where a stage transition leads for the session's kernels. One function serves every path into
 * a state: a handler outcome completed by the coordinator, a promotion, the state machine's own
 * timeout (EXPIRED) and a cancel request.
 */
import { LIFECYCLE_HANDLERS, STAGES, type LifecycleHandlerName } from "./handlers.ts";
import type { StageTransition } from "./model.ts";
import { transitionFor } from "./scheduling.ts";
import { isWaitingStatus, KernelStatus, SessionStatus } from "./status.ts";

function isLifecycleHandler(name: string): name is LifecycleHandlerName {
  return Object.hasOwn(LIFECYCLE_HANDLERS, name);
}

export function transitionKernelStatus(t: StageTransition): KernelStatus | undefined {
  if (t.result === "CANCELLED") {
    return t.to === SessionStatus.CANCELLED ? KernelStatus.CANCELLED : undefined;
  }
  if (t.result === "SKIPPED" || t.result === "SUBMITTED") return undefined;
  // A run that can never start ends: its kernels end with it, FAILED (effects.ts says why).
  if (t.result === "FAILED") return KernelStatus.ERROR;
  // A retried run starts from scratch: every kernel back to PENDING, to be placed again.
  if (t.result === "REQUEUED") return KernelStatus.PENDING;
  // Preempted before RUNNING: placed again from scratch. A RUNNING one is stopped by
  // TerminateSessions, whose agents report how each kernel ended.
  if (t.result === "PREEMPTED" || t.result === "AGENT_LOST") {
    return t.to === SessionStatus.PENDING ? KernelStatus.PENDING : undefined;
  }
  if (isLifecycleHandler(t.handler)) {
    return transitionFor(LIFECYCLE_HANDLERS[t.handler].transitions, t.result)?.kernel;
  }
  // Expiry raised by the state machine's own timer: the stage's governing handler decides.
  if (t.result === "EXPIRED" && isWaitingStatus(t.from)) {
    const governedBy = STAGES[t.from].governedBy;
    return governedBy ? LIFECYCLE_HANDLERS[governedBy].transitions.expired?.kernel : undefined;
  }
  // Promotions change the session only.
  return undefined;
}

/** The error a stage's callback fails with to lead the execution to `status` (ASL Catch). */
export const routeError = (status: SessionStatus): string => `Cairn.To.${status}`;

/**
 * How a stage's callback is completed. Each callback state's own `Next` is its first success
 * status (the happy path: one state per stage, no Choice after it): that transition completes
 * the callback with SendTaskSuccess. Any other status is reached by failing the callback with
 * `Cairn.To.<STATUS>` and the transition as the cause: the state catches that error by name and
 * routes it (test/asl-graph.test.ts checks that the ASL and these tables agree).
 */
export function stageCompletion(
  t: StageTransition,
): { readonly kind: "success" } | { readonly kind: "route"; readonly error: string } {
  if (isWaitingStatus(t.from) && STAGES[t.from].onSuccess[0] === t.to) return { kind: "success" };
  return { kind: "route", error: routeError(t.to) };
}
