/**
 * Domain objects ↔ DynamoDB items. Writers add the key and index attributes; readers pick the
 * domain fields explicitly (keys never leak into domain objects) and fail loudly, naming the
 * item and field, if a stored item is malformed.
 */
import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import { marshall, unmarshall } from "@aws-sdk/util-dynamodb";
import type {
  Agent,
  HistoryRecord,
  Kernel,
  PreemptionMark,
  ResourceRequest,
  RunKernelRecord,
  RunRecord,
  Session,
  SessionSpec,
  TaskIdentity,
  StageRecord,
} from "../../core/model.ts";
import type { ServiceBinding } from "../../core/service-binding.ts";
import type { Allocation } from "../../core/ports/agents.ts";
import type { RetryState } from "../../core/retry/evaluate.ts";
import type { KernelStatus } from "../../core/status.ts";
import { isRequeued } from "../../core/queue-order.ts";
import {
  AGENT_SK,
  AGENTS_PK,
  agentAllocationsPk,
  agentPk,
  allocationSk,
  createdPk,
  createdSk,
  historySk,
  queueSk,
  runSk,
  SESSION_SK,
  sessionPk,
  sessionStatusPk,
  shardOf,
  targetPk,
  claimedPk,
} from "./keys.ts";

export type Item = Record<string, AttributeValue>;

export const ItemType = {
  SESSION: "SESSION",
  HISTORY: "HISTORY",
  AGENT: "AGENT",
  ALLOCATION: "ALLOCATION",
  DEDUP: "DEDUP",
  RUN: "RUN",
  RETRY_POLICY: "RETRY_POLICY",
  QUEUE: "QUEUE",
  CONFIG: "CONFIG",
  JOB: "JOB",
  /** A job not yet submitted: `JOB#<id>` / `DRAFT`, beside its job's item. */
  DRAFT: "DRAFT",
  REJECTION: "REJECTION",
} as const;

const MARSHALL_OPTIONS = { removeUndefinedValues: true } as const;

export function toItem(record: Record<string, unknown>): Item {
  return marshall(record, MARSHALL_OPTIONS);
}

export function fromItem(item: Item): Record<string, unknown> {
  return unmarshall(item);
}

// ---- sessions

/**
 * The session item. It holds the session's kernels and its first history records (`kernels` and
 * `history`, maps keyed by index and seq): a stage entry is one conditional UpdateItem
 * (docs/data-model.md, "One item per session").
 */
export function sessionItem(session: Session, shards: number, kernels: readonly Kernel[]): Item {
  const shard = shardOf(session.id, shards);
  const sk = queueSk(session.spec.priority, isRequeued(session), session.createdAtMs, session.id);
  return toItem({
    pk: sessionPk(session.id),
    sk: SESSION_SK,
    type: ItemType.SESSION,
    ...session,
    // Every kernel carries its version from the start (0: never written), so a write's guard on
    // it is one comparison, which a missing kernel fails too.
    [INLINE_KERNELS]: Object.fromEntries(
      kernels.map((k) => [String(k.index), { ...k, version: k.version ?? 0 }]),
    ),
    // A session is created with at most one record, its lastHistory (new-session.ts).
    [INLINE_HISTORY]: Object.fromEntries(
      session.lastHistory !== undefined ? [[String(session.lastHistory.seq), session.lastHistory]] : [],
    ),
    gsi1pk: sessionStatusPk(session.status, shard),
    gsi1sk: sk,
    gsi2pk:
      session.stage.taskToken !== undefined
        ? targetPk(session.status, shard)
        : session.stage.claimedToken !== undefined
          ? claimedPk(session.status, shard)
          : undefined,
    gsi3pk: createdPk(shard),
    gsi3sk: createdSk(session.createdAtMs, session.id),
  });
}

