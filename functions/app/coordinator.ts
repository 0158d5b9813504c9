/**
 * The coordinator: one run applies a batch of inbound events (submissions, cancels, kernel
 * reports, heartbeats, and the control plane's own status changes), then runs the handler
 * passes those events make possible, judges their results with the pure core, and carries the
 * decisions out: history and try counts are written here; a status change is claimed here and
 * applied by the lifecycle execution when the stage's callback is completed.
 */
import type { CairnConfig } from "../config.ts";
import type { Decision } from "../core/coordinator/decide.ts";
import type { RetryCatalogView } from "../core/coordinator/finished-run.ts";
import {
  jobsToCheck,
  queuesNamed,
  submissionId,
  type Applied,
  type BatchEvent,
  type EventAction,
  type Rejection,
  type SessionReport,
  type Wake,
} from "../core/coordinator/inbound.ts";
import { parseTaskEvent, type TaskStateReport } from "../core/coordinator/task-reports.ts";
import {
  givenBack,
  needsRetryCatalog,
  type CarryOutPlan,
  type PassResultEffects,
} from "../core/coordinator/passes.ts";
import { step, type StepInput } from "../core/coordinator/step.ts";
import type { SessionWrite } from "../core/effects.ts";
import { DetailType, EventSource, parseInboundEvent, type InboundEvent } from "../core/events.ts";
import { SessionStatusChangedDetailSchema } from "../core/session-events.ts";
import { isLiveAgent, type Queue, type SessionWithKernels, type StageTransition } from "../core/model.ts";
import type { SessionStore } from "../core/ports/store.ts";
import { promotionDue } from "../core/promotion.ts";
import { SESSION_STATUSES, WAITING_SESSION_STATUSES, SessionStatus } from "../core/status.ts";
import { sessionAfterWrite } from "../core/session-after-write.ts";
import { errorMessage, type HandlerContext } from "./lifecycle/handler.ts";
import { isConflict, rereadOnConflict, unlessConflict } from "./reread.ts";
import { PASSES, passName, passStatuses, type Pass } from "./passes.ts";
import type { AgentChannelPort } from "../core/ports/agent-channel.ts";
import type { Clock } from "../core/ports/clock.ts";
import type { EventsPort } from "../core/ports/event-bus.ts";
import type { LifecycleExecutionsPort } from "../core/ports/lifecycle-executions.ts";
import { Agents } from "./agents.ts";
import type { FargateKernels } from "./fargate-kernels.ts";
import { KernelCommands } from "./kernel-commands.ts";
import type { Logger } from "./logger.ts";
import { Jobs, type SubmitOutcome } from "./jobs.ts";
import { Drafts, startDraftSubmissions, writtenSpec } from "./drafts.ts";
import pLimit from "p-limit";
import { Admission, type AdmissionDeps, type AdmissionPlan } from "./admission.ts";
import type { TemplateRepository } from "../core/ports/templates.ts";
import { Preemption } from "./preemption.ts";
import { Repair } from "./repair.ts";
import type { FailureCategoryRepository } from "../core/ports/failure-categories.ts";
import { RetryCatalog } from "./retry-catalog.ts";
import { judgeExpiry, type ExpiryJudged, type ExpiryJudgement } from "./expiry-judge.ts";
import { AgentCache, agentCacheTtlMs, RunSnapshot } from "./snapshot.ts";
import type { LeaseRepository } from "../core/ports/leases.ts";
import { serialized } from "./serialized.ts";
import { compareQueueOrder } from "../core/queue-order.ts";

export interface CoordinatorDeps {
  readonly store: SessionStore;
  readonly executions: LifecycleExecutionsPort;
  readonly events: EventsPort;
  readonly channel: AgentChannelPort;
  /** Kernels as ECS tasks; absent when the stack has no Fargate executor. */
  readonly fargate?: FargateKernels;
  readonly config: CairnConfig;
  readonly clock: Clock;
  readonly log: Logger;
  /** Repeated identical SKIPPED records closer together than this are not rewritten. */
  readonly skipRecordIntervalMs?: number;
  /** Job templates; absent, only the built-in Default exists. */
  readonly templates?: TemplateRepository;
  /** Failure categories operators define; absent, the agents' built-in categories stand. */
  readonly failureCategories?: Pick<FailureCategoryRepository, "listFailureCategories">;
  /** The administrator's submission filter; absent, submissions are not filtered. */
  readonly submissionFilter?: AdmissionDeps["filter"];
  /**
   * How long a claimer may live (the longest timeout of the functions that claim stages): a
   * claim older than this outlived its claimer, and the sweep gives its token back. @default 60000
   */
  readonly claimLifetimeMs?: number;
  /**
   * Placement serialized per scheduling queue by a lease in the table (serialized.ts), held at
   * most `leaseMs` (the function's timeout). Absent: a run places every queue's targets itself.
   */
  readonly placementLeases?: { readonly leases: LeaseRepository; readonly leaseMs: number };
}

