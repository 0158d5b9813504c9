/**
 * Turns a `SessionWrite` into the items of one conditional write (no I/O here): the session
 * item's update (guarded by expected status and version), which carries the kernels' patches and
 * the first history records, then later history records and the finished run's record as items.
 * Index key attributes are rewritten with the fields they mirror, so an index never disagrees
 * with its item.
 */
import type { TransactWriteItem } from "@aws-sdk/client-dynamodb";
import { RUN_FIELDS, type KernelPatch, type SessionWrite } from "../../core/effects.ts";
import type { HistoryRecord, Kernel, RunRecord } from "../../core/model.ts";
import {
  InvalidStoreRequestError,
  NotFoundError,
  TransactionTooLargeError,
} from "../../core/ports/errors.ts";
import { kernelsAfter } from "../../core/session-after-write.ts";
import type { RetryState } from "../../core/retry/evaluate.ts";
import {
  AttemptOutcome,
  KERNEL_STATUSES,
  SESSION_STATUSES,
  TERMINAL_SESSION_STATUSES,
} from "../../core/status.ts";
import { exists, itemExists, kernelUnplaced, kernelVersionIs, sessionAt } from "./conditions.ts";
import { all, type Clause, type UpdateBuilder } from "./expressions.ts";
import { historyItem, INLINE_HISTORY, INLINE_HISTORY_MAX, INLINE_KERNELS, runItem } from "./item-codec.ts";
import { claimedPk, queueSk, SESSION_SK, sessionPk, sessionStatusPk, shardOf, targetPk } from "./keys.ts";
import {
  guarded,
  MAX_TRANSACTION_ITEMS,
  updateRequest,
  type ItemRole,
  type KernelCheck,
  type PlannedTransaction,
  type SessionPlan,
  type StoreLayout,
  type UpdateRequest,
} from "./transaction-plan.ts";
import { absentOrExpired, EXPIRY_ATTRIBUTE, retainedUntil } from "./retention.ts";
import { requireCount, requireId, requireTime } from "./validation.ts";

/**
 * A session's write: one conditional update of the session item, which holds the session's
 * kernels and its first history records, so a stage entry is one UpdateItem; later history
 * records and the run's record are items beside it, in the same transaction.
 *
 * The kernels' changes are written field by field, which needs no read. DynamoDB limits an
 * expression to 4 KB, and a wide gang's write (a requeue resets every kernel) can need more:
 * given `current` (the kernels as read), each patched kernel is written whole instead, guarded by
 * the version it was read at, so the expression grows by a few bytes per kernel, not per field.
 */
export function planSessionWrite(
  write: SessionWrite,
  layout: StoreLayout,
  current?: readonly Kernel[],
): SessionPlan {
  validateSessionWrite(write);
  const kernels = write.kernels ?? [];
  const guards = write.kernelGuards ?? [];
  const history = write.history ?? [];
  const inlineHistory = history.filter((r) => r.seq < INLINE_HISTORY_MAX);
  const whole =
    current === undefined ? undefined : wholeKernels(write.sessionId, current, kernels, write.nowMs);
  const checks: KernelCheck[] = [
    ...kernels.map((p) => ({
      index: p.index,
      ...(whole !== undefined
        ? { version: p.expectedVersion ?? whole.readVersion(p.index) }
        : p.expectedVersion !== undefined
          ? { version: p.expectedVersion }
          : {}),
    })),
    ...guards.map((g) => ({ index: g.index, version: g.version })),
  ];
  const size = 1 + (history.length - inlineHistory.length) + (write.run !== undefined ? 1 : 0);
  if (size > MAX_TRANSACTION_ITEMS) {
    throw new TransactionTooLargeError(write.sessionId, "applyWrite", size, MAX_TRANSACTION_ITEMS);
  }
  const items: TransactWriteItem[] = [
    {
      Update: sessionUpdate(write, layout, {
        actions: (u) => {
          for (const patch of kernels) {
            if (whole !== undefined) u.set(kernelPath(patch.index), whole.after(patch.index));
            else setKernelFields(u, kernelAt(patch.index), patch, write.nowMs);
          }
          for (const record of inlineHistory) u.set(`${INLINE_HISTORY}.${record.seq}`, record);
        },
        conditions: kernelsChecked(checks),
      }),
    },
  ];
  const roles: ItemRole[] = [{ kind: "session" }];
  addRecords(
    items,
    roles,
    history.filter((r) => r.seq >= INLINE_HISTORY_MAX),
    write.run,
    write.nowMs,
    layout,
  );
  return { items, roles, kernelChecks: checks, checksSession: true };
}

