/**
 * The sweep's repair of sessions without a live execution. A session that is not
 * terminal is carried only by its lifecycle execution; if that execution failed, was stopped,
 * timed out, or never started (an `ExecutionAlreadyExists` taken for success, a start that was
 * never sent), nothing will ever move the session again and it holds its capacity for good.
 *
 * The sweep looks at sessions whose stage was entered more than a minute ago (a page per status
 * at most every 10 s, continuing where the previous page left off) and asks Step Functions about each
 * one's execution; what to do is core/repair.ts's decision:
 * - RUNNING or PENDING_REDRIVE (a redrive under way): nothing to do;
 * - no execution, and the session never entered a stage: the start never happened; it is sent now;
 * - otherwise: the session is ended with the reason — CANCELLED before it started, TERMINATED
 *   after — through the same stage entry the execution uses (its kernels are stopped, its
 *   capacity given back, a history record and a status event written).
 *
 * A continuation execution at the session's current stage would need an entry point per stage in
 * the state machine, which it does not have: a stranded session is ended, never resumed.
 */
import type { Session } from "../core/model.ts";
import type { AgentRepository } from "../core/ports/agents.ts";
import type { SessionRepository } from "../core/ports/sessions.ts";
import { repairDecision, type RepairDecision } from "../core/repair.ts";
import { WAITING_SESSION_STATUSES, type SessionStatus } from "../core/status.ts";
import { errorMessage } from "./lifecycle/handler.ts";
import { enterStage } from "./enter-stage.ts";
import { errorCode } from "../core/ports/errors.ts";
import type { KernelCommands } from "./kernel-commands.ts";
import type { Logger } from "./logger.ts";
import type { Clock } from "../core/ports/clock.ts";
import type { EventsPort } from "../core/ports/event-bus.ts";
import type { LifecycleExecutionsPort } from "../core/ports/lifecycle-executions.ts";

export interface RepairDeps {
  /** Agents: the stage entry it ends a session with releases the session's capacity. */
  readonly store: SessionRepository & AgentRepository;
  readonly executions: LifecycleExecutionsPort;
  readonly events: EventsPort;
  readonly commands: KernelCommands;
  readonly clock: Clock;
  readonly log: Logger;
  readonly terminationGraceMs: number;
  /** Only sessions whose stage was entered longer ago than this are checked. @default 60000 */
  readonly minAgeMs?: number;
  /** Index entries read per status per sweep (each candidate costs one DescribeExecution). @default 25 */
  readonly pageSize?: number;
  /**
   * At most one repair sweep this often, however often the coordinator sweeps (the embedded
   * runtime sweeps every second; sessions qualify only after a minute anyway). @default 10000
   */
  readonly intervalMs?: number;
}

export type RepairAction =
  | { readonly kind: "started" }
  | { readonly kind: "ended"; readonly status: SessionStatus; readonly reason: string };

export interface RepairOutcome {
  /** Executions asked about. */
  readonly checked: number;
  readonly repaired: readonly { readonly sessionId: string; readonly action: RepairAction }[];
}

export class Repair {
  readonly #d: RepairDeps;
  /** Where each status's walk continues: the queue is long, a sweep reads one page of it. */
  readonly #cursors = new Map<SessionStatus, string>();
  #lastSweepAtMs = Number.NEGATIVE_INFINITY;

  constructor(deps: RepairDeps) {
    this.#d = deps;
  }

  async sweep(): Promise<RepairOutcome> {
    const { store, executions, clock } = this.#d;
    const nowMs = clock.nowMs();
    if (executions.describe === undefined || nowMs - this.#lastSweepAtMs < (this.#d.intervalMs ?? 10_000)) {
      return { checked: 0, repaired: [] };
    }
    this.#lastSweepAtMs = nowMs;
    const enteredBeforeMs = nowMs - (this.#d.minAgeMs ?? 60_000);
    let checked = 0;
    const repaired: RepairOutcome["repaired"][number][] = [];
    // Every status that is not terminal is a stage the execution waits in.
    for (const status of WAITING_SESSION_STATUSES) {
      const cursor = this.#cursors.get(status);
      const page = await store.staleSessions(status, enteredBeforeMs, {
        limit: this.#d.pageSize ?? 25,
        ...(cursor !== undefined ? { cursor } : {}),
      });
      if (page.cursor !== undefined) this.#cursors.set(status, page.cursor);
      else this.#cursors.delete(status);
      for (const session of page.items) {
        checked++;
        try {
          const action = await this.#check(session);
          if (action) repaired.push({ sessionId: session.id, action });
        } catch (error) {
          // One session's repair failing must not stop the others'; the next sweep tries again.
          this.#d.log.error("repairing a session failed", {
            sessionId: session.id,
            error: errorMessage(error),
          });
        }
      }
    }
    return { checked, repaired };
  }

  async #check(session: Session): Promise<RepairAction | undefined> {
    const execution = await this.#d.executions.describe!(session.executionName);
    const decision = repairDecision(session, execution);
    switch (decision.kind) {
      case "leave":
        return undefined;
      case "start":
        await this.#d.executions.start(session.id, {
          sessionId: session.id,
          timeouts: { ...session.spec.timeouts },
          known: null,
        });
        this.#d.log.warn("started a session's missing execution", { sessionId: session.id });
        return { kind: "started" };
      case "end":
        return this.#end(session, decision);
    }
  }

  /** Ends the session the way its execution would have, recording why. */
  async #end(
    session: Session,
    { from, to, reason }: Extract<RepairDecision, { kind: "end" }>,
  ): Promise<RepairAction | undefined> {
    const { store, events, commands, clock, log, terminationGraceMs } = this.#d;
    try {
      await enterStage(
        {
          sessionId: session.id,
          status: to,
          transition: { from, to, result: "CANCELLED", handler: "Lifecycle", message: reason },
          executionName: session.executionName,
        },
        { store, events, commands, clock, log, terminationGraceMs },
      );
    } catch (error) {
      // The session moved since it was read: whoever moved it is alive after all.
      if (errorCode(error) === "STAGE_ENTRY") return undefined;
      throw error;
    }
    log.warn("ended a session without a live execution", { sessionId: session.id, to, reason });
    return { kind: "ended", status: to, reason };
  }
}
