/**
 * What every coordinator use case shares: the coordinator's dependencies, the collaborators built
 * from them once per instance (CoordinatorCore), what one run has touched (Dirty) and which
 * stages it claimed itself (OwnClaims), and the run's report. The use cases are intake.ts (the
 * client and agent events), report-intake.ts (kernel reports), handler-passes.ts (the handler
 * passes, placement's included: placement.ts), sweep.ts (the safety sweep); effect-executor.ts
 * carries out what they decide. coordinator.ts puts them together per queue message.
 */
import type { CairnConfig } from "../config.ts";
import type { RetryCatalogView } from "../core/coordinator/finished-run.ts";
import type { BatchEvent, Rejection, Wake } from "../core/coordinator/inbound.ts";
import type { TaskStateReport } from "../core/coordinator/task-reports.ts";
import type { DetailType } from "../core/events.ts";
import type { InboundEvent } from "../core/events.ts";
import type { SessionWithKernels } from "../core/model.ts";
import type { SessionStore } from "../core/ports/store.ts";
import type { SessionStatus } from "../core/status.ts";
import type { AgentChannelPort } from "../core/ports/agent-channel.ts";
import type { Clock } from "../core/ports/clock.ts";
import type { EventsPort } from "../core/ports/event-bus.ts";
import type { LifecycleExecutionsPort } from "../core/ports/lifecycle-executions.ts";
import { Agents } from "./agents.ts";
import type { FargateKernels } from "./fargate-kernels.ts";
import { KernelCommands } from "./kernel-commands.ts";
import type { Logger } from "./logger.ts";
import { Jobs } from "./jobs.ts";
import { Drafts } from "./drafts.ts";
import { Admission, type AdmissionDeps } from "./admission.ts";
import type { TemplateRepository } from "../core/ports/templates.ts";
import { Preemption } from "./preemption.ts";
import { Repair } from "./repair.ts";
import type { FailureCategoryRepository } from "../core/ports/failure-categories.ts";
import { RetryCatalog } from "./retry-catalog.ts";
import { AgentCache, agentCacheTtlMs } from "./snapshot.ts";
import type { LeaseRepository } from "../core/ports/leases.ts";

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

/**
 * One batch of queue messages as the coordinator's Lambda entry point parsed it, each envelope by
 * its schema (functions/handlers/coordinator-envelopes.ts): the application layer never reads a
 * raw envelope.
 */
export interface ParsedBatch {
  /** Each envelope's event, in the batch's order (an index is the message's). */
  readonly events: readonly BatchEvent[];
  /**
   * Each submission's and saved draft's spec as its sender wrote it, by event id: a job
   * template's defaults apply to the fields it left unset, which the parsed spec no longer tells.
   */
  readonly written: ReadonlyMap<string, unknown>;
  /** The sessions the events name, read together before any event is applied. */
  readonly sessionIds: readonly string[];
}

/** A batch of no messages (the sweep's own run). */
export const EMPTY_BATCH: ParsedBatch = { events: [], written: new Map(), sessionIds: [] };

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
export class Dirty {
  readonly full = new Set<SessionStatus>();
  readonly byStatus = new Map<SessionStatus, Set<string>>();
  /** Sessions to check for a cancel request: cancels, and sessions that just entered a stage. */
  readonly sessions = new Set<string>();
  /** Sessions that reached TERMINATED or CANCELLED (and the events saying so): their jobs are judged. */
  readonly ended = new Map<string, number[]>();
  /** The batch carried heartbeats or registrations: a moment to look for agents that fell silent. */
  agentsHeard = false;
  /** The full placement pass reads every scheduling queue's waiting sessions (Wake.everyQueue). */
  everyQueue = false;
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
    if (wake.everyQueue) this.everyQueue = true;
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
export class OwnClaims {
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

export interface PassOutcome {
  readonly targets: number;
  readonly decisions: number;
  readonly completed: number;
}

export type KernelReportEvent = Extract<InboundEvent, { detailType: typeof DetailType.KernelStatusChanged }>;

export type PendingReport =
  /** The event's index in the batch. */
  | { readonly index: number; readonly event: KernelReportEvent }
  /** A Fargate task's report (core/coordinator/task-reports.ts). */
  | { readonly index: number; readonly task: TaskStateReport };

/** A stage's token replaced more often than this while completing it is left to the next pass. */
/** The coordinator's function timeout: no claimer lives longer (CoordinatorDeps.claimLifetimeMs). */
export const DEFAULT_CLAIM_LIFETIME_MS = 60_000;

/** The coordinator's collaborators, built once per instance and shared by its use cases. */
export interface CoordinatorCore {
  readonly d: CoordinatorDeps;
  readonly catalog: RetryCatalog;
  readonly jobs: Jobs;
  readonly drafts: Drafts;
  readonly admission: Admission;
  readonly preemption: Preemption;
  readonly agents: Agents;
  readonly commands: KernelCommands;
  readonly repair: Repair;
  /** Agents as recently read, across this instance's runs (snapshot.ts). */
  readonly agentCache: AgentCache;
  readonly skipRecordIntervalMs: number;
  /** When the sweep last looked for claims whose claimer died (sweep.ts). */
  claimsCheckedAtMs: number;
}

export function coordinatorCore(deps: CoordinatorDeps): CoordinatorCore {
  const catalog = new RetryCatalog(deps.store, deps.clock, deps.config.retryCacheMs, deps.failureCategories);
  const commands = new KernelCommands(deps.store, deps.channel, deps.fargate);
  return {
    d: deps,
    catalog,
    jobs: new Jobs(deps),
    drafts: new Drafts(deps),
    admission: new Admission({
      ...deps,
      ...(deps.templates ? { templates: deps.templates } : {}),
      ...(deps.submissionFilter ? { filter: deps.submissionFilter } : {}),
      queue: (name) => catalog.queue(name),
      cacheMs: deps.config.retryCacheMs,
    }),
    preemption: new Preemption(deps),
    agents: new Agents(deps),
    commands,
    repair: new Repair({
      ...deps,
      commands,
      terminationGraceMs: deps.config.terminationGraceMs,
      minAgeMs: deps.config.repairAfterMs,
      intervalMs: Math.min(10_000, deps.config.repairAfterMs),
    }),
    agentCache: new AgentCache(deps.store, deps.clock, agentCacheTtlMs(deps.config.agentTimeoutMs)),
    skipRecordIntervalMs: deps.skipRecordIntervalMs ?? 30_000,
    claimsCheckedAtMs: Number.NEGATIVE_INFINITY,
  };
}

/** What a failed run's judgment reads besides the session: its retry policies and the configuration. */
export async function retryCatalog(c: CoordinatorCore, s: SessionWithKernels): Promise<RetryCatalogView> {
  const [config, resolution, categories] = await Promise.all([
    c.catalog.config(),
    c.catalog.policiesFor(s.session),
    c.catalog.categories(),
  ]);
  if (resolution.missing.length > 0) {
    c.d.log.warn("retry policies named but not found", {
      sessionId: s.session.id,
      missing: resolution.missing,
    });
  }
  return { config, policies: resolution.policies, categories };
}