/** The patched kernels as they will be written whole, from the kernels as read. */
function wholeKernels(
  sessionId: string,
  current: readonly Kernel[],
  patches: readonly KernelPatch[],
  nowMs: number,
): { readonly after: (index: number) => Kernel; readonly readVersion: (index: number) => number } {
  const read = new Map(current.map((k) => [k.index, k]));
  for (const patch of patches) {
    if (!read.has(patch.index)) throw new NotFoundError("kernel", `${sessionId}/${patch.index}`);
  }
  const after = new Map(kernelsAfter(current, patches, nowMs).map((k) => [k.index, k]));
  return {
    after: (index) => after.get(index)!,
    readVersion: (index) => read.get(index)?.version ?? 0,
  };
}

/** Whether a planned session write fits DynamoDB's expressions (4 KB each); else plan it whole. */
export function fitsExpressions(plan: PlannedTransaction): boolean {
  const update = plan.items[0]?.Update;
  return (
    update === undefined ||
    ((update.UpdateExpression?.length ?? 0) <= MAX_EXPRESSION_LENGTH &&
      (update.ConditionExpression?.length ?? 0) <= MAX_EXPRESSION_LENGTH)
  );
}

/** DynamoDB's limit on one expression string (an update's, a condition's), in bytes. */
export const MAX_EXPRESSION_LENGTH = 4096;

/** The write enters TERMINATED or CANCELLED: the session's end, from which it is retained. */
function endsSession(write: SessionWrite): boolean {
  return write.status !== undefined && TERMINAL_SESSION_STATUSES.has(write.status);
}

/** History records as items of their own, and the finished run's record. */
function addRecords(
  items: TransactWriteItem[],
  roles: ItemRole[],
  history: readonly HistoryRecord[],
  run: RunRecord | undefined,
  nowMs: number,
  layout: StoreLayout,
): void {
  for (const record of history) {
    items.push({
      Put: { TableName: layout.tableName, Item: historyItem(record, historyExpiry(record, layout)) },
    });
    roles.push({ kind: "history", seq: record.seq });
  }
  if (run !== undefined) {
    // Written once: a run already recorded means this write is a replay of an applied one. A
    // record past its expiry belongs to an earlier session of the same id, whose item is gone.
    items.push({
      Put: {
        TableName: layout.tableName,
        Item: runItem(run, retainedUntil(run.endedAtMs, layout)),
        ...guarded(absentOrExpired(nowMs)),
      },
    });
    roles.push({ kind: "run", runIndex: run.runIndex });
  }
}

/** The kernel's path in the session item: `kernels.<index>`. */
const kernelPath = (index: number): string => `${INLINE_KERNELS}.${index}`;

/** Where a kernel's fields are in the session item: `kernels.<index>.` */
export const kernelAt = (index: number): string => `${kernelPath(index)}.`;

/**
 * Each kernel checked is there, at the version it was read at (its version check says both), and
 * unplaced, for a reservation.
 */
export function kernelsChecked(checks: readonly KernelCheck[]): Clause[] {
  return checks.flatMap((c) => {
    const at = kernelAt(c.index);
    return [
      c.version !== undefined ? kernelVersionIs(c.version, at) : exists(kernelPath(c.index)),
      ...(c.unplaced === true ? [kernelUnplaced(at)] : []),
    ];
  });
}

