/**
 * Jobs in the coordinator (Iris's jobs and HPC Pack's): a submission expands into its sessions, a cancel of a job
 * reaches all of them, and when a job's tasks end its state is derived (core/jobs.ts) and its
 * cascades carried out: the remaining tasks are killed and, unless it SUCCEEDED, its child jobs
 * are cancelled, recursively.
 *
 * Cascades are idempotent (a cancel request is set once) and run before the final state is
 * recorded, so a run that stops half-way is finished by the next status change of the job.
 */
import {
  countTaskStates,
  deriveJobState,
  jobCascade,
  foreignSession,
  jobIdOf,
  jobSessionIds,
  jobSettings,
  jobTasks,
  maxJobIdLength,
  newJob,
  sameSpec,
  taskSpec,
} from "../core/jobs.ts";
import { judgeJobRunTime } from "../core/job-run-time.ts";
import type { Job, Session, SessionSpec, SessionWithKernels } from "../core/model.ts";
import type { AgentRepository } from "../core/ports/agents.ts";
import type { JobRepository } from "../core/ports/jobs.ts";
import type { SessionRepository } from "../core/ports/sessions.ts";
import { MAX_MESSAGE_LENGTH } from "../core/events.ts";
import { newSession } from "../core/sessions.ts";
import type { ServiceBinding } from "../core/service-binding.ts";
import { ID_PATTERN } from "../core/spec.ts";
import { JobState, TERMINAL_JOB_STATES, TERMINAL_SESSION_STATUSES } from "../core/status.ts";
import { rereadOnConflict } from "./reread.ts";
import type { Logger } from "./logger.ts";
import type { JobStateChangedDetailInput } from "../core/ports/event-bus.ts";
import type { Clock } from "../core/ports/clock.ts";
import type { EventsPort } from "../core/ports/event-bus.ts";
import type { LifecycleExecutionsPort } from "../core/ports/lifecycle-executions.ts";
import { RunSnapshot } from "./snapshot.ts";

/** How long a rejected submission stays readable (docs/data-model.md). */
export const REJECTION_TTL_SECONDS = 7 * 86_400;
/** Bounds a parent/child chain (and any cycle a hand-edited table could hold). */
const MAX_CASCADE_DEPTH = 32;

export interface JobDeps {
  /** getAgent: only for the RunSnapshot settle reads sessions through when given none. */
  readonly store: SessionRepository & JobRepository & Pick<AgentRepository, "getAgent">;
  readonly events: EventsPort;
  readonly executions: LifecycleExecutionsPort;
  readonly clock: Clock;
  readonly log: Logger;
}

export type SubmitOutcome =
  | { readonly ok: true; readonly sessionIds: readonly string[] }
  | { readonly ok: false; readonly reason: string };

/** The job's `index`-th session as submitted: the job itself when co-scheduled, else a task. */
function newJobSession(
  job: Job,
  index: number,
  nowMs: number,
  service: ServiceBinding | undefined,
  admission: string | undefined,
): SessionWithKernels {
  const fresh = newSession(job.sessionIds[index]!, taskSpec(job.spec), nowMs);
  const session = {
    ...fresh.session,
    ...(admission !== undefined ? { admission } : {}),
    ...(jobSettings(job.spec).coscheduled
      ? {}
      : { task: { jobId: job.id, index, count: job.spec.replicas } }),
    ...(service !== undefined ? { service } : {}),
  };
  return { ...fresh, session };
}

function takenBy(job: Job): string {
  return `detail.sessionId: ${job.id} is taken by another submission (name "${job.spec.name}"); choose another id`;
}

export class Jobs {
  readonly #d: JobDeps;

  constructor(deps: JobDeps) {
    this.#d = deps;
  }