/** The lease that serializes a scheduling queue's placement. */
export const placementLeaseKey = (queue: string): string => `placement#${queue}`;

export type { Rejection };

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
  /** Stages this run claimed itself (a placement, reports that decided them): see OwnClaims. */
  readonly claims = new OwnClaims();

  touch(status: SessionStatus, sessionId: string): void {
    let ids = this.byStatus.get(status);
    if (!ids) this.byStatus.set(status, (ids = new Set()));
    ids.add(sessionId);
  }

  wakeAll(status: SessionStatus): void {
    this.full.add(status);
  }

  /** What the step said a batch's events wake. */
  apply(wake: Wake): void {
    for (const s of wake.full) this.wakeAll(s);
    for (const [status, id] of wake.touched) this.touch(status, id);
    for (const id of wake.cancelCheck) this.sessions.add(id);
    for (const [id, index] of wake.ended) this.ended.set(id, [...(this.ended.get(id) ?? []), index]);
    if (wake.agentsHeard) this.agentsHeard = true;
  }

  /** Sessions touched in any of `statuses`. */
  touched(statuses: readonly SessionStatus[]): string[] {
    return statuses.flatMap((s) => [...(this.byStatus.get(s) ?? [])]);
  }
}

/**
 * Stages this run claimed before judging them (a placement's reservation, kernel reports that
 * decided the stage). The claim is in the table (`stage.claimedToken`): this only says which
 * claims are this run's own, to complete or give back. Each is used once; what is left unused is
 * given back when the run ends, and a claim whose run died is given back by the sweep.
 */
class OwnClaims {
  readonly #claimed = new Map<string, SessionStatus>();
  readonly #used = new Set<string>();

  add(sessionId: string, status: SessionStatus): void {
    this.#claimed.set(sessionId, status);
    this.#used.delete(sessionId);
  }

  /** Whether the session's stage is this run's claim, not yet used. */
  has(sessionId: string): boolean {
    return this.#claimed.has(sessionId) && !this.#used.has(sessionId);
  }

  use(sessionId: string): void {
    this.#used.add(sessionId);
  }

  /** The claims not used, by session. */
  ids(): ReadonlySet<string> {
    return new Set(this.unused().map((c) => c.sessionId));
  }

  unused(): { sessionId: string; status: SessionStatus }[] {
    return [...this.#claimed].flatMap(([sessionId, status]) =>
      this.#used.has(sessionId) ? [] : [{ sessionId, status }],
    );
  }
}

interface PassOutcome {
  readonly targets: number;
  readonly decisions: number;
  readonly completed: number;
}

type KernelReportEvent = Extract<InboundEvent, { detailType: typeof DetailType.KernelStatusChanged }>;

type PendingReport =
  /** The event's index in the batch. */
  | { readonly index: number; readonly event: KernelReportEvent }
  /** A Fargate task's report (core/coordinator/task-reports.ts). */
  | { readonly index: number; readonly task: TaskStateReport };

/** Higher-priority waiting sessions a targeted scheduling pass also tries, first. */
const WAITING_AHEAD_LIMIT = 10;

function isPlacement(pass: Pass): boolean {
  return pass.kind === "lifecycle" && pass.handler.spec.name === "ScheduleNewSessions";
}

export class Coordinator {
  readonly #d: CoordinatorDeps;
  readonly #catalog: RetryCatalog;
  readonly #jobs: Jobs;
  readonly #drafts: Drafts;
  readonly #admission: Admission;
  readonly #preemption: Preemption;
  readonly #agents: Agents;
  readonly #commands: KernelCommands;
  readonly #repair: Repair;
  /** Agents as recently read, across this instance's runs (snapshot.ts). */
  readonly #agentCache: AgentCache;
  readonly #skipRecordIntervalMs: number;
  /** When the sweep last looked for claims whose claimer died (#recoverClaims). */
  #claimsCheckedAtMs = Number.NEGATIVE_INFINITY;

