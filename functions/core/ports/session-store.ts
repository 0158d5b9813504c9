/**
 * The storage ports, one per aggregate: SessionRepository (sessions, kernels, history, runs),
 * AgentRepository (agents and capacity), JobRepository (jobs, rejected submissions) and
 * RetryCatalogRepository (retry policies, queues, the retry configuration). Each component takes
 * the ones it uses; SessionStore is all four, as the wiring builds it. No AWS types; the DynamoDB
 * adapter (functions/adapters/dynamo) implements them. Errors are part of the contract: callers
 * branch on `code`, never `instanceof`, because they cross Lambda and Step Functions boundaries.
 */
import type { DraftRepository } from "./draft-store.ts";
import type { KernelPatch, SessionWrite } from "../effects.ts";
import type {
  Agent,
  HistoryRecord,
  Job,
  Queue,
  ResourceRequest,
  RunRecord,
  Session,
  SessionWithKernels,
} from "../model.ts";
import type { RetryConfig } from "../retry/config.ts";
import type { RetryPolicy } from "../retry/policy.ts";
import type { SessionStatus } from "../status.ts";

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
   * Only sessions of a priority lower than this, and in the reverse order: lowest priority
   * first, then newest (preemption's candidates, cheapest to preempt first).
   */
  readonly belowPriority?: number;
  /**
   * Only sessions of a priority higher than this, in queue order (the sessions a targeted
   * scheduling pass must let go first). Not combined with `belowPriority`.
   */
  readonly abovePriority?: number;
}

export interface AppliedWrite {
  readonly sessionId: string;
  /** The session's version after the write (expected.version + 1). */
  readonly version: number;
  /** The session as written, read with the write (applyWrite's `returnSession`), when the store could. */
  readonly session?: SessionWithKernels;
}

export interface PageRequest {
  /** Page size; default 50. */
  readonly limit?: number;
  /** `cursor` of the previous page. */
  readonly cursor?: string;
}

export interface Page<T> {
  readonly items: readonly T[];
  /** Present when there may be more: pass it back to get the next page. */
  readonly cursor?: string;
}

export interface AgentHeartbeat {
  readonly agentId: string;
  readonly capacity: ResourceRequest;
  readonly nowMs: number;
  /** Only while this incarnation is registered and not declared lost. */
  readonly incarnation?: string;
  /**
   * The incarnation is shutting down. One-way: a heartbeat without it (sent before the drain,
   * handled after) leaves the agent draining; only a new registration clears it.
   */
  readonly draining?: boolean;
}

/** A new agent process: its declared capacity and labels, and the key it signs with. */
export interface AgentRegistration {
  readonly agentId: string;
  readonly incarnation: string;
  readonly capacity: ResourceRequest;
  readonly labels: Readonly<Record<string, string>>;
  readonly signingKey: string;
  readonly nowMs: number;
}

/** Which incarnation of an agent to declare lost, and since when it must have been silent. */
export interface AgentLossRequest {
  readonly agentId: string;
  readonly incarnation: string | undefined;
  readonly silentSinceMs?: number;
  readonly nowMs: number;
}

/** One kernel's placement in a reservation. */
export interface Placement {
  readonly kernelIndex: number;
  readonly agentId: string;
  readonly resources: ResourceRequest;
  /**
   * The agent's incarnation as the placement read it: the reservation holds only while the agent
   * is still that incarnation, and the kernel records it (Kernel.agentIncarnation).
   */
  readonly incarnation?: string;
}

export interface ReservationRequest {
  readonly sessionId: string;
  /** Reserve only if the session is still here (status and version). */
  readonly expected: SessionState;
  readonly nowMs: number;
  /** Every kernel being placed: all of them are reserved, or none. */
  readonly placements: readonly Placement[];
  /**
   * The placement decides the stage: claim it in the same transaction (the session's token
   * removed, its version bumped, as SessionWrite.claimStage), so the placer holds the token.
   */
  readonly claimStage?: boolean;
}

/** Capacity a session holds on one agent (several kernels on one agent share one allocation). */
export interface Allocation {
  readonly sessionId: string;
  readonly agentId: string;
  readonly resources: ResourceRequest;
  readonly kernelIndexes: readonly number[];
  readonly allocatedAtMs: number;
}

export interface HistoryQuery {
  /** Records from this seq on (default 0). */
  readonly fromSeq?: number;
  readonly limit?: number;
}

