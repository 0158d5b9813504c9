/**
 * The coordinator: one run applies a batch of inbound events (submissions, cancels, kernel
 * reports, heartbeats, and the control plane's own status changes), then runs the handler
 * passes those events make possible, judges their results with the pure core, and carries the
 * decisions out: history and try counts are written here; a status change is claimed here and
 * applied by the lifecycle execution when the stage's callback is completed.
 */
import type { CairnConfig } from "../config.ts";
import { judge, judgePromotions, type Decision, type JudgedTarget } from "../core/coordinator/decide.ts";
import { decisionWrite, type SessionWrite } from "../core/effects.ts";
import { partitionUnrecoverable } from "../core/coordinator/unrecoverable.ts";
import {
  DetailType,
  EventSource,
  parseInboundEvent,
  SessionStatusChangedDetailSchema,
  type InboundEvent,
} from "../core/events.ts";
import { STAGES } from "../core/handlers.ts";
import { isRecentRepeat } from "../core/history.ts";
import { reportsEffect } from "../core/kernel-reports.ts";
import {
  isLiveAgent,
  stageKey,
  type RunRecord,
  type SessionWithKernels,
  type StageTransition,
} from "../core/model.ts";
import type { SessionStore } from "../core/ports/session-store.ts";
import { promotionDue, sessionsToPromote } from "../core/promotion.ts";
import { SchedulingResult } from "../core/scheduling.ts";
import { judgeFinishedRun, runNeedsRetryCatalog } from "../core/coordinator/finished-run.ts";
import { sessionAfterWrite } from "../core/session-after-write.ts";
import { submissionSizeIssue } from "../core/submission-size.ts";
import {
  isWaitingStatus,
  SESSION_STATUSES,
  TERMINAL_SESSION_STATUSES,
  WAITING_SESSION_STATUSES,
  SessionStatus,
} from "../core/status.ts";
import { errorMessage, type HandlerContext } from "./lifecycle/handler.ts";
import { isConflict, rereadOnConflict } from "./reread.ts";
import { PASSES, passName, passStatuses, type Pass } from "./passes.ts";
import type { AgentChannelPort, Clock, EventsPort, LifecycleExecutionsPort } from "./ports.ts";
import { Agents } from "./agents.ts";
import { KernelCommands } from "./kernel-commands.ts";
import type { Logger } from "./logger.ts";
import { Jobs } from "./jobs.ts";
import { Preemption } from "./preemption.ts";
import { Repair } from "./repair.ts";
import { RetryCatalog } from "./retry-catalog.ts";
import { AgentCache, RunSnapshot } from "./snapshot.ts";

export interface CoordinatorDeps {
  readonly store: SessionStore;
  readonly executions: LifecycleExecutionsPort;
  readonly events: EventsPort;
  readonly channel: AgentChannelPort;
  readonly config: CairnConfig;
  readonly clock: Clock;
  readonly log: Logger;
  /** Repeated identical SKIPPED records closer together than this are not rewritten. */
  readonly skipRecordIntervalMs?: number;
}

export interface Rejection {
  readonly eventId: string | undefined;
  readonly detailType: string | undefined;
  readonly reason: string;
}

export interface RunReport {
  readonly applied: number;
  readonly rejected: readonly Rejection[];
  /** Indexes of events whose processing failed transiently: the caller redelivers them. */
  readonly retry: readonly number[];
  readonly passes: readonly { readonly name: string; readonly targets: number; readonly decisions: number }[];
  readonly completed: number;
}

/**
 * What a batch of events touched. An event names its session, so most passes only need to look
 * at those sessions; a pass over every waiting session of a status runs only where the queue as
 * a whole may move: capacity came free (a session left its agents, an agent arrived) or the
 * sweep. This keeps a run's cost proportional to its events, not to the backlog.
 */
class Dirty {
  readonly full = new Set<SessionStatus>();
  readonly byStatus = new Map<SessionStatus, Set<string>>();
  /** Sessions to check for a cancel request: cancels, and sessions that just entered a stage. */
  readonly sessions = new Set<string>();
  /** Sessions that reached TERMINATED or CANCELLED (and the events saying so): their jobs are judged. */
  readonly ended = new Map<string, number[]>();
  /** The batch carried heartbeats or registrations: a moment to look for agents that fell silent. */
  agentsHeard = false;
  /**
   * Stages claimed when they were entered (EnterStage's write left the token out): the run holds
   * their tokens, and completes each stage or writes its token back (HeldTokens).
   */
  readonly held = new HeldTokens();

  touch(status: SessionStatus, sessionId: string): void {
    let ids = this.byStatus.get(status);
    if (!ids) this.byStatus.set(status, (ids = new Set()));
    ids.add(sessionId);
  }

  wakeAll(status: SessionStatus): void {
    this.full.add(status);
  }

  /** Sessions touched in any of `statuses`. */
  touched(statuses: readonly SessionStatus[]): string[] {
    return statuses.flatMap((s) => [...(this.byStatus.get(s) ?? [])]);
  }
}

