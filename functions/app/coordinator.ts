/**
 * The coordinator: one run per queue message batch. It puts the use cases together — intake
 * (intake.ts: submissions, cancels, drafts, heartbeats, registrations, status changes), kernel
 * reports (report-intake.ts), the handler passes those events make possible with placement one
 * queue at a time (handler-passes.ts, placement.ts), and on the sweep the recovery of claims
 * whose claimer died, lost agents and stranded executions (sweep.ts, agents.ts, repair.ts) —
 * each "load a snapshot → one pure decision (core/coordinator/step.ts) → carry out its effects"
 * through one effect executor (effect-executor.ts). History and try counts are written here; a
 * status change is claimed here and applied by the lifecycle execution when the stage's callback
 * is completed. EnterStage reaches it only through `advance` and `judgeExpiry`.
 */
import type { SessionWithKernels } from "../core/model.ts";
import type { SessionStatus } from "../core/status.ts";
import { SESSION_STATUSES } from "../core/status.ts";
import { errorMessage } from "./lifecycle/handler.ts";
import { judgeExpiry, type ExpiryJudged, type ExpiryJudgement } from "./expiry-judge.ts";
import { RunSnapshot } from "./snapshot.ts";
import {
  type CoordinatorCore,
  Dirty,
  type CoordinatorDeps,
  type RunReport,
  type ParsedBatch,
  retryCatalog,
  coordinatorCore,
} from "./coordinator-core.ts";
import { applyEvents } from "./intake.ts";
import { passesAfterEvents, mayAdvance } from "./handler-passes.ts";
import { recoverClaims } from "./sweep.ts";

export class Coordinator {
  readonly #c: CoordinatorCore;

  constructor(deps: CoordinatorDeps) {
    this.#c = coordinatorCore(deps);
  }

  /**
   * One run over a batch of queue messages, parsed at the edge (`EMPTY_BATCH` for none); `sweep`
   * runs every pass.
   */
  async run(batch: ParsedBatch, options: { sweep?: boolean } = {}): Promise<RunReport> {
    const dirty = new Dirty();
    if (options.sweep) {
      for (const s of SESSION_STATUSES) dirty.wakeAll(s);
      dirty.everyQueue = true;
    }
    // Every session the batch names, read together before any event is applied.
    const snapshot = new RunSnapshot(this.#c.d.store, this.#c.agentCache);
    try {
      await snapshot.sessions(batch.sessionIds);
    } catch (error) {
      // Each event reads its own session below, and fails (to be redelivered) on its own.
      this.#c.d.log.warn("reading the batch's sessions failed", { error: errorMessage(error) });
    }
    const { applied, rejected, retry } = await applyEvents(this.#c, batch, dirty, snapshot);
    if (rejected.length > 0) {
      const atMs = this.#c.d.clock.nowMs();
      await this.#c.d.events.rejected(
        rejected.map((r) => ({
          ...(r.eventId !== undefined ? { eventId: r.eventId.slice(0, 256) } : {}),
          ...(r.detailType !== undefined ? { detailType: r.detailType.slice(0, 256) } : {}),
          reason: r.reason.slice(0, 4096),
          atMs,
        })),
      );
    }
    try {
      if (options.sweep || dirty.agentsHeard) {
        if ((await this.#c.agents.sweepLost({ sweep: options.sweep === true })) > 0) {
          for (const s of SESSION_STATUSES) dirty.wakeAll(s);
          dirty.everyQueue = true;
          snapshot.clear();
        }
      }
    } catch (error) {
      // The next heartbeat batch or sweep looks again.
      this.#c.d.log.error("looking for lost agents failed", { error: errorMessage(error) });
    }
    if (options.sweep) {
      try {
        await recoverClaims(this.#c, snapshot);
      } catch (error) {
        // The next sweep looks again.
        this.#c.d.log.error("looking for claims whose claimer died failed", { error: errorMessage(error) });
      }
      try {
        // Sessions whose execution is gone: repair.ts.
        await this.#c.repair.sweep();
        snapshot.clear();
      } catch (error) {
        this.#c.d.log.error("repairing sessions without a live execution failed", {
          error: errorMessage(error),
        });
      }
    }
    const progress = await passesAfterEvents(this.#c, dirty, snapshot, options.sweep === true);
    return {
      applied,
      rejected,
      retry: [...retry, ...progress.retry],
      passes: progress.passes,
      completed: progress.completed,
    };
  }

  /**
   * A session just entered `status` (EnterStage, right after recording it): the passes for that
   * one session run now, in the caller's invocation, instead of after a trip through the bus and
   * the coordinator's queue behind every other session's events. Placement (PENDING) is not
   * taken here: it goes through the queue, where it is serialized. `written` is the session as
   * the entry left it (its copy plus the write, exact because the entry guarded the session and
   * every kernel): the step starts from it without reading the session again. `claimed`: the
   * entry recorded its token claimed for this step, which completes the stage or gives it back.
   */
  async advance(
    sessionId: string,
    status: SessionStatus,
    written?: SessionWithKernels,
    claimed = false,
  ): Promise<Pick<RunReport, "passes" | "completed">> {
    if (!claimed && written && !mayAdvance(status, written)) return { passes: [], completed: 0 };
    const dirty = new Dirty();
    const snapshot = new RunSnapshot(this.#c.d.store, this.#c.agentCache);
    if (written?.session.id === sessionId && written.session.status === status) snapshot.remember([written]);
    if (claimed) dirty.claims.add(sessionId, status);
    dirty.touch(status, sessionId);
    dirty.sessions.add(sessionId);
    const { passes, completed } = await passesAfterEvents(this.#c, dirty, snapshot, false);
    return { passes, completed };
  }

  /**
   * The PENDING timer ran out before any pass judged the expiry (the execution's
   * JudgePendingExpiry state): judged with the same catalog a pass would read (expiry-judge.ts).
   */
  judgeExpiry(input: ExpiryJudgement): Promise<ExpiryJudged> {
    return judgeExpiry(input, {
      store: this.#c.d.store,
      clock: this.#c.d.clock,
      retryCatalog: (s) => retryCatalog(this.#c, s),
    });
  }
}

export type { CoordinatorDeps, ParsedBatch, RunReport, Rejection } from "./coordinator-core.ts";
export { EMPTY_BATCH } from "./coordinator-core.ts";
export { placementLeaseKey } from "./coordinator-core.ts";
