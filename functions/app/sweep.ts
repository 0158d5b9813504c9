/**
 * The sweep's own use case beside the passes it runs over every waiting session: claims whose
 * claimer died are given back (so the passes judge those sessions afresh within one sweep period
 * of the claim's lifetime, not at the stage's expiry).
 */
import { WAITING_SESSION_STATUSES } from "../core/status.ts";
import { unlessConflict } from "./reread.ts";
import type { RunSnapshot } from "./snapshot.ts";
import { type CoordinatorCore, DEFAULT_CLAIM_LIFETIME_MS } from "./coordinator-core.ts";
import { giveBack } from "./effect-executor.ts";

/**
 * The sweep's look for claims whose claimer died between claiming a stage and completing it
 * (an invocation killed or timed out): a claim older than any claimer lives has its token given
 * back, and the sweep's passes judge the session afresh — within one sweep period of the
 * claimer's end, rather than at the stage's expiry. A claim whose completion did go through is
 * replaced by the next stage's entry within moments, so it is not found here.
 */
export async function recoverClaims(c: CoordinatorCore, snapshot: RunSnapshot): Promise<number> {
  // A claim is recovered only once it is a lifetime old: looking more often than a quarter of
  // that finds nothing new (and the embedded runtime sweeps every few seconds).
  const lifetimeMs = c.d.claimLifetimeMs ?? DEFAULT_CLAIM_LIFETIME_MS;
  const nowMs = c.d.clock.nowMs();
  if (nowMs - c.claimsCheckedAtMs < lifetimeMs / 4) return 0;
  c.claimsCheckedAtMs = nowMs;
  const claimed = await c.d.store.targetsByStatus({
    statuses: WAITING_SESSION_STATUSES,
    limit: c.d.config.batchLimit,
    claimedOnly: true,
  });
  const before = nowMs - lifetimeMs;
  let recovered = 0;
  for (const s of claimed) {
    const { status, stage, id } = s.session;
    if (stage.claimedAtMs === undefined || stage.claimedAtMs > before) continue;
    snapshot.remember([s]);
    if (await unlessConflict(() => giveBack(c, id, status, snapshot))) {
      recovered++;
      c.d.log.warn("a stage's claim outlived its claimer; its token is given back", {
        sessionId: id,
        status,
        claimedAtMs: stage.claimedAtMs,
      });
    }
  }
  return recovered;
}