/** TTL of a history record: retention counted from the last time its outcome was seen. */
export function historyExpiry(
  record: HistoryRecord,
  layout: Pick<StoreLayout, "historyRetentionDays">,
): number {
  return Math.ceil((record.lastAtMs + layout.historyRetentionDays * 86_400_000) / 1000);
}

/**
 * The session item's update of a write (also a reservation's claim, capacity.ts); `more` adds
 * actions and a condition (the kernels and history a session item holds).
 */
export function sessionUpdate(
  write: SessionWrite,
  layout: StoreLayout,
  more?: { readonly actions: (u: UpdateBuilder) => void; readonly conditions: readonly Clause[] },
): UpdateRequest {
  const shard = shardOf(write.sessionId, layout.shards);
  // The targets index is keyed by the status the session will be in after this write.
  const statusAfter = write.status ?? write.expected.status;
  const history = write.history ?? [];
  const latest = history.reduce<HistoryRecord | undefined>(
    (a, b) => (a === undefined || b.seq > a.seq ? b : a),
    undefined,
  );
  return updateRequest(
    layout.tableName,
    { pk: { S: sessionPk(write.sessionId) }, sk: { S: SESSION_SK } },
    (u) => {
      u.set("version", write.expected.version + 1).set("updatedAtMs", write.nowMs);
      if (write.status !== undefined) {
        u.set("status", write.status).set("gsi1pk", sessionStatusPk(write.status, shard));
      }
      if (write.stage !== undefined) {
        u.set("stage", write.stage);
        if (write.stage.taskToken !== undefined) u.set("gsi2pk", targetPk(statusAfter, shard));
        else if (write.stage.claimedToken !== undefined) u.set("gsi2pk", claimedPk(statusAfter, shard));
        else u.remove("gsi2pk");
      }
      if (write.claimStage === true) {
        // The token stays in the table under the claim, indexed so the sweep finds a claim whose
        // claimer died (SessionWrite.claimStage).
        u.remove("stage.taskToken");
        if (write.claimedToken !== undefined) {
          u.set("stage.claimedToken", write.claimedToken)
            .set("stage.claimedAtMs", write.nowMs)
            .set("gsi2pk", claimedPk(statusAfter, shard));
        } else u.remove("gsi2pk");
      }
      if (write.tries === "increment") u.increment("tries", 1);
      if (write.tries === "reset") u.set("tries", 0);
      if (write.pendingReason === null) u.remove("pendingReason");
      else if (write.pendingReason !== undefined) u.set("pendingReason", write.pendingReason);
      // The first accepted cancel request wins; a repeated one keeps the original time.
      if (write.cancelRequestedAtMs !== undefined) {
        u.setTo(
          "cancelRequestedAtMs",
          (e) => `if_not_exists(${e.path("cancelRequestedAtMs")}, ${e.value(write.cancelRequestedAtMs)})`,
        );
      }
      if (write.cancelReason !== undefined) {
        u.setTo(
          "cancelReason",
          (e) => `if_not_exists(${e.path("cancelReason")}, ${e.value(write.cancelReason)})`,
        );
      }
      if (write.cancelForcedAtMs !== undefined) {
        u.setTo(
          "cancelForcedAtMs",
          (e) => `if_not_exists(${e.path("cancelForcedAtMs")}, ${e.value(write.cancelForcedAtMs)})`,
        );
      }
      if (write.runIndex === "increment") u.increment("runIndex", 1);
      if (write.requeue !== undefined) {
        // Its place among requeued sessions (keys.ts queueSk); the first requeue's time is kept.
        const { atMs, priority, createdAtMs } = write.requeue;
        u.set("gsi1sk", queueSk(priority, true, createdAtMs, write.sessionId));
        u.setTo("requeuedAtMs", (e) => `if_not_exists(${e.path("requeuedAtMs")}, ${e.value(atMs)})`);
      }
      if (write.retry !== undefined) u.set("retry", write.retry);
      if (write.avoidAgentIds === null) u.remove("avoidAgentIds");
      else if (write.avoidAgentIds !== undefined) u.set("avoidAgentIds", [...write.avoidAgentIds]);
      if (write.preemption === null) u.remove("preemption");
      else if (write.preemption !== undefined) u.set("preemption", write.preemption);
      if (latest !== undefined) u.set("lastHistory", latest);
      if (endsSession(write)) u.set(EXPIRY_ATTRIBUTE, retainedUntil(write.nowMs, layout));
      more?.actions(u);
    },
    all(itemExists, sessionAt(write.expected), ...(more?.conditions ?? [])),
  );
}

