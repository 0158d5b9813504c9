/**
 * The coordinator's one effect executor: carries out what a pass decided, on each session as it
 * is now — the decision's conditional write (claiming the stage where it changes status), then
 * the stage's callback — and gives back a claim the run made and did not use. Every use case
 * (intake, kernel reports, placement, the sweep) carries its decisions out through it.
 */
import type { Decision } from "../core/coordinator/decide.ts";
import { givenBack, needsRetryCatalog, type CarryOutPlan } from "../core/coordinator/passes.ts";
import { step } from "../core/coordinator/step.ts";
import type { SessionWrite } from "../core/effects.ts";
import type { SessionWithKernels, StageTransition } from "../core/model.ts";
import type { SessionStatus } from "../core/status.ts";
import { isConflict, rereadOnConflict, unlessConflict } from "./reread.ts";
import type { RunSnapshot } from "./snapshot.ts";
import type { OwnClaims } from "./coordinator-core.ts";
import { type CoordinatorCore, retryCatalog } from "./coordinator-core.ts";

/**
 * Carries each decision out on the session as it is now: the run's copies, where those the
 * pass wrote (a placement, kernel patches) are read again. A copy that is out of date
 * otherwise makes the conditional write fail, and the next event or the sweep judges the
 * session afresh. Returns the stages completed.
 */
export async function carryOut(
  c: CoordinatorCore,
  decisions: readonly Decision[],
  snapshot: RunSnapshot,
  claims: OwnClaims,
): Promise<number> {
  if (decisions.length === 0) return 0;
  const now = new Map(
    (await snapshot.sessions(decisions.map((d) => d.sessionId))).map((s) => [s.session.id, s]),
  );
  const completed = await Promise.all(
    decisions.map(async (decision) => {
      const session = now.get(decision.sessionId);
      const catalog = needsRetryCatalog(decision, session) ? await retryCatalog(c, session!) : undefined;
      const plan = step({
        kind: "carry-out",
        decision,
        session,
        ownClaim: claims.has(decision.sessionId),
        catalog,
        nowMs: c.d.clock.nowMs(),
        skipRecordIntervalMs: c.skipRecordIntervalMs,
      });
      return carryOutPlan(c, decision.sessionId, plan, snapshot, claims);
    }),
  );
  return completed.reduce((a, b) => a + b, 0);
}

/** One decision's plan: its write, then its callback. Returns the stages completed (0 or 1). */
export async function carryOutPlan(
  c: CoordinatorCore,
  sessionId: string,
  plan: CarryOutPlan,
  snapshot: RunSnapshot,
  claims: OwnClaims,
): Promise<number> {
  const write = (w: SessionWrite) => unlessConflict(() => c.d.store.applyWrite(w));
  switch (plan.kind) {
    case "none":
      return 0;
    case "give-back":
      // On a conflict the claim is still there: the run's end gives it back (#giveBack).
      snapshot.forget(sessionId);
      if ((await write(plan.write)) === undefined) return 0;
      claims.use(sessionId);
      return 0;
    case "claimed-complete":
      if (plan.write && (await write(plan.write)) === undefined) return 0;
      claims.use(sessionId);
      await complete(c, sessionId, plan.token, plan.transition, plan.known);
      return 1;
    case "write":
      snapshot.forget(sessionId);
      if ((await write(plan.write)) === undefined || !plan.complete) return 0;
      await complete(c, sessionId, plan.complete.token, plan.complete.transition, plan.complete.known);
      return 1;
  }
}

/**
 * Completes the stage's callback. When the token is closed, a retried attempt of the stage may
 * hold a newer one (each attempt of a callback state gets its own token): that one is
 * claimed and completed instead. Otherwise the stage's own timer fired first and the execution
 * has moved on along its EXPIRED path.
 */
export async function complete(
  c: CoordinatorCore,
  sessionId: string,
  token: string,
  transition: StageTransition,
  known?: SessionWithKernels,
): Promise<boolean> {
  let current = token;
  for (let hop = 0; hop < MAX_TOKEN_HOPS; hop++) {
    // The claim's copy goes with the first completion: the next state's entry starts from it.
    const sent = hop === 0 && known ? { ...transition, known } : transition;
    if ((await c.d.executions.complete(current, sent)) === "completed") return true;
    const s = await c.d.store.getSession(sessionId);
    const newer = s?.session.stage.taskToken;
    if (!s || s.session.status !== transition.from || newer === undefined || newer === current) break;
    try {
      await c.d.store.applyWrite({
        sessionId,
        expected: { status: s.session.status, version: s.session.version },
        nowMs: c.d.clock.nowMs(),
        claimStage: true,
        claimedToken: newer,
      });
    } catch (error) {
      if (isConflict(error)) break;
      throw error;
    }
    c.d.log.info("completing the retried stage's newer token", { sessionId, from: transition.from });
    current = newer;
  }
  c.d.log.info("stage already closed", { sessionId, from: transition.from, to: transition.to });
  return false;
}

/**
 * Gives a claimed stage's token back (the run neither completed the stage nor wrote a decision
 * with it), so the stage is a target again for the next event or the sweep. Nothing is written
 * when the session has moved on or its claim is gone (a retried attempt of the entry wrote a
 * token of its own).
 */
export async function giveBack(
  c: CoordinatorCore,
  sessionId: string,
  status: SessionStatus,
  snapshot: RunSnapshot,
): Promise<boolean> {
  return rereadOnConflict(async (n) => {
    if (n > 1) snapshot.forget(sessionId);
    const s = await snapshot.session(sessionId);
    if (!s || s.session.status !== status || s.session.stage.claimedToken === undefined) return false;
    if (s.session.stage.taskToken !== undefined) return false;
    snapshot.forget(sessionId);
    await c.d.store.applyWrite({
      sessionId,
      expected: { status, version: s.session.version },
      nowMs: c.d.clock.nowMs(),
      stage: givenBack(s.session.stage),
    });
    return true;
  });
}

const MAX_TOKEN_HOPS = 3;
