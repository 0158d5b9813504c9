/**
 * Sessions: the session item and its kernels, their conditional writes, history and runs, and the
 * listings that find them. No AWS types; functions/adapters/dynamo implements it. Errors are
 * StoreError (errors.ts): callers branch on `code` and `retryable`, never `instanceof`, because
 * they cross Lambda and Step Functions boundaries.
 */
import type { KernelPatch, SessionWrite } from "../effects.ts";
import type { HistoryRecord, RunRecord, Session, SessionWithKernels } from "../model.ts";
import type { SessionStatus } from "../status.ts";
import type { Page, PageRequest } from "./paging.ts";

/** The status and version a conditional write expects (or found) on the session item. */
export interface SessionState {
  readonly status: SessionStatus;
  readonly version: number;
}

export type CreateSessionResult =
  | { readonly created: true; readonly session: SessionWithKernels }
  /** The id was taken: nothing was written; `session` is what is stored (treat as idempotent). */
  | { readonly created: false; readonly session: SessionWithKernels };

export interface TargetQuery {
  /** Sessions in any of these statuses, merged in queue order. */
  readonly statuses: readonly SessionStatus[];
  /** At most this many sessions. */
  readonly limit: number;
  /** Only sessions waiting in a stage nobody has claimed (`stage.taskToken` present). */
  readonly targetableOnly?: boolean;
  /**
   * Only sessions whose stage an outcome claimed and nothing has moved on since (`stage.claimedToken`
   * present): the sweep's look for claims whose claimer died. Not combined with `targetableOnly`.
   */
  readonly claimedOnly?: boolean;
  /**
   * Only sessions of a priority lower than this, and in the reverse order: lowest priority
   * first, then newest (preemption's candidates, cheapest to preempt first).
   */
  readonly belowPriority?: number;
  /**
   * Only sessions of a priority higher than this, in queue order (the sessions a targeted
   * scheduling pass must let go first). Not combined with `belowPriority`.
   */
  readonly abovePriority?: number;
  /**
   * Only sessions of these scheduling queues, `limit` of each (not in all): the read goes on
   * through the status's sessions, in queue order, until each named queue has `limit`, none are
   * left, or `scanLimit` sessions were read. A queue's waiting sessions so never hide behind
   * another queue's backlog that sorts ahead of them, within that bound.
   */
  readonly queues?: readonly string[];
  /** With `queues`: how many sessions the read looks at, at most, passing over other queues'. */
  readonly scanLimit?: number;
}

export interface AppliedWrite {
  readonly sessionId: string;
  /** The session's version after the write (expected.version + 1). */
  readonly version: number;
  /** The session as written, read with the write (applyWrite's `returnSession`), when the store could. */
  readonly session?: SessionWithKernels;
}

export interface HistoryQuery {
  /** Records from this seq on (default 0). */
  readonly fromSeq?: number;
  readonly limit?: number;
}

/**
 * Sessions: the session and its kernels, their writes, history and runs, and the listings and
 * queues that find them (targets, statuses, stale stages).
 */
export interface SessionRepository {
  /** Creates the session and its kernels atomically; a taken id writes nothing. */
  createSession(input: SessionWithKernels): Promise<CreateSessionResult>;
  /** The session and its kernels (ordered by index), read consistently; undefined if absent. */
  getSession(sessionId: string): Promise<SessionWithKernels | undefined>;
  /** In the order of `sessionIds`, absent ones left out. */
  getSessions(sessionIds: readonly string[]): Promise<SessionWithKernels[]>;

  /** Sessions in the given statuses, highest priority first, then oldest first. */
  targetsByStatus(query: TargetQuery): Promise<SessionWithKernels[]>;

  /**
   * Applies one `SessionWrite` in one conditional transaction. Throws ConflictError when the
   * session is no longer at `expected`, NotFoundError for a missing session or kernel.
   * `returnSession`: the write's `kernelGuards` only make the caller's copy exact; a store that
   * can return the session as written (one item, one request) sends the write without them and
   * returns it as `session`, so a kernel report landing first does not refuse the write.
   */
  applyWrite(write: SessionWrite, options?: { readonly returnSession?: boolean }): Promise<AppliedWrite>;
  /**
   * Kernel reports' write: the patched kernels only, each guarded by its `expectedVersion`; the
   * session item (its version, its stage) is neither written nor checked, so a report and a stage
   * entry or claim collide only where both change one kernel. Throws ConflictError when a kernel
   * changed since it was read (`expected`: the session as the reports were checked against, for
   * the message), NotFoundError for a missing kernel. Returns the session as written when the
   * store has it without reading (a session whose item holds its kernels), else undefined.
   */
  patchKernels(
    sessionId: string,
    expected: SessionState,
    patches: readonly KernelPatch[],
    nowMs: number,
  ): Promise<SessionWithKernels | undefined>;
  /** The session's history in seq order (records past their retention are left out). */
  listHistory(sessionId: string, query?: HistoryQuery): Promise<HistoryRecord[]>;
  /** The session's finished runs, in run order. */
  listRuns(sessionId: string): Promise<RunRecord[]>;

  /** Sessions in one status, in queue order, paginated (for the CLI). */
  listSessionsByStatus(status: SessionStatus, page?: PageRequest): Promise<Page<Session>>;
  /** All sessions, newest first, paginated (for the CLI). */
  listRecentSessions(page?: PageRequest): Promise<Page<Session>>;

  // The sweep's repair of sessions without a live execution.
  /**
   * Sessions in one non-terminal status whose stage was entered before `enteredBeforeMs`, a page
   * at a time in queue order.
   */
  staleSessions(status: SessionStatus, enteredBeforeMs: number, page?: PageRequest): Promise<Page<Session>>;
}
