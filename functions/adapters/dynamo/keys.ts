/**
 * Every key the table holds, built in one place. docs/data-model.md explains the layout; the
 * prefixes reserved there for later item types are listed in RESERVED_PREFIXES so nothing here
 * can take them by accident.
 */
import { InvalidStoreRequestError } from "../../core/ports/errors.ts";
import type { SessionStatus } from "../../core/status.ts";

/** Sort key of the session item (which holds the session's kernels). */
export const SESSION_SK = "SESSION";
export const HISTORY_SK_PREFIX = "HISTORY#";
export const ALLOCATION_SK_PREFIX = "ALLOC#";
export const AGENT_SK = "AGENT";
export const DEDUP_SK = "DEDUP";
/** Session partition: one item per finished run, `RUN#<runIndex:6>` (bounded by retries, no TTL). */
export const RUN_SK_PREFIX = "RUN#";
export const RETRY_POLICY_SK = "RETRY_POLICY";
export const QUEUE_SK = "QUEUE";
export const CONFIG_SK = "CONFIG";
export const JOB_SK = "JOB";
/** A draft: `JOB#<id>` / `DRAFT`, in the partition its job will have. */
export const DRAFT_SK = "DRAFT";
/** A deployment: `DEPLOYMENT#<id>` / `DEPLOYMENT`, its routes beside it (`ROUTE#<index:4>`). */
export const DEPLOYMENT_SK = "DEPLOYMENT";
export const ROUTE_SK_PREFIX = "ROUTE#";
/** A deployment's and its routes' history, apart: `DEPLOYMENT_HISTORY#<id>` / `AT#<atMs:15>#<entity id>#<version:10>`. */
export const DEPLOYMENT_HISTORY_SK_PREFIX = "AT#";
/** A rejected submission: `REJECTION#<id>` / `EVENT#<eventId>`. */
export const REJECTION_EVENT_SK_PREFIX = "EVENT#";

/** Key prefixes reserved for later item types (docs/data-model.md, "Reserved prefixes"). */
export const RESERVED_PREFIXES = {
  /** Session partition: one item per kernel attempt, `ATTEMPT#<kernelIndex:4>#<runIndex:6>`. */
  attemptSortKey: "ATTEMPT#",
  /** Job partition: per-task items, `TASK#<index:6>` (task states are derived today). */
  taskSortKey: "TASK#",
  /** GSI1: queue-scoped status queues and an agent's kernel attempts. */
  queueStatusIndex: "QUEUE_STATUS#",
  agentAttemptsIndex: "AGENT_ATTEMPT#",
} as const;

/**
 * Prefixes in use today, for the collision check in the tests. Whole sort keys that are never a
 * prefix of another key (`AGENT`, `DEDUP`, `QUEUE`, `RETRY_POLICY`, `CONFIG`) are left out.
 */
export const USED_PREFIXES = [
  "SESSION#",
  "AGENT#",
  "DEDUP#",
  SESSION_SK,
  HISTORY_SK_PREFIX,
  ALLOCATION_SK_PREFIX,
  "STATUS#",
  "AGENT_ALLOC#",
  "TARGET#",
  "CLAIMED#",
  "CREATED#",
  "AGENTS",
  RUN_SK_PREFIX,
  "RETRY_POLICY#",
  "RETRY_POLICIES",
  "QUEUE#",
  "QUEUES",
  "CONFIG#",
  "JOB#",
  "REJECTION#",
  REJECTION_EVENT_SK_PREFIX,
  "DEPLOYMENT#",
  ROUTE_SK_PREFIX,
  "DEPLOYMENT_HISTORY#",
  DEPLOYMENT_HISTORY_SK_PREFIX,
  "DEPLOYMENTS",
  /** Job templates: `TEMPLATE#<name>` / `TEMPLATE`, listed under `TEMPLATES` (template-items.ts). */
  "TEMPLATE#",
  "TEMPLATES",
  /** Failure categories operators define: `FAILURE_CATEGORY#<name>` / `FAILURE_CATEGORY`, listed under `FAILURE_CATEGORIES` (failure-category-items.ts). */
  "FAILURE_CATEGORY#",
  "FAILURE_CATEGORIES",
] as const;

export const sessionPk = (sessionId: string): string => `SESSION#${sessionId}`;
export const agentPk = (agentId: string): string => `AGENT#${agentId}`;
export const dedupPk = (key: string): string => `DEDUP#${key}`;
export const retryPolicyPk = (name: string): string => `RETRY_POLICY#${name}`;
export const queuePk = (name: string): string => `QUEUE#${name}`;
/** A job: `JOB#<id>` / `JOB`. */
export const jobPk = (id: string): string => `JOB#${id}`;
export const rejectionPk = (id: string): string => `REJECTION#${id}`;
export const deploymentPk = (id: string): string => `DEPLOYMENT#${id}`;
export const deploymentHistoryPk = (id: string): string => `DEPLOYMENT_HISTORY#${id}`;
export const routeSk = (index: number): string => `${ROUTE_SK_PREFIX}${pad(index, 4)}`;
/** `seq`: the record's place among its entity's records in one write (a pass may record two). */
export const deploymentHistorySk = (atMs: number, entityId: string, version: number, seq = 0): string =>
  `${DEPLOYMENT_HISTORY_SK_PREFIX}${pad(atMs, 15)}#${entityId}#${pad(version, 10)}#${pad(seq, 3)}`;
