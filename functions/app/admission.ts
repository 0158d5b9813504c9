/**
 * Admission (HPC Pack's "Validating"): every submission, before its job
 * is created, is validated against its job template (core/templates.ts: defaults applied,
 * constraints checked, no task's run-time limit past the job's) and then, when an administrator
 * configured one, passed through the submission filter (core/submission-filter.ts), whose
 * modified spec is validated again. "If the job does not pass validation, the job displays an
 * error message and the job moves to the Failed state": such a job is stored with its sessions
 * already ended and its final state FAILED, the reason listing every violated field, so `cairn
 * get`, `cairn job get` and `submit --wait` show why; each session's history is the one record
 * `Submit FAILED` with that reason (core/history.ts validationFailedRecord), written with it. A
 * submission that passes is stored with what was checked (core/history.ts admissionSummary: the
 * template applied, the filter's answer), which its execution's first history record (Submit
 * SUBMITTED) carries as its message: Submitted → Validating → Queued, readable in its history.
 *
 * Every submission comes through here, a deployment's replicas too: whoever sent it, a spec that
 * breaks its template or that the filter refuses never runs.
 *
 * Templates are read through a short cache, as the retry catalog is (retry-catalog.ts). A
 * submission whose job is stored already (a redelivered event) is validated again but not
 * filtered: the filter is asked once per job.
 */
import { MAX_MESSAGE_LENGTH } from "../core/events.ts";
import { DEFAULT_QUEUE } from "../core/coordinator/inbound.ts";
import type { Job, Queue, ServiceBinding, SessionSpec, SessionWithKernels } from "../core/model.ts";
import { admissionSummary, validationFailedRecord, type AdmissionChecks } from "../core/history.ts";
import { newJob } from "../core/jobs.ts";
import type { JobRepository } from "../core/ports/jobs.ts";
import type { SessionRepository } from "../core/ports/sessions.ts";
import type { TemplateRepository } from "../core/ports/templates.ts";
import { newSession } from "../core/sessions.ts";
import { JobState, KernelStatus, SessionStatus } from "../core/status.ts";
import { filterVerdict, type FilterFailureMode } from "../core/submission-filter.ts";
import {
  BUILT_IN_DEFAULT_TEMPLATE,
  DEFAULT_TEMPLATE_NAME,
  templateNameOf,
  validateSubmission,
  validationFailureReason,
  type JobTemplate,
} from "../core/templates.ts";
import type { ValidationIssue } from "../core/validation-issue.ts";
import { jobSettings, taskSpec } from "../core/jobs.ts";
import type { Logger } from "./logger.ts";
import type { Clock } from "../core/ports/clock.ts";
import type { EventsPort } from "../core/ports/event-bus.ts";
import type { SubmissionFilterPort } from "../core/ports/submission-filter.ts";

export interface AdmissionDeps {
  /** Absent: only the built-in Default exists. */
  readonly templates?: Pick<TemplateRepository, "getTemplate">;
  readonly filter?: {
    readonly port: SubmissionFilterPort;
    readonly timeoutMs: number;
    readonly onFailure: FilterFailureMode;
  };
  /** The queue a spec names (cached by the caller); undefined when it was never created. */
  readonly queue: (name: string) => Promise<Queue | undefined>;
  readonly store: Pick<JobRepository, "getJob" | "createJobWithSessions" | "createJob" | "finishJob"> &
    Pick<SessionRepository, "createSession" | "getSessions">;
  readonly events: EventsPort;
  readonly clock: Clock;
  readonly log: Logger;
  readonly cacheMs?: number;
}

export type Admitted =
  /**
   * The spec to submit: validated, filtered, its queue's priority added; `admission` says what
   * was checked (history.ts admissionSummary), for its sessions' first history record. Absent for
   * a repeat of a submission admitted before.
   */
  | { readonly kind: "admitted"; readonly spec: SessionSpec; readonly admission?: string }
  /** The job was stored ended FAILED with this reason. */
  | { readonly kind: "failed"; readonly reason: string };

/** Admission's decision before it is carried out: admitted, or a failure still to be stored. */
export type AdmissionPlan =
  | Extract<Admitted, { kind: "admitted" }>
  | {
      readonly kind: "fail";
      readonly jobId: string;
      readonly spec: SessionSpec;
      readonly reason: string;
      /** The job as stored when the plan was made (a redelivered submission's). */
      readonly stored: Job | undefined;
      /** A replica's route: its ended session still backs it, so the deployment reads why. */
      readonly service?: ServiceBinding;
    };

export class Admission {
  readonly #d: AdmissionDeps;
  readonly #cache = new Map<string, { value: Promise<JobTemplate | undefined>; atMs: number }>();

