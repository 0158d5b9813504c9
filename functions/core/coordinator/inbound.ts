/**
 * Every inbound event's domain rules, pure: what each event of a batch asks the application to
 * do, which passes it wakes, and what an applied event's outcome wakes in turn. The
 * application parses the events, loads what these rules read (the queues submissions name,
 * the sessions reports name), and carries the actions out.
 */
import type { KernelStatusChangedDetail } from "../agent-events.ts";
import { DetailType, type InboundEvent } from "../events.ts";
import { poolIdRefusal } from "../fargate-pool.ts";
import type { Queue, SessionSpec, SessionWithKernels } from "../model.ts";
import { jobSessionIds } from "../jobs.ts";
import { parseRouteId, type ServiceBinding } from "../service-binding.ts";
import { sessionPlacement } from "../sessions.ts";
import { SESSION_STATUSES, SessionStatus, TERMINAL_SESSION_STATUSES } from "../status.ts";
import { submissionSizeIssue } from "../submission-size.ts";
import { reportsEffect, reportsOf, type KernelReport, type ReportsEffect } from "../kernel-reports.ts";
import { taskReportRefusal, type TaskStateReport } from "./task-reports.ts";

/** Sessions name no queue: they are in this one, which need not have been created. */
export const DEFAULT_QUEUE = "default";

/** An event the coordinator refuses, published as `Event Rejected` for whoever sent it. */
export interface Rejection {
  readonly eventId: string | undefined;
  readonly detailType: string | undefined;
  readonly reason: string;
}

type KernelReportEvent = Extract<InboundEvent, { detailType: typeof DetailType.KernelStatusChanged }>;
type HeartbeatEvent = Extract<InboundEvent, { detailType: typeof DetailType.AgentHeartbeat }>;
type RegistrationEvent = Extract<InboundEvent, { detailType: typeof DetailType.AgentRegistrationRequested }>;
/** A client's change to a draft: the application applies it (app/drafts.ts). */
export type DraftEvent = Extract<
  InboundEvent,
  {
    detailType:
      | typeof DetailType.JobDraftSaved
      | typeof DetailType.JobDraftSubmitted
      | typeof DetailType.JobDraftDeleted;
  }
>;

/** Events about drafts: a refusal of one is kept where its sender reads it, as a submission's is. */
export const DRAFT_DETAIL_TYPES: ReadonlySet<string> = new Set([
  DetailType.JobDraftSaved,
  DetailType.JobDraftSubmitted,
  DetailType.JobDraftDeleted,
]);

/** One event of a batch, as the application's parse left it. */
export type BatchEvent =
  /** The control plane's own `Session Status Changed`: it only wakes passes. */
  | {
      readonly kind: "status-changed";
      readonly sessionId: string;
      readonly from: SessionStatus;
      readonly to: SessionStatus;
    }
  /** An event that did not parse; a submission's id and event id as far as they could be read. */
  | {
      readonly kind: "invalid";
      readonly eventId: string | undefined;
      readonly detailType: string | undefined;
      readonly message: string;
      readonly submission?: { readonly id?: unknown; readonly eventId?: unknown };
    }
  | { readonly kind: "inbound"; readonly event: InboundEvent }
  /** ECS's event about a Fargate kernel's task, as the report it makes (task-reports.ts). */
  | { readonly kind: "task-report"; readonly report: TaskStateReport }
  /** An event that asks nothing (a task state that reports nothing). */
  | { readonly kind: "ignored" }
  /** An event whose data could not be loaded (a store read failed): it is redelivered. */
  | { readonly kind: "unloaded" };

/** What a submission refused is stored as, so `submit --wait` and `get` can say why. */
export interface Refusal {
  readonly id?: unknown;
  readonly eventId?: unknown;
}