export const rejectionSk = (eventId: string): string => `${REJECTION_EVENT_SK_PREFIX}${eventId}`;
/** Operator settings, one item each: `CONFIG#retry`. */
export const configPk = (name: "retry"): string => `CONFIG#${name}`;

export const historySk = (seq: number): string => `${HISTORY_SK_PREFIX}${pad(seq, 10)}`;
export const allocationSk = (agentId: string): string => `${ALLOCATION_SK_PREFIX}${agentId}`;
export const runSk = (runIndex: number): string => `${RUN_SK_PREFIX}${pad(runIndex, 6)}`;

/**
 * Whether an index entry's keys are a session item's. Readers of the session listings keep only
 * these: the listings key is also written by operators on their own items (client-access.ts).
 */
export function isSessionItemKey(pk: string | undefined, sk: string | undefined): boolean {
  return pk !== undefined && pk.startsWith("SESSION#") && sk === SESSION_SK;
}

export function sessionIdFromPk(pk: string): string {
  if (!pk.startsWith("SESSION#")) throw new Error(`not a session partition key: ${pk}`);
  return pk.slice("SESSION#".length);
}

export function agentIdFromPk(pk: string): string {
  if (!pk.startsWith("AGENT#")) throw new Error(`not an agent partition key: ${pk}`);
  return pk.slice("AGENT#".length);
}

// ---- GSI1 "status queues": sessions by status, allocations by agent.
export const sessionStatusPk = (status: SessionStatus, shard: number): string => `STATUS#${status}#${shard}`;
export const agentAllocationsPk = (agentId: string): string => `AGENT_ALLOC#${agentId}`;

// ---- GSI2 "targets": sessions waiting in a stage nobody has claimed (sort key shared with GSI1).
export const targetPk = (status: SessionStatus, shard: number): string => `TARGET#${status}#${shard}`;
/** The same index's other half: sessions whose stage an outcome claimed (stage.claimedToken). */
export const claimedPk = (status: SessionStatus, shard: number): string => `CLAIMED#${status}#${shard}`;

// ---- GSI3 "listings": sessions by creation time, and the rosters of agents, queues and policies.
export const createdPk = (shard: number): string => `CREATED#${shard}`;
export const AGENTS_PK = "AGENTS";
export const QUEUES_PK = "QUEUES";
export const RETRY_POLICIES_PK = "RETRY_POLICIES";
export const DEPLOYMENTS_PK = "DEPLOYMENTS";
/** The roster of jobs with a run-time limit (`timeouts.job`) and no final state yet. */
export const LIMITED_JOBS_PK = "JOBS_WITH_RUN_TIME_LIMIT";
export const createdSk = (createdAtMs: number, sessionId: string): string =>
  `${pad(createdAtMs, 15)}#${sessionId}`;

/**
 * Priorities are integers in this range: the queue key stores `PRIORITY_CEILING - priority`
 * zero-padded, so an ascending index read returns the highest priority first.
 */
export const MIN_PRIORITY = -1_000_000_000;
export const MAX_PRIORITY = 1_000_000_000;
const PRIORITY_CEILING = MAX_PRIORITY;

/**
 * Queue order (core/queue-order.ts): highest priority, then requeued before new (`0` before `1`),
 * then oldest, then id (unique, so pages never skip ties).
 */
export function queueSk(priority: number, requeued: boolean, createdAtMs: number, sessionId: string): string {
  if (!Number.isInteger(priority) || priority < MIN_PRIORITY || priority > MAX_PRIORITY) {
    throw new InvalidStoreRequestError(
      "spec.priority",
      `must be an integer from ${MIN_PRIORITY} to ${MAX_PRIORITY}, got ${priority}`,
    );
  }
  return `${pad(PRIORITY_CEILING - priority, 10)}#${requeued ? 0 : 1}#${pad(createdAtMs, 15)}#${sessionId}`;
}

/**
 * The smallest queue key of a priority below `priority`: sessions of a lower priority sort at or
 * after it. Undefined when no priority is lower; "" when every priority is.
 */
export function queueSkBelowPriority(priority: number): string | undefined {
  if (!Number.isInteger(priority)) {
    throw new InvalidStoreRequestError("belowPriority", `must be an integer, got ${priority}`);
  }
  if (priority <= MIN_PRIORITY) return undefined;
  if (priority > MAX_PRIORITY) return "";
  return pad(PRIORITY_CEILING - priority + 1, 10);
}

/**
 * The queue key every session of a priority above `priority` sorts before. Undefined when no
 * priority is higher.
 */
export function queueSkAbovePriority(priority: number): string | undefined {
  if (!Number.isInteger(priority)) {
    throw new InvalidStoreRequestError("abovePriority", `must be an integer, got ${priority}`);
  }
  if (priority >= MAX_PRIORITY) return undefined;
  return pad(PRIORITY_CEILING - Math.max(priority, MIN_PRIORITY - 1), 10);
}

/**
 * Spreads a session's index entries over `shards` partitions by a stable hash of its id
 * (FNV-1a, 32 bit). The shard is recomputed on every write, so the shard count may grow
 * (readers query every shard below the current count) but must never shrink.
 */
export function shardOf(sessionId: string, shards: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < sessionId.length; i++) {
    hash ^= sessionId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % shards;
}

function pad(n: number, width: number): string {
  if (!Number.isSafeInteger(n) || n < 0)
    throw new RangeError(`key component must be a non-negative integer, got ${n}`);
  const s = String(n);
  if (s.length > width) throw new RangeError(`key component ${n} does not fit in ${width} digits`);
  return s.padStart(width, "0");
}
