/**
 * Work serialized per key by a lease in the table (core/ports/leases.ts): a scheduling
 * queue's placement, a deployment's handlers. Whichever queue, message or function brings the
 * work, one run at a time does it for a key, and runs for different keys go side by side. A run
 * that finds the key's lease held leaves its work to the holder instead of waiting: it asks the
 * holder to go again, and the holder runs the work once more, over everything (`whole`), before
 * it lets go. Serialization so never depends on how messages are delivered, and a failed or
 * slow message holds back nothing but itself (docs/deploy.md, "Serialized work").
 */
import { randomUUID } from "node:crypto";
import type { LeaseRepository } from "../core/ports/leases.ts";
import type { Logger } from "./logger.ts";
import type { Clock } from "../core/ports/clock.ts";

export interface SerializedDeps {
  readonly leases: LeaseRepository;
  readonly clock: Clock;
  readonly log: Logger;
  /** How long a holder may hold a lease: its function's timeout (a holder that died lets go then). */
  readonly leaseMs: number;
}

/** Rounds a holder runs before it leaves further requests to the next event or the sweep. */
const MAX_ROUNDS = 4;
/** Tries to either take the lease or hand the work to its holder (it may be let go in between). */
const MAX_TRIES = 3;

/**
 * Runs `work` under the key's lease, or hands it to the lease's holder. `whole` is false for the
 * caller's own work and true for a round the holder runs because others asked it to. Returns
 * "ran" or "handed-over". A failure of `work` lets go of the lease and is thrown.
 */
export async function serialized(
  d: SerializedDeps,
  key: string,
  work: (whole: boolean) => Promise<void>,
): Promise<"ran" | "handed-over"> {
  const holder = randomUUID();
  for (let attempt = 0; attempt < MAX_TRIES; attempt++) {
    const nowMs = d.clock.nowMs();
    if (await d.leases.acquireLease(key, holder, nowMs, nowMs + d.leaseMs)) {
      await holding(d, key, holder, work);
      return "ran";
    }
    if (await d.leases.requestAgain(key, d.clock.nowMs())) return "handed-over";
  }
  // The lease kept changing hands: its holders run again on their own requests; ours is left
  // to the next event or the sweep, which is what a holder that died leaves too.
  d.log.warn("serialized work handed to the next event: the lease kept changing hands", { key });
  return "handed-over";
}

async function holding(
  d: SerializedDeps,
  key: string,
  holder: string,
  work: (whole: boolean) => Promise<void>,
): Promise<void> {
  let whole = false;
  try {
    for (let round = 1; ; round++) {
      await work(whole);
      if (round >= MAX_ROUNDS) {
        await d.leases.releaseLease(key, holder, { force: true });
        d.log.warn("serialized work: further requests left to the next event or the sweep", {
          key,
          rounds: round,
        });
        return;
      }
      if ((await d.leases.releaseLease(key, holder)) !== "again") return;
      whole = true;
    }
  } catch (error) {
    await d.leases.releaseLease(key, holder, { force: true }).catch((releaseError: unknown) => {
      // The lease runs out by itself at the holder's time.
      d.log.warn("letting go of a lease failed", { key, error: String(releaseError) });
    });
    throw error;
  }
}
