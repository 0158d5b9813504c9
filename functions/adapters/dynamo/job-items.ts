/**
 * Jobs as items: `JOB#<id>` / `JOB`. A job item holds the submitted spec, its session
 * ids, its parent and its children (a string set, so adding a child twice is harmless), and its
 * final state once — the conditional write that records it is what makes a job's cascades run
 * exactly once. Task states are not stored: they are read off the sessions.
 *
 * A job with a run-time limit (`timeouts.job`) is on a roster in the listings index until its
 * final state is recorded, so the sweep that enforces the limits reads those jobs only, not
 * every waiting session.
 */
import type { Job, SessionSpec, SessionWithKernels } from "../../core/model.ts";
import type { JobRepository, SubmissionRejection } from "../../core/ports/jobs.ts";
import { InvalidStoreRequestError } from "../../core/ports/errors.ts";
import type { JobState } from "../../core/status.ts";
import { TERMINAL_JOB_STATES } from "../../core/status.ts";
import { itemAbsent, itemExists } from "./conditions.ts";
import type { DynamoRequests } from "./dynamo-requests.ts";
import { Fields, fromItem, ItemType, toItem, type Item } from "./item-codec.ts";
import { JOB_SK, jobPk, LIMITED_JOBS_PK } from "./keys.ts";
import { EXPIRY_ATTRIBUTE, retainedUntil } from "./retention.ts";
import { planCreateSession } from "./new-session.ts";
import { RejectionItems } from "./rejection-items.ts";
import {
  guarded,
  MAX_TRANSACTION_ITEMS,
  type PlannedTransaction,
  type StoreLayout,
} from "./transaction-plan.ts";
import { requireId, requireTime } from "./validation.ts";

export const jobKey = (id: string): Item => ({ pk: { S: jobPk(id) }, sk: { S: JOB_SK } });

function validateJob(job: Job): void {
  requireId("job.id", job.id);
  requireTime("job.createdAtMs", job.createdAtMs);
  job.sessionIds.forEach((id, i) => requireId(`job.sessionIds[${i}]`, id));
  if (job.parentId !== undefined) requireId("job.parentId", job.parentId);
  if (job.parentId === job.id)
    throw new InvalidStoreRequestError("job.parentId", "a job cannot be its own parent");
}

export function jobItem(job: Job): Item {
  return toItem({
    pk: jobPk(job.id),
    sk: JOB_SK,
    type: ItemType.JOB,
    id: job.id,
    spec: job.spec,
    sessionIds: [...job.sessionIds],
    parentId: job.parentId,
    createdAtMs: job.createdAtMs,
    final: job.final,
    ...(job.spec.timeouts.job !== undefined && job.final === undefined
      ? { gsi3pk: LIMITED_JOBS_PK, gsi3sk: job.id }
      : {}),
    // A string set may not be empty: absent means no children.
    childIds: job.childIds.length > 0 ? new Set(job.childIds) : undefined,
  });
}

export function jobFromItem(item: Item): Job {
  const r = new Fields(fromItem(item), "job");
  const parentId = r.optString("parentId");
  const final = r.optObject("final");
  return {
    id: r.string("id"),
    spec: r.object("spec") as unknown as SessionSpec,
    sessionIds: r.strings("sessionIds"),
    ...(parentId !== undefined ? { parentId } : {}),
    childIds: r.stringSet("childIds"),
    createdAtMs: r.number("createdAtMs"),
    ...(final !== undefined ? { final: finalFrom(new Fields(final, "job.final")) } : {}),
  };
}

function finalFrom(r: Fields): NonNullable<Job["final"]> {
  const state = r.string("state");
  if (!TERMINAL_JOB_STATES.has(state as JobState)) r.fail("state", "a terminal job state");
  return { state: state as JobState, reason: r.string("reason"), atMs: r.number("atMs") };
}

/** The jobs' port (JobRepository): jobs, and the submissions the control plane refused. */
export class DynamoJobs implements JobRepository {
  readonly #requests: DynamoRequests;
  readonly #layout: StoreLayout;
  readonly #rejections: RejectionItems;

  constructor(requests: DynamoRequests, layout: StoreLayout, clock: () => number) {
    this.#requests = requests;
    this.#layout = layout;
    this.#rejections = new RejectionItems(requests, clock);
  }

