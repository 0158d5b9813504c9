/**
 * Cairn's domain model: one vocabulary for sessions, kernels, agents and history
 * (DESIGN.md §1). Pure data; no I/O. Times are epoch milliseconds (`…AtMs`) unless the name
 * says otherwise.
 */
import type { HandlerName } from "./handlers.ts";
import type { SchedulingResult } from "./scheduling.ts";
import type {
  AttemptOutcome,
  KernelStatus,
  SessionStatus,
  TerminationCondition,
  WaitingSessionStatus,
} from "./status.ts";

export interface ResourceRequest {
  readonly cpu: number;
  readonly memoryMiB: number;
}

/** Per-stage values keyed by the lower-case stage name, as users write them in specs. */
export type StageKey = Lowercase<WaitingSessionStatus>;
export const STAGE_KEYS = [
  "pending",
  "scheduled",
  "preparing",
  "prepared",
  "creating",
  "running",
  "terminating",
] as const satisfies readonly StageKey[];

export function stageKey(status: WaitingSessionStatus): StageKey {
  return status.toLowerCase() as StageKey;
}

export type StageTimeouts = Readonly<Record<StageKey, number>>;
export type StageMaxTries = Readonly<Record<StageKey, number>>;

/** What a user submits, after validation and defaults (see spec.ts). */
export interface SessionSpec {
  readonly name: string;
  readonly queue: string;
  readonly priority: number;
  /** Kernels in this session (a gang: placed all-or-nothing). */
  readonly replicas: number;
  /** Per kernel. */
  readonly resources: ResourceRequest;
  readonly command: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  /** Expiry timer of each waiting stage, in seconds. */
  readonly timeouts: StageTimeouts;
  /** Handler tries allowed in each stage before GIVE_UP. */
  readonly maxTries: StageMaxTries;
}

/** The waiting stage the lifecycle execution is in, recorded when the stage is entered. */
export interface StageRecord {
  readonly enteredAtMs: number;
  /** Callback token of the waiting state; absent once an outcome has claimed it. */
  readonly taskToken?: string;
  /** Expiry deadline of the stage (enteredAtMs + timeout). */
  readonly expiresAtMs: number;
}

export interface Session {
  readonly id: string;
  readonly spec: SessionSpec;
  readonly status: SessionStatus;
  /** Incremented by every write to the session item; writes are conditional on it. */
  readonly version: number;
  readonly createdAtMs: number;
  readonly updatedAtMs: number;
  /** Name of the lifecycle execution (= session id). */
  readonly executionName: string;
  readonly stage: StageRecord;
  /** Handler tries spent in the current stage; reset when the status changes. */
  readonly tries: number;
  /** The run (attempt) index; 0 for the first run. */
  readonly runIndex: number;
  /** Why the session is still waiting (the latest skip reason), for `cairn get`. */
  readonly pendingReason?: string;
  readonly cancelRequestedAtMs?: number;
  /** The latest history record, mirrored on the session so merging needs no extra read. */
  readonly lastHistory?: HistoryRecord;
}

export interface Kernel {
  readonly sessionId: string;
  readonly index: number;
  readonly status: KernelStatus;
  readonly resources: ResourceRequest;
  readonly agentId?: string;
  readonly exitCode?: number;
  readonly condition?: TerminationCondition;
  /** Termination message, error text, or why the kernel ended. */
  readonly message?: string;
  readonly outcome?: AttemptOutcome;
  /** The latest preparation failure reported by the agent; cleared when preparation is retried. */
  readonly error?: string;
  readonly startedAtMs?: number;
  readonly finishedAtMs?: number;
  readonly statusChangedAtMs: number;
}

export interface SessionWithKernels {
  readonly session: Session;
  readonly kernels: readonly Kernel[];
}

export interface Agent {
  readonly id: string;
  readonly capacity: ResourceRequest;
  readonly free: ResourceRequest;
  readonly lastHeartbeatAtMs: number;
  readonly version: number;
}

/**
 * An outcome recorded in a session's history. CANCELLED marks a honoured cancel request;
 * SUBMITTED is the first record of every session (the execution's first PENDING entry).
 */
export type HistoryResult = SchedulingResult | "CANCELLED" | "SUBMITTED";

export interface HistoryRecord {
  readonly sessionId: string;
  /** Position in the session's history, from 0. */
  readonly seq: number;
  readonly handler: HandlerName | "Lifecycle" | "Cancel" | "Submit";
  readonly result: HistoryResult;
  readonly fromStatus: SessionStatus;
  /** Absent when the status was maintained. */
  readonly toStatus?: SessionStatus;
  readonly message?: string;
  /** How many identical outcomes this record stands for (merged). */
  readonly count: number;
  readonly firstAtMs: number;
  readonly lastAtMs: number;
}

/** A history record before it is placed (seq) or merged (count). */
export type HistoryDraft = Omit<HistoryRecord, "seq" | "count" | "firstAtMs" | "lastAtMs"> & {
  readonly atMs: number;
};

/**
 * What moves a lifecycle execution from one stage to the next: the coordinator completes a
 * stage's callback with this as output, and the next state's entry applies it.
 */
export interface StageTransition {
  readonly from: SessionStatus;
  readonly to: SessionStatus;
  readonly result: HistoryResult;
  readonly handler: HistoryRecord["handler"];
  readonly message?: string;
}
