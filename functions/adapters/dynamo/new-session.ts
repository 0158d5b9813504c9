/**
 * Creating a session: the session item (guarded: the id must be free) holding its kernels, or for
 * a session of more than INLINE_KERNELS_MAX kernels the session item and its kernels' items in
 * one transaction, so a session never exists without its kernels.
 */
import type { SessionWithKernels } from "../../core/model.ts";
import { InvalidStoreRequestError } from "../../core/ports/errors.ts";
import { KERNEL_STATUSES, SESSION_STATUSES, TERMINAL_SESSION_STATUSES } from "../../core/status.ts";
import { itemAbsent } from "./conditions.ts";
import { historyItem, INLINE_KERNELS_MAX, kernelItem, sessionItem } from "./item-codec.ts";
import { expiryAttribute, retainedUntil } from "./retention.ts";
import { historyExpiry, MAX_KERNELS_PER_SESSION } from "./session-write.ts";
import {
  guarded,
  MAX_TRANSACTION_ITEMS,
  type PlannedTransaction,
  type StoreLayout,
} from "./transaction-plan.ts";
import { requireCount, requireId, requireKnown, requireResources, requireTime } from "./validation.ts";

export function planCreateSession(input: SessionWithKernels, layout: StoreLayout): PlannedTransaction {
  validateNewSession(input);
  const { session, kernels } = input;
  // A session created ended (a task of a job that failed validation) is retained from then.
  const expiry = TERMINAL_SESSION_STATUSES.has(session.status)
    ? expiryAttribute(retainedUntil(session.updatedAtMs, layout))
    : {};
  // A session created with a history record (a task of a job that failed validation: why it
  // failed, core/history.ts) holds it as its lastHistory, and the record is written with it.
  const first = session.lastHistory;
  if (kernels.length <= INLINE_KERNELS_MAX) {
    // The session item holds its kernels and first history records (item-codec.ts, sessionItem).
    return {
      items: [
        {
          Put: {
            TableName: layout.tableName,
            Item: { ...sessionItem(session, layout.shards, kernels), ...expiry },
            ...guarded(itemAbsent),
          },
        },
      ],
      roles: [{ kind: "session" }],
    };
  }
  return {
    items: [
      {
        Put: {
          TableName: layout.tableName,
          Item: { ...sessionItem(session, layout.shards), ...expiry },
          ...guarded(itemAbsent),
        },
      },
      // Kernels need no guard: the session's guard decides, and a kernel item without its
      // session (never written by this store) would be an orphan worth overwriting.
      ...kernels.map((k) => ({
        Put: { TableName: layout.tableName, Item: { ...kernelItem(k), ...expiry } },
      })),
      ...(first !== undefined
        ? [{ Put: { TableName: layout.tableName, Item: historyItem(first, historyExpiry(first, layout)) } }]
        : []),
    ],
    roles: [
      { kind: "session" },
      ...kernels.map((k) => ({ kind: "kernel" as const, index: k.index })),
      ...(first !== undefined ? [{ kind: "history" as const, seq: first.seq }] : []),
    ],
  };
}

function validateNewSession({ session, kernels }: SessionWithKernels): void {
  requireId("session.id", session.id);
  requireKnown("session.status", session.status, SESSION_STATUSES);
  requireCount("session.version", session.version);
  requireTime("session.createdAtMs", session.createdAtMs);
  const first = session.lastHistory;
  if (first !== undefined && (first.seq !== 0 || first.sessionId !== session.id)) {
    throw new InvalidStoreRequestError(
      "session.lastHistory",
      `a new session's only record must be its seq 0 (session ${session.id}), got seq ${first.seq} of ${first.sessionId}`,
    );
  }
  if (kernels.length !== session.spec.replicas) {
    throw new InvalidStoreRequestError(
      "kernels",
      `has ${kernels.length} kernels but spec.replicas is ${session.spec.replicas}`,
    );
  }
  if (kernels.length > MAX_KERNELS_PER_SESSION) {
    throw new InvalidStoreRequestError(
      "kernels",
      `at most ${MAX_KERNELS_PER_SESSION} per session (a requeue writes the session, every kernel, a ` +
        `history record and the run's record in one ${MAX_TRANSACTION_ITEMS}-item transaction), got ${kernels.length}`,
    );
  }
  const indexes = new Set<number>();
  kernels.forEach((k, i) => {
    if (k.sessionId !== session.id) {
      throw new InvalidStoreRequestError(
        `kernels[${i}].sessionId`,
        `is ${k.sessionId}, the session is ${session.id}`,
      );
    }
    requireCount(`kernels[${i}].index`, k.index);
    if (k.index >= kernels.length || indexes.has(k.index)) {
      throw new InvalidStoreRequestError(
        `kernels[${i}].index`,
        `indexes must be 0..${kernels.length - 1}, each once`,
      );
    }
    indexes.add(k.index);
    requireKnown(`kernels[${i}].status`, k.status, KERNEL_STATUSES);
    requireResources(`kernels[${i}].resources`, k.resources);
  });
}
