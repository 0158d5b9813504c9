/**
 * Sokovan's handler tables (Backend.AI's scheduler proposal) as typed data. The state machine
 * (statemachines/session-lifecycle.asl.json) is checked against these by test/asl-graph.test.ts.
 */
import { KernelMatchType, type StatusTransitions } from "./scheduling.ts";
import {
  KernelStatus,
  NON_TERMINAL_KERNEL_STATUSES,
  SessionStatus,
  TERMINAL_KERNEL_STATUSES,
  type WaitingSessionStatus,
} from "./status.ts";

export const LifecycleHandlerName = {
  ScheduleNewSessions: "ScheduleNewSessions",
  PrepareSessions: "PrepareSessions",
  StartSessions: "StartSessions",
  TerminateSessions: "TerminateSessions",
} as const;
export type LifecycleHandlerName = (typeof LifecycleHandlerName)[keyof typeof LifecycleHandlerName];

export const PromotionHandlerName = {
  PromoteToPrepared: "PromoteToPrepared",
  PromoteToRunning: "PromoteToRunning",
  PromoteToTerminated: "PromoteToTerminated",
  DetectTermination: "DetectTermination",
} as const;
export type PromotionHandlerName = (typeof PromotionHandlerName)[keyof typeof PromotionHandlerName];

export type HandlerName = LifecycleHandlerName | PromotionHandlerName;

export interface LifecycleHandlerSpec {
  readonly name: LifecycleHandlerName;
  readonly targetSessionStatuses: readonly SessionStatus[];
  /**
   * Backend.AI's `target_kernel_statuses`: "None: No kernel filtering (include sessions regardless
   * of kernel status); list[KernelStatus]: Include sessions that have kernels in these statuses".
   * Applied where the handler's pass selects its targets (selectsTarget).
   */
  readonly targetKernelStatuses: readonly KernelStatus[] | undefined;
  readonly transitions: StatusTransitions;
}

export interface PromotionHandlerSpec {
  readonly name: PromotionHandlerName;
  readonly targetSessionStatuses: readonly SessionStatus[];
  readonly checkKernelStatuses: ReadonlySet<KernelStatus>;
  readonly matchType: KernelMatchType;
  /** Session status when promoted. Kernel statuses are never changed by a promotion. */
  readonly successSessionStatus: SessionStatus;
  /**
   * Cairn's refinement for gangs: a kernel that exited 0 is left out of the match until
   * every kernel has ended, so one task finishing early does not stop its siblings.
   */
  readonly succeededWaitForSiblings?: boolean;
}

const S = SessionStatus;
const K = KernelStatus;

export const LIFECYCLE_HANDLERS: Readonly<Record<LifecycleHandlerName, LifecycleHandlerSpec>> = {
  ScheduleNewSessions: {
    name: "ScheduleNewSessions",
    targetSessionStatuses: [S.PENDING],
    targetKernelStatuses: [K.PENDING],
    transitions: {
      success: { session: S.SCHEDULED, kernel: K.SCHEDULED },
      needRetry: undefined,
      expired: { session: S.CANCELLED, kernel: K.CANCELLED },
      giveUp: { session: S.CANCELLED, kernel: K.CANCELLED },
    },
  },
  PrepareSessions: {
    name: "PrepareSessions",
    targetSessionStatuses: [S.SCHEDULED, S.PREPARING],
    // Backend.AI's table gives SCHEDULED. Cairn's PrepareSessions also judges, in PREPARING, a
    // kernel whose preparation its agent reported failed (it stays PREPARING, with the error):
    // PREPARING is here for that (docs/differences.md).
    targetKernelStatuses: [K.SCHEDULED, K.PREPARING],
    transitions: {
      success: { session: S.PREPARING, kernel: K.PREPARING },
      needRetry: undefined,
      expired: { session: S.PENDING, kernel: K.PENDING },
      giveUp: { session: S.PENDING, kernel: K.PENDING },
    },
  },
  StartSessions: {
    name: "StartSessions",
    targetSessionStatuses: [S.PREPARED],
    targetKernelStatuses: [K.PREPARED],
    transitions: {
      success: { session: S.CREATING, kernel: K.CREATING },
      needRetry: undefined,
      expired: { session: S.PENDING, kernel: K.PENDING },
      giveUp: { session: S.PENDING, kernel: K.PENDING },
    },
  },
  TerminateSessions: {
    name: "TerminateSessions",
    targetSessionStatuses: [S.TERMINATING],
    targetKernelStatuses: [...NON_TERMINAL_KERNEL_STATUSES],
    transitions: {
      success: { session: S.TERMINATED, kernel: K.TERMINATED },
      needRetry: undefined,
      expired: { session: S.TERMINATED, kernel: K.TERMINATED },
      giveUp: { session: S.TERMINATED, kernel: K.TERMINATED },
    },
  },
};

export const PROMOTION_HANDLERS: Readonly<Record<PromotionHandlerName, PromotionHandlerSpec>> = {
  PromoteToPrepared: {
    name: "PromoteToPrepared",
    targetSessionStatuses: [S.SCHEDULED, S.PREPARING],
    checkKernelStatuses: new Set([K.PENDING, K.SCHEDULED, K.PREPARING, K.PULLING]),
    matchType: KernelMatchType.NOT_ANY,
    successSessionStatus: S.PREPARED,
  },
  PromoteToRunning: {
    name: "PromoteToRunning",
    targetSessionStatuses: [S.CREATING],
    checkKernelStatuses: new Set([K.PENDING, K.SCHEDULED, K.PREPARING, K.PULLING, K.PREPARED, K.CREATING]),
    matchType: KernelMatchType.NOT_ANY,
    successSessionStatus: S.RUNNING,
  },
  PromoteToTerminated: {
    name: "PromoteToTerminated",
    targetSessionStatuses: [S.TERMINATING],
    checkKernelStatuses: NON_TERMINAL_KERNEL_STATUSES,
    matchType: KernelMatchType.NOT_ANY,
    successSessionStatus: S.TERMINATED,
  },
  DetectTermination: {
    name: "DetectTermination",
    targetSessionStatuses: [S.RUNNING],
    checkKernelStatuses: TERMINAL_KERNEL_STATUSES,
    matchType: KernelMatchType.ANY,
    successSessionStatus: S.TERMINATING,
    succeededWaitForSiblings: true,
  },
};

