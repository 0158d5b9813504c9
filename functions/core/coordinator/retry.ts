import type { StatusTransitions, TransitionStatus } from "../scheduling.ts";

/**
 * Need-retry: the status the seed's `need_retry` names, or none. Every Sokovan session handler
 * has `need_retry = None`: the status is maintained and only history is written.
 */
export function needRetryTransition(transitions: StatusTransitions): TransitionStatus | undefined {
  return transitions.needRetry;
}
