/**
 * The intake use case: one batch of client and agent events (submissions, cancels, drafts,
 * heartbeats, registrations, and the control plane's own status changes) is parsed, what its
 * rules read is loaded, the pure step decides each event's action, and the actions are carried
 * out in the batch's order; what they came to is stepped again for what it wakes. Kernel reports
 * are handed to report-intake.ts, each session's together.
 */
import {
  jobsToCheck,
  queuesNamed,
  submissionId,
  type Applied,
  type BatchEvent,
  type EventAction,
  type Rejection,
} from "../core/coordinator/inbound.ts";
import { step, type StepInput } from "../core/coordinator/step.ts";
import { DetailType } from "../core/events.ts";
import type { Queue } from "../core/model.ts";
import { errorMessage } from "./lifecycle/handler.ts";
import { isConflict } from "./reread.ts";
import type { SubmitOutcome } from "./jobs.ts";
import { startDraftSubmissions } from "./drafts.ts";
import pLimit from "p-limit";
import type { AdmissionPlan } from "./admission.ts";
import type { RunSnapshot } from "./snapshot.ts";
import type { Dirty } from "./coordinator-core.ts";
import type { CoordinatorCore, ParsedBatch, PendingReport } from "./coordinator-core.ts";
import { applyReports } from "./report-intake.ts";

/**
 * The batch's events: parsed, what their rules read loaded, stepped, and each action carried
 * out in the batch's order (new jobs' submissions started ahead, #submitAhead); then what the
 * actions came to, stepped again for what it wakes.
 * Kernel reports are applied last, each session's together (#applyReports).
 */
export async function applyEvents(
  c: CoordinatorCore,
  batch: ParsedBatch,
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
    if (isConflict(error)) c.d.log.warn(message, { error: errorMessage(error) });
    else c.d.log.error(message, { error: errorMessage(error) });
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
      c.d.log.warn("event rejected", { ...sent });
    } else applied++;
  };
  const reject = async (action: Extract<EventAction, { kind: "reject" }>) => {
    // Kept where the submitter reads it: `submit` waits for it, `get` says why.
    if (action.refuse) await c.jobs.refuse(action.refuse, action.rejection.reason);
    outcome(action.rejection);
  };
  // Drafts being submitted enter as the submissions they make.
  const { events, fromDrafts } = await startDraftSubmissions(c.drafts, batch.events, c.d.log);
  const written = new Map<string, unknown>(batch.written);
  // A draft's submission goes to admission as the draft was written.
  for (const [index, draft] of fromDrafts) {
    const e = events[index];
    if (e?.kind === "inbound") draftEvents.add(e.event.id);
    if (e?.kind === "inbound" && draft.written !== undefined) written.set(e.event.id, draft.written);
  }
  const { actions, wake } = step(await loadEvents(c, events));
  dirty.apply(wake);
  const admissions = planAdmissions(c, actions, written);
  const ahead = submitAhead(c, actions, admissions, written);
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
          const submitted = await (ahead.get(action.index) ?? submit(c, action, admissions, written));
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
          const sessionIds = (await c.jobs.requestCancel(sessionId, reason, snapshot, force))
            ? [sessionId]
            : await c.jobs.cancelJob(sessionId, reason, snapshot, force);
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
          const beat = await c.agents.heartbeat(action.event.detail);
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
          const result = await c.drafts.apply(
            event,
            event.detailType === DetailType.JobDraftSaved ? batch.written.get(event.id) : undefined,
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
          const { retired } = await c.agents.register(action.event.detail);
          c.agentCache.forget(action.event.detail.agentId);
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
      await c.drafts.afterSubmit(draft);
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
        for (const rejection of await applyReports(c, sessionId, group, dirty, snapshot)) outcome(rejection);
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
export async function loadEvents(
  c: CoordinatorCore,
  events: BatchEvent[],
): Promise<StepInput & { kind: "events" }> {
  const queues = new Map<string, Queue>();
  const unreadQueues = new Set<string>();
  await Promise.all(
    queuesNamed(events).map(async (name) => {
      try {
        const queue = await c.catalog.queue(name);
        if (queue) queues.set(name, queue);
      } catch (error) {
        unreadQueues.add(name);
        c.d.log.warn("reading a submission's queue failed", {
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
        if (await c.d.store.getJob(id)) existingJobs.add(id);
      } catch (error) {
        unreadJobs.add(id);
        c.d.log.warn("reading a submission's job failed", { jobId: id, error: errorMessage(error) });
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
 * One submission: validated against its job template and filtered in one place, whatever made
 * it. A deployment's replica is no exception: a `service` binding is a field of the event any
 * client may send, so it can vouch for nothing, and a replica's spec obeys the templates and
 * the filter like every other. Then its job and sessions are stored and their executions started.
 */
export async function submit(
  c: CoordinatorCore,
  action: Extract<EventAction, { kind: "submit" }>,
  admissions: ReadonlyMap<number, Promise<AdmissionPlan>>,
  written: ReadonlyMap<string, unknown>,
): Promise<SubmitOutcome> {
  const admitted = await c.admission.settle(
    await (admissions.get(action.index) ??
      c.admission.plan(
        action.jobId,
        written.get(action.eventId) ?? action.spec,
        action.spec,
        action.service,
      )),
  );
  return admitted.kind === "admitted"
    ? c.jobs.submit(action.jobId, admitted.spec, action.service, admitted.admission)
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
export function submitAhead(
  c: CoordinatorCore,
  actions: readonly EventAction[],
  admissions: ReadonlyMap<number, Promise<AdmissionPlan>>,
  written: ReadonlyMap<string, unknown>,
): Map<number, Promise<SubmitOutcome>> {
  const ahead = new Map<number, Promise<SubmitOutcome>>();
  const limit = pLimit(ADMISSION_CONCURRENCY);
  for (const action of actions) {
    if (action.kind !== "submit" || action.spec.parent !== undefined) continue;
    if (!admissions.has(action.index)) continue;
    const submitted = limit(() => submit(c, action, admissions, written));
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
export function planAdmissions(
  c: CoordinatorCore,
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
    const plan = limit(() => c.admission.plan(action.jobId, spec, action.spec, action.service));
    // Awaited in its action's turn; a failure is that action's (redelivered), never unhandled.
    plan.catch(() => undefined);
    plans.set(action.index, plan);
  }
  return plans;
}

/** Submissions of one batch admitted and stored at once (their filter calls and writes in flight together). */
const ADMISSION_CONCURRENCY = 8;
