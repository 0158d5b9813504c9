/**
 * Session and kernel statuses (Backend.AI's Sokovan, BEP-1030) and attempt outcomes (Iris's task states).
 * Enums are `as const` objects with derived unions so a missing status is a compile error
 * wherever a `Record<Status, …>` is declared.
 */

export const SessionStatus = {
  PENDING: "PENDING",
  SCHEDULED: "SCHEDULED",
  PREPARING: "PREPARING",
  PREPARED: "PREPARED",
  CREATING: "CREATING",
  RUNNING: "RUNNING",
  TERMINATING: "TERMINATING",
  TERMINATED: "TERMINATED",
  CANCELLED: "CANCELLED",
} as const;
export type SessionStatus = (typeof SessionStatus)[keyof typeof SessionStatus];
export const SESSION_STATUSES = Object.values(SessionStatus);

export const TERMINAL_SESSION_STATUSES: ReadonlySet<SessionStatus> = new Set([
  SessionStatus.TERMINATED,
  SessionStatus.CANCELLED,
]);

/** Stages in which a session waits for work; each is a callback state with an expiry timer. */
export const WAITING_SESSION_STATUSES = [
  SessionStatus.PENDING,
  SessionStatus.SCHEDULED,
  SessionStatus.PREPARING,
  SessionStatus.PREPARED,
  SessionStatus.CREATING,
  SessionStatus.RUNNING,
  SessionStatus.TERMINATING,
] as const;
export type WaitingSessionStatus = (typeof WAITING_SESSION_STATUSES)[number];

export function isWaitingStatus(status: SessionStatus): status is WaitingSessionStatus {
  return (WAITING_SESSION_STATUSES as readonly SessionStatus[]).includes(status);
}

export const KernelStatus = {
  PENDING: "PENDING",
  SCHEDULED: "SCHEDULED",
  PREPARING: "PREPARING",
  PULLING: "PULLING",
  PREPARED: "PREPARED",
  CREATING: "CREATING",
  RUNNING: "RUNNING",
  TERMINATING: "TERMINATING",
  TERMINATED: "TERMINATED",
  CANCELLED: "CANCELLED",
  ERROR: "ERROR",
} as const;
export type KernelStatus = (typeof KernelStatus)[keyof typeof KernelStatus];
export const KERNEL_STATUSES = Object.values(KernelStatus);

/** BEP-1030: "terminal (TERMINATED, CANCELLED, ERROR)". */
export const TERMINAL_KERNEL_STATUSES: ReadonlySet<KernelStatus> = new Set([
  KernelStatus.TERMINATED,
  KernelStatus.CANCELLED,
  KernelStatus.ERROR,
]);

/**
 * BEP-1030 writes "non-terminal (PENDING~RUNNING)". TERMINATING is also not terminal: a kernel
 * still shutting down must hold its session in TERMINATING, so it is included here.
 */
export const NON_TERMINAL_KERNEL_STATUSES: ReadonlySet<KernelStatus> = new Set(
  KERNEL_STATUSES.filter((s) => !TERMINAL_KERNEL_STATUSES.has(s)),
);

export function isTerminalKernelStatus(status: KernelStatus): boolean {
  return TERMINAL_KERNEL_STATUSES.has(status);
}

/** How one run (attempt) of a kernel or session ended: Iris task outcomes. */
export const AttemptOutcome = {
  SUCCEEDED: "SUCCEEDED",
  FAILED: "FAILED",
  KILLED: "KILLED",
  WORKER_FAILED: "WORKER_FAILED",
  UNSCHEDULABLE: "UNSCHEDULABLE",
  PREEMPTED: "PREEMPTED",
} as const;
export type AttemptOutcome = (typeof AttemptOutcome)[keyof typeof AttemptOutcome];

/** Why a kernel ended, beyond its exit code (Armada's retry-policy proposal). */
export const TerminationCondition = {
  OOMKilled: "OOMKilled",
  Evicted: "Evicted",
  Preempted: "Preempted",
  DeadlineExceeded: "DeadlineExceeded",
  Unschedulable: "Unschedulable",
  /** The kernel's agent went silent past the liveness window (or restarted without it): set by the control plane. */
  AgentLost: "AgentLost",
} as const;
export type TerminationCondition = (typeof TerminationCondition)[keyof typeof TerminationCondition];
export const TERMINATION_CONDITIONS = Object.values(TerminationCondition);

/**
 * Iris's task states, derived from a session and its kernels (core/jobs.ts): a task is
 * one kernel of a co-scheduled session, or the one kernel of an independent task's session.
 */
export const TaskState = {
  PENDING: "PENDING",
  ASSIGNED: "ASSIGNED",
  BUILDING: "BUILDING",
  RUNNING: "RUNNING",
  // How a task's attempt ended is one of its states (KILLED, UNSCHEDULABLE are never retried).
  ...AttemptOutcome,
} as const;
export type TaskState = (typeof TaskState)[keyof typeof TaskState];

/** Iris's job states: derived from task states, in Iris's order of precedence. */
export const JobState = {
  PENDING: "PENDING",
  RUNNING: "RUNNING",
  SUCCEEDED: "SUCCEEDED",
  FAILED: "FAILED",
  KILLED: "KILLED",
  WORKER_FAILED: "WORKER_FAILED",
  UNSCHEDULABLE: "UNSCHEDULABLE",
} as const;
export type JobState = (typeof JobState)[keyof typeof JobState];

export const TERMINAL_JOB_STATES: ReadonlySet<JobState> = new Set([
  JobState.SUCCEEDED,
  JobState.FAILED,
  JobState.KILLED,
  JobState.WORKER_FAILED,
  JobState.UNSCHEDULABLE,
]);

/**
 * The statuses whose entry goes through the coordinator's placement queue: PENDING (to be
 * placed, serialized) and the ends (capacity came free; the job may settle). The next step of
 * every other waiting stage is taken on entry, by EnterStage (functions/topology/index.ts).
 */
export const PLACEMENT_STATUSES: readonly SessionStatus[] = [
  SessionStatus.PENDING,
  SessionStatus.TERMINATED,
  SessionStatus.CANCELLED,
];