/** What the application does for one event (`index` is the event's place in the batch). */
export type EventAction =
  | { readonly kind: "none"; readonly index: number }
  | { readonly kind: "redeliver"; readonly index: number }
  | {
      readonly kind: "reject";
      readonly index: number;
      readonly rejection: Rejection;
      /** A submission's refusal is also stored where its submitter looks. */
      readonly refuse?: Refusal;
    }
  | {
      readonly kind: "submit";
      readonly index: number;
      readonly jobId: string;
      readonly eventId: string;
      readonly detailType: string;
      /** The spec as queued: its queue's priority added to its own. */
      readonly spec: SessionSpec;
      /** A deployment's replica: the route the session backs. */
      readonly service?: ServiceBinding;
    }
  | {
      readonly kind: "cancel";
      readonly index: number;
      readonly sessionId: string;
      readonly reason: string;
      /** Force Cancel: the run's end is not waited for (Session.cancelForcedAtMs). */
      readonly force: boolean;
      readonly eventId: string;
      readonly detailType: string;
    }
  /** Reports are applied after the batch's other events, each session's together. */
  | { readonly kind: "report"; readonly index: number; readonly event: KernelReportEvent }
  /** A Fargate task's report: applied with its session's other reports, after the batch's events. */
  | { readonly kind: "task-report"; readonly index: number; readonly report: TaskStateReport }
  | { readonly kind: "heartbeat"; readonly index: number; readonly event: HeartbeatEvent }
  | { readonly kind: "register"; readonly index: number; readonly event: RegistrationEvent }
  /**
   * A draft's change (core/drafts.ts decides it on what the application reads). A draft's
   * submission the application could start reaches the step as the `Session Submitted` it makes.
   */
  | { readonly kind: "draft"; readonly index: number; readonly event: DraftEvent };

/**
 * Which passes a run makes, over which sessions. An event names its session, so most passes
 * only look at those; a pass over every waiting session of a status (`full`) runs only where
 * the queue as a whole may move: capacity came free, an agent arrived, or the sweep.
 */
export interface Wake {
  readonly full: readonly SessionStatus[];
  /** Sessions to look at, by the status they are (or were last seen) in. */
  readonly touched: readonly (readonly [SessionStatus, string])[];
  /** Sessions to check for a cancel request: cancels, and sessions that just entered a stage. */
  readonly cancelCheck: readonly string[];
  /** Sessions that ended, with the event saying so: their jobs are judged. */
  readonly ended: readonly (readonly [string, number])[];
  /** Heartbeats or registrations arrived: a moment to look for agents that fell silent. */
  readonly agentsHeard: boolean;
  /** What the run read may be out of date everywhere (an agent's old incarnation was retired). */
  readonly forgetReads: boolean;
  /**
   * The full placement pass reads past its first batch for every scheduling queue's waiting
   * sessions (an agent arrived, or its capacity changed): a queue whose sessions sort behind
   * another's backlog is placed too. Capacity a kernel's end frees does not ask it: that is the
   * busiest trigger, and a scan past the backlog each time would cost reads in proportion to the
   * backlog; the sweep's pass reads every queue, so a queue left behind waits one sweep at most.
   */
  readonly everyQueue: boolean;
}

export const NO_WAKE: Wake = {
  full: [],
  touched: [],
  cancelCheck: [],
  ended: [],
  agentsHeard: false,
  forgetReads: false,
  everyQueue: false,
};

function wake(parts: Partial<Wake>): Wake {
  return { ...NO_WAKE, ...parts };
}

export interface EventsInput {
  readonly kind: "events";
  readonly events: readonly BatchEvent[];
  /** The queues the batch's submissions name, as stored (a name absent: no such queue). */
  readonly queues: ReadonlyMap<string, Queue>;
  /** Of jobsToCheck's ids, those stored already (a repeated submission). */
  readonly existingJobs: ReadonlySet<string>;
}

export interface EventsEffects {
  readonly actions: readonly EventAction[];
  readonly wake: Wake;
}

/** The id a submission's job gets: its own, or one made from the event's. */
/**
 * Why a submission's `service` binding cannot be a deployment's, or undefined when it can. A
 * deployment submits each replica as one session named like its route (`<deployment>-r<index>`),
 * and agents' health reports are taken for the route the session's binding names: a binding on
 * another id, or on a job of several sessions, would let a session speak for a route it does not
 * back.
 */
export function serviceBindingRefusal(
  jobId: string,
  spec: SessionSpec,
  service: ServiceBinding,
): string | undefined {
  const route = parseRouteId(service.routeId);
  if (route === undefined || route.deploymentId !== service.deploymentId) {
    return `detail.service.deploymentId: route ${service.routeId} is not a route of deployment ${service.deploymentId}`;
  }
  const sessions = jobSessionIds(jobId, spec);
  if (sessions.length !== 1 || sessions[0] !== service.routeId) {
    return (
      `detail.service.routeId: a replica is one session named like its route (${service.routeId}); ` +
      `this submission makes ${sessions.length === 1 ? `session ${sessions[0]}` : `${sessions.length} sessions`}`
    );
  }
  return undefined;
}