/**
 * The callback tokens of stages claimed on entry, held by this run instead of the table: a
 * session holding none is no one else's target, so no other run can judge it meanwhile. Each is
 * used once: to complete the stage, or written back with a decision that keeps the session
 * waiting; what is left unused is written back when the run ends (Coordinator.advance).
 */
class HeldTokens {
  readonly #held = new Map<string, { readonly status: SessionStatus; readonly token: string }>();
  readonly #used = new Set<string>();

  hold(sessionId: string, status: SessionStatus, token: string): void {
    this.#held.set(sessionId, { status, token });
    this.#used.delete(sessionId);
  }

  /** The token held for the session, unless it was used. */
  get(sessionId: string): string | undefined {
    return this.#used.has(sessionId) ? undefined : this.#held.get(sessionId)?.token;
  }

  use(sessionId: string): void {
    this.#used.add(sessionId);
  }

  unused(): { sessionId: string; status: SessionStatus; token: string }[] {
    return [...this.#held].flatMap(([sessionId, h]) =>
      this.#used.has(sessionId) ? [] : [{ sessionId, ...h }],
    );
  }
}

interface PassOutcome {
  readonly targets: number;
  readonly decisions: number;
  readonly completed: number;
}

/** How long a coordinator instance uses an agent as read (liveness and incarnation; see AgentCache). */
const AGENT_CACHE_MS = 1_000;

/** An event held back to be applied with others after the batch's loop (kernel reports). */
const DEFERRED = Symbol("deferred");

type KernelReportEvent = Extract<InboundEvent, { detailType: typeof DetailType.KernelStatusChanged }>;
type KernelStatusChangedDetail = KernelReportEvent["detail"];

interface PendingReport {
  /** The event's index in the batch. */
  readonly index: number;
  readonly event: KernelReportEvent;
}

function rejectionOf(event: InboundEvent, reason: string): Rejection {
  return { eventId: event.id, detailType: event.detailType, reason };
}
/** Higher-priority waiting sessions a targeted scheduling pass also tries, first. */
const WAITING_AHEAD_LIMIT = 10;
/** Sessions name no queue: they are in this one, which need not have been created. */
const DEFAULT_QUEUE = "default";

export class Coordinator {
  readonly #d: CoordinatorDeps;
  readonly #catalog: RetryCatalog;
  readonly #jobs: Jobs;
  readonly #preemption: Preemption;
  readonly #agents: Agents;
  readonly #commands: KernelCommands;
  readonly #repair: Repair;
  /** Agents as recently read, across this instance's runs (snapshot.ts). */
  readonly #agentCache: AgentCache;

