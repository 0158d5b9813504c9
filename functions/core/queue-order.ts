/**
 * The order sessions wait in a status queue, pure. Armada's proposal: "Requeued jobs are scheduled before
 * new jobs at the same priority". So the order is: highest priority first; at one priority,
 * requeued sessions before new ones; then oldest submission first; then id (unique, so pages of
 * the queue never skip ties).
 *
 * A session is requeued once it is back in PENDING after leaving it: a retried run (Requeued),
 * a stage that gave up or expired, a preemption or an agent loss before it started. It keeps its
 * submission time, so among requeued sessions the oldest submission goes first too.
 *
 * Why this cannot starve new submissions: a session goes ahead of new ones only at its own
 * priority, and only as often as it is requeued, which is bounded — retries by its budgets and
 * rules and by `globalMaxRetries`, returns that no budget counts by `maxPendingReturns` per run
 * and 100 in its life (retry/history-budget.ts) — and a retry's backoff keeps it out of the queue
 * while it waits. A stream of new submissions each runs and fails a bounded number of times, so a
 * new session waits behind finitely many requeues; Armada's own caveat ("Under high retry rates
 * this could starve new submissions") is bounded by the same limits.
 */
import type { Session } from "./model.ts";

/** What the order reads of a session. */
export type QueuedSession = Pick<Session, "id" | "createdAtMs" | "requeuedAtMs"> & {
  readonly spec: Pick<Session["spec"], "priority">;
};

export function isRequeued(session: Pick<Session, "requeuedAtMs">): boolean {
  return session.requeuedAtMs !== undefined;
}

/** Negative when `a` is served before `b`. */
export function compareQueueOrder(a: QueuedSession, b: QueuedSession): number {
  return (
    b.spec.priority - a.spec.priority ||
    Number(isRequeued(b)) - Number(isRequeued(a)) ||
    a.createdAtMs - b.createdAtMs ||
    (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
  );
}
