/**
 * The placement use case: ScheduleNewSessions' pass, one scheduling queue at a time under that
 * queue's lease (serialized.ts), so two runs never place one queue at once and queues are placed
 * side by side.
 */
import type { SessionWithKernels } from "../core/model.ts";
import { SessionStatus } from "../core/status.ts";
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

/** A queue's waiting sessions, as a full scheduling pass reads them (queue order). */
export async function waitingIn(
  c: CoordinatorCore,
  queue: string,
  snapshot: RunSnapshot,
): Promise<SessionWithKernels[]> {
  const page = await c.d.store.targetsByStatus({
    statuses: [SessionStatus.PENDING],
    limit: c.d.config.batchLimit,
    targetableOnly: true,
  });
  const mine = page.filter((s) => s.session.spec.queue === queue);
  snapshot.remember(mine);
  return mine;
}