  constructor(deps: CoordinatorDeps) {
    this.#d = deps;
    this.#agentCache = new AgentCache(deps.store, deps.clock, AGENT_CACHE_MS);
    this.#agents = new Agents(deps);
    this.#commands = new KernelCommands(deps.store, deps.channel);
    this.#jobs = new Jobs(deps);
    this.#preemption = new Preemption(deps);
    this.#catalog = new RetryCatalog(deps.store, deps.clock, deps.config.retryCacheMs);
    this.#repair = new Repair({
      ...deps,
      commands: this.#commands,
      terminationGraceMs: deps.config.terminationGraceMs,
      minAgeMs: deps.config.repairAfterMs,
      intervalMs: Math.min(10_000, deps.config.repairAfterMs),
    });
  }

  /** One run: `envelopes` are EventBridge events (possibly none); `sweep` runs every pass. */
  async run(envelopes: readonly unknown[], options: { sweep?: boolean } = {}): Promise<RunReport> {
    const dirty = new Dirty();
    if (options.sweep) for (const s of SESSION_STATUSES) dirty.wakeAll(s);
    // Every session the batch names, read together before any event is applied.
    const snapshot = new RunSnapshot(this.#d.store, this.#agentCache);
    try {
      await snapshot.sessions(envelopes.flatMap(namedSession));
    } catch (error) {
      // Each event reads its own session below, and fails (to be redelivered) on its own.
      this.#d.log.warn("reading the batch's sessions failed", { error: errorMessage(error) });
    }
    const rejected: Rejection[] = [];
    const retry: number[] = [];
    let applied = 0;
    const failed = (indexes: readonly number[], error: unknown) => {
      retry.push(...indexes);
      // Contention on one session (a gang's kernels reporting at once) outlasting the
      // re-reads is expected under load and resolves on redelivery: not an error.
      const message = "event processing failed; it will be redelivered";
      if (isConflict(error)) this.#d.log.warn(message, { error: errorMessage(error) });
      else this.#d.log.error(message, { error: errorMessage(error) });
    };
    const outcome = (rejection: Rejection | undefined) => {
      if (rejection) {
        rejected.push(rejection);
        this.#d.log.warn("event rejected", { ...rejection });
      } else applied++;
    };
    const reports = new Map<string, PendingReport[]>();
    for (const [i, envelope] of envelopes.entries()) {
      try {
        const rejection = await this.#ingest(envelope, i, dirty, snapshot, reports);
        if (rejection !== DEFERRED) outcome(rejection);
      } catch (error) {
        failed([i], error);
      }
    }
    // A session's reports in this batch are applied together: one write per session.
    for (const [sessionId, group] of reports) {
      try {
        for (const rejection of await this.#applyReports(sessionId, group, dirty, snapshot))
          outcome(rejection);
      } catch (error) {
        failed(
          group.map((r) => r.index),
          error,
        );
      }
    }
    if (rejected.length > 0) {
      const atMs = this.#d.clock.nowMs();
      await this.#d.events.rejected(
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
        if ((await this.#agents.sweepLost({ sweep: options.sweep === true })) > 0) {
          for (const s of SESSION_STATUSES) dirty.wakeAll(s);
          snapshot.clear();
        }
      }
    } catch (error) {
      // The next heartbeat batch or sweep looks again.
      this.#d.log.error("looking for lost agents failed", { error: errorMessage(error) });
    }
    if (options.sweep) {
      try {
        // Sessions whose execution is gone (issue 11): repair.ts.
        await this.#repair.sweep();
        snapshot.clear();
      } catch (error) {
        this.#d.log.error("repairing sessions without a live execution failed", {
          error: errorMessage(error),
        });
      }
    }
    const progress = await this.#progress(dirty, snapshot, options.sweep === true);
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
   * every kernel): the step starts from it without reading the session again.
   */
  async advance(
    sessionId: string,
    status: SessionStatus,
    written?: SessionWithKernels,
    held?: string,
  ): Promise<Pick<RunReport, "passes" | "completed">> {
    if (held === undefined && written && !mayAdvance(status, written)) return { passes: [], completed: 0 };
    const dirty = new Dirty();
    const snapshot = new RunSnapshot(this.#d.store, this.#agentCache);
    if (written?.session.id === sessionId && written.session.status === status) snapshot.remember([written]);
    // A stage claimed on entry: this run holds its token (see HeldTokens).
    if (held !== undefined) dirty.held.hold(sessionId, status, held);
    dirty.touch(status, sessionId);
    dirty.sessions.add(sessionId);
    const { passes, completed } = await this.#progress(dirty, snapshot, false);
    return { passes, completed };
  }

  /**
   * Writes a held token back (the run neither completed the stage nor wrote a decision with it),
   * so the stage is a target again for the next event or the sweep. Nothing is written when the
   * session has moved on or holds a token already (a retried attempt of the entry wrote its own).
   */
  async #giveBack(
    sessionId: string,
    status: SessionStatus,
    token: string,
    snapshot: RunSnapshot,
  ): Promise<void> {
    await rereadOnConflict(async () => {
      const s = await snapshot.session(sessionId);
      if (!s || s.session.status !== status || s.session.stage.taskToken !== undefined) return;
      snapshot.forget(sessionId);
      await this.#d.store.applyWrite({
        sessionId,
        expected: { status, version: s.session.version },
        nowMs: this.#d.clock.nowMs(),
        stage: { ...s.session.stage, taskToken: token },
      });
    });
  }

  /** What the run's events made possible: jobs settled, cancels honoured, the handler passes. */
  async #progress(
    dirty: Dirty,
    snapshot: RunSnapshot,
    sweep: boolean,
  ): Promise<Pick<RunReport, "passes" | "completed" | "retry">> {
    try {
      return await this.#passes(dirty, snapshot, sweep);
    } finally {
      // Tokens the run held and neither used to complete a stage nor wrote back with a decision.
      for (const { sessionId, status, token } of dirty.held.unused())
        await this.#giveBack(sessionId, status, token, snapshot);
    }
  }

  async #passes(
    dirty: Dirty,
    snapshot: RunSnapshot,
    sweep: boolean,
  ): Promise<Pick<RunReport, "passes" | "completed" | "retry">> {
    const retry: number[] = [];
    const passes: RunReport["passes"][number][] = [];
    let completed = 0;
    const ctx = this.#context(snapshot, dirty.held);
    try {
      for (const id of await this.#jobs.settle([...dirty.ended.keys()], snapshot)) dirty.sessions.add(id);
    } catch (error) {
      // Cascades are idempotent: the status changes that asked for them are redelivered.
      retry.push(...[...dirty.ended.values()].flat());
      this.#d.log.error("job pass failed; its status changes will be redelivered", {
        error: errorMessage(error),
      });
    }
    completed += await this.#cancelPass(dirty, sweep, snapshot);
    for (const pass of PASSES) {
      let outcome: PassOutcome;
      try {
        const targets = await this.#targets(passStatuses(pass), dirty, snapshot);
        if (targets.length === 0) continue;
        outcome = await this.#runPass(pass, targets, ctx, dirty.held);
      } catch (error) {
        // One pass failing must not stall the others or the events already applied; what it
        // left undone is picked up by the next event or the sweep.
        this.#d.log.error("handler pass failed", { pass: passName(pass), error: errorMessage(error) });
        continue;
      }
      passes.push({ name: passName(pass), targets: outcome.targets, decisions: outcome.decisions });
      completed += outcome.completed;
    }
    return { retry, passes, completed };
  }

  #context(snapshot: RunSnapshot, held: HeldTokens): HandlerContext {
    const { store, events, config } = this.#d;
    const nowMs = this.#d.clock.nowMs();
    return {
      store,
      snapshot,
      hold: (sessionId, status, token) => held.hold(sessionId, status, token),
      events,
      commands: this.#commands,
      config,
      nowMs,
      liveAgents: async (refs) => {
        const wanted = new Map([...refs].map((r) => [r.agentId, r.incarnation]));
        const agents = await Promise.all(
          [...wanted].map(([id, incarnation]) => snapshot.agent(id, incarnation)),
        );
        return new Map(
          agents.flatMap((a) => (a && isLiveAgent(a, nowMs, config.agentTimeoutMs) ? [[a.id, a]] : [])),
        );
      },
    };
  }

  // --- inbound events --------------------------------------------------------------------

  async #ingest(
    envelope: unknown,
    index: number,
    dirty: Dirty,
    snapshot: RunSnapshot,
    reports: Map<string, PendingReport[]>,
  ): Promise<Rejection | undefined | typeof DEFERRED> {
    const own = ownStatusChange(envelope);
    if (own) {
      dirty.touch(own.to, own.sessionId);
      dirty.sessions.add(own.sessionId);
      if (TERMINAL_SESSION_STATUSES.has(own.to)) {
        dirty.ended.set(own.sessionId, [...(dirty.ended.get(own.sessionId) ?? []), index]);
      }
      if (freesCapacity(own)) dirty.wakeAll(SessionStatus.PENDING);
      return undefined;
    }
    const parsed = parseInboundEvent(envelope);
    if (!parsed.ok) {
      const { eventId, detailType, message } = parsed.error;
      if (detailType === DetailType.SessionSubmitted)
        await this.#jobs.refuse(submissionOf(envelope), message);
      return { eventId, detailType, reason: message };
    }
    return this.#apply(parsed.event, index, dirty, snapshot, reports);
  }

  async #apply(
    event: InboundEvent,
    index: number,
    dirty: Dirty,
    snapshot: RunSnapshot,
    reports: Map<string, PendingReport[]>,
  ): Promise<Rejection | undefined | typeof DEFERRED> {
    const { store } = this.#d;
    const reject = (reason: string): Rejection => rejectionOf(event, reason);
    switch (event.detailType) {
      case DetailType.SessionSubmitted: {
        const id = event.detail.sessionId ?? `s-${event.id.toLowerCase()}`;
        const { spec } = event.detail;
        // Kept where the submitter reads it (issue 11): `submit` waits for it, `get` says why.
        const refuse = async (reason: string) =>
          reject(await this.#jobs.refuse({ id, eventId: event.id }, reason));
        // A spec whose kernel commands could never be sent is refused now, not stranded later.
        const tooLarge = submissionSizeIssue(event.detail.sessionId, spec);
        if (tooLarge) return refuse(`detail.${tooLarge.path}: ${tooLarge.message}`);
        const queue = await this.#catalog.queue(spec.queue);
        if (!queue && spec.queue !== DEFAULT_QUEUE && !(await store.getJob(id))) {
          return refuse(
            `detail.spec.queue: no queue named "${spec.queue}" (create it with \`cairn queue create\`)`,
          );
        }
        // A queue's priority orders its sessions among other queues': it is added to the
        // session's own, and the sum is what the session is queued by.
        const queued =
          queue && queue.priority !== 0 ? { ...spec, priority: spec.priority + queue.priority } : spec;
        const outcome = await this.#jobs.submit(id, queued);
        if (!outcome.ok) return refuse(outcome.reason);
        for (const sessionId of outcome.sessionIds) dirty.sessions.add(sessionId);
        return undefined;
      }
      case DetailType.SessionCancelRequested: {
        const { sessionId } = event.detail;
        const reason = event.detail.reason ?? "cancel requested";
        // A session, or a job of independent tasks (whose sessions are <id>-t<index>).
        if (await this.#jobs.requestCancel(sessionId, reason, snapshot)) {
          dirty.sessions.add(sessionId);
          return undefined;
        }
        const cancelled = await this.#jobs.cancelJob(sessionId, reason, snapshot);
        if (!cancelled) return reject(`detail.sessionId: no session or job ${sessionId}`);
        for (const id of cancelled) dirty.sessions.add(id);
        return undefined;
      }
      case DetailType.KernelStatusChanged: {
        // Applied after the batch's other events, together with the session's other reports.
        const group = reports.get(event.detail.sessionId) ?? [];
        group.push({ index, event });
        reports.set(event.detail.sessionId, group);
        return DEFERRED;
      }
      case DetailType.AgentHeartbeat: {
        dirty.agentsHeard = true;
        const outcome = await this.#agents.heartbeat(event.detail);
        if ("refused" in outcome) return reject(outcome.refused);
        // Capacity only appears with a returning agent (or leaves with a draining one); a
        // routine heartbeat must not trigger a scheduling pass over the whole queue.
        if (outcome.wake) dirty.wakeAll(SessionStatus.PENDING);
        return undefined;
      }
      case DetailType.AgentRegistrationRequested: {
        dirty.agentsHeard = true;
        const { retired } = await this.#agents.register(event.detail);
        this.#agentCache.forget(event.detail.agentId);
        dirty.wakeAll(SessionStatus.PENDING);
        if (retired) {
          // The old incarnation's kernels ended WORKER_FAILED: sessions past PENDING (RUNNING
          // ones waiting for DetectTermination) move on now, as after an agent lost by silence.
          for (const s of SESSION_STATUSES) dirty.wakeAll(s);
          snapshot.clear();
        }
        return undefined;
      }
    }
  }

  /**
   * A session's kernel reports of one batch: each checked (only the agent the kernel is placed
   * on may report it, signed, for the current run), then all applied in one write of the kernels
   * they change, re-reading on a conflict. Returns each report's rejection, or undefined where it
   * was applied.
   */
  async #applyReports(
    sessionId: string,
    group: readonly PendingReport[],
    dirty: Dirty,
    snapshot: RunSnapshot,
  ): Promise<(Rejection | undefined)[]> {
    return rereadOnConflict(async () => {
      const s = await snapshot.session(sessionId);
      if (!s)
        return group.map(({ event }) => rejectionOf(event, `detail.sessionId: no session ${sessionId}`));
      const outcomes: (Rejection | undefined)[] = [];
      const accepted: KernelStatusChangedDetail[] = [];
      for (const { event } of group) {
        const refusal = await this.#agents.checkReport(event.detail, s, (id) =>
          snapshot.agent(id, event.detail.incarnation),
        );
        outcomes.push(refusal ? rejectionOf(event, refusal.refused) : undefined);
        if (!refusal) accepted.push(event.detail);
      }
      const nowMs = this.#d.clock.nowMs();
      const effect = reportsEffect(s, accepted, nowMs);
      if (effect.kind === "none") {
        dirty.touch(s.session.status, sessionId);
        return outcomes;
      }
      // Written or conflicting, the copy read is out of date either way.
      snapshot.forget(sessionId);
      if (effect.kind === "claim") await this.#d.store.applyWrite(effect.write);
      // The kernels alone, each at the version read: a stage entry or claim of the session
      // meanwhile does not make the reports conflict, only a write to the same kernel does.
      else
        await this.#d.store.patchKernels(
          sessionId,
          { status: s.session.status, version: s.session.version },
          effect.patches,
          nowMs,
        );
      if (effect.kind === "claim") {
        // The reports decided the stage: the run holds its token and knows the session exactly.
        snapshot.remember([sessionAfterWrite(s, effect.write)]);
        dirty.held.hold(sessionId, s.session.status, effect.token);
        dirty.touch(s.session.status, sessionId);
        return outcomes;
      }
      // The passes act on the session as of after the write, not as first read: a stage entry
      // written meanwhile is seen by them or (its kernel guards failing) sees the reports itself.
      const after = await snapshot.session(sessionId);
      if (after) dirty.touch(after.session.status, sessionId);
      return outcomes;
    });
  }

  // --- passes ------------------------------------------------------------------------------

  /** A pass's targets: every waiting session of its statuses, or only those the events named. */
  async #targets(
    statuses: readonly SessionStatus[],
    dirty: Dirty,
    snapshot: RunSnapshot,
  ): Promise<SessionWithKernels[]> {
    if (statuses.some((s) => dirty.full.has(s))) {
      const page = await this.#d.store.targetsByStatus({
        statuses,
        limit: this.#d.config.batchLimit,
        targetableOnly: true,
      });
      snapshot.remember(page);
      return page;
    }
    const ids = dirty.touched(statuses);
    if (ids.length === 0) return [];
    const sessions = (await snapshot.sessions(ids)).filter(
      ({ session }) =>
        statuses.includes(session.status) &&
        (session.stage.taskToken !== undefined || dirty.held.get(session.id) !== undefined),
    );
    const ahead = await this.#waitingAhead(statuses, sessions);
    snapshot.remember(ahead);
    return [...sessions, ...ahead].sort(queueOrder);
  }

  /**
   * A targeted scheduling pass lets the waiting sessions of higher priority go first, as a full
   * pass does: otherwise a lower-priority session (say, a preempted one back in the queue) could
   * take capacity a higher-priority one waits for, and be preempted again. A few are enough: it
   * is the head of the queue that is owed the capacity.
   */
  async #waitingAhead(
    statuses: readonly SessionStatus[],
    targets: readonly SessionWithKernels[],
  ): Promise<SessionWithKernels[]> {
    if (!statuses.includes(SessionStatus.PENDING)) return [];
    const pending = targets.filter((t) => t.session.status === SessionStatus.PENDING);
    if (pending.length === 0) return [];
    const have = new Set(targets.map((t) => t.session.id));
    const ahead = await this.#d.store.targetsByStatus({
      statuses: [SessionStatus.PENDING],
      limit: Math.min(this.#d.config.batchLimit, WAITING_AHEAD_LIMIT),
      targetableOnly: true,
      abovePriority: Math.min(...pending.map((t) => t.session.spec.priority)),
    });
    return ahead.filter((s) => !have.has(s.session.id));
  }

  async #runPass(
    pass: Pass,
    targets: readonly SessionWithKernels[],
    ctx: HandlerContext,
    held: HeldTokens,
  ): Promise<PassOutcome> {
    // Issue 11: a run that can never start ends FAILED here instead of reaching its handler again.
    if (pass.kind === "lifecycle") {
      const { ending, rest } = partitionUnrecoverable(targets, pass.handler.spec.name, this.#d.clock.nowMs());
      if (ending.length > 0) {
        const ended = await this.#carryOut(ending, targets, ctx.snapshot, held);
        const others = rest.length > 0 ? await this.#runPass(pass, rest, ctx, held) : undefined;
        return {
          targets: targets.length,
          decisions: ending.length + (others?.decisions ?? 0),
          completed: ended + (others?.completed ?? 0),
        };
      }
    }
    const judged = targets.map(toJudged);
    let decisions: Decision[];
    let preempted = 0;
    if (pass.kind === "lifecycle") {
      let result = await pass.handler.execute(targets, ctx);
      // Sessions that could not be placed may preempt lower-priority ones (issue 6).
      if (pass.handler.spec.name === "ScheduleNewSessions") {
        ({ result, completed: preempted } = await this.#preemption.afterSchedule(targets, result));
      }
      decisions = judge({
        handler: pass.handler.spec,
        result,
        targets: judged,
        nowMs: this.#d.clock.nowMs(),
      });
    } else {
      decisions = judgePromotions(
        pass.spec,
        sessionsToPromote(pass.spec, targets),
        judged,
        this.#d.clock.nowMs(),
      );
    }
    const completed = preempted + (await this.#carryOut(decisions, targets, ctx.snapshot, held));
    return { targets: targets.length, decisions: decisions.length, completed };
  }

  /** Writes each decision; completes the stage's callback for those that change status. */
  async #carryOut(
    decisions: readonly Decision[],
    targets: readonly SessionWithKernels[],
    snapshot: RunSnapshot,
    held: HeldTokens,
  ): Promise<number> {
    const interval = this.#d.skipRecordIntervalMs ?? 30_000;
    const read = new Map(targets.map((t) => [t.session.id, t.session]));
    // A skip repeating the session's latest record is not rewritten: decide that before reading
    // again what the pass wrote.
    const worthWriting = decisions.filter(
      (d) =>
        d.result !== SchedulingResult.SKIPPED ||
        !isRecentRepeat(read.get(d.sessionId)?.lastHistory, d.history, interval),
    );
    if (worthWriting.length === 0) return 0;
    // The run's copies; those the pass wrote (a placement, kernel patches) are read again. A copy
    // that is out of date otherwise makes the conditional write below fail, and the next event
    // or the sweep judges the session afresh.
    const fresh = new Map(
      (await snapshot.sessions(worthWriting.map((d) => d.sessionId))).map((s) => [s.session.id, s]),
    );
    let completed = 0;
    await Promise.all(
      worthWriting.map(async (decision) => {
        const s = fresh.get(decision.sessionId);
        // The session moved on since it was read as a target: the next run judges it afresh.
        if (!s || s.session.status !== decision.fromStatus) return;
        if (
          decision.result === SchedulingResult.SKIPPED &&
          isRecentRepeat(s.session.lastHistory, decision.history, interval)
        ) {
          return;
        }
        // A stage claimed on entry holds no token in the table: this run holds it.
        const heldToken = s.session.stage.taskToken === undefined ? held.get(s.session.id) : undefined;
        if (heldToken !== undefined) {
          completed += await this.#carryOutHeld(s, decision, heldToken, held);
          return;
        }
        const token = s.session.stage.taskToken;
        if (decision.complete && token === undefined) return;
        // A run leaving TERMINATING is judged first: retried (back to PENDING) or finished.
        const judged = decision.complete ? await this.#judgeRun(s, decision.complete) : undefined;
        // Issue 11: the run's record is written with the claim; the callback carries its index.
        const { transition, run } = judged
          ? callbackPayload(judged)
          : { transition: undefined, run: undefined };
        const write = decisionWrite(s.session, decision, this.#d.clock.nowMs());
        try {
          snapshot.forget(s.session.id);
          await this.#d.store.applyWrite(run ? { ...write, run } : write);
        } catch (error) {
          if (isConflict(error)) return;
          throw error;
        }
        if (transition && token !== undefined) {
          await this.#complete(s.session.id, token, transition, sessionAfterWrite(s, write));
          completed++;
        }
      }),
    );
    return completed;
  }

  /**
   * A decision on a stage claimed on entry (its token held by this run): a status change needs
   * no claim, the stage is completed at once with the copy as the next entry's start; a
   * decision that keeps the session waiting is written with the token put back. Returns the
   * stages completed (0 or 1).
   */
  async #carryOutHeld(
    s: SessionWithKernels,
    decision: Decision,
    token: string,
    held: HeldTokens,
  ): Promise<number> {
    const nowMs = this.#d.clock.nowMs();
    if (!decision.complete) {
      const write = decisionWrite(s.session, decision, nowMs);
      try {
        await this.#d.store.applyWrite({ ...write, stage: { ...s.session.stage, taskToken: token } });
      } catch (error) {
        // The run's end writes the token back (Coordinator.advance).
        if (isConflict(error)) return 0;
        throw error;
      }
      held.use(s.session.id);
      return 0;
    }
    const judged = await this.#judgeRun(s, decision.complete);
    const { transition, run } = callbackPayload(judged);
    if (run && JSON.stringify(run).length > MAX_CARRIED_RUN_CHARS) {
      // Too large for the callback: the record goes to the table, the transition names its index.
      try {
        await this.#d.store.applyWrite({ ...decisionWrite(s.session, decision, nowMs), run });
      } catch (error) {
        if (isConflict(error)) return 0;
        throw error;
      }
      held.use(s.session.id);
      await this.#complete(s.session.id, token, transition);
    } else {
      held.use(s.session.id);
      // Small enough to travel with the transition: the next entry writes it with the status.
      const { runIndex: _inTable, ...carried } = transition;
      await this.#complete(s.session.id, token, run ? { ...carried, run } : transition, s);
    }
    return 1;
  }

  /** A run leaving TERMINATING, judged (core/coordinator/finished-run.ts) with the catalog it needs. */
  async #judgeRun(s: SessionWithKernels, t: StageTransition): Promise<StageTransition> {
    const nowMs = this.#d.clock.nowMs();
    if (!runNeedsRetryCatalog(s, t)) return judgeFinishedRun(s, t, nowMs);
    const [config, resolution] = await Promise.all([
      this.#catalog.config(),
      this.#catalog.policiesFor(s.session),
    ]);
    if (resolution.missing.length > 0) {
      this.#d.log.warn("retry policies named but not found", {
        sessionId: s.session.id,
        missing: resolution.missing,
      });
    }
    return judgeFinishedRun(s, t, nowMs, { config, policies: resolution.policies });
  }

  /**
   * Completes the stage's callback. When the token is closed, a retried attempt of the stage may
   * hold a newer one (issue 11: each attempt of a callback state gets its own token): that one is
   * claimed and completed instead. Otherwise the stage's own timer fired first and the execution
   * has moved on along its EXPIRED path.
   */
  async #complete(
    sessionId: string,
    token: string,
    transition: StageTransition,
    known?: SessionWithKernels,
  ): Promise<void> {
    let current = token;
    for (let hop = 0; hop < MAX_TOKEN_HOPS; hop++) {
      // The claim's copy goes with the first completion: the next state's entry starts from it.
      const sent = hop === 0 && known ? { ...transition, known } : transition;
      if ((await this.#d.executions.complete(current, sent)) === "completed") return;
      const s = await this.#d.store.getSession(sessionId);
      const newer = s?.session.stage.taskToken;
      if (!s || s.session.status !== transition.from || newer === undefined || newer === current) break;
      try {
        await this.#d.store.applyWrite({
          sessionId,
          expected: { status: s.session.status, version: s.session.version },
          nowMs: this.#d.clock.nowMs(),
          claimStage: true,
        });
      } catch (error) {
        if (isConflict(error)) break;
        throw error;
      }
      this.#d.log.info("completing the retried stage's newer token", { sessionId, from: transition.from });
      current = newer;
    }
    this.#d.log.info("stage already closed", { sessionId, from: transition.from, to: transition.to });
  }

  /** Honours cancel requests of sessions waiting in a stage: PRE-start → CANCELLED, else TERMINATING. */
  async #cancelPass(dirty: Dirty, sweep: boolean, snapshot: RunSnapshot): Promise<number> {
    const candidates = sweep
      ? await this.#d.store.targetsByStatus({
          statuses: WAITING_SESSION_STATUSES,
          limit: this.#d.config.batchLimit,
          targetableOnly: true,
        })
      : dirty.sessions.size > 0
        ? await snapshot.sessions(dirty.sessions)
        : [];
    let completed = 0;
    for (const candidate of candidates) {
      const { session } = candidate;
      const heldToken = session.stage.taskToken === undefined ? dirty.held.get(session.id) : undefined;
      const token = session.stage.taskToken ?? heldToken;
      if (
        session.cancelRequestedAtMs === undefined ||
        token === undefined ||
        !isWaitingStatus(session.status)
      ) {
        continue;
      }
      const to = STAGES[session.status].onCancel;
      if (to === session.status) continue;
      const transition: StageTransition = {
        from: session.status,
        to,
        result: "CANCELLED",
        handler: "Cancel",
        message: "cancel requested",
      };
      if (heldToken !== undefined) {
        // Claimed on entry: nothing to write before completing.
        dirty.held.use(session.id);
        await this.#complete(session.id, heldToken, transition, candidate);
        completed++;
        continue;
      }
      snapshot.forget(session.id);
      const claim: SessionWrite = {
        sessionId: session.id,
        expected: { status: session.status, version: session.version },
        nowMs: this.#d.clock.nowMs(),
        claimStage: true,
      };
      try {
        await this.#d.store.applyWrite(claim);
      } catch (error) {
        if (isConflict(error)) continue;
        throw error;
      }
      await this.#complete(session.id, token, transition, sessionAfterWrite(candidate, claim));
      completed++;
    }
    return completed;
  }
}

