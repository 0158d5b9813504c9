/**
 * The kernel-reports use case: a session's reports of one batch are authenticated (only the
 * agent's current incarnation signs), judged by the pure core (for the kernel's agent, run and
 * placement), and applied in one write — the kernels alone, or with the stage's claim when the
 * reports decide it, which the run's passes then complete.
 */
import type { Rejection, SessionReport } from "../core/coordinator/inbound.ts";
import { step } from "../core/coordinator/step.ts";
import { sessionAfterWrite } from "../core/session-after-write.ts";
import { rereadOnConflict } from "./reread.ts";
import type { RunSnapshot } from "./snapshot.ts";
import type { Dirty } from "./coordinator-core.ts";
import type { CoordinatorCore, PendingReport } from "./coordinator-core.ts";

/**
 * A session's kernel reports of one batch: each authenticated here (only the agent's current
 * incarnation signs), judged by the core (for the kernel's agent, run and placement), and the
 * accepted ones applied in one write of the kernels they change, re-reading on a conflict.
 * Returns each report's rejection, or undefined where it was applied.
 */
export async function applyReports(
  c: CoordinatorCore,
  sessionId: string,
  group: readonly PendingReport[],
  dirty: Dirty,
  snapshot: RunSnapshot,
): Promise<readonly (Rejection | undefined)[]> {
  return rereadOnConflict(async (_n, conflict) => {
    snapshot.rememberRefused(conflict);
    const s = await snapshot.session(sessionId);
    const reports: SessionReport[] = [];
    for (const pending of group) {
      // A task's report is vouched for by its source and cluster, checked when it was parsed.
      if ("task" in pending) {
        reports.push({ task: pending.task });
        continue;
      }
      const { event } = pending;
      const refusal = s
        ? await c.agents.authenticateReport(event.detail, (id) =>
            snapshot.agent(id, event.detail.incarnation),
          )
        : undefined;
      reports.push(refusal ? { event, refused: refusal.refused } : { event });
    }
    const nowMs = c.d.clock.nowMs();
    const { outcomes, effect } = step({ kind: "reports", sessionId, session: s, reports, nowMs });
    if (!s) return outcomes;
    if (effect.kind === "none") {
      dirty.touch(s.session.status, sessionId);
      return outcomes;
    }
    // Written or conflicting, the copy read is out of date either way.
    snapshot.forget(sessionId);
    if (effect.kind === "claim") {
      await c.d.store.applyWrite(effect.write);
      // The reports decided the stage: the run holds its token and knows the session exactly.
      snapshot.remember([sessionAfterWrite(s, effect.write)]);
      dirty.claims.add(sessionId, s.session.status);
      dirty.touch(s.session.status, sessionId);
      return outcomes;
    }
    // The kernels alone, each at the version read: a stage entry or claim of the session
    // meanwhile does not make the reports conflict, only a write to the same kernel does.
    const written = await c.d.store.patchKernels(
      sessionId,
      { status: s.session.status, version: s.session.version },
      effect.patches,
      nowMs,
    );
    // The passes act on the session as of after the write, not as first read: a stage entry
    // written meanwhile is seen by them or (its kernel guards failing) sees the reports itself.
    // The store returns the session as written when it can; otherwise it is read.
    if (written) snapshot.remember([written]);
    const after = await snapshot.session(sessionId);
    if (after) dirty.touch(after.session.status, sessionId);
    return outcomes;
  });
}

// --- passes ------------------------------------------------------------------------------