export function submissionId(
  event: Extract<InboundEvent, { detailType: typeof DetailType.SessionSubmitted }>,
): string {
  return event.detail.sessionId ?? `s-${event.id.toLowerCase()}`;
}

/** The queues the batch's submissions name: the application loads these before the step. */
export function queuesNamed(events: readonly BatchEvent[]): string[] {
  return [
    ...new Set(
      events.flatMap((e) =>
        e.kind === "inbound" && e.event.detailType === DetailType.SessionSubmitted
          ? [e.event.detail.spec.queue]
          : [],
      ),
    ),
  ];
}

/**
 * Submissions naming a queue that does not exist: refused unless the job is stored already
 * (a repeat of an accepted submission whose queue was deleted since). Loaded before the step.
 */
export function jobsToCheck(events: readonly BatchEvent[], queues: ReadonlyMap<string, Queue>): string[] {
  return events.flatMap((e) =>
    e.kind === "inbound" &&
    e.event.detailType === DetailType.SessionSubmitted &&
    e.event.detail.spec.queue !== DEFAULT_QUEUE &&
    !queues.has(e.event.detail.spec.queue)
      ? [submissionId(e.event)]
      : [],
  );
}

export function stepEvents(input: EventsInput): EventsEffects {
  const actions: EventAction[] = [];
  const touched: (readonly [SessionStatus, string])[] = [];
  const cancelCheck: string[] = [];
  const ended: (readonly [string, number])[] = [];
  const full = new Set<SessionStatus>();
  for (const [index, e] of input.events.entries()) {
    if (e.kind === "status-changed") {
      touched.push([e.to, e.sessionId]);
      cancelCheck.push(e.sessionId);
      if (TERMINAL_SESSION_STATUSES.has(e.to)) ended.push([e.sessionId, index]);
      if (freesCapacity(e)) full.add(SessionStatus.PENDING);
      actions.push({ kind: "none", index });
    } else if (e.kind === "unloaded") {
      actions.push({ kind: "redeliver", index });
    } else if (e.kind === "ignored") {
      actions.push({ kind: "none", index });
    } else if (e.kind === "task-report") {
      actions.push({ kind: "task-report", index, report: e.report });
    } else if (e.kind === "invalid") {
      actions.push({
        kind: "reject",
        index,
        rejection: { eventId: e.eventId, detailType: e.detailType, reason: e.message },
        ...(e.detailType === DetailType.SessionSubmitted ||
        (e.detailType !== undefined && DRAFT_DETAIL_TYPES.has(e.detailType))
          ? { refuse: e.submission ?? {} }
          : {}),
      });
    } else {
      actions.push(inboundAction(index, e.event, input));
    }
  }
  return { actions, wake: wake({ full: [...full], touched, cancelCheck, ended }) };
}

function inboundAction(index: number, event: InboundEvent, input: EventsInput): EventAction {
  const reject = (reason: string, refuse?: Refusal): EventAction => ({
    kind: "reject",
    index,
    rejection: { eventId: event.id, detailType: event.detailType, reason },
    ...(refuse ? { refuse } : {}),
  });
  switch (event.detailType) {
    case DetailType.SessionSubmitted: {
      const id = submissionId(event);
      const { spec } = event.detail;
      // Kept where the submitter reads it: `submit` waits for it, `get` says why.
      const refuse = (reason: string) => reject(reason, { id, eventId: event.id });
      // A spec whose kernel commands could never be sent is refused now, not stranded later.
      const tooLarge = submissionSizeIssue(event.detail.sessionId, spec);
      if (tooLarge) return refuse(`detail.${tooLarge.path}: ${tooLarge.message}`);
      const binding = event.detail.service && serviceBindingRefusal(id, spec, event.detail.service);
      if (binding) return refuse(binding);
      const queue = input.queues.get(spec.queue);
      if (!queue && spec.queue !== DEFAULT_QUEUE && !input.existingJobs.has(id)) {
        return refuse(
          `detail.spec.queue: no queue named "${spec.queue}" (create it with \`cairn queue create\`)`,
        );
      }
      // A queue's priority orders its sessions among other queues': it is added to the
      // session's own, and the sum is what the session is queued by.
      const queued =
        queue && queue.priority !== 0 ? { ...spec, priority: spec.priority + queue.priority } : spec;
      return {
        kind: "submit",
        index,
        jobId: id,
        eventId: event.id,
        detailType: event.detailType,
        spec: queued,
        ...(event.detail.service !== undefined ? { service: event.detail.service } : {}),
      };
    }
    case DetailType.SessionCancelRequested:
      return {
        kind: "cancel",
        index,
        sessionId: event.detail.sessionId,
        reason: event.detail.reason ?? "cancel requested",
        force: event.detail.force === true,
        eventId: event.id,
        detailType: event.detailType,
      };
    case DetailType.KernelStatusChanged:
      return { kind: "report", index, event };
    case DetailType.AgentHeartbeat:
    case DetailType.AgentRegistrationRequested: {
      // A pool's id is the coordinator's: an agent under it would take the queue's Fargate quota.
      const poolId = poolIdRefusal(event.detail.agentId);
      if (poolId !== undefined) return reject(poolId);
      return event.detailType === DetailType.AgentHeartbeat
        ? { kind: "heartbeat", index, event }
        : { kind: "register", index, event };
    }
    case DetailType.JobDraftSaved:
    case DetailType.JobDraftSubmitted:
    case DetailType.JobDraftDeleted:
      return { kind: "draft", index, event };
    // The deployments function's events: their rules never bring them here.
    case DetailType.DeploymentCreated:
    case DetailType.DeploymentScaled:
    case DetailType.DeploymentDestroyRequested:
    case DetailType.RouteHealthReported:
      return reject(`${event.detailType} is handled by the deployments function, not the coordinator`);
  }
}