  constructor(deps: CoordinatorDeps) {
    this.#d = deps;
    this.#skipRecordIntervalMs = deps.skipRecordIntervalMs ?? 30_000;
    this.#agentCache = new AgentCache(deps.store, deps.clock, agentCacheTtlMs(deps.config.agentTimeoutMs));
    this.#agents = new Agents(deps);
    this.#commands = new KernelCommands(deps.store, deps.channel, deps.fargate);
    this.#jobs = new Jobs(deps);
    this.#drafts = new Drafts(deps);
    this.#preemption = new Preemption(deps);
    this.#catalog = new RetryCatalog(
      deps.store,
      deps.clock,
      deps.config.retryCacheMs,
      deps.failureCategories,
    );
    this.#admission = new Admission({
      ...deps,
      ...(deps.templates ? { templates: deps.templates } : {}),
      ...(deps.submissionFilter ? { filter: deps.submissionFilter } : {}),
      queue: (name) => this.#catalog.queue(name),
      cacheMs: deps.config.retryCacheMs,
    });
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
    const { applied, rejected, retry } = await this.#applyEvents(envelopes, dirty, snapshot);
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
        await this.#recoverClaims(snapshot);
      } catch (error) {
        // The next sweep looks again.
        this.#d.log.error("looking for claims whose claimer died failed", { error: errorMessage(error) });
      }
      try {
        // Sessions whose execution is gone: repair.ts.
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
    const snapshot = new RunSnapshot(this.#d.store, this.#agentCache);
    if (written?.session.id === sessionId && written.session.status === status) snapshot.remember([written]);
    if (claimed) dirty.claims.add(sessionId, status);
    dirty.touch(status, sessionId);
    dirty.sessions.add(sessionId);
    const { passes, completed } = await this.#progress(dirty, snapshot, false);
    return { passes, completed };
  }

  /**
   * The PENDING timer ran out before any pass judged the expiry (the execution's
   * JudgePendingExpiry state): judged with the same catalog a pass would read (expiry-judge.ts).
   */
  judgeExpiry(input: ExpiryJudgement): Promise<ExpiryJudged> {
    return judgeExpiry(input, {
      store: this.#d.store,
      clock: this.#d.clock,
      retryCatalog: (s) => this.#retryCatalog(s),
    });
  }

  /**
   * Gives a claimed stage's token back (the run neither completed the stage nor wrote a decision
   * with it), so the stage is a target again for the next event or the sweep. Nothing is written
   * when the session has moved on or its claim is gone (a retried attempt of the entry wrote a
   * token of its own).
   */
  async #giveBack(sessionId: string, status: SessionStatus, snapshot: RunSnapshot): Promise<boolean> {
    return rereadOnConflict(async (n) => {
      if (n > 1) snapshot.forget(sessionId);
      const s = await snapshot.session(sessionId);
      if (!s || s.session.status !== status || s.session.stage.claimedToken === undefined) return false;
      if (s.session.stage.taskToken !== undefined) return false;
      snapshot.forget(sessionId);
      await this.#d.store.applyWrite({
        sessionId,
        expected: { status, version: s.session.version },
        nowMs: this.#d.clock.nowMs(),
        stage: givenBack(s.session.stage),
      });
      return true;
    });
  }

  /**
   * The sweep's look for claims whose claimer died between claiming a stage and completing it
   * (an invocation killed or timed out): a claim older than any claimer lives has its token given
   * back, and the sweep's passes judge the session afresh — within one sweep period of the
   * claimer's end, rather than at the stage's expiry. A claim whose completion did go through is
   * replaced by the next stage's entry within moments, so it is not found here.
   */
  async #recoverClaims(snapshot: RunSnapshot): Promise<number> {
    // A claim is recovered only once it is a lifetime old: looking more often than a quarter of
    // that finds nothing new (and the embedded runtime sweeps every few seconds).
    const lifetimeMs = this.#d.claimLifetimeMs ?? DEFAULT_CLAIM_LIFETIME_MS;
    const nowMs = this.#d.clock.nowMs();
    if (nowMs - this.#claimsCheckedAtMs < lifetimeMs / 4) return 0;
    this.#claimsCheckedAtMs = nowMs;
    const claimed = await this.#d.store.targetsByStatus({
      statuses: WAITING_SESSION_STATUSES,
      limit: this.#d.config.batchLimit,
      claimedOnly: true,
    });
    const before = nowMs - lifetimeMs;
    let recovered = 0;
    for (const s of claimed) {
      const { status, stage, id } = s.session;
      if (stage.claimedAtMs === undefined || stage.claimedAtMs > before) continue;
      snapshot.remember([s]);
      if (await unlessConflict(() => this.#giveBack(id, status, snapshot))) {
        recovered++;
        this.#d.log.warn("a stage's claim outlived its claimer; its token is given back", {
          sessionId: id,
          status,
          claimedAtMs: stage.claimedAtMs,
        });
      }
    }
    return recovered;
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
      // Claims the run made and neither used to complete a stage nor wrote back with a decision.
      for (const { sessionId, status } of dirty.claims.unused())
        await this.#giveBack(sessionId, status, snapshot);
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
    const ctx = this.#context(snapshot, dirty.claims);
    try {
      for (const id of await this.#jobs.settle([...dirty.ended.keys()], snapshot)) dirty.sessions.add(id);
    } catch (error) {
      // Cascades are idempotent: the status changes that asked for them are redelivered.
      retry.push(...[...dirty.ended.values()].flat());
      this.#d.log.error("job pass failed; its status changes will be redelivered", {
        error: errorMessage(error),
      });
    }
    if (sweep) {
      try {
        // Jobs past their run-time limit (timeouts.job) are cancelled: checked on every sweep.
        for (const id of await this.#jobs.enforceRunTimeLimits(snapshot)) dirty.sessions.add(id);
      } catch (error) {
        // The next sweep looks again.
        this.#d.log.error("checking job run-time limits failed", { error: errorMessage(error) });
      }
    }
    completed += await this.#cancelPass(dirty, sweep, snapshot);
    for (const pass of PASSES) {
      let outcome: PassOutcome;
      try {
        const targets = await this.#targets(passStatuses(pass), dirty, snapshot);
        if (targets.length === 0) continue;
        outcome =
          isPlacement(pass) && this.#d.placementLeases
            ? await this.#placeByQueue(pass, targets, snapshot, dirty.claims, this.#d.placementLeases)
            : await this.#runPass(pass, targets, ctx, dirty.claims);
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

  #context(snapshot: RunSnapshot, claims: OwnClaims): HandlerContext {
    const { store, events, config } = this.#d;
    const nowMs = this.#d.clock.nowMs();
    return {
      store,
      snapshot,
      claimed: (sessionId, status) => claims.add(sessionId, status),
      events,
      commands: this.#commands,
      ...(this.#d.fargate ? { fargate: this.#d.fargate } : {}),
      config,
      nowMs,
      queue: (name) => this.#catalog.queue(name),
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

  /**
   * The batch's events: parsed, what their rules read loaded, stepped, and each action carried
   * out in the batch's order (new jobs' submissions started ahead, #submitAhead); then what the
   * actions came to, stepped again for what it wakes.
   * Kernel reports are applied last, each session's together (#applyReports).
   */
  async #applyEvents(
    envelopes: readonly unknown[],
    dirty: Dirty,
    snapshot: RunSnapshot,
  ): Promise<{ applied: number; rejected: Rejection[]; retry: number[] }> {
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
    // A draft's submission is refused as the event its client sent, not as the one it became.
    const draftEvents = new Set<string>();
    const outcome = (rejection: Rejection | undefined) => {
      if (rejection) {
        const sent =
          rejection.eventId !== undefined && draftEvents.has(rejection.eventId)
            ? { ...rejection, detailType: DetailType.JobDraftSubmitted }
            : rejection;
        rejected.push(sent);
        this.#d.log.warn("event rejected", { ...sent });
      } else applied++;
    };
    const reject = async (action: Extract<EventAction, { kind: "reject" }>) => {
      // Kept where the submitter reads it: `submit` waits for it, `get` says why.
      if (action.refuse) await this.#jobs.refuse(action.refuse, action.rejection.reason);
      outcome(action.rejection);
    };
    const clusterArn = this.#d.config.fargate?.clusterArn;
    // Drafts being submitted enter as the submissions they make.
    const { events, fromDrafts } = await startDraftSubmissions(
      this.#drafts,
      envelopes.map((e) => parseBatchEvent(e, clusterArn)),
      this.#d.log,
    );
    const written = writtenSpecs(envelopes, events);
    // A draft's submission goes to admission as the draft was written.
    for (const [index, draft] of fromDrafts) {
      const e = events[index];
      if (e?.kind === "inbound") draftEvents.add(e.event.id);
      if (e?.kind === "inbound" && draft.written !== undefined) written.set(e.event.id, draft.written);
    }
    const { actions, wake } = step(await this.#loadEvents(events));
    dirty.apply(wake);
    const admissions = this.#planAdmissions(actions, written);
    const ahead = this.#submitAhead(actions, admissions, written);
    const done: Applied[] = [];
    const reports = new Map<string, PendingReport[]>();
    for (const action of actions) {
      try {
        switch (action.kind) {
          case "none":
            outcome(undefined);
            break;
          case "redeliver":
            retry.push(action.index);
            break;
          case "reject":
            await reject(action);
            break;
          case "submit": {
            const submitted = await (ahead.get(action.index) ?? this.#submit(action, admissions, written));
            if (submitted.ok) outcome(undefined);
            done.push(
              submitted.ok
                ? { kind: "submitted", action, sessionIds: submitted.sessionIds }
                : { kind: "submit-refused", action, reason: submitted.reason },
            );
            break;
          }
          case "cancel": {
            // A session, or a job of independent tasks (whose sessions are <id>-t<index>).
            const { sessionId, reason, force } = action;
            const sessionIds = (await this.#jobs.requestCancel(sessionId, reason, snapshot, force))
              ? [sessionId]
              : await this.#jobs.cancelJob(sessionId, reason, snapshot, force);
            if (sessionIds) outcome(undefined);
            done.push({ kind: "cancel-requested", action, sessionIds });
            break;
          }
          case "report":
          case "task-report": {
            const pending: PendingReport =
              action.kind === "report"
                ? { index: action.index, event: action.event }
                : { index: action.index, task: action.report };
            const sessionId = "task" in pending ? pending.task.sessionId : pending.event.detail.sessionId;
            reports.set(sessionId, [...(reports.get(sessionId) ?? []), pending]);
            break;
          }
          case "heartbeat": {
            const beat = await this.#agents.heartbeat(action.event.detail);
            if ("refused" in beat) {
              outcome({
                eventId: action.event.id,
                detailType: action.event.detailType,
                reason: beat.refused,
              });
            } else outcome(undefined);
            done.push({
              kind: "heartbeat",
              index: action.index,
              capacityChanged: "wake" in beat && beat.wake,
            });
            break;
          }
          case "draft": {
            const { event } = action;
            // A draft's submission entered the step as its Session Submitted: never here.
            if (event.detailType === DetailType.JobDraftSubmitted) {
              retry.push(action.index);
              break;
            }
            const result = await this.#drafts.apply(
              event,
              event.detailType === DetailType.JobDraftSaved ? writtenSpec(envelopes, event.id) : undefined,
            );
            if (result.ok) outcome(undefined);
            else {
              await reject({
                kind: "reject",
                index: action.index,
                rejection: { eventId: event.id, detailType: event.detailType, reason: result.reason },
                refuse: { id: event.detail.jobId, eventId: event.id },
              });
            }
            break;
          }
          case "register": {
            const { retired } = await this.#agents.register(action.event.detail);
            this.#agentCache.forget(action.event.detail.agentId);
            outcome(undefined);
            done.push({ kind: "registered", index: action.index, retired });
            break;
          }
        }
      } catch (error) {
        failed([action.index], error);
      }
    }
    const after = step({ kind: "applied", applied: done });
    for (const action of after.rejected) {
      try {
        await reject(action);
      } catch (error) {
        failed([action.index], error);
      }
    }
    // A submitted draft is removed once its job exists, or is a draft again (unless redelivered).
    for (const [index, draft] of fromDrafts) {
      if (retry.includes(index)) continue;
      try {
        await this.#drafts.afterSubmit(draft);
      } catch (error) {
        failed([index], error);
      }
    }
    dirty.apply(after.wake);
    if (after.wake.forgetReads) snapshot.clear();
    // A session's reports in this batch are applied together: one write per session. Sessions
    // are items of their own, so theirs go side by side, not one round trip after another.
    await Promise.all(
      [...reports].map(async ([sessionId, group]) => {
        try {
          for (const rejection of await this.#applyReports(sessionId, group, dirty, snapshot))
            outcome(rejection);
        } catch (error) {
          failed(
            group.map((r) => r.index),
            error,
          );
        }
      }),
    );
    return { applied, rejected, retry };
  }

  /**
   * What the events' rules read: the queues submissions name, and whether a submission naming
   * a missing queue repeats a stored job. An event whose read failed is redelivered, the rest
   * of the batch goes on.
   */
  async #loadEvents(events: BatchEvent[]): Promise<StepInput & { kind: "events" }> {
    const queues = new Map<string, Queue>();
    const unreadQueues = new Set<string>();
    await Promise.all(
      queuesNamed(events).map(async (name) => {
        try {
          const queue = await this.#catalog.queue(name);
          if (queue) queues.set(name, queue);
        } catch (error) {
          unreadQueues.add(name);
          this.#d.log.warn("reading a submission's queue failed", {
            queue: name,
            error: errorMessage(error),
          });
        }
      }),
    );
    const existingJobs = new Set<string>();
    const unreadJobs = new Set<string>();
    await Promise.all(
      jobsToCheck(events, queues).map(async (id) => {
        try {
          if (await this.#d.store.getJob(id)) existingJobs.add(id);
        } catch (error) {
          unreadJobs.add(id);
          this.#d.log.warn("reading a submission's job failed", { jobId: id, error: errorMessage(error) });
        }
      }),
    );
    return {
      kind: "events",
      events: events.map((e) =>
        e.kind === "inbound" &&
        e.event.detailType === DetailType.SessionSubmitted &&
        (unreadQueues.has(e.event.detail.spec.queue) || unreadJobs.has(submissionId(e.event)))
          ? { kind: "unloaded" }
          : e,
      ),
      queues,
      existingJobs,
    };
  }

  /**
   * A session's kernel reports of one batch: each authenticated here (only the agent's current
   * incarnation signs), judged by the core (for the kernel's agent, run and placement), and the
   * accepted ones applied in one write of the kernels they change, re-reading on a conflict.
   * Returns each report's rejection, or undefined where it was applied.
   */
  async #applyReports(
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
          ? await this.#agents.authenticateReport(event.detail, (id) =>
              snapshot.agent(id, event.detail.incarnation),
            )
          : undefined;
        reports.push(refusal ? { event, refused: refusal.refused } : { event });
      }
      const nowMs = this.#d.clock.nowMs();
      const { outcomes, effect } = step({ kind: "reports", sessionId, session: s, reports, nowMs });
      if (!s) return outcomes;
      if (effect.kind === "none") {
        dirty.touch(s.session.status, sessionId);
        return outcomes;
      }
      // Written or conflicting, the copy read is out of date either way.
      snapshot.forget(sessionId);
      if (effect.kind === "claim") {
        await this.#d.store.applyWrite(effect.write);
        // The reports decided the stage: the run holds its token and knows the session exactly.
        snapshot.remember([sessionAfterWrite(s, effect.write)]);
        dirty.claims.add(sessionId, s.session.status);
        dirty.touch(s.session.status, sessionId);
        return outcomes;
      }
      // The kernels alone, each at the version read: a stage entry or claim of the session
      // meanwhile does not make the reports conflict, only a write to the same kernel does.
      const written = await this.#d.store.patchKernels(
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
        (session.stage.taskToken !== undefined || dirty.claims.has(session.id)),
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

  /**
   * Placement, one scheduling queue at a time under the queue's lease, the queue of the
   * highest-priority target first: a queue another run is placing is left to that run, which
   * places it once more, over its every waiting session, before it lets go. One queue failing
   * holds back no other.
   */
  async #placeByQueue(
    pass: Pass,
    targets: readonly SessionWithKernels[],
    snapshot: RunSnapshot,
    claims: OwnClaims,
    placement: NonNullable<CoordinatorDeps["placementLeases"]>,
  ): Promise<PassOutcome> {
    const byQueue = Map.groupBy(targets, (t) => t.session.spec.queue);
    const total = { targets: 0, decisions: 0, completed: 0 };
    const deps = { ...placement, clock: this.#d.clock, log: this.#d.log };
    let failure: Error | undefined;
    for (const [queue, mine] of byQueue) {
      try {
        await serialized(deps, placementLeaseKey(queue), async (whole) => {
          const round = whole ? await this.#waitingIn(queue, snapshot) : mine;
          if (round.length === 0) return;
          const outcome = await this.#runPass(pass, round, this.#context(snapshot, claims), claims);
          total.targets += outcome.targets;
          total.decisions += outcome.decisions;
          total.completed += outcome.completed;
        });
      } catch (error) {
        this.#d.log.error("placing a queue failed", { queue, error: errorMessage(error) });
        failure ??= error instanceof Error ? error : new Error(String(error));
      }
    }
    if (failure !== undefined && total.targets === 0) throw failure;
    return total;
  }

  /** A queue's waiting sessions, as a full scheduling pass reads them (queue order). */
  async #waitingIn(queue: string, snapshot: RunSnapshot): Promise<SessionWithKernels[]> {
    const page = await this.#d.store.targetsByStatus({
      statuses: [SessionStatus.PENDING],
      limit: this.#d.config.batchLimit,
      targetableOnly: true,
    });
    const mine = page.filter((s) => s.session.spec.queue === queue);
    snapshot.remember(mine);
    return mine;
  }

  async #runPass(
    pass: Pass,
    targets: readonly SessionWithKernels[],
    ctx: HandlerContext,
    claims: OwnClaims,
  ): Promise<PassOutcome> {
    // A run that can never start ends FAILED here instead of reaching its handler again.
    const { ending, rest } =
      pass.kind === "lifecycle"
        ? step({
            kind: "pass-targets",
            handler: pass.handler.spec.name,
            targets,
            nowMs: this.#d.clock.nowMs(),
          })
        : { ending: [], rest: targets };
    let decisions = ending.length;
    let completed = await this.#carryOut(ending, ctx.snapshot, claims);
    if (rest.length === 0) return { targets: targets.length, decisions, completed };
    const judging = { targets: rest, skipRecordIntervalMs: this.#skipRecordIntervalMs };
    let judged: PassResultEffects;
    if (pass.kind === "lifecycle") {
      let result = await pass.handler.execute(rest, ctx);
      // Sessions that could not be placed may preempt lower-priority ones.
      if (pass.handler.spec.name === "ScheduleNewSessions") {
        let preempted: number;
        ({ result, completed: preempted } = await this.#preemption.afterSchedule(rest, result));
        completed += preempted;
      }
      judged = step({
        kind: "pass-result",
        pass: { kind: "lifecycle", spec: pass.handler.spec, result },
        nowMs: this.#d.clock.nowMs(),
        ...judging,
      });
    } else {
      judged = step({ kind: "pass-result", pass: pass, nowMs: this.#d.clock.nowMs(), ...judging });
    }
    decisions += judged.decisions.length;
    completed += await this.#carryOut(judged.toCarryOut, ctx.snapshot, claims);
    return { targets: targets.length, decisions, completed };
  }

  /**
   * Carries each decision out on the session as it is now: the run's copies, where those the
   * pass wrote (a placement, kernel patches) are read again. A copy that is out of date
   * otherwise makes the conditional write fail, and the next event or the sweep judges the
   * session afresh. Returns the stages completed.
   */
  async #carryOut(decisions: readonly Decision[], snapshot: RunSnapshot, claims: OwnClaims): Promise<number> {
    if (decisions.length === 0) return 0;
    const now = new Map(
      (await snapshot.sessions(decisions.map((d) => d.sessionId))).map((s) => [s.session.id, s]),
    );
    const completed = await Promise.all(
      decisions.map(async (decision) => {
        const session = now.get(decision.sessionId);
        const catalog = needsRetryCatalog(decision, session) ? await this.#retryCatalog(session!) : undefined;
        const plan = step({
          kind: "carry-out",
          decision,
          session,
          ownClaim: claims.has(decision.sessionId),
          catalog,
          nowMs: this.#d.clock.nowMs(),
          skipRecordIntervalMs: this.#skipRecordIntervalMs,
        });
        return this.#carryOutPlan(decision.sessionId, plan, snapshot, claims);
      }),
    );
    return completed.reduce((a, b) => a + b, 0);
  }

  /** One decision's plan: its write, then its callback. Returns the stages completed (0 or 1). */
  async #carryOutPlan(
    sessionId: string,
    plan: CarryOutPlan,
    snapshot: RunSnapshot,
    claims: OwnClaims,
  ): Promise<number> {
    const write = (w: SessionWrite) => unlessConflict(() => this.#d.store.applyWrite(w));
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
        await this.#complete(sessionId, plan.token, plan.transition, plan.known);
        return 1;
      case "write":
        snapshot.forget(sessionId);
        if ((await write(plan.write)) === undefined || !plan.complete) return 0;
        await this.#complete(sessionId, plan.complete.token, plan.complete.transition, plan.complete.known);
        return 1;
    }
  }

  /**
   * One submission: validated against its job template and filtered in one place, whatever made
   * it. A deployment's replica is no exception: a `service` binding is a field of the event any
   * client may send, so it can vouch for nothing, and a replica's spec obeys the templates and
   * the filter like every other. Then its job and sessions are stored and their executions started.
   */
  async #submit(
    action: Extract<EventAction, { kind: "submit" }>,
    admissions: ReadonlyMap<number, Promise<AdmissionPlan>>,
    written: ReadonlyMap<string, unknown>,
  ): Promise<SubmitOutcome> {
    const admitted = await this.#admission.settle(
      await (admissions.get(action.index) ??
        this.#admission.plan(
          action.jobId,
          written.get(action.eventId) ?? action.spec,
          action.spec,
          action.service,
        )),
    );
    return admitted.kind === "admitted"
      ? this.#jobs.submit(action.jobId, admitted.spec, action.service, admitted.admission)
      : // Stored, ended FAILED: applied, and nothing to look at.
        { ok: true, sessionIds: [] };
  }

  /**
   * The batch's new jobs, stored and started at once rather than one after another, which would
   * pace intake at one job per round trip: each writes only its own job and sessions. Those whose
   * admission was planned ahead (a job's first submission in the batch) and that name no parent
   * go ahead; a repeat and a child (its parent may be another submission of the batch) are
   * submitted in their turn, after every submission before them.
   */
  #submitAhead(
    actions: readonly EventAction[],
    admissions: ReadonlyMap<number, Promise<AdmissionPlan>>,
    written: ReadonlyMap<string, unknown>,
  ): Map<number, Promise<SubmitOutcome>> {
    const ahead = new Map<number, Promise<SubmitOutcome>>();
    const limit = pLimit(ADMISSION_CONCURRENCY);
    for (const action of actions) {
      if (action.kind !== "submit" || action.spec.parent !== undefined) continue;
      if (!admissions.has(action.index)) continue;
      const submitted = limit(() => this.#submit(action, admissions, written));
      // Awaited in its action's turn; a failure is that action's (redelivered), never unhandled.
      submitted.catch(() => undefined);
      ahead.set(action.index, submitted);
    }
    return ahead;
  }

  /**
   * The batch's admissions, planned at once (the submission filter is a Lambda call, and
   * one after another they would pace intake), at most ADMISSION_CONCURRENCY at a time. Planning
   * writes nothing. Only a job's first submission in the batch is planned ahead: a repeat is
   * planned in its turn, after the first has been stored.
   */
  #planAdmissions(
    actions: readonly EventAction[],
    written: ReadonlyMap<string, unknown>,
  ): Map<number, Promise<AdmissionPlan>> {
    const plans = new Map<number, Promise<AdmissionPlan>>();
    const jobs = new Set<string>();
    const limit = pLimit(ADMISSION_CONCURRENCY);
    for (const action of actions) {
      if (action.kind !== "submit" || jobs.has(action.jobId)) continue;
      jobs.add(action.jobId);
      const spec = written.get(action.eventId) ?? action.spec;
      const plan = limit(() => this.#admission.plan(action.jobId, spec, action.spec, action.service));
      // Awaited in its action's turn; a failure is that action's (redelivered), never unhandled.
      plan.catch(() => undefined);
      plans.set(action.index, plan);
    }
    return plans;
  }

  /** What a failed run's judgment reads besides the session: its retry policies and the configuration. */
  async #retryCatalog(s: SessionWithKernels): Promise<RetryCatalogView> {
    const [config, resolution, categories] = await Promise.all([
      this.#catalog.config(),
      this.#catalog.policiesFor(s.session),
      this.#catalog.categories(),
    ]);
    if (resolution.missing.length > 0) {
      this.#d.log.warn("retry policies named but not found", {
        sessionId: s.session.id,
        missing: resolution.missing,
      });
    }
    return { config, policies: resolution.policies, categories };
  }

  /**
   * Completes the stage's callback. When the token is closed, a retried attempt of the stage may
   * hold a newer one (each attempt of a callback state gets its own token): that one is
   * claimed and completed instead. Otherwise the stage's own timer fired first and the execution
   * has moved on along its EXPIRED path.
   */
  async #complete(
    sessionId: string,
    token: string,
    transition: StageTransition,
    known?: SessionWithKernels,
  ): Promise<boolean> {
    let current = token;
    for (let hop = 0; hop < MAX_TOKEN_HOPS; hop++) {
      // The claim's copy goes with the first completion: the next state's entry starts from it.
      const sent = hop === 0 && known ? { ...transition, known } : transition;
      if ((await this.#d.executions.complete(current, sent)) === "completed") return true;
      const s = await this.#d.store.getSession(sessionId);
      const newer = s?.session.stage.taskToken;
      if (!s || s.session.status !== transition.from || newer === undefined || newer === current) break;
      try {
        await this.#d.store.applyWrite({
          sessionId,
          expected: { status: s.session.status, version: s.session.version },
          nowMs: this.#d.clock.nowMs(),
          claimStage: true,
          claimedToken: newer,
        });
      } catch (error) {
        if (isConflict(error)) break;
        throw error;
      }
      this.#d.log.info("completing the retried stage's newer token", { sessionId, from: transition.from });
      current = newer;
    }
    this.#d.log.info("stage already closed", { sessionId, from: transition.from, to: transition.to });
    return false;
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
    const plans = step({
      kind: "cancels",
      candidates,
      ownClaims: dirty.claims.ids(),
      nowMs: this.#d.clock.nowMs(),
    });
    for (const plan of plans) {
      if (plan.claim) {
        const claim = plan.claim;
        snapshot.forget(plan.sessionId);
        if ((await unlessConflict(() => this.#d.store.applyWrite(claim))) === undefined) continue;
      } else {
        // Claimed by this run already: nothing to write before completing.
        dirty.claims.use(plan.sessionId);
      }
      await this.#complete(plan.sessionId, plan.token, plan.transition, plan.known);
      completed++;
    }
    return completed;
  }
}

/** Submissions of one batch admitted and stored at once (their filter calls and writes in flight together). */
const ADMISSION_CONCURRENCY = 8;
/** A stage's token replaced more often than this while completing it is left to the next pass. */
/** The coordinator's function timeout: no claimer lives longer (CoordinatorDeps.claimLifetimeMs). */
const DEFAULT_CLAIM_LIFETIME_MS = 60_000;
const MAX_TOKEN_HOPS = 3;
/** The status queues' order (core/queue-order.ts): priority, requeued before new, oldest, id. */
function queueOrder(a: SessionWithKernels, b: SessionWithKernels): number {
  return compareQueueOrder(a.session, b.session);
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
  // Written without its kernels: only a read tells (a promotion never acts on an empty set).
  if (written.kernels.length === 0) return true;
  return promotionDue({ session: { ...written.session, status }, kernels: written.kernels });
}

/** The id and event id of a submission that did not parse, as far as they can be read. */
function submissionOf(envelope: unknown): { id?: unknown; eventId?: unknown } {
  if (typeof envelope !== "object" || envelope === null) return {};
  const e = envelope as Record<string, unknown>;
  const detail = e["detail"];
  // A submission names its id `sessionId`; a draft's events name it `jobId`.
  const fields = typeof detail === "object" && detail !== null ? (detail as Record<string, unknown>) : {};
  const id = fields["sessionId"] ?? fields["jobId"];
  return { id, eventId: e["id"] };
}

/**
 * An envelope as the step reads it: the control plane's own status change, a Fargate task's
 * event (`clusterArn`: the Fargate executor's cluster, if any), an inbound event, or why not.
 */
/**
 * Each submission's spec as its submitter wrote it, by event id: a job template's
 * defaults apply to the fields it left unset, which the parsed spec no longer tells apart. A
 * submission made by the control plane (a draft's) is its parsed spec.
 */
function writtenSpecs(envelopes: readonly unknown[], events: readonly BatchEvent[]): Map<string, unknown> {
  const written = new Map<string, unknown>();
  for (const e of events) {
    if (e.kind === "inbound" && e.event.detailType === DetailType.SessionSubmitted) {
      written.set(e.event.id, e.event.detail.spec);
    }
  }
  for (const envelope of envelopes) {
    if (typeof envelope !== "object" || envelope === null) continue;
    const { id, detail } = envelope as { id?: unknown; detail?: unknown };
    const spec =
      typeof detail === "object" && detail !== null ? (detail as { spec?: unknown }).spec : undefined;
    if (typeof id === "string" && written.has(id) && spec !== undefined) written.set(id, spec);
  }
  return written;
}

function parseBatchEvent(envelope: unknown, clusterArn: string | undefined): BatchEvent {
  const own = ownStatusChange(envelope);
  if (own) return { kind: "status-changed", ...own };
  const task = parseTaskEvent(envelope, clusterArn);
  if (task) return task;
  const parsed = parseInboundEvent(envelope);
  if (parsed.ok) return { kind: "inbound", event: parsed.event };
  const { eventId, detailType, message } = parsed.error;
  return { kind: "invalid", eventId, detailType, message, submission: submissionOf(envelope) };
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