/**
 * Kernel reports' write: the patched kernels in the session item, each guarded by the version it
 * was read at; the session's own fields (its version, its stage) neither written nor checked, so
 * a report and a stage entry collide only where both change one kernel. `current`: written whole,
 * as planSessionWrite does for a wide gang.
 */
export function planKernelPatches(
  sessionId: string,
  patches: readonly KernelPatch[],
  nowMs: number,
  layout: StoreLayout,
  current?: readonly Kernel[],
): SessionPlan {
  validateKernelPatches(sessionId, patches, nowMs);
  const whole = current === undefined ? undefined : wholeKernels(sessionId, current, patches, nowMs);
  const checks = patches.map((p) => ({ index: p.index, version: p.expectedVersion ?? 0 }));
  return {
    items: [
      {
        Update: updateRequest(
          layout.tableName,
          { pk: { S: sessionPk(sessionId) }, sk: { S: SESSION_SK } },
          (u) => {
            for (const patch of patches) {
              if (whole !== undefined) u.set(kernelPath(patch.index), whole.after(patch.index));
              else setKernelFields(u, kernelAt(patch.index), patch, nowMs);
            }
          },
          all(itemExists, ...kernelsChecked(checks)),
        ),
      },
    ],
    roles: [{ kind: "session" }],
    kernelChecks: checks,
    checksSession: false,
  };
}

function validateKernelPatches(sessionId: string, patches: readonly KernelPatch[], nowMs: number): void {
  requireId("sessionId", sessionId);
  requireTime("nowMs", nowMs);
  if (patches.length === 0) throw new InvalidStoreRequestError("patches", "at least one kernel patch");
  if (patches.length > MAX_TRANSACTION_ITEMS) {
    throw new TransactionTooLargeError(sessionId, "patchKernels", patches.length, MAX_TRANSACTION_ITEMS);
  }
  patches.forEach((patch, i) => {
    if (patch.expectedVersion === undefined) {
      throw new InvalidStoreRequestError(
        `patches[${i}].expectedVersion`,
        "required: the version the patch was read at",
      );
    }
  });
}

/** The version of the kernel at `prefix` ("kernels.0.") + 1; a kernel never written counts from 0. */
export function bumpKernelVersion(u: UpdateBuilder, prefix: string): void {
  u.setTo(
    `${prefix}version`,
    (e) => `if_not_exists(${e.path(`${prefix}version`)}, ${e.value(0)}) + ${e.value(1)}`,
  );
}