  constructor(deps: AdmissionDeps) {
    this.#d = deps;
  }

  /**
   * Admits a submission: `written` is its spec as the submitter wrote it (before any default),
   * `queued` the spec as the inbound rules queued it (their defaults and the queue's priority).
   */
  async admit(
    jobId: string,
    written: unknown,
    queued: SessionSpec,
    service?: ServiceBinding,
  ): Promise<Admitted> {
    return this.settle(await this.plan(jobId, written, queued, service));
  }

  /**
   * What admission decides, before anything is written: reads, validation and the filter's
   * answer. Plans of different jobs may be made at once (the filter's call is the slow part);
   * `settle` then writes what each decided (different new jobs at once, Coordinator#submitAhead).
   * `service`: the route a deployment's replica backs.
   */
  async plan(
    jobId: string,
    written: unknown,
    queued: SessionSpec,
    service?: ServiceBinding,
  ): Promise<AdmissionPlan> {
    const failing = (spec: SessionSpec, reason: string, stored: Job | undefined): AdmissionPlan => ({
      kind: "fail",
      jobId,
      spec,
      reason,
      stored,
      ...(service !== undefined ? { service } : {}),
    });
    // The job as stored (a redelivered submission's), read only where it decides something: the
    // filter is asked once per job, and a failure of an admitted job is not recorded. A new job
    // that passes with no filter costs no read here.
    let read: Promise<Job | undefined> | undefined;
    const storedJob = () => (read ??= this.#d.store.getJob(jobId));
    const templateName = templateNameOf(written);
    const template = await this.#template(templateName);
    let checked = validateSubmission(written, template);
    let spec = checked.ok ? checked.spec : undefined;
    let checks: AdmissionChecks = { template: templateName };
    if (spec !== undefined && this.#d.filter !== undefined) {
      checks = { ...checks, filter: "asked before" };
    }
    if (spec !== undefined && this.#d.filter !== undefined && (await storedJob()) === undefined) {
      const { verdict, failure } = await this.#ask(jobId, spec, templateName);
      if (verdict.kind === "reject") return failing(spec, verdict.reason, await storedJob());
      checks = {
        ...checks,
        filter:
          verdict.kind === "modify"
            ? "modified"
            : failure !== undefined
              ? { failedOpen: failure }
              : "accepted",
      };
      if (verdict.kind === "modify") {
        // The modified spec is validated again, against the template it names.
        const again = await this.#template(templateNameOf(verdict.spec));
        checks = { ...checks, template: templateNameOf(verdict.spec) };
        checked = validateSubmission(verdict.spec, again);
        spec = checked.ok ? checked.spec : undefined;
        if (!checked.ok) {
          const reason = `the submission filter's modified spec ${validationFailureReason(
            templateNameOf(verdict.spec),
            checked.issues,
          )}`;
          return failing(checked.spec ?? queued, reason, await storedJob());
        }
      }
    }
    if (!checked.ok || spec === undefined) {
      const issues = checked.ok ? [] : checked.issues;
      return failing(
        (!checked.ok && checked.spec) || queued,
        validationFailureReason(templateName, issues),
        await storedJob(),
      );
    }
    // The queue the admitted spec names: its priority is added, as the inbound rules do.
    const queue = await this.#d.queue(spec.queue);
    if (!queue && spec.queue !== DEFAULT_QUEUE && (await storedJob()) === undefined) {
      const issue: ValidationIssue = {
        path: "queue",
        message: `no queue named "${spec.queue}" (create it with \`cairn queue create\`)`,
      };
      return failing(spec, validationFailureReason(templateName, [issue]), undefined);
    }
    const priority = queue && queue.priority !== 0 ? spec.priority + queue.priority : spec.priority;
    return {
      kind: "admitted",
      spec: priority === spec.priority ? spec : { ...spec, priority },
      admission: admissionSummary(checks),
    };
  }

  /** Carries a plan out: a failure is stored (the job ended FAILED); an admission is as planned. */
  settle(plan: AdmissionPlan): Promise<Admitted> {
    if (plan.kind !== "fail") return Promise.resolve(plan);
    return this.#fail(plan);
  }

  async #ask(jobId: string, spec: SessionSpec, template: string) {
    const { port, timeoutMs, onFailure } = this.#d.filter!;
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<{ failure: string }>((resolve) => {
      timer = setTimeout(() => {
        controller.abort();
        resolve({ failure: `no answer within ${timeoutMs} ms` });
      }, timeoutMs);
    });
    const asked = port.ask({ jobId, spec, template }, controller.signal).then(
      (answer) => ({ answer }),
      (error: unknown) => ({ failure: error instanceof Error ? error.message : String(error) }),
    );
    const outcome = await Promise.race([asked, timeout]);
    clearTimeout(timer);
    const verdict = filterVerdict(outcome, onFailure);
    const failure = "failure" in outcome ? outcome.failure : undefined;
    if (failure !== undefined || verdict.kind !== "accept") {
      this.#d.log.info("submission filter", {
        jobId,
        verdict: verdict.kind,
        ...(failure !== undefined ? { failure } : {}),
      });
    }
    return { verdict, ...(failure !== undefined ? { failure } : {}) };
  }

  #template(name: string): Promise<JobTemplate | undefined> {
    const nowMs = this.#d.clock.nowMs();
    const cached = this.#cache.get(name);
    if (cached && nowMs - cached.atMs < (this.#d.cacheMs ?? 5_000)) return cached.value;
    const value =
      this.#d.templates?.getTemplate(name) ??
      Promise.resolve(name === DEFAULT_TEMPLATE_NAME ? BUILT_IN_DEFAULT_TEMPLATE : undefined);
    const entry = { value, atMs: nowMs };
    this.#cache.set(name, entry);
    // A failed read is not kept: the next submission reads again (this one is redelivered).
    value.catch(() => {
      if (this.#cache.get(name) === entry) this.#cache.delete(name);
    });
    return value;
  }

  /**
   * A stored job without a final state was admitted before unless every session it has is one
   * this admission stored ended (an interrupted failure): those are TERMINATED, never started.
   */
  async #admittedBefore(stored: Job): Promise<boolean> {
    const sessions = await this.#d.store.getSessions(stored.sessionIds);
    return sessions.some(
      ({ session, kernels }) =>
        session.status !== SessionStatus.TERMINATED || kernels.some((k) => k.startedAtMs !== undefined),
    );
  }

  /**
   * Stores the job with its sessions already ended (TERMINATED, never started: HPC Failed) and
   * its final state FAILED with `reason`. Idempotent: a repeat finds them stored and writes nothing.
   */
  async #fail({
    jobId,
    spec,
    reason,
    stored,
    service,
  }: Extract<AdmissionPlan, { kind: "fail" }>): Promise<Admitted> {
    const { store, clock, log } = this.#d;
    if (stored?.final) return { kind: "failed", reason: stored.final.reason };
    if (stored && (await this.#admittedBefore(stored))) {
      // A repeat of a submission admitted before (its template changed since): never failed now.
      return { kind: "admitted", spec: stored.spec };
    }
    const nowMs = clock.nowMs();
    // Without its parent: a job that never ran is no one's child (and its parent may not exist).
    const { parent: _parent, ...own } = spec;
    const job = stored ?? newJob(jobId, own, nowMs);
    const sessions = job.sessionIds.map((id, index) => endedSession(job, id, index, reason, nowMs, service));
    // A repeat finishes what an interrupted first attempt left (each write is idempotent).
    if (stored || !(await store.createJobWithSessions(job, sessions)).created) {
      await store.createJob(job);
      for (const session of sessions) await store.createSession(session);
    }
    if (await store.finishJob(jobId, { state: JobState.FAILED, reason, atMs: nowMs })) {
      log.info("submission failed validation; job stored FAILED", { jobId, reason });
      await this.#d.events.jobStateChanged([
        {
          jobId,
          state: JobState.FAILED,
          reason: reason.slice(0, MAX_MESSAGE_LENGTH),
          tasks: { FAILED: job.sessionIds.length },
          atMs: nowMs,
        },
      ]);
    }
    return { kind: "failed", reason };
  }
}

/** A session of a job that failed validation: ended before it was queued, its kernels too. */
function endedSession(
  job: Job,
  id: string,
  index: number,
  reason: string,
  nowMs: number,
  service: ServiceBinding | undefined,
): SessionWithKernels {
  const fresh = newSession(id, taskSpec(job.spec), nowMs);
  return {
    session: {
      ...fresh.session,
      status: SessionStatus.TERMINATED,
      stage: { enteredAtMs: nowMs, expiresAtMs: nowMs },
      pendingReason: reason.slice(0, MAX_MESSAGE_LENGTH),
      lastHistory: validationFailedRecord(id, reason, nowMs),
      ...(jobSettings(job.spec).coscheduled
        ? {}
        : { task: { jobId: job.id, index, count: job.spec.replicas } }),
      ...(service !== undefined ? { service } : {}),
    },
    kernels: fresh.kernels.map((k) => ({
      ...k,
      status: KernelStatus.TERMINATED,
      message: reason.slice(0, MAX_MESSAGE_LENGTH),
      finishedAtMs: nowMs,
    })),
  };
}