  /**
   * Creates the job, its sessions and their executions. Safe to repeat (a redelivered event): every
   * step is idempotent. A child of a parent that already ended other than SUCCEEDED is cancelled
   * at once, so no child outlives a failed parent whichever came first.
   */
  /** `admission`: what validation checked (history.ts admissionSummary), for the first history record. */
  async submit(
    jobId: string,
    spec: SessionSpec,
    service?: ServiceBinding,
    admission?: string,
  ): Promise<SubmitOutcome> {
    const { store, clock } = this.#d;
    const limit = maxJobIdLength(spec);
    if (jobId.length > limit) {
      return {
        ok: false,
        reason: `detail.sessionId: must be at most ${limit} characters for ${spec.replicas} independent tasks (their sessions are <id>-t<index>)`,
      };
    }
    // The common case, a new job with no parent: the job and its sessions in one write. Any of
    // them existing (a repeat, a clash) writes nothing, and the checks below tell which.
    if (spec.parent === undefined) {
      const nowMs = clock.nowMs();
      const job = newJob(jobId, spec, nowMs);
      const sessions = job.sessionIds.map((id, index) =>
        newJobSession(job, index, nowMs, service, admission),
      );
      if ((await store.createJobWithSessions(job, sessions)).created) {
        for (const created of sessions) await this.#startExecution(created.session, created);
        return { ok: true, sessionIds: job.sessionIds };
      }
    }
    let parent: Job | undefined;
    if (spec.parent !== undefined) {
      if (spec.parent === jobId)
        return { ok: false, reason: "detail.spec.parent: a job cannot be its own parent" };
      parent = await store.getJob(spec.parent);
      if (!parent) return { ok: false, reason: `detail.spec.parent: no job ${spec.parent}` };
    }
    // An id is taken by the first submission only: a different spec under it, or a session id
    // another job already holds, is refused before anything is written.
    const stored = await store.getJob(jobId);
    if (stored && !sameSpec(stored.spec, spec)) return { ok: false, reason: takenBy(stored) };
    const ids = jobSessionIds(jobId, spec);
    const existing = new Map((await store.getSessions(ids)).map((s) => [s.session.id, s.session]));
    for (const [index, id] of ids.entries()) {
      const found = existing.get(id);
      const clash = found && foreignSession(jobId, spec, index, found);
      if (clash !== undefined) return { ok: false, reason: clash };
    }
    const nowMs = clock.nowMs();
    const { created: jobCreated, job } = await store.createJob(newJob(jobId, spec, nowMs));
    if (!jobCreated && !sameSpec(job.spec, spec)) return { ok: false, reason: takenBy(job) };
    if (parent) parent = (await store.addChildJob(parent.id, job.id)) ?? parent;
    for (const [index, sessionId] of job.sessionIds.entries()) {
      const created = await store.createSession(newJobSession(job, index, nowMs, service, admission));
      if (!created.created) {
        // Taken between the check above and this write by a job of its own (a race): this job
        // gives up what it holds, never the other's session.
        const clash = foreignSession(jobId, job.spec, index, created.session.session);
        if (clash !== undefined) return this.#abandon(job, index, clash);
        this.#d.log.info("duplicate submission; session already exists", { sessionId });
      }
      await this.#startExecution(created.session.session, created.created ? created.session : null);
    }
    if (parent?.final && parent.final.state !== JobState.SUCCEEDED) {
      await this.cancelJob(job.id, `parent job ${parent.id} ${parent.final.state}: ${parent.final.reason}`);
    }
    return { ok: true, sessionIds: job.sessionIds };
  }