/** A stage's token replaced more often than this while completing it is left to the next pass. */
const MAX_TOKEN_HOPS = 3;
/**
 * A finished run's record up to this size travels with the transition of a stage claimed on
 * entry (the next entry writes it); a larger one is written to the table first.
 */
const MAX_CARRIED_RUN_CHARS = 8_192;
/** A transition's message in a callback payload (the history keeps what it carries). */
const MAX_TRANSITION_MESSAGE_CHARS = 4_096;

/**
 * Issue 11: a callback payload is small by construction (Step Functions: 256 KiB). The run's
 * record (every kernel's message) goes to the table; the transition carries its index and a
 * capped message.
 */
function callbackPayload(judged: StageTransition): { transition: StageTransition; run?: RunRecord } {
  const { run, ...rest } = judged;
  const message =
    rest.message !== undefined && rest.message.length > MAX_TRANSITION_MESSAGE_CHARS
      ? `${rest.message.slice(0, MAX_TRANSITION_MESSAGE_CHARS - 1)}…`
      : rest.message;
  const transition: StageTransition = {
    ...rest,
    ...(message !== undefined ? { message } : {}),
    ...(run ? { runIndex: run.runIndex } : {}),
  };
  return run ? { transition, run } : { transition };
}

/** The status queues' order: highest priority first, then oldest, then id. */
function queueOrder(a: SessionWithKernels, b: SessionWithKernels): number {
  return (
    b.session.spec.priority - a.session.spec.priority ||
    a.session.createdAtMs - b.session.createdAtMs ||
    a.session.id.localeCompare(b.session.id)
  );
}

