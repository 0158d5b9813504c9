/**
 * The PENDING timer ran out (the execution's JudgePendingExpiry state): the run that was
 * never placed is judged exactly as the coordinator judges an expiry it sees first
 * (core/coordinator/finished-run.ts). Its kernels end Unschedulable; a retry rule on that
 * condition sends the session back to PENDING as a new run, otherwise it ends CANCELLED.
 *
 * Whichever of the two sees the expiry first, the outcome is one: both judge the same session
 * with the same catalog, and the retried run's record is written once, with the stage's claim.
 * When the coordinator's claim wrote it already (its callback then found the stage closed), the
 * judgment names that record instead of writing it again.
 */
import {
  judgeFinishedRun,
  runNeedsRetryCatalog,
  type RetryCatalogView,
} from "../core/coordinator/finished-run.ts";
import { callbackPayload } from "../core/coordinator/passes.ts";
import type { SessionWithKernels, StageTransition } from "../core/model.ts";
import type { SessionRepository } from "../core/ports/sessions.ts";
import { SessionStatus } from "../core/status.ts";
import { StageEntryError } from "./enter-stage.ts";
import type { Clock } from "../core/ports/clock.ts";
import { rereadOnConflict } from "./reread.ts";

/** The state's payload: the execution's data, the EXPIRED transition at `transition`. */
export interface ExpiryJudgement {
  readonly judge: "expiry";
  readonly sessionId: string;
  /** The stages' timers, passed through (the execution's data). */
  readonly timeouts: Record<string, number>;
  readonly transition: StageTransition;
}

/** The execution's data after the judgment: the transition Requeued or Cancelled records. */
export interface ExpiryJudged {
  readonly sessionId: string;
  readonly timeouts: Record<string, number>;
  readonly transition: StageTransition;
}

export interface ExpiryJudgeDeps {
  readonly store: Pick<SessionRepository, "getSession" | "applyWrite" | "listRuns">;
  readonly clock: Clock;
  readonly retryCatalog: (s: SessionWithKernels) => Promise<RetryCatalogView>;
}

/** Whether a lifecycle Task's payload asks for a judgment rather than a state's entry. */
export function isExpiryJudgement(payload: unknown): payload is ExpiryJudgement {
  return (
    typeof payload === "object" && payload !== null && (payload as { judge?: unknown }).judge !== undefined
  );
}

export async function judgeExpiry(input: ExpiryJudgement, deps: ExpiryJudgeDeps): Promise<ExpiryJudged> {
  checkJudgement(input);
  const { sessionId, timeouts } = input;
  const t = input.transition;
  return rereadOnConflict(async (_n, conflict) => {
    const s = conflict?.current ?? (await deps.store.getSession(sessionId));
    if (!s) throw new StageEntryError(`session ${sessionId} does not exist`);
    if (s.session.status !== t.from) {
      throw new StageEntryError(
        `session ${sessionId} is ${s.session.status}; its ${t.from} timer cannot be judged`,
      );
    }
    const nowMs = deps.clock.nowMs();
    const catalog = runNeedsRetryCatalog(s, t) ? await deps.retryCatalog(s) : undefined;
    const { transition, run } = callbackPayload(judgeFinishedRun(s, t, nowMs, catalog));
    if (
      run !== undefined &&
      !(await deps.store.listRuns(sessionId)).some((r) => r.runIndex === run.runIndex)
    ) {
      // The stage's token is dead (its timer fired): dropped, so no pass targets it meanwhile.
      // Nothing is kept to give back: the execution itself moves on from here.
      await deps.store.applyWrite({
        sessionId,
        expected: { status: s.session.status, version: s.session.version },
        nowMs,
        claimStage: true,
        run,
      });
    }
    return { sessionId, timeouts, transition };
  });
}

/** The payload's fields, checked with the field named (the ASL builds it; a change there shows here). */
function checkJudgement(input: ExpiryJudgement): void {
  if (input.judge !== "expiry") {
    throw new StageEntryError(`judge: must be "expiry", got ${JSON.stringify(input.judge)}`);
  }
  if (typeof input.sessionId !== "string" || input.sessionId === "") {
    throw new StageEntryError("sessionId: must be the session's id");
  }
  if (typeof input.timeouts !== "object" || input.timeouts === null) {
    throw new StageEntryError("timeouts: must be the execution's stage timers");
  }
  const t = input.transition as Partial<StageTransition> | undefined;
  if (t?.from !== SessionStatus.PENDING || t.result !== "EXPIRED") {
    throw new StageEntryError(
      `transition: must be PENDING's EXPIRED transition, got ${JSON.stringify({ from: t?.from, result: t?.result })}`,
    );
  }
}
