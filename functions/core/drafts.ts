/**
 * Drafts (HPC Pack's Configuring: "The job or task is in the system, but has not
 * been submitted to the queue."). A draft is a job's spec stored under its id with no sessions and
 * no executions: nothing schedules, repairs, limits or settles it, because all of those start from
 * sessions. `cairn job edit` replaces its spec, `cairn job delete` removes it, and `cairn job
 * submit` hands its spec to the submission path a `Session Submitted` takes, under the same id.
 *
 * Every change is guarded by the draft's version, so two edits made from the same read cannot
 * both win. A submission first marks the draft (a version of its own): from then on it cannot
 * change, and once the job exists the draft is removed. Pure: the rules here read what the
 * application loaded and say what to write.
 */
import { maxJobIdLength, sameSpec } from "./jobs.ts";
import type { JobDraft, SessionSpec } from "./model.ts";
import { submissionSizeIssue } from "./submission-size.ts";

export type { JobDraft };

/** What the rules read: the draft under the id, and whether a (submitted) job holds the id. */
export interface DraftFacts {
  readonly draft: JobDraft | undefined;
  readonly jobExists: boolean;
}

export type DraftDecision =
  | { readonly kind: "create"; readonly draft: JobDraft }
  /** Write `draft` over the stored one if that one is still at `expectedVersion`. */
  | { readonly kind: "replace"; readonly draft: JobDraft; readonly expectedVersion: number }
  | { readonly kind: "delete"; readonly jobId: string; readonly expectedVersion: number }
  /** A repeat of a change already made (a redelivered event): nothing to write. */
  | { readonly kind: "none" }
  | { readonly kind: "refuse"; readonly reason: string };

export interface SaveRequest {
  readonly jobId: string;
  readonly spec: SessionSpec;
  /** The version the edit was made from; absent, the request creates the draft. */
  readonly expectedVersion?: number;
  /** `spec` as its sender wrote it (before defaults), kept for the submission (JobDraft.written). */
  readonly written?: unknown;
}

export const draftRefusal = {
  noDraft: (id: string) => `detail.jobId: no draft ${id}`,
  submitted: (id: string) => `detail.jobId: job ${id} is not a draft: it was submitted`,
  jobExists: (id: string) =>
    `detail.jobId: job ${id} exists already (it was submitted); a draft needs an id of its own`,
  draftExists: (id: string, version: number) =>
    `detail.jobId: draft ${id} exists already (version ${version}); change it with \`cairn job edit ${id}\``,
  beingSubmitted: (id: string) => `detail.jobId: draft ${id} is being submitted; it can no longer change`,
  staleVersion: (id: string, stored: number, expected: number) =>
    `detail.expectedVersion: draft ${id} is at version ${stored}, not ${expected}: it was changed ` +
    `meanwhile (read it again with \`cairn job get ${id}\`)`,
  idTooLong: (limit: number, replicas: number) =>
    `detail.jobId: must be at most ${limit} characters for ${replicas} independent tasks (their sessions are <id>-t<index>)`,
} as const;

