/**
 * Creating a session: one Put of the session item holding its kernels and its first history
 * record, guarded so the id must be free: a session never exists without its kernels.
 */
import type { SessionWithKernels } from "../../core/model.ts";
import { InvalidStoreRequestError } from "../../core/ports/errors.ts";
import { KERNEL_STATUSES, SESSION_STATUSES, TERMINAL_SESSION_STATUSES } from "../../core/status.ts";
import { itemAbsent } from "./conditions.ts";
import { SPEC_LIMITS } from "../../core/spec.ts";
import { sessionItem } from "./item-codec.ts";
import { expiryAttribute, retainedUntil } from "./retention.ts";
import { guarded, type PlannedTransaction, type StoreLayout } from "./transaction-plan.ts";
import { requireCount, requireId, requireKnown, requireResources, requireTime } from "./validation.ts";

export function planCreateSession(input: SessionWithKernels, layout: StoreLayout): PlannedTransaction {
  validateNewSession(input);
  const { session, kernels } = input;
  // A session created ended (a task of a job that failed validation) is retained from then.
  const expiry = TERMINAL_SESSION_STATUSES.has(session.status)
    ? expiryAttribute(retainedUntil(session.updatedAtMs, layout))
    : {};
  // A session created with a history record (a task of a job that failed validation: why it
  // failed, core/history.ts) holds it as its lastHistory and as the first record of its item.
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

/**
 * The widest gang a session item holds: the spec's own bound, and the one every write of the
 * session is tested at (its item a few tens of kilobytes of DynamoDB's 400, each write's
 * expressions inside 4 KB with the kernels written whole).
 */
export const MAX_KERNELS_PER_SESSION = SPEC_LIMITS.replicas.max;

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
      `at most ${MAX_KERNELS_PER_SESSION} per session (the session item holds them all), got ${kernels.length}`,
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
