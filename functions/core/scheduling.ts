/**
 * The Sokovan handler/coordinator vocabulary (Backend.AI's BEP-1030): what a handler returns, and the
 * transitions the coordinator applies for each judged result.
 */
import type { KernelStatus, SessionStatus } from "./status.ts";

export const SchedulingResult = {
  SUCCESS: "SUCCESS",
  NEED_RETRY: "NEED_RETRY",
  EXPIRED: "EXPIRED",
  GIVE_UP: "GIVE_UP",
  SKIPPED: "SKIPPED",
} as const;
export type SchedulingResult = (typeof SchedulingResult)[keyof typeof SchedulingResult];

/** `undefined` for an entity means "don't change that entity's status". */
export interface TransitionStatus {
  readonly session?: SessionStatus;
  readonly kernel?: KernelStatus;
}

/** `undefined` for an outcome means "no status change at all, only record history". */
export interface StatusTransitions {
  readonly success?: TransitionStatus;
  readonly needRetry?: TransitionStatus;
  readonly expired?: TransitionStatus;
  readonly giveUp?: TransitionStatus;
}

/** Outcomes that carry a transition (SKIPPED never does). */
export type TransitionOutcome = Exclude<SchedulingResult, "SKIPPED">;

export function transitionFor(
  transitions: StatusTransitions,
  outcome: TransitionOutcome,
): TransitionStatus | undefined {
  switch (outcome) {
    case SchedulingResult.SUCCESS:
      return transitions.success;
    case SchedulingResult.NEED_RETRY:
      return transitions.needRetry;
    case SchedulingResult.EXPIRED:
      return transitions.expired;
    case SchedulingResult.GIVE_UP:
      return transitions.giveUp;
  }
}

/**
 * What a batch handler returns: every target it was given lands in at most one list.
 * `failures` were attempted and failed (a try is spent); `skipped` could not be attempted.
 * Targets in no list are "remaining" and are only judged for expiry.
 */
export interface HandlerResult {
  readonly successes: readonly string[];
  readonly failures: readonly string[];
  readonly skipped: readonly string[];
  /** Human-readable reasons keyed by session id (failure causes, skip reasons). */
  readonly messages?: Readonly<Record<string, string>>;
}

export const KernelMatchType = {
  ALL: "ALL",
  ANY: "ANY",
  NOT_ANY: "NOT_ANY",
} as const;
export type KernelMatchType = (typeof KernelMatchType)[keyof typeof KernelMatchType];