/**
 * A submission the control plane refused, kept where clients can read it (issue 11): `submit`
 * waits for its own event's acceptance or rejection, `get` of a rejected id says why.
 */
export interface SubmissionRejection {
  /** The session (or job) id the submission asked for. */
  readonly id: string;
  /** The refused event's id (PutEvents returns it to the sender). */
  readonly eventId: string;
  readonly reason: string;
  readonly atMs: number;
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

  // The sweep's repair of sessions without a live execution (issue 11).
  /**
   * Sessions in one non-terminal status whose stage was entered before `enteredBeforeMs`, a page
   * at a time in queue order.
   */
  staleSessions(status: SessionStatus, enteredBeforeMs: number, page?: PageRequest): Promise<Page<Session>>;
}

/** Agents and the capacity sessions hold on them. */
export interface AgentRepository {
  /** Registers an agent or records its heartbeat; a changed capacity adjusts `free` by the difference. */
  heartbeatAgent(heartbeat: AgentHeartbeat): Promise<Agent>;
  getAgent(agentId: string): Promise<Agent | undefined>;
  /**
   * Registers an agent incarnation: declared capacity and labels, a fresh signing key, not lost,
   * not draining. The same incarnation again changes nothing (redelivery) and returns what is
   * stored. `previous` is the agent as it was when another incarnation held the id.
   */
  registerAgent(registration: AgentRegistration): Promise<{ agent: Agent; previous?: Agent }>;
  /**
   * Declares the incarnation lost (silent since before `silentSinceMs`, or replaced). False when
   * it heartbeated since, registered anew or was already declared lost.
   */
  markAgentLost(request: AgentLossRequest): Promise<boolean>;
  listAgents(): Promise<Agent[]>;
  /**
   * Reserves capacity for all placements or none. Throws CapacityError (an agent lacks room),
   * ConflictError (the session moved, or a kernel is already placed), NotFoundError.
   */
  reserveCapacity(request: ReservationRequest): Promise<Allocation[]>;
  /**
   * Reservations of sessions placed on the same agents, several to a write (each agent's capacity
   * taken once for them all), in order. Per request: its allocations, or `undefined` when it was
   * not reserved (its write was refused or failed, and nothing of it written; or it cannot share
   * one): `reserveCapacity` takes those alone, and says why one fails.
   */
  reserveCapacityTogether(requests: readonly ReservationRequest[]): Promise<(Allocation[] | undefined)[]>;
  /**
   * Gives back every allocation of the session; a second call gives nothing back. `known`, the
   * caller's copy of the session, lets the store give back what its kernels' placements say
   * without reading the allocations, when the stored ones match it exactly.
   */
  releaseCapacity(sessionId: string, known?: SessionWithKernels): Promise<Allocation[]>;
  allocationsOnAgent(agentId: string): Promise<Allocation[]>;
}

/** Jobs (issue 6) and the submissions the control plane refused (issue 11). */
export interface JobRepository {
  /** Writes the job unless one with its id exists; returns the stored job either way. */
  createJob(job: Job): Promise<{ readonly created: boolean; readonly job: Job }>;
  /**
   * A submission in one write: the job and every one of its sessions (with their kernels),
   * created together only if none of them exists yet. `created: false` when any does, or when
   * they do not fit in one transaction: nothing was written, and the caller takes the
   * step-by-step path (createJob, createSession), which tells a repeat from a clash.
   */
  createJobWithSessions(
    job: Job,
    sessions: readonly SessionWithKernels[],
  ): Promise<{ readonly created: boolean }>;
  getJob(jobId: string): Promise<Job | undefined>;
  getJobs(jobIds: readonly string[]): Promise<Job[]>;
  /** Adds a child to its parent's children; the parent after the write, undefined if it does not exist. */
  addChildJob(parentId: string, childId: string): Promise<Job | undefined>;
  /** Records the job's final state once: true if this call recorded it. */
  finishJob(jobId: string, final: NonNullable<Job["final"]>): Promise<boolean>;
  /** Every job with a run-time limit (`timeouts.job`) whose final state is not recorded, by id. */
  listJobsWithRunTimeLimit(): Promise<Job[]>;

  /** Records a refused submission for `ttlSeconds`; recording the same event again overwrites it. */
  recordRejection(rejection: SubmissionRejection, ttlSeconds: number): Promise<void>;
  /** The id's unexpired rejections, newest first (at most 100). */
  listRejections(id: string): Promise<SubmissionRejection[]>;
}