  /**
   * Starts the session's lifecycle execution (idempotent: one execution per session id), with
   * the session as this submission created it, for the first entry to start from.
   */
  async #startExecution(session: Session, created: SessionWithKernels | null): Promise<void> {
    await this.#d.executions.start(session.id, {
      sessionId: session.id,
      timeouts: { ...session.spec.timeouts },
      known: created,
    });
  }

  /**
   * Records a refused submission where clients read it (so `cairn get` can say why) and returns the reason. A
   * submission that did not parse is recorded when its envelope still names a usable id.
   */
  async refuse(submission: { id?: unknown; eventId?: unknown }, reason: string): Promise<string> {
    const { id, eventId } = submission;
    if (typeof id !== "string" || !ID_PATTERN.test(id)) return reason;
    if (typeof eventId !== "string" || eventId.length === 0 || eventId.length > 256) return reason;
    await this.#d.store.recordRejection(
      { id, eventId, reason, atMs: this.#d.clock.nowMs() },
      REJECTION_TTL_SECONDS,
    );
    return reason;
  }

  /** A job that lost one of its ids to another: its own sessions are cancelled, its end recorded. */
  async #abandon(job: Job, lostIndex: number, reason: string): Promise<SubmitOutcome> {
    const own = job.sessionIds.slice(0, lostIndex);
    for (const sessionId of own) await this.requestCancel(sessionId, reason);
    await this.#d.store.finishJob(job.id, { state: JobState.FAILED, reason, atMs: this.#d.clock.nowMs() });
    return { ok: false, reason };
  }

  /**
   * Sets a cancel request (once) on a live session; the coordinator's cancel pass carries it out.
   * Returns false when there is no such session.
   */
  async requestCancel(
    sessionId: string,
    reason: string,
    snapshot?: RunSnapshot,
    force = false,
  ): Promise<boolean> {
    return rereadOnConflict(async (_n, conflict) => {
      snapshot?.rememberRefused(conflict);
      const s = snapshot
        ? await snapshot.session(sessionId)
        : (conflict?.current ?? (await this.#d.store.getSession(sessionId)));
      if (!s) return false;
      const { session } = s;
      if (TERMINAL_SESSION_STATUSES.has(session.status)) return true;
      // Asked already; a force cancel may still follow a plain one (HPC Pack's Force Cancel).
      if (session.cancelRequestedAtMs !== undefined && (!force || session.cancelForcedAtMs !== undefined))
        return true;
      const nowMs = this.#d.clock.nowMs();
      // Written or conflicting, the copy read is out of date either way.
      snapshot?.forget(sessionId);
      await this.#d.store.applyWrite({
        sessionId,
        expected: { status: session.status, version: session.version },
        nowMs,
        cancelRequestedAtMs: nowMs,
        cancelReason: reason,
        ...(force ? { cancelForcedAtMs: nowMs } : {}),
        history: [],
      });
      return true;
    });
  }

  /**
   * Cancels every live session of a job and of its descendants. Returns the sessions asked to
   * cancel (for the coordinator's cancel pass), or undefined when there is no such job.
   */
  async cancelJob(
    jobId: string,
    reason: string,
    snapshot?: RunSnapshot,
    force = false,
  ): Promise<string[] | undefined> {
    const job = await this.#d.store.getJob(jobId);
    if (!job) return undefined;
    const cancelled: string[] = [];
    await this.#cancelTree(job, reason, new Set(), 0, cancelled, snapshot, force);
    return cancelled;
  }

  async #cancelTree(
    job: Job,
    reason: string,
    seen: Set<string>,
    depth: number,
    out: string[],
    snapshot?: RunSnapshot,
    force = false,
  ): Promise<void> {
    if (seen.has(job.id) || depth > MAX_CASCADE_DEPTH) return;
    seen.add(job.id);
    for (const sessionId of job.sessionIds) {
      if (await this.requestCancel(sessionId, reason, snapshot, force)) out.push(sessionId);
    }
    if (job.childIds.length === 0) return;
    const children = await this.#d.store.getJobs(job.childIds);
    for (const child of children) {
      await this.#cancelTree(child, `parent job ${job.id} cancelled`, seen, depth + 1, out, snapshot, force);
    }
  }

  /**
   * The sweep's check of job run-time limits (`timeouts.job`, core/job-run-time.ts): every job on
   * the roster of unfinished jobs with a limit (listJobsWithRunTimeLimit) that has a live task not
   * yet asked to cancel is judged, and one past its limit is cancelled with the limit as the
   * reason. Returns the sessions asked to cancel (for the cancel pass). Its precision is the
   * sweep's period: a job is cancelled within one period after its limit passes.
   */
  async enforceRunTimeLimits(snapshot: RunSnapshot): Promise<string[]> {
    const { store, clock, log } = this.#d;
    // The roster of unfinished jobs with a limit: the cost is theirs, not the waiting queue's.
    const jobs = await store.listJobsWithRunTimeLimit();
    if (jobs.length === 0) return [];
    const cancelled: string[] = [];
    for (const job of jobs) {
      const sessions = await snapshot.sessions(job.sessionIds);
      // Cancelled already (by its limit or its owner): its final state is still to be recorded.
      const live = sessions.filter(({ session }) => !TERMINAL_SESSION_STATUSES.has(session.status));
      if (live.every(({ session }) => session.cancelRequestedAtMs !== undefined)) continue;
      // Retried runs cleared their kernels' starts: the run records keep them.
      const earlierRunStartsMs: number[] = [];
      for (const { session } of sessions) {
        if (session.runIndex === 0) continue;
        for (const run of await store.listRuns(session.id)) {
          if (run.startedAtMs !== undefined) earlierRunStartsMs.push(run.startedAtMs);
        }
      }
      const verdict = judgeJobRunTime({ job, sessions, earlierRunStartsMs, nowMs: clock.nowMs() });
      if (verdict.kind !== "exceeded") continue;
      log.info("job run-time limit exceeded; cancelling the job", {
        jobId: job.id,
        startedAtMs: verdict.startedAtMs,
        reason: verdict.reason,
      });
      cancelled.push(...((await this.cancelJob(job.id, verdict.reason, snapshot)) ?? []));
    }
    return cancelled;
  }

  /**
   * Judges the jobs of sessions that just ended. A job whose derived state is terminal has its
   * cascades carried out, then its final state recorded. Returns the sessions asked to cancel.
   * A failure is thrown: the caller redelivers the status changes that asked for this.
   */
  async settle(endedSessionIds: readonly string[], snapshot?: RunSnapshot): Promise<string[]> {
    if (endedSessionIds.length === 0) return [];
    const { store } = this.#d;
    const read = snapshot ?? new RunSnapshot(store);
    const ended = await read.sessions(endedSessionIds);
    const jobIds = [...new Set(ended.map(({ session }) => jobIdOf(session)))];
    const jobs = await store.getJobs(jobIds);
    const cancelled: string[] = [];
    const finished: JobStateChangedDetailInput[] = [];
    try {
      for (const job of jobs) {
        if (!job.final) cancelled.push(...(await this.#settleJob(job, read, finished)));
      }
    } finally {
      // Every job recorded final is announced, in one request, even when a later one failed.
      if (finished.length > 0) await this.#d.events.jobStateChanged(finished);
    }
    return cancelled;
  }

  /** Settles one job; a final state recorded adds its announcement to `finished`. */
  async #settleJob(
    job: Job,
    snapshot: RunSnapshot,
    finished: JobStateChangedDetailInput[],
  ): Promise<string[]> {
    const { store, clock, log } = this.#d;
    const sessions: SessionWithKernels[] = await snapshot.sessions(job.sessionIds);
    const tasks = jobTasks(job, sessions);
    const verdict = deriveJobState(tasks, jobSettings(job.spec).maxTaskFailures);
    if (!TERMINAL_JOB_STATES.has(verdict.state)) return [];
    const cascade = jobCascade(verdict.state);
    const cancelled: string[] = [];
    const why = `job ${job.id} ${verdict.state}: ${verdict.reason}`;
    if (cascade.killRemaining) {
      for (const { session } of sessions) {
        if (
          !TERMINAL_SESSION_STATUSES.has(session.status) &&
          (await this.requestCancel(session.id, why, snapshot))
        ) {
          cancelled.push(session.id);
        }
      }
    }
    if (cascade.cancelChildren && job.childIds.length > 0) {
      const seen = new Set([job.id]);
      for (const child of await store.getJobs(job.childIds)) {
        await this.#cancelTree(child, `parent ${why}`, seen, 1, cancelled, snapshot);
      }
    }
    const atMs = clock.nowMs();
    const recorded = await store.finishJob(job.id, { state: verdict.state, reason: verdict.reason, atMs });
    if (recorded) {
      log.info("job finished", { jobId: job.id, state: verdict.state, reason: verdict.reason });
      finished.push({
        jobId: job.id,
        state: verdict.state,
        reason: verdict.reason.slice(0, MAX_MESSAGE_LENGTH),
        // Only the states some task is in.
        tasks: Object.fromEntries(Object.entries(countTaskStates(tasks)).filter(([, n]) => n > 0)),
        ...(job.parentId !== undefined ? { parentId: job.parentId } : {}),
        atMs,
      });
    }
    // A child that joined between the read above and the record missed both this cascade and the
    // final state its own submission checks: it is caught here.
    if (cascade.cancelChildren) {
      const known = new Set(job.childIds);
      const late = ((await store.getJob(job.id))?.childIds ?? []).filter((id) => !known.has(id));
      for (const child of await store.getJobs(late)) {
        await this.#cancelTree(child, `parent ${why}`, new Set([job.id]), 1, cancelled, snapshot);
      }
    }
    return cancelled;
  }
}