/** A kernel patch's actions on the kernel at `prefix` ("kernels.0."), field by field. */
function setKernelFields(u: UpdateBuilder, prefix: string, patch: KernelPatch, nowMs: number): void {
  bumpKernelVersion(u, prefix);
  if (patch.status !== undefined) {
    u.set(`${prefix}status`, patch.status).set(`${prefix}statusChangedAtMs`, nowMs);
  }
  if (patch.agentId === null) u.remove(`${prefix}agentId`).remove(`${prefix}agentIncarnation`);
  else if (patch.agentId !== undefined) u.set(`${prefix}agentId`, patch.agentId);
  const runFields: Record<(typeof RUN_FIELDS)[number], unknown> = {
    exitCode: patch.exitCode,
    taskArn: patch.taskArn,
    condition: patch.condition,
    message: patch.message,
    failureCategory: patch.failureCategory,
    logEventCount: patch.logEventCount,
    outcome: patch.outcome,
    error: patch.error,
    startedAtMs: patch.startedAtMs,
    finishedAtMs: patch.finishedAtMs,
  };
  // resetRun clears what the patch does not set; one update may not name a path twice.
  for (const field of RUN_FIELDS) {
    const value = runFields[field];
    if (value === null || (value === undefined && patch.resetRun === true)) u.remove(`${prefix}${field}`);
    else if (value !== undefined) u.set(`${prefix}${field}`, value);
  }
}

export function validateSessionWrite(write: SessionWrite): void {
  requireId("sessionId", write.sessionId);
  requireCount("expected.version", write.expected.version);
  if (!SESSION_STATUSES.includes(write.expected.status)) {
    throw new InvalidStoreRequestError(
      "expected.status",
      `unknown session status ${String(write.expected.status)}`,
    );
  }
  requireTime("nowMs", write.nowMs);
  if (write.cancelRequestedAtMs !== undefined) requireTime("cancelRequestedAtMs", write.cancelRequestedAtMs);
  if (write.cancelForcedAtMs !== undefined) requireTime("cancelForcedAtMs", write.cancelForcedAtMs);
  if (write.cancelReason !== undefined && write.cancelRequestedAtMs === undefined) {
    throw new InvalidStoreRequestError("cancelReason", "only written with cancelRequestedAtMs");
  }
  if (write.status !== undefined && !SESSION_STATUSES.includes(write.status)) {
    throw new InvalidStoreRequestError("status", `unknown session status ${String(write.status)}`);
  }
  if (write.status !== undefined && write.stage === undefined) {
    // A status change is a stage entry; without the stage record the targets index could not
    // tell whether the new stage has a token.
    throw new InvalidStoreRequestError(
      "stage",
      "required when status is set (a status change enters a stage)",
    );
  }
  if (write.stage !== undefined && write.claimStage === true) {
    throw new InvalidStoreRequestError(
      "claimStage",
      "cannot be combined with stage (entering a stage sets its token)",
    );
  }
  if (write.stage !== undefined) {
    requireTime("stage.enteredAtMs", write.stage.enteredAtMs);
    requireTime("stage.expiresAtMs", write.stage.expiresAtMs);
    if (write.stage.taskToken !== undefined && write.stage.taskToken.length === 0) {
      throw new InvalidStoreRequestError("stage.taskToken", "must not be empty");
    }
  }
  const indexes = new Set<number>();
  (write.kernels ?? []).forEach((patch, i) => {
    const field = `kernels[${i}]`;
    requireCount(`${field}.index`, patch.index);
    if (indexes.has(patch.index)) {
      throw new InvalidStoreRequestError(`${field}.index`, `kernel ${patch.index} is patched twice`);
    }
    indexes.add(patch.index);
    if (patch.status !== undefined && !KERNEL_STATUSES.includes(patch.status)) {
      throw new InvalidStoreRequestError(`${field}.status`, `unknown kernel status ${String(patch.status)}`);
    }
    if (patch.agentId !== undefined && patch.agentId !== null) requireId(`${field}.agentId`, patch.agentId);
    const { index: _index, resetRun, ...changes } = patch;
    if (resetRun !== true && Object.values(changes).every((v) => v === undefined)) {
      throw new InvalidStoreRequestError(field, "changes nothing");
    }
  });
  if (write.runIndex !== undefined && write.runIndex !== "increment") {
    throw new InvalidStoreRequestError("runIndex", `must be "increment", got ${String(write.runIndex)}`);
  }
  if (write.retry !== undefined) validateRetryState(write.retry);
  if (write.preemption) {
    requireTime("preemption.atMs", write.preemption.atMs);
    requireId("preemption.by", write.preemption.by);
    if (!Number.isInteger(write.preemption.byPriority)) {
      throw new InvalidStoreRequestError(
        "preemption.byPriority",
        `must be an integer, got ${String(write.preemption.byPriority)}`,
      );
    }
  }
  (write.avoidAgentIds ?? []).forEach((id, i) => requireId(`avoidAgentIds[${i}]`, id));
  if (write.run !== undefined) validateRun(write.sessionId, write.run);
  const seqs = new Set<number>();
  (write.history ?? []).forEach((record, i) => {
    const field = `history[${i}]`;
    if (record.sessionId !== write.sessionId) {
      throw new InvalidStoreRequestError(
        `${field}.sessionId`,
        `is ${record.sessionId}, the write is for ${write.sessionId}`,
      );
    }
    requireCount(`${field}.seq`, record.seq);
    if (seqs.has(record.seq))
      throw new InvalidStoreRequestError(`${field}.seq`, `seq ${record.seq} is written twice`);
    seqs.add(record.seq);
    if (!Number.isInteger(record.count) || record.count < 1) {
      throw new InvalidStoreRequestError(`${field}.count`, `must be a positive integer, got ${record.count}`);
    }
    requireTime(`${field}.firstAtMs`, record.firstAtMs);
    requireTime(`${field}.lastAtMs`, record.lastAtMs);
    if (record.lastAtMs < record.firstAtMs) {
      throw new InvalidStoreRequestError(`${field}.lastAtMs`, "is before firstAtMs");
    }
  });
}

