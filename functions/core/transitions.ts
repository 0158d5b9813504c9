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
