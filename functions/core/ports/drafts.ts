/**
 * Drafts (core/drafts.ts) in the store: one item per draft beside its job's, in the same table.
 * Every write is conditional; a write whose condition failed returns false and writes nothing,
 * and the caller reads again and decides again (which says why).
 */
import type { JobDraft } from "../model.ts";

export interface DraftRepository {
  getDraft(jobId: string): Promise<JobDraft | undefined>;
  /** Writes the draft unless a draft or a job already has its id. */
  createDraft(draft: JobDraft): Promise<boolean>;
  /** Writes `draft` over the stored one if that one is at `expectedVersion`. */
  replaceDraft(draft: JobDraft, expectedVersion: number): Promise<boolean>;
  /** Deletes the draft if it is at `expectedVersion`. */
  deleteDraft(jobId: string, expectedVersion: number): Promise<boolean>;
}