function validateRetryState(retry: RetryState): void {
  requireCount("retry.failureCount", retry.failureCount);
  requireCount("retry.preemptionCount", retry.preemptionCount);
  requireCount("retry.totalRetries", retry.totalRetries);
  for (const [key, count] of Object.entries(retry.ruleRetries)) {
    if (key.length === 0) throw new InvalidStoreRequestError("retry.ruleRetries", "has an empty key");
    requireCount(`retry.ruleRetries.${key}`, count);
  }
}

const OUTCOMES: readonly string[] = Object.values(AttemptOutcome);

function validateRun(sessionId: string, run: RunRecord): void {
  if (run.sessionId !== sessionId) {
    throw new InvalidStoreRequestError("run.sessionId", `is ${run.sessionId}, the write is for ${sessionId}`);
  }
  requireCount("run.runIndex", run.runIndex);
  requireId("run.name", run.name);
  if (!OUTCOMES.includes(run.outcome)) {
    throw new InvalidStoreRequestError("run.outcome", `unknown outcome ${String(run.outcome)}`);
  }
  if (run.decision !== "retry" && run.decision !== "finished") {
    throw new InvalidStoreRequestError(
      "run.decision",
      `must be "retry" or "finished", got ${String(run.decision)}`,
    );
  }
  if (run.startedAtMs !== undefined) requireTime("run.startedAtMs", run.startedAtMs);
  requireTime("run.endedAtMs", run.endedAtMs);
  if (run.delayMs !== undefined) requireCount("run.delayMs", run.delayMs);
  if (run.avoidAgentId !== undefined) requireId("run.avoidAgentId", run.avoidAgentId);
  const indexes = new Set<number>();
  run.kernels.forEach((kernel, i) => {
    requireCount(`run.kernels[${i}].index`, kernel.index);
    if (indexes.has(kernel.index)) {
      throw new InvalidStoreRequestError(`run.kernels[${i}].index`, `kernel ${kernel.index} is listed twice`);
    }
    indexes.add(kernel.index);
    if (!KERNEL_STATUSES.includes(kernel.status)) {
      throw new InvalidStoreRequestError(
        `run.kernels[${i}].status`,
        `unknown kernel status ${String(kernel.status)}`,
      );
    }
  });
}
