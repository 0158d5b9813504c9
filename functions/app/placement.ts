/**
 * The placement use case: ScheduleNewSessions' pass, one scheduling queue at a time under that
 * queue's lease (serialized.ts), so two runs never place one queue at once and queues are placed
 * side by side.
 */
import type { SessionWithKernels } from "../core/model.ts";
import { SessionStatus } from "../core/status.ts";
import { DEFAULT_QUEUE } from "../core/coordinator/inbound.ts";
import { errorMessage } from "./lifecycle/handler.ts";
import type { RunSnapshot } from "./snapshot.ts";
import { serialized } from "./serialized.ts";
import {
  type CoordinatorCore,
  type PassOutcome,
  type CoordinatorDeps,
  placementLeaseKey,
} from "./coordinator-core.ts";

/**
 * Placement, one scheduling queue at a time under the queue's lease, the queue of the
 * highest-priority target first: a queue another run is placing is left to that run, which
 * places it once more, over its every waiting session, before it lets go. One queue failing
 * holds back no other. `place` runs ScheduleNewSessions' pass over one queue's round.
 */
export async function placeByQueue(
  c: CoordinatorCore,
  targets: readonly SessionWithKernels[],
  snapshot: RunSnapshot,
  placement: NonNullable<CoordinatorDeps["placementLeases"]>,
  place: (round: readonly SessionWithKernels[]) => Promise<PassOutcome>,
): Promise<PassOutcome> {
  const byQueue = Map.groupBy(targets, (t) => t.session.spec.queue);
  const total = { targets: 0, decisions: 0, completed: 0 };
  const deps = { ...placement, clock: c.d.clock, log: c.d.log };
  let failure: Error | undefined;
  for (const [queue, mine] of byQueue) {
    try {
      await serialized(deps, placementLeaseKey(queue), async (whole) => {
        const round = whole ? await waitingIn(c, queue, snapshot) : mine;
        if (round.length === 0) return;
        const outcome = await place(round);
        total.targets += outcome.targets;
        total.decisions += outcome.decisions;
        total.completed += outcome.completed;
      });
    } catch (error) {
      c.d.log.error("placing a queue failed", { queue, error: errorMessage(error) });
      failure ??= error instanceof Error ? error : new Error(String(error));
    }
  }
  if (failure !== undefined && total.targets === 0) throw failure;
  return total;
}

/**
 * A queue's waiting sessions, as a full scheduling pass reads them (queue order): the first
 * batch of this queue, read past other queues' sessions that sort ahead, within SCAN_BATCHES.
 */
export async function waitingIn(
  c: CoordinatorCore,
  queue: string,
  snapshot: RunSnapshot,
): Promise<SessionWithKernels[]> {
  const mine = await c.d.store.targetsByStatus(perQueue(c, [queue]));
  snapshot.remember(mine);
  return mine;
}

/**
 * The waiting sessions a full scheduling pass's first batch (`batch`, every queue's, in queue
 * order) left out, of the queues it did not hold a batch of: a queue is placed on its own, and
 * its sessions must not hide behind another queue's backlog. Every session's queue is one the
 * catalog knows or the default one. A batch short of the limit holds every waiting session:
 * then nothing more is read.
 */
export async function waitingBehind(
  c: CoordinatorCore,
  batch: readonly SessionWithKernels[],
  snapshot: RunSnapshot,
): Promise<SessionWithKernels[]> {
  const limit = c.d.config.batchLimit;
  if (batch.length < limit) return [];
  const held = new Map<string, number>();
  for (const { session } of batch) held.set(session.spec.queue, (held.get(session.spec.queue) ?? 0) + 1);
  const known = new Set([DEFAULT_QUEUE, ...(await c.catalog.queueNames()), ...held.keys()]);
  const short = [...known].filter((q) => (held.get(q) ?? 0) < limit);
  if (short.length === 0) return [];
  const have = new Set(batch.map((s) => s.session.id));
  const more = (await c.d.store.targetsByStatus(perQueue(c, short))).filter((s) => !have.has(s.session.id));
  snapshot.remember(more);
  return more;
}

/**
 * How many batches of sessions a per-queue read looks through, at most, for the queues it
 * reads. The index holds keys only, so each session passed over costs a read of its item (one
 * read unit for an item up to 4 KB, in BatchGetItem's 100 a request) besides its index entry:
 * five batches bound a round's cost to about a thousand read units while a queue waits behind
 * up to four batches of others' backlog.
 */
export const SCAN_BATCHES = 5;

function perQueue(c: CoordinatorCore, queues: readonly string[]) {
  const limit = c.d.config.batchLimit;
  return {
    statuses: [SessionStatus.PENDING],
    limit,
    targetableOnly: true,
    queues,
    scanLimit: limit * SCAN_BATCHES,
  };
}