  /**
   * The job and its sessions in one transaction, each only if its id is free; `created: false`
   * without sending anything when they do not fit one (the caller goes step by step).
   */
  async createJobWithSessions(
    job: Job,
    sessions: readonly SessionWithKernels[],
  ): Promise<{ created: boolean }> {
    const jobPlan = this.planCreate(job);
    const plans = sessions.map((s) => planCreateSession(s, this.#layout));
    const size = jobPlan.items.length + plans.reduce((n, p) => n + p.items.length, 0);
    if (size > MAX_TRANSACTION_ITEMS) return { created: false };
    const failure = await this.#requests.transact("createJobWithSessions", {
      items: [...jobPlan.items, ...plans.flatMap((p) => p.items)],
      roles: [...jobPlan.roles, ...plans.flatMap((p) => p.roles)],
    });
    return { created: failure === undefined };
  }

  recordRejection(rejection: SubmissionRejection, ttlSeconds: number): Promise<void> {
    return this.#rejections.record(rejection, ttlSeconds);
  }

  listRejections(id: string): Promise<SubmissionRejection[]> {
    return this.#rejections.list(id);
  }

  /** The job's item, to be written only if the id is free (createJobWithSessions). */
  planCreate(job: Job): PlannedTransaction {
    validateJob(job);
    return {
      items: [{ Put: { TableName: this.#requests.tableName, Item: jobItem(job), ...guarded(itemAbsent) } }],
      roles: [{ kind: "job", jobId: job.id }],
    };
  }

  /** Writes the job unless it exists; either way returns the stored job. */
  async createJob(job: Job): Promise<{ created: boolean; job: Job }> {
    validateJob(job);
    const created = await this.#requests.putItem("createJob", { Item: jobItem(job) }, itemAbsent);
    if (created) return { created, job };
    const stored = await this.getJob(job.id);
    if (!stored) throw new Error(`job ${job.id} exists but could not be read back`);
    return { created, job: stored };
  }

  async getJob(id: string): Promise<Job | undefined> {
    const item = await this.#requests.getItem("getJob", jobKey(id));
    return item ? jobFromItem(item) : undefined;
  }

  async getJobs(ids: readonly string[]): Promise<Job[]> {
    const items = await this.#requests.batchGet("getJobs", ids.map(jobKey));
    return items.flatMap((item) => (item ? [jobFromItem(item)] : []));
  }

  /** Every job with a run-time limit and no final state yet, by id. */
  async listJobsWithRunTimeLimit(): Promise<Job[]> {
    // The index is eventually consistent: an entry may outlive its job's final state a moment.
    return (
      await this.#requests.readRoster("listJobsWithRunTimeLimit", LIMITED_JOBS_PK, {
        pkPrefix: jobPk(""),
        sk: JOB_SK,
      })
    )
      .map(jobFromItem)
      .filter((job) => job.final === undefined)
      .sort((a, b) => a.id.localeCompare(b.id));
  }

  /** Records `childId` under its parent; the parent as it is now, or undefined if there is none. */
  async addChildJob(parentId: string, childId: string): Promise<Job | undefined> {
    requireId("parentId", parentId);
    requireId("childId", childId);
    const out = await this.#requests.updateItem(
      "addChildJob",
      jobKey(parentId),
      (u) => u.addToSet("childIds", new Set([childId])),
      itemExists,
    );
    return out.ok ? jobFromItem(out.item) : undefined;
  }

  /** Records the final state once: true if this call did, false if it was already recorded. */
  async finishJob(id: string, final: NonNullable<Job["final"]>): Promise<boolean> {
    requireId("id", id);
    requireTime("final.atMs", final.atMs);
    if (!TERMINAL_JOB_STATES.has(final.state)) {
      throw new InvalidStoreRequestError("final.state", `${final.state} is not a terminal job state`);
    }
    const out = await this.#requests.updateItem(
      "finishJob",
      jobKey(id),
      // Ended: off the roster of jobs whose run-time limit the sweep checks, and retained from now.
      (u) =>
        u
          .set("final", final)
          .set(EXPIRY_ATTRIBUTE, retainedUntil(final.atMs, this.#layout))
          .remove("gsi3pk")
          .remove("gsi3sk"),
      (e) => `${itemExists(e)} AND attribute_not_exists(${e.path("final")})`,
    );
    return out.ok;
  }
}