/**
 * Whether a lifecycle handler's pass selects `target`: its session in one of the handler's target
 * session statuses and, unless the handler filters no kernels, at least one kernel in one of its
 * target kernel statuses (Backend.AI: "Simple filtering - fetch sessions that have kernels in
 * specified statuses"). A TERMINATING session whose every kernel has ended is no target of
 * TerminateSessions, which has nothing left to stop: PromoteToTerminated moves it on.
 */
export function selectsTarget(
  spec: LifecycleHandlerSpec,
  target: {
    readonly session: { readonly status: SessionStatus };
    readonly kernels: readonly { readonly status: KernelStatus }[];
  },
): boolean {
  if (!spec.targetSessionStatuses.includes(target.session.status)) return false;
  const wanted = spec.targetKernelStatuses;
  return wanted === undefined || target.kernels.some((k) => wanted.includes(k.status));
}

/**
 * One row per waiting stage: which lifecycle handler's transitions govern its expiry and
 * give-up (Sokovan's flow diagram), and where a cancel request leads.
 *
 * Sokovan's flow diagram gives CREATING the same expired/give_up edges as the stages before it
 * but no handler targets CREATING; StartSessions' transitions (→ PENDING) are used. RUNNING has no
 * expiry in Sokovan; its timeout is the run-time limit (HPC Pack's), which ends the run
 * as DeadlineExceeded via TERMINATING.
 */
export interface StageSpec {
  readonly status: WaitingSessionStatus;
  /** Whose transitions judge retry/expiry/give-up here. */
  readonly governedBy: LifecycleHandlerName | undefined;
  /** Status on expiry (States.Timeout or the coordinator's expiry judgment). */
  readonly onExpired: SessionStatus;
  /** Status on give-up, where a handler spends tries at this stage. */
  readonly onGiveUp: SessionStatus | undefined;
  /** Statuses a success at this stage can lead to (handler success or promotion). */
  readonly onSuccess: readonly SessionStatus[];
  /** Status a cancel request leads to from this stage. */
  readonly onCancel: SessionStatus;
  /**
   * Status a run goes back to when it is retried (budgets and retry policies): from
   * TERMINATING once all its kernels have ended; from PENDING when it was never placed and a
   * rule on `Unschedulable` retries it (coordinator/finished-run.ts).
   */
  readonly onRequeue?: SessionStatus;
  /**
   * Status a session goes to when a higher-priority one preempts it: back to PENDING
   * before it runs (free: the run never started), TERMINATING once it runs (the run ends as
   * PREEMPTED and is judged under the preemption budget). Absent: not preemptible here.
   */
  readonly onPreempt?: SessionStatus;
  /**
   * Status a run that can never start ends in, FAILED: PENDING when its returns there
   * are used up, PREPARING when its preparation failed in a way no retry can clear.
   */
  readonly onFail?: SessionStatus;
}

export const STAGES: Readonly<Record<WaitingSessionStatus, StageSpec>> = {
  PENDING: {
    status: S.PENDING,
    governedBy: "ScheduleNewSessions",
    onExpired: S.CANCELLED,
    onGiveUp: S.CANCELLED,
    onSuccess: [S.SCHEDULED],
    onCancel: S.CANCELLED,
    onRequeue: S.PENDING,
    onFail: S.TERMINATED,
  },
  SCHEDULED: {
    status: S.SCHEDULED,
    governedBy: "PrepareSessions",
    onExpired: S.PENDING,
    onGiveUp: S.PENDING,
    onSuccess: [S.PREPARING, S.PREPARED],
    onCancel: S.CANCELLED,
    onPreempt: S.PENDING,
  },
  PREPARING: {
    status: S.PREPARING,
    governedBy: "PrepareSessions",
    onExpired: S.PENDING,
    onGiveUp: S.PENDING,
    onSuccess: [S.PREPARED],
    onCancel: S.CANCELLED,
    onPreempt: S.PENDING,
    onFail: S.TERMINATED,
  },
  PREPARED: {
    status: S.PREPARED,
    governedBy: "StartSessions",
    onExpired: S.PENDING,
    onGiveUp: S.PENDING,
    onSuccess: [S.CREATING],
    onCancel: S.CANCELLED,
    onPreempt: S.PENDING,
  },
  CREATING: {
    status: S.CREATING,
    governedBy: "StartSessions",
    onExpired: S.PENDING,
    onGiveUp: S.PENDING,
    onSuccess: [S.RUNNING],
    onCancel: S.CANCELLED,
    onPreempt: S.PENDING,
  },
  RUNNING: {
    status: S.RUNNING,
    governedBy: undefined,
    onExpired: S.TERMINATING,
    onGiveUp: undefined,
    onSuccess: [S.TERMINATING],
    onCancel: S.TERMINATING,
    onPreempt: S.TERMINATING,
  },
  TERMINATING: {
    status: S.TERMINATING,
    governedBy: "TerminateSessions",
    onExpired: S.TERMINATED,
    onGiveUp: S.TERMINATED,
    onSuccess: [S.TERMINATED],
    onCancel: S.TERMINATING,
    onRequeue: S.PENDING,
  },
};