/**
 * Retry policies, queues and the retry configuration: operator-managed resources. Documents are
 * validated (core/retry) before they reach the store.
 */
export interface RetryCatalogRepository {
  /** Throws AlreadyExistsError when the name is taken. */
  createRetryPolicy(policy: RetryPolicy, nowMs: number): Promise<void>;
  /** Throws NotFoundError when absent. */
  updateRetryPolicy(policy: RetryPolicy, nowMs: number): Promise<void>;
  getRetryPolicy(name: string): Promise<RetryPolicy | undefined>;
  listRetryPolicies(): Promise<RetryPolicy[]>;
  /** Throws NotFoundError, or InUseError naming the queues that attach it. */
  deleteRetryPolicy(name: string): Promise<void>;

  /** Throws AlreadyExistsError when the name is taken. */
  createQueue(queue: Omit<Queue, "createdAtMs" | "updatedAtMs">, nowMs: number): Promise<Queue>;
  /** Throws NotFoundError when absent. */
  updateQueue(queue: Omit<Queue, "createdAtMs" | "updatedAtMs">, nowMs: number): Promise<Queue>;
  getQueue(name: string): Promise<Queue | undefined>;
  listQueues(): Promise<Queue[]>;
  /** Throws NotFoundError when absent. */
  deleteQueue(name: string): Promise<void>;

  /** The retry configuration operators set at run time; undefined means the defaults. */
  getRetryConfig(): Promise<RetryConfig | undefined>;
  putRetryConfig(config: RetryConfig, nowMs: number): Promise<void>;
}

/**
 * The whole store, as the wiring builds it and the adapter implements it. Components depend on
 * the repositories they use, not on this.
 */
/** Drafts (issue 16 item 3) live in the same table: draft-store.ts. */
export type SessionStore = SessionRepository &
  AgentRepository &
  JobRepository &
  RetryCatalogRepository &
  DraftRepository;

// ---------------------------------------------------------------------------------------------
// Errors. One hierarchy; `code` and `name` are stable strings.

export abstract class SessionStoreError extends Error {
  abstract readonly code: string;
  /**
   * Whether the same request may succeed later: a conflict (re-read and judge again) or the
   * store being unavailable. Callers read this, never the message or the code.
   */
  readonly retryable: boolean = false;
}

/** What a conditional write expected of an item, or found: its status and version. */
export interface EntityState {
  readonly status: string;
  readonly version: number;
}

/**
 * The item (a session, or a deployment or route) is not at the status/version the write
 * expected. Re-read and judge again.
 */
export class ConflictError extends SessionStoreError {
  override readonly name = "ConflictError";
  readonly code = "CONFLICT";
  override readonly retryable = true;
  /** What conflicted: "session" unless said otherwise. */
  readonly entity: "session" | "deployment" | "route";
  /** The item's id (for a session, its session id). */
  readonly sessionId: string;
  readonly expected: EntityState;
  /**
   * The item's state when the write failed; undefined when the write did not check the item
   * (a kernel report's write guards the kernels alone, and `reason` names the one that moved).
   */
  readonly found: EntityState | undefined;
  /** Set when the item itself matched but another part of the write was taken. */
  readonly reason: string | undefined;
  /**
   * The session as the refused write found it, when the store had it in hand (DynamoDB returns
   * the item a single-item write was refused on): the next attempt plans from it instead of
   * reading it again. Undefined when the store did not see the whole session. Not enumerable: a
   * logged or serialized error (loggers write an error's own fields) does not carry the session,
   * its spec and task token with it.
   */
  declare readonly current: SessionWithKernels | undefined;
  constructor(
    id: string,
    expected: EntityState,
    found: EntityState | undefined,
    reason?: string,
    entity: "session" | "deployment" | "route" = "session",
    current?: SessionWithKernels,
  ) {
    super(
      `${entity} ${id}: expected ${expected.status} v${expected.version}` +
        (found !== undefined ? `, found ${found.status} v${found.version}` : "") +
        (reason !== undefined ? ` (${reason})` : ""),
    );
    this.entity = entity;
    this.sessionId = id;
    this.expected = expected;
    this.found = found;
    this.reason = reason;
    Object.defineProperty(this, "current", { value: current, enumerable: false });
  }
}

export type StoredEntity = "session" | "kernel" | "agent" | "retry policy" | "queue";

