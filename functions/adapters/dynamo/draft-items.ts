/**
 * Drafts as items: `JOB#<id>` / `DRAFT`, in the partition the job will have once
 * submitted. A draft item carries no index keys, so no listing of sessions, targets or statuses
 * ever sees it: placement, repair, the run-time limit check and job settling start from sessions,
 * and a draft has none. Every write is guarded by the draft's version; a create also checks that
 * no job holds the id, in the same transaction.
 */
import type { JobDraft, SessionSpec } from "../../core/model.ts";
import type { DraftRepository } from "../../core/ports/drafts.ts";
import { InvalidStoreRequestError } from "../../core/ports/errors.ts";
import { parseSessionSpec } from "../../core/spec.ts";
import { itemAbsent, itemExists, versionIs } from "./conditions.ts";
import type { DynamoRequests } from "./dynamo-requests.ts";
import { all } from "./expressions.ts";
import { Fields, fromItem, ItemType, toItem, type Item } from "./item-codec.ts";
import { DRAFT_SK, JOB_SK, jobPk } from "./keys.ts";
import { guarded } from "./transaction-plan.ts";
import { requireId, requireTime } from "./validation.ts";

export const draftKey = (id: string): Item => ({ pk: { S: jobPk(id) }, sk: { S: DRAFT_SK } });

function validateDraft(draft: JobDraft): void {
  requireId("draft.id", draft.id);
  requireTime("draft.createdAtMs", draft.createdAtMs);
  requireTime("draft.updatedAtMs", draft.updatedAtMs);
  requireVersion("draft.version", draft.version);
}

function requireVersion(field: string, version: number): void {
  if (!Number.isSafeInteger(version) || version < 1) {
    throw new InvalidStoreRequestError(field, `must be a whole number from 1, got ${version}`);
  }
}

export function draftItem(draft: JobDraft): Item {
  return toItem({
    pk: jobPk(draft.id),
    sk: DRAFT_SK,
    type: ItemType.DRAFT,
    id: draft.id,
    // One copy of the spec (an item holds at most 400 KB): as written when it was sent so, the
    // spec being that with its defaults applied.
    ...(draft.written !== undefined ? { written: draft.written } : { spec: draft.spec }),
    version: draft.version,
    createdAtMs: draft.createdAtMs,
    updatedAtMs: draft.updatedAtMs,
    submitting: draft.submitting,
  });
}

export function draftFromItem(item: Item): JobDraft {
  const r = new Fields(fromItem(item), "draft");
  const submitting = r.optObject("submitting");
  const raw = fromItem(item);
  const written: unknown = raw["written"];
  return {
    id: r.string("id"),
    ...(written !== undefined
      ? { spec: parseSessionSpec(written), written }
      : { spec: r.object("spec") as unknown as SessionSpec }),
    version: r.number("version"),
    createdAtMs: r.number("createdAtMs"),
    updatedAtMs: r.number("updatedAtMs"),
    ...(submitting !== undefined
      ? {
          submitting: (() => {
            const s = new Fields(submitting, "draft.submitting");
            return { eventId: s.string("eventId"), atMs: s.number("atMs") };
          })(),
        }
      : {}),
  };
}

export class DynamoDrafts implements DraftRepository {
  readonly #requests: DynamoRequests;

  constructor(requests: DynamoRequests) {
    this.#requests = requests;
  }

  async getDraft(jobId: string): Promise<JobDraft | undefined> {
    requireId("jobId", jobId);
    const item = await this.#requests.getItem("getDraft", draftKey(jobId));
    return item ? draftFromItem(item) : undefined;
  }

  async createDraft(draft: JobDraft): Promise<boolean> {
    validateDraft(draft);
    if (draft.version !== 1) throw new InvalidStoreRequestError("draft.version", "a new draft is version 1");
    const { tableName } = this.#requests;
    // The id must be free of a job too: a draft never shadows a submitted job.
    const failures = await this.#requests.transact("createDraft", {
      items: [
        {
          ConditionCheck: {
            TableName: tableName,
            Key: { pk: { S: jobPk(draft.id) }, sk: { S: JOB_SK } },
            ...guarded(itemAbsent),
          },
        },
        { Put: { TableName: tableName, Item: draftItem(draft), ...guarded(itemAbsent) } },
      ],
      roles: [
        { kind: "job", jobId: draft.id },
        { kind: "job", jobId: draft.id },
      ],
    });
    return failures === undefined;
  }

  async replaceDraft(draft: JobDraft, expectedVersion: number): Promise<boolean> {
    validateDraft(draft);
    requireVersion("expectedVersion", expectedVersion);
    return this.#requests.putItem(
      "replaceDraft",
      { Item: draftItem(draft) },
      all(itemExists, versionIs(expectedVersion)),
    );
  }

  async deleteDraft(jobId: string, expectedVersion: number): Promise<boolean> {
    requireId("jobId", jobId);
    requireVersion("expectedVersion", expectedVersion);
    const out = await this.#requests.deleteItem(
      "deleteDraft",
      draftKey(jobId),
      all(itemExists, versionIs(expectedVersion)),
    );
    return out.ok;
  }
}