/** What carrying out an action came to; the step says what it wakes or refuses. */
export type Applied =
  | {
      readonly kind: "submitted";
      readonly action: Extract<EventAction, { kind: "submit" }>;
      readonly sessionIds: readonly string[];
    }
  | {
      readonly kind: "submit-refused";
      readonly action: Extract<EventAction, { kind: "submit" }>;
      readonly reason: string;
    }
  /** `sessionIds` undefined: there is no such session or job. */
  | {
      readonly kind: "cancel-requested";
      readonly action: Extract<EventAction, { kind: "cancel" }>;
      readonly sessionIds: readonly string[] | undefined;
    }
  /** `capacityChanged`: the agent came back or started or stopped draining. */
  | { readonly kind: "heartbeat"; readonly index: number; readonly capacityChanged: boolean }
  | { readonly kind: "registered"; readonly index: number; readonly retired: boolean };

export interface AppliedInput {
  readonly kind: "applied";
  readonly applied: readonly Applied[];
}

export interface AppliedEffects {
  readonly rejected: readonly Extract<EventAction, { kind: "reject" }>[];
  readonly wake: Wake;
}

export function stepApplied(input: AppliedInput): AppliedEffects {
  const rejected: Extract<EventAction, { kind: "reject" }>[] = [];
  const cancelCheck: string[] = [];
  const touched: (readonly [SessionStatus, string])[] = [];
  const full = new Set<SessionStatus>();
  let agentsHeard = false;
  let forgetReads = false;
  let everyQueue = false;
  for (const a of input.applied) {
    switch (a.kind) {
      case "submitted":
        cancelCheck.push(...a.sessionIds);
        break;
      case "submit-refused":
        rejected.push({
          kind: "reject",
          index: a.action.index,
          rejection: { eventId: a.action.eventId, detailType: a.action.detailType, reason: a.reason },
          refuse: { id: a.action.jobId, eventId: a.action.eventId },
        });
        break;
      case "cancel-requested":
        if (a.sessionIds === undefined) {
          rejected.push({
            kind: "reject",
            index: a.action.index,
            rejection: {
              eventId: a.action.eventId,
              detailType: a.action.detailType,
              reason: `detail.sessionId: no session or job ${a.action.sessionId}`,
            },
          });
        } else {
          cancelCheck.push(...a.sessionIds);
          // A session already TERMINATING is no cancel pass's: its stage's handler ends it now.
          if (a.action.force)
            touched.push(...a.sessionIds.map((id) => [SessionStatus.TERMINATING, id] as const));
        }
        break;
      case "heartbeat":
        agentsHeard = true;
        // Capacity only appears with a returning agent (or leaves with a draining one); a
        // routine heartbeat must not trigger a scheduling pass over the whole queue.
        if (a.capacityChanged) {
          full.add(SessionStatus.PENDING);
          everyQueue = true;
        }
        break;
      case "registered":
        agentsHeard = true;
        full.add(SessionStatus.PENDING);
        everyQueue = true;
        if (a.retired) {
          // The old incarnation's kernels ended WORKER_FAILED: sessions past PENDING (RUNNING
          // ones waiting for DetectTermination) move on now, as after an agent lost by silence.
          for (const s of SESSION_STATUSES) full.add(s);
          forgetReads = true;
        }
        break;
    }
  }
  return {
    rejected,
    wake: wake({ full: [...full], touched, cancelCheck, agentsHeard, forgetReads, everyQueue }),
  };
}