export class NotFoundError extends SessionStoreError {
  override readonly name = "NotFoundError";
  readonly code = "NOT_FOUND";
  readonly entity: StoredEntity;
  /** Session id, agent id, or `sessionId/kernelIndex`. */
  readonly id: string;
  constructor(entity: StoredEntity, id: string) {
    super(`${entity} ${id} not found`);
    this.entity = entity;
    this.id = id;
  }
}

/** An agent lacks the free capacity a reservation asked of it; nothing was reserved. */
export class CapacityError extends SessionStoreError {
  override readonly name = "CapacityError";
  readonly code = "CAPACITY";
  readonly sessionId: string;
  readonly agentId: string;
  readonly requested: ResourceRequest;
  readonly free: ResourceRequest;
  constructor(sessionId: string, agentId: string, requested: ResourceRequest, free: ResourceRequest) {
    super(
      `agent ${agentId} cannot hold session ${sessionId}: requested cpu ${requested.cpu} / memoryMiB ` +
        `${requested.memoryMiB}, free cpu ${free.cpu} / memoryMiB ${free.memoryMiB}`,
    );
    this.sessionId = sessionId;
    this.agentId = agentId;
    this.requested = requested;
    this.free = free;
  }
}

/** Throttling or contention outlasted the retries. Retryable later; nothing was written. */
export class StoreUnavailableError extends SessionStoreError {
  override readonly name = "StoreUnavailableError";
  readonly code = "STORE_UNAVAILABLE";
  override readonly retryable = true;
  readonly operation: string;
  readonly attempts: number;
  constructor(operation: string, attempts: number, cause: unknown) {
    const why = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
    super(`${operation} failed after ${attempts} attempts: ${why}`, { cause });
    this.operation = operation;
    this.attempts = attempts;
  }
}

/** An atomic write would exceed the store's transaction limit; it is never split. */
export class TransactionTooLargeError extends SessionStoreError {
  override readonly name = "TransactionTooLargeError";
  readonly code = "TRANSACTION_TOO_LARGE";
  readonly sessionId: string;
  readonly items: number;
  readonly limit: number;
  constructor(sessionId: string, operation: string, items: number, limit: number) {
    super(
      `${operation} for session ${sessionId} needs ${items} items in one transaction; the limit is ${limit}`,
    );
    this.sessionId = sessionId;
    this.items = items;
    this.limit = limit;
  }
}

/** A request the store refuses before touching storage: names the field and the reason. */
export class InvalidStoreRequestError extends SessionStoreError {
  override readonly name = "InvalidStoreRequestError";
  readonly code = "INVALID_STORE_REQUEST";
  readonly field: string;
  constructor(field: string, reason: string) {
    super(`${field}: ${reason}`);
    this.field = field;
  }
}

/** A heartbeat from an incarnation that was replaced or declared lost: it must register again. */
export class AgentFencedError extends SessionStoreError {
  override readonly name = "AgentFencedError";
  readonly code = "AGENT_FENCED";
  readonly agentId: string;
  readonly incarnation: string;
  readonly current: Agent;
  constructor(agentId: string, incarnation: string, current: Agent) {
    super(
      current.incarnation !== incarnation
        ? `agent ${agentId} incarnation ${incarnation} was replaced by ${current.incarnation ?? "none"}`
        : `agent ${agentId} incarnation ${incarnation} was declared lost at ${new Date(current.lostAtMs ?? 0).toISOString()}`,
    );
    this.agentId = agentId;
    this.incarnation = incarnation;
    this.current = current;
  }
}

/** A named resource (retry policy, queue) already exists. */
export class AlreadyExistsError extends SessionStoreError {
  override readonly name = "AlreadyExistsError";
  readonly code = "ALREADY_EXISTS";
  readonly entity: string;
  readonly id: string;
  constructor(entity: string, id: string) {
    super(`${entity} ${id} already exists`);
    this.entity = entity;
    this.id = id;
  }
}

/** A resource others still refer to cannot be deleted. */
export class InUseError extends SessionStoreError {
  override readonly name = "InUseError";
  readonly code = "IN_USE";
  readonly entity: string;
  readonly id: string;
  readonly usedBy: readonly string[];
  constructor(entity: string, id: string, usedBy: readonly string[]) {
    super(`${entity} ${id} is in use by ${usedBy.join(", ")}`);
    this.entity = entity;
    this.id = id;
    this.usedBy = usedBy;
  }
}