/** `Job Draft Saved`: creates the draft (no expected version) or replaces its spec (an edit). */
export function decideDraftSave(request: SaveRequest, facts: DraftFacts, nowMs: number): DraftDecision {
  const { jobId, spec, expectedVersion } = request;
  const written = request.written !== undefined ? { written: request.written } : {};
  const refuse = (reason: string): DraftDecision => ({ kind: "refuse", reason });
  const limit = maxJobIdLength(spec);
  if (jobId.length > limit) return refuse(draftRefusal.idTooLong(limit, spec.replicas));
  // Refused now, as a submission would be, rather than when the draft is submitted.
  const tooLarge = submissionSizeIssue(jobId, spec);
  if (tooLarge) return refuse(`detail.${tooLarge.path}: ${tooLarge.message}`);
  const { draft } = facts;
  if (expectedVersion === undefined) {
    if (draft === undefined) {
      if (facts.jobExists) return refuse(draftRefusal.jobExists(jobId));
      return {
        kind: "create",
        draft: { id: jobId, spec, ...written, version: 1, createdAtMs: nowMs, updatedAtMs: nowMs },
      };
    }
    if (draft.version === 1 && sameSpec(draft.spec, spec)) return { kind: "none" };
    return refuse(draftRefusal.draftExists(jobId, draft.version));
  }
  if (draft === undefined) {
    return refuse(facts.jobExists ? draftRefusal.submitted(jobId) : draftRefusal.noDraft(jobId));
  }
  if (draft.submitting !== undefined) return refuse(draftRefusal.beingSubmitted(jobId));
  if (draft.version === expectedVersion) {
    const { written: _replaced, ...kept } = draft;
    return {
      kind: "replace",
      draft: { ...kept, spec, ...written, version: draft.version + 1, updatedAtMs: nowMs },
      expectedVersion,
    };
  }
  // The same edit applied already (a redelivery): its version followed the expected one.
  if (draft.version === expectedVersion + 1 && sameSpec(draft.spec, spec)) return { kind: "none" };
  return refuse(draftRefusal.staleVersion(jobId, draft.version, expectedVersion));
}

/** `Job Draft Deleted`: only a draft, and only one not being submitted. */
export function decideDraftDelete(
  request: { readonly jobId: string; readonly expectedVersion?: number },
  facts: DraftFacts,
): DraftDecision {
  const { jobId, expectedVersion } = request;
  const { draft } = facts;
  if (draft === undefined) {
    return {
      kind: "refuse",
      reason: facts.jobExists
        ? `${draftRefusal.submitted(jobId)} (cancel it with \`cairn cancel ${jobId}\`)`
        : draftRefusal.noDraft(jobId),
    };
  }
  if (draft.submitting !== undefined) return { kind: "refuse", reason: draftRefusal.beingSubmitted(jobId) };
  if (expectedVersion !== undefined && expectedVersion !== draft.version) {
    return { kind: "refuse", reason: draftRefusal.staleVersion(jobId, draft.version, expectedVersion) };
  }
  return { kind: "delete", jobId, expectedVersion: draft.version };
}

export type SubmitDecision =
  /**
   * Submit `draft.spec` under the draft's id. `mark`: the draft as marked for this submission, to
   * write first (absent when a submission of it had begun already: a repeat carries it on).
   */
  | {
      readonly kind: "submit";
      readonly draft: JobDraft;
      readonly mark?: { readonly draft: JobDraft; readonly expectedVersion: number };
    }
  | { readonly kind: "refuse"; readonly reason: string };

/** `Job Draft Submitted`: the draft is marked, then submitted as a `Session Submitted` would be. */
export function decideDraftSubmit(
  request: { readonly jobId: string; readonly eventId: string },
  facts: DraftFacts,
  nowMs: number,
): SubmitDecision {
  const { draft } = facts;
  if (draft === undefined) {
    return {
      kind: "refuse",
      reason: facts.jobExists ? draftRefusal.submitted(request.jobId) : draftRefusal.noDraft(request.jobId),
    };
  }
  if (draft.submitting !== undefined) return { kind: "submit", draft };
  const marked: JobDraft = {
    ...draft,
    version: draft.version + 1,
    updatedAtMs: nowMs,
    submitting: { eventId: request.eventId, atMs: nowMs },
  };
  return { kind: "submit", draft: marked, mark: { draft: marked, expectedVersion: draft.version } };
}

/**
 * After a draft's submission was carried out: once the job exists (accepted, or stored as failed
 * by validation) the draft is gone; a submission refused without a job leaves the draft a draft
 * again, to be edited and submitted once more.
 */
export function decideAfterSubmit(draft: JobDraft, jobExists: boolean, nowMs: number): DraftDecision {
  if (draft.submitting === undefined) return { kind: "none" };
  if (jobExists) return { kind: "delete", jobId: draft.id, expectedVersion: draft.version };
  const { submitting: _released, ...rest } = draft;
  return {
    kind: "replace",
    draft: { ...rest, version: draft.version + 1, updatedAtMs: nowMs },
    expectedVersion: draft.version,
  };
}
