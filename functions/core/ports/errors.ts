/**
 * The ports' errors: what an adapter reports when the outside world refused or failed a request.
 * One root (PortError) with a stable `code`, whether the same request may succeed later
 * (`retryable`) and, where it is known, how long to wait first (`retryAfterMs`), all as data.
 * Callers branch on `code` (hasCode) and `retryable`, never on `instanceof` or the message:
 * errors cross Lambda and Step Functions boundaries, and a logged or serialized error keeps its
 * own fields and nothing of its class.
 */
import type { Agent, ResourceRequest, SessionWithKernels } from "../model.ts";

export abstract class PortError extends Error {
  abstract readonly code: string;
  /** Whether the same request may succeed later (a conflict re-read, a throttle waited out). */
  readonly retryable: boolean = false;
  /** When known, how long until the same request may succeed (0: at once, after a re-read). */
  readonly retryAfterMs?: number;
}

/** The store's errors (the repositories of sessions.ts, agents.ts, jobs.ts and the rest). */
export abstract class StoreError extends PortError {}

/** What a conditional write expected of an item, or found: its status and version. */
export interface EntityState {
  readonly status: string;
  readonly version: number;
}

/**
 * The item (a session, or a deployment or route) is not at the status/version the write
 * expected. Re-read and judge again.
 */
export class ConflictError extends StoreError {
  override readonly name = "ConflictError";
  readonly code = "CONFLICT";
  override readonly retryable = true;
  /** At once: the caller reads again and plans again; nothing needs to pass first. */
  override readonly retryAfterMs = 0;
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

export class NotFoundError extends StoreError {
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
export class CapacityError extends StoreError {
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
export class StoreUnavailableError extends StoreError {
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
export class TransactionTooLargeError extends StoreError {
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

/**
 * A write whose update or condition would exceed DynamoDB's 4 KB expressions even with its
 * kernels written whole; it is never split. The session's kernels are bounded so none does.
 */
export class ExpressionTooLargeError extends StoreError {
  override readonly name = "ExpressionTooLargeError";
  readonly code = "EXPRESSION_TOO_LARGE";
  readonly sessionId: string;
  constructor(sessionId: string, operation: string) {
    super(`${operation} for session ${sessionId} does not fit DynamoDB's 4 KB expressions`);
    this.sessionId = sessionId;
  }
}

/** A request the store refuses before touching storage: names the field and the reason. */
export class InvalidStoreRequestError extends StoreError {
  override readonly name = "InvalidStoreRequestError";
  readonly code = "INVALID_STORE_REQUEST";
  readonly field: string;
  constructor(field: string, reason: string) {
    super(`${field}: ${reason}`);
    this.field = field;
  }
}

/** A heartbeat from an incarnation that was replaced or declared lost: it must register again. */
export class AgentFencedError extends StoreError {
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
export class AlreadyExistsError extends StoreError {
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
export class InUseError extends StoreError {
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

/**
 * The errors by their codes, for hasCode. Template errors share NOT_FOUND with the store's
 * (same `entity` and `id`); adapters' own failures are PortErrors of their codes too.
 */
export interface PortErrorsByCode {
  readonly CONFLICT: ConflictError;
  readonly NOT_FOUND:
    NotFoundError | { readonly code: "NOT_FOUND"; readonly entity: string; readonly id: string };
  readonly CAPACITY: CapacityError;
  readonly STORE_UNAVAILABLE: StoreUnavailableError;
  readonly TRANSACTION_TOO_LARGE: TransactionTooLargeError;
  readonly EXPRESSION_TOO_LARGE: ExpressionTooLargeError;
  readonly INVALID_STORE_REQUEST: InvalidStoreRequestError;
  readonly AGENT_FENCED: AgentFencedError;
  readonly ALREADY_EXISTS: AlreadyExistsError;
  readonly IN_USE: InUseError;
}

/**
 * Whether `error` carries `code`, read from its data alone (so an error rebuilt from its fields,
 * or one from another copy of this module, answers the same as the original).
 */
export function hasCode<C extends keyof PortErrorsByCode>(
  error: unknown,
  code: C,
): error is PortErrorsByCode[C] {
  return typeof error === "object" && error !== null && (error as { code?: unknown }).code === code;
}

/** The error's `code`, read from its data; undefined when it has none. */
export function errorCode(error: unknown): string | undefined {
  const code = typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === "string" ? code : undefined;
}