/**
 * Whether a session that just entered `status`, as `entered` shows it (its kernels as the entry
 * was written against: the entry only moves kernels forward to the stage's own status, never
 * past what a report set), might be moved on by a pass now. Only a stage whose passes are all
 * promotions can be told without a read: none matches its kernels, and no cancel is asked for.
 * Otherwise a report still to come moves it, through the report queue.
 */
function mayAdvance(status: SessionStatus, written: SessionWithKernels): boolean {
  if (written.session.cancelRequestedAtMs !== undefined) return true;
  const passes = PASSES.filter((p) => passStatuses(p).includes(status));
  if (passes.some((p) => p.kind === "lifecycle")) return true;
  return promotionDue({ session: { ...written.session, status }, kernels: written.kernels });
}

/** A session leaving its agents (or re-queued) frees capacity the whole queue may use. */
function freesCapacity({ from, to }: { from: SessionStatus; to: SessionStatus }): boolean {
  if (to === SessionStatus.TERMINATED || to === SessionStatus.CANCELLED) return true;
  return to === SessionStatus.PENDING && from !== SessionStatus.PENDING;
}

function toJudged({ session }: SessionWithKernels): JudgedTarget {
  const status = session.status;
  return {
    sessionId: session.id,
    status,
    tries: session.tries,
    maxTries: isWaitingStatus(status) ? session.spec.maxTries[stageKey(status)] : 1,
    expiresAtMs: session.stage.expiresAtMs,
  };
}