/** A session leaving its agents (or re-queued) frees capacity the whole queue may use. */
export function freesCapacity({ from, to }: { from: SessionStatus; to: SessionStatus }): boolean {
  if (to === SessionStatus.TERMINATED || to === SessionStatus.CANCELLED) return true;
  return to === SessionStatus.PENDING && from !== SessionStatus.PENDING;
}

/** One report of a session: an agent's (authenticated by the application) or a Fargate task's. */
export type SessionReport =
  | {
      readonly event: KernelReportEvent;
      /** Why the report's agent was refused (unknown, fenced, a bad signature), if it was. */
      readonly refused?: string;
    }
  /** Vouched for by its source and cluster (task-reports.ts), not by a signature. */
  | { readonly task: TaskStateReport };

/** A session's kernel reports of one batch, each already authenticated (the signature is I/O). */
export interface ReportsInput {
  readonly kind: "reports";
  readonly sessionId: string;
  /** The session as read; undefined when there is none. */
  readonly session: SessionWithKernels | undefined;
  readonly reports: readonly SessionReport[];
  readonly nowMs: number;
}

export interface ReportsEffects {
  /** Each report's rejection, or undefined where it is applied. */
  readonly outcomes: readonly (Rejection | undefined)[];
  /** What the accepted reports write: nothing, the kernels they change, or those and the stage's claim. */
  readonly effect: ReportsEffect;
}

export function stepReports(input: ReportsInput): ReportsEffects {
  const { session: s, sessionId } = input;
  const rejection = (r: SessionReport, reason: string): Rejection =>
    "task" in r
      ? { eventId: r.task.eventId, detailType: r.task.detailType, reason }
      : { eventId: r.event.id, detailType: r.event.detailType, reason };
  if (!s) {
    return {
      outcomes: input.reports.map((r) =>
        rejection(
          r,
          "task" in r
            ? `detail.overrides: CAIRN_SESSION_ID: no session ${sessionId}`
            : `detail.sessionId: no session ${sessionId}`,
        ),
      ),
      effect: { kind: "none" },
    };
  }
  const outcomes: (Rejection | undefined)[] = [];
  const accepted: (KernelReport & { readonly kernelIndex: number })[] = [];
  for (const r of input.reports) {
    const reason =
      "task" in r ? taskReportRefusal(r.task, s) : (r.refused ?? reportRefusal(r.event.detail, s));
    outcomes.push(reason !== undefined ? rejection(r, reason) : undefined);
    if (reason === undefined) {
      if ("task" in r) accepted.push({ ...r.task.report, kernelIndex: r.task.kernelIndex });
      else accepted.push(...reportsOf(r.event.detail));
    }
  }
  return { outcomes, effect: reportsEffect(s, accepted, input.nowMs) };
}

/**
 * Why a report from an authenticated agent does not apply to the session as read: only the
 * agent its kernel is placed on may report it, for the current run and placement.
 */
export function reportRefusal(report: KernelStatusChangedDetail, s: SessionWithKernels): string | undefined {
  const kernel = s.kernels.find((k) => k.index === report.kernelIndex);
  if (!kernel) return `detail.kernelIndex: session ${report.sessionId} has no kernel ${report.kernelIndex}`;
  if (kernel.agentId !== report.agentId) {
    return (
      `detail.agentId: kernel ${report.kernelIndex} of session ${report.sessionId} is ` +
      (kernel.agentId === undefined ? "not placed" : `placed on agent ${kernel.agentId}`) +
      `, not on ${report.agentId}`
    );
  }
  if (report.runIndex !== s.session.runIndex) {
    return `detail.runIndex: run ${report.runIndex} of session ${report.sessionId} has ended (the session is on run ${s.session.runIndex})`;
  }
  // A report without a placement (an agent of the previous version) counts as placement 0,
  // as a command without one does: refused once the run has been placed again.
  const placement = report.placement ?? 0;
  const current = sessionPlacement(s.session);
  if (placement !== current) {
    return `detail.placement: placement ${placement} of run ${report.runIndex} of session ${report.sessionId} has ended (the session is on placement ${current})`;
  }
  return undefined;
}