export function sessionFromItem(item: Item): Session {
  const r = new Fields(fromItem(item), "session");
  const pendingReason = r.optString("pendingReason");
  const cancelRequestedAtMs = r.optNumber("cancelRequestedAtMs");
  const lastHistory = r.optObject("lastHistory");
  const retry = r.optObject("retry");
  const avoidAgentIds = r.optStrings("avoidAgentIds");
  const cancelReason = r.optString("cancelReason");
  const cancelForcedAtMs = r.optNumber("cancelForcedAtMs");
  const requeuedAtMs = r.optNumber("requeuedAtMs");
  const task = r.optObject("task");
  const preemption = r.optObject("preemption");
  const service = r.optObject("service");
  const admission = r.optString("admission");
  return {
    id: r.string("id"),
    spec: r.object("spec") as unknown as SessionSpec,
    status: r.string("status") as Session["status"],
    version: r.number("version"),
    createdAtMs: r.number("createdAtMs"),
    updatedAtMs: r.number("updatedAtMs"),
    executionName: r.string("executionName"),
    stage: stageFrom(new Fields(r.object("stage"), "session.stage")),
    tries: r.number("tries"),
    runIndex: r.number("runIndex"),
    ...(requeuedAtMs !== undefined ? { requeuedAtMs } : {}),
    ...(pendingReason !== undefined ? { pendingReason } : {}),
    ...(cancelRequestedAtMs !== undefined ? { cancelRequestedAtMs } : {}),
    ...(retry !== undefined ? { retry: retryStateFrom(new Fields(retry, "session.retry")) } : {}),
    ...(avoidAgentIds !== undefined ? { avoidAgentIds } : {}),
    ...(cancelReason !== undefined ? { cancelReason } : {}),
    ...(cancelForcedAtMs !== undefined ? { cancelForcedAtMs } : {}),
    ...(task !== undefined ? { task: taskFrom(new Fields(task, "session.task")) } : {}),
    ...(preemption !== undefined
      ? { preemption: preemptionFrom(new Fields(preemption, "session.preemption")) }
      : {}),
    // Written by the control plane only, from a validated submission.
    ...(service !== undefined ? { service: service as unknown as ServiceBinding } : {}),
    ...(admission !== undefined ? { admission } : {}),
    ...(lastHistory !== undefined
      ? { lastHistory: historyFrom(new Fields(lastHistory, "session.lastHistory")) }
      : {}),
  };
}

function preemptionFrom(r: Fields): PreemptionMark {
  return { atMs: r.number("atMs"), by: r.string("by"), byPriority: r.number("byPriority") };
}

function taskFrom(r: Fields): TaskIdentity {
  return { jobId: r.string("jobId"), index: r.number("index"), count: r.number("count") };
}

function retryStateFrom(r: Fields): RetryState {
  const ruleRetries = r.object("ruleRetries");
  for (const key of Object.keys(ruleRetries)) {
    if (typeof ruleRetries[key] !== "number") r.fail(`ruleRetries.${key}`, "a number");
  }
  const pendingReturns = r.optNumber("pendingReturns");
  const freeReturns = r.optNumber("freeReturns");
  const startRetries = r.optNumber("startRetries");
  const budgetSpentBy = r.optString("budgetSpentBy");
  if (budgetSpentBy !== undefined && budgetSpentBy !== "PREEMPTED" && budgetSpentBy !== "WORKER_FAILED") {
    r.fail("budgetSpentBy", "PREEMPTED or WORKER_FAILED");
  }
  return {
    failureCount: r.number("failureCount"),
    preemptionCount: r.number("preemptionCount"),
    totalRetries: r.number("totalRetries"),
    ruleRetries: ruleRetries as Record<string, number>,
    ...(pendingReturns !== undefined ? { pendingReturns } : {}),
    ...(freeReturns !== undefined ? { freeReturns } : {}),
    ...(startRetries !== undefined ? { startRetries } : {}),
    ...(budgetSpentBy !== undefined ? { budgetSpentBy } : {}),
  };
}

function stageFrom(r: Fields): StageRecord {
  const taskToken = r.optString("taskToken");
  const entryAtMs = r.optNumber("entryAtMs");
  const attempt = r.optNumber("attempt");
  const claimedToken = r.optString("claimedToken");
  const claimedAtMs = r.optNumber("claimedAtMs");
  return {
    enteredAtMs: r.number("enteredAtMs"),
    expiresAtMs: r.number("expiresAtMs"),
    ...(taskToken !== undefined ? { taskToken } : {}),
    ...(entryAtMs !== undefined ? { entryAtMs } : {}),
    ...(attempt !== undefined ? { attempt } : {}),
    ...(claimedToken !== undefined ? { claimedToken } : {}),
    ...(claimedAtMs !== undefined ? { claimedAtMs } : {}),
  };
}

// ---- kernels

/** The session item's map of its kernels (index → kernel). */
export const INLINE_KERNELS = "kernels";
/** The session item's map of its first INLINE_HISTORY_MAX history records (seq → record). */
export const INLINE_HISTORY = "history";
/** History records with a seq below this are kept in the session item; later ones are items. */
export const INLINE_HISTORY_MAX = 16;

/** The kernels a session item holds, sorted by index. */
export function inlineKernelsFromItem(item: Item): Kernel[] {
  const map = item[INLINE_KERNELS]?.M ?? {};
  return Object.values(map)
    .map((value) => kernelFrom(new Fields(fromItem(value.M ?? {}), "session.kernels")))
    .sort((a, b) => a.index - b.index);
}