/** The id and event id of a submission that did not parse, as far as they can be read. */
function submissionOf(envelope: unknown): { id?: unknown; eventId?: unknown } {
  if (typeof envelope !== "object" || envelope === null) return {};
  const e = envelope as Record<string, unknown>;
  const detail = e["detail"];
  const id =
    typeof detail === "object" && detail !== null
      ? (detail as Record<string, unknown>)["sessionId"]
      : undefined;
  return { id, eventId: e["id"] };
}

/** The control plane's own "Session Status Changed" events only wake passes. */
function ownStatusChange(
  envelope: unknown,
): { sessionId: string; from: SessionStatus; to: SessionStatus } | undefined {
  if (typeof envelope !== "object" || envelope === null) return undefined;
  const e = envelope as Record<string, unknown>;
  if (e["source"] !== EventSource.ControlPlane || e["detail-type"] !== DetailType.SessionStatusChanged) {
    return undefined;
  }
  const detail = SessionStatusChangedDetailSchema.safeParse(e["detail"]);
  return detail.success
    ? { sessionId: detail.data.sessionId, from: detail.data.from, to: detail.data.to }
    : undefined;
}

/** The session an event names, for reading the batch's sessions together (submissions: none yet). */
function namedSession(envelope: unknown): string[] {
  if (typeof envelope !== "object" || envelope === null) return [];
  const e = envelope as Record<string, unknown>;
  const type = e["detail-type"];
  if (
    type !== DetailType.KernelStatusChanged &&
    type !== DetailType.SessionStatusChanged &&
    type !== DetailType.SessionCancelRequested
  ) {
    return [];
  }
  const detail = e["detail"];
  const id =
    typeof detail === "object" && detail !== null
      ? (detail as Record<string, unknown>)["sessionId"]
      : undefined;
  return typeof id === "string" && id.length > 0 && id.length <= 256 ? [id] : [];
}