/** The history records a session item holds, by seq. */
export function inlineHistoryFromItem(item: Item): HistoryRecord[] {
  const map = item[INLINE_HISTORY]?.M ?? {};
  return Object.values(map)
    .map((value) => historyFrom(new Fields(fromItem(value.M ?? {}), "session.history")))
    .sort((a, b) => a.seq - b.seq);
}

function kernelFrom(r: Fields): Kernel {
  const optional = {
    agentId: r.optString("agentId"),
    agentIncarnation: r.optString("agentIncarnation"),
    exitCode: r.optNumber("exitCode"),
    taskArn: r.optString("taskArn"),
    condition: r.optString("condition") as Kernel["condition"],
    message: r.optString("message"),
    failureCategory: r.optString("failureCategory"),
    logEventCount: r.optNumber("logEventCount"),
    outcome: r.optString("outcome") as Kernel["outcome"],
    error: r.optString("error"),
    startedAtMs: r.optNumber("startedAtMs"),
    finishedAtMs: r.optNumber("finishedAtMs"),
    // 0 (never written) reads as absent, as the core counts it.
    version: r.optNumber("version") || undefined,
  };
  return {
    sessionId: r.string("sessionId"),
    index: r.number("index"),
    status: r.string("status") as KernelStatus,
    resources: resourcesFrom(new Fields(r.object("resources"), "kernel.resources")),
    statusChangedAtMs: r.number("statusChangedAtMs"),
    ...definedOnly(optional),
  };
}

// ---- history

export function historyItem(record: HistoryRecord, expiresAtEpochSec: number): Item {
  return toItem({
    pk: sessionPk(record.sessionId),
    sk: historySk(record.seq),
    type: ItemType.HISTORY,
    ...record,
    expiresAtEpochSec,
  });
}

export function historyFromItem(item: Item): HistoryRecord {
  return historyFrom(new Fields(fromItem(item), "history"));
}

function historyFrom(r: Fields): HistoryRecord {
  const toStatus = r.optString("toStatus") as HistoryRecord["toStatus"];
  const message = r.optString("message");
  return {
    sessionId: r.string("sessionId"),
    seq: r.number("seq"),
    handler: r.string("handler") as HistoryRecord["handler"],
    result: r.string("result") as HistoryRecord["result"],
    fromStatus: r.string("fromStatus") as HistoryRecord["fromStatus"],
    ...(toStatus !== undefined ? { toStatus } : {}),
    ...(message !== undefined ? { message } : {}),
    count: r.number("count"),
    firstAtMs: r.number("firstAtMs"),
    lastAtMs: r.number("lastAtMs"),
  };
}

// ---- runs

/**
 * A finished run, in its session's partition, kept for the retention from its end (retention.ts;
 * retries bound how many a session has).
 */
export function runItem(run: RunRecord, expiresAtEpochSec: number): Item {
  return toItem({
    pk: sessionPk(run.sessionId),
    sk: runSk(run.runIndex),
    type: ItemType.RUN,
    ...run,
    expiresAtEpochSec,
  });
}

export function runFromItem(item: Item): RunRecord {
  const r = new Fields(fromItem(item), "run");
  const optional = {
    startedAtMs: r.optNumber("startedAtMs"),
    delayMs: r.optNumber("delayMs"),
    avoidAgentId: r.optString("avoidAgentId"),
  };
  return {
    sessionId: r.string("sessionId"),
    runIndex: r.number("runIndex"),
    name: r.string("name"),
    outcome: r.string("outcome") as RunRecord["outcome"],
    endedAtMs: r.number("endedAtMs"),
    decision: r.string("decision") as RunRecord["decision"],
    reason: r.string("reason"),
    ...definedOnly(optional),
    kernels: r.objects("kernels").map((k, i) => runKernelFrom(new Fields(k, `run.kernels[${i}]`))),
  };
}

function runKernelFrom(r: Fields): RunKernelRecord {
  const optional = {
    agentId: r.optString("agentId"),
    taskArn: r.optString("taskArn"),
    outcome: r.optString("outcome") as RunKernelRecord["outcome"],
    exitCode: r.optNumber("exitCode"),
    condition: r.optString("condition") as RunKernelRecord["condition"],
    message: r.optString("message"),
    failureCategory: r.optString("failureCategory"),
    logEventCount: r.optNumber("logEventCount"),
    startedAtMs: r.optNumber("startedAtMs"),
    finishedAtMs: r.optNumber("finishedAtMs"),
  };
  return {
    index: r.number("index"),
    status: r.string("status") as KernelStatus,
    ...definedOnly(optional),
  };
}

// ---- agents and allocations

export function agentItem(agent: Agent): Item {
  return toItem({
    pk: agentPk(agent.id),
    sk: AGENT_SK,
    type: ItemType.AGENT,
    ...agent,
    gsi3pk: AGENTS_PK,
    gsi3sk: agent.id,
  });
}

export function agentFromItem(item: Item): Agent {
  const r = new Fields(fromItem(item), "agent");
  return {
    id: r.string("id"),
    capacity: resourcesFrom(new Fields(r.object("capacity"), "agent.capacity")),
    free: resourcesFrom(new Fields(r.object("free"), "agent.free")),
    lastHeartbeatAtMs: r.number("lastHeartbeatAtMs"),
    version: r.number("version"),
    ...definedOnly({
      labels: r.optObject("labels") as Record<string, string> | undefined,
      incarnation: r.optString("incarnation"),
      signingKey: r.optString("signingKey"),
      registeredAtMs: r.optNumber("registeredAtMs"),
      lostAtMs: r.optNumber("lostAtMs"),
      draining: r.optBoolean("draining"),
    }),
  };
}

export function allocationItem(allocation: Allocation): Item {
  return toItem({
    pk: sessionPk(allocation.sessionId),
    sk: allocationSk(allocation.agentId),
    type: ItemType.ALLOCATION,
    ...allocation,
    gsi1pk: agentAllocationsPk(allocation.agentId),
    gsi1sk: allocation.sessionId,
  });
}

export function allocationFromItem(item: Item): Allocation {
  const r = new Fields(fromItem(item), "allocation");
  return {
    sessionId: r.string("sessionId"),
    agentId: r.string("agentId"),
    resources: resourcesFrom(new Fields(r.object("resources"), "allocation.resources")),
    kernelIndexes: r.numbers("kernelIndexes"),
    allocatedAtMs: r.number("allocatedAtMs"),
  };
}

function resourcesFrom(r: Fields): ResourceRequest {
  return { cpu: r.number("cpu"), memoryMiB: r.number("memoryMiB") };
}

// ---- helpers

export function definedOnly<T extends Record<string, unknown>>(record: T): Partial<T> {
  return Object.fromEntries(Object.entries(record).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** Typed reads of a stored record; a malformed item fails naming the item kind and field. */
export class Fields {
  private readonly record: Record<string, unknown>;
  private readonly what: string;

  constructor(record: Record<string, unknown>, what: string) {
    this.record = record;
    this.what = what;
  }

  fail(field: string, expected: string): never {
    const id =
      typeof this.record["pk"] === "string" ? ` ${this.record["pk"]}/${String(this.record["sk"])}` : "";
    throw new Error(`stored ${this.what}${id}: field ${field} is not ${expected}`);
  }

  string(field: string): string {
    const v = this.record[field];
    return typeof v === "string" ? v : this.fail(field, "a string");
  }

  number(field: string): number {
    const v = this.record[field];
    return typeof v === "number" ? v : this.fail(field, "a number");
  }

  numbers(field: string): number[] {
    const v = this.record[field];
    return Array.isArray(v) && v.every((n) => typeof n === "number")
      ? v
      : this.fail(field, "a list of numbers");
  }

  strings(field: string): string[] {
    const v = this.record[field];
    return Array.isArray(v) && v.every((n) => typeof n === "string")
      ? v
      : this.fail(field, "a list of strings");
  }

  objects(field: string): Record<string, unknown>[] {
    const v = this.record[field];
    return Array.isArray(v) && v.every((o) => typeof o === "object" && o !== null && !Array.isArray(o))
      ? (v as Record<string, unknown>[])
      : this.fail(field, "a list of maps");
  }

  /** A string set (SS) or list; unmarshall returns a Set for SS. Sorted, for stable output. */
  stringSet(field: string): string[] {
    const v = this.record[field];
    if (v === undefined) return [];
    const values = v instanceof Set ? [...(v as Set<unknown>)] : v;
    return Array.isArray(values) && values.every((n) => typeof n === "string")
      ? [...values].sort()
      : this.fail(field, "a set of strings");
  }

  object(field: string): Record<string, unknown> {
    const v = this.record[field];
    return typeof v === "object" && v !== null && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : this.fail(field, "a map");
  }

  optString(field: string): string | undefined {
    return this.record[field] === undefined ? undefined : this.string(field);
  }

  optBoolean(field: string): boolean | undefined {
    const v = this.record[field];
    if (v === undefined) return undefined;
    return typeof v === "boolean" ? v : this.fail(field, "a boolean");
  }

  optNumber(field: string): number | undefined {
    return this.record[field] === undefined ? undefined : this.number(field);
  }

  optStrings(field: string): string[] | undefined {
    return this.record[field] === undefined ? undefined : this.strings(field);
  }

  optObject(field: string): Record<string, unknown> | undefined {
    return this.record[field] === undefined ? undefined : this.object(field);
  }
}
