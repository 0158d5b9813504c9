/**
 * Drafts in the coordinator: reads what core/drafts.ts decides on, and carries
 * its decisions out. A write whose guard failed (another change got there first) is decided again
 * on a fresh read, which says why if it is now refused.
 *
 * A draft's submission is not carried out here: `startSubmit` marks the draft and returns the
 * `Session Submitted` event it makes, which the coordinator applies as any other submission (so
 * everything a submission goes through applies to drafts too); `afterSubmit` then removes the
 * draft once its job exists, or makes it a draft again if the submission was refused.
 */
import type { BatchEvent, DraftEvent } from "../core/coordinator/inbound.ts";
import {
  decideAfterSubmit,
  decideDraftDelete,
  decideDraftSave,
  decideDraftSubmit,
  type DraftDecision,
  type DraftFacts,
  type JobDraft,
} from "../core/drafts.ts";
import { DetailType, EventSource, parseInboundEvent, type InboundEvent } from "../core/events.ts";
import type { DraftRepository } from "../core/ports/drafts.ts";
import type { JobRepository } from "../core/ports/jobs.ts";
import type { Logger } from "./logger.ts";
import type { Clock } from "../core/ports/clock.ts";
import { AppError } from "./errors.ts";

/** Reads and decisions of one change before its guard failing is passed on (redelivered). */
const ATTEMPTS = 4;

export interface DraftDeps {
  readonly store: DraftRepository & Pick<JobRepository, "getJob">;
  readonly clock: Clock;
  readonly log: Logger;
}

export type DraftOutcome = { readonly ok: true } | { readonly ok: false; readonly reason: string };

type SubmittedEvent = Extract<InboundEvent, { detailType: typeof DetailType.SessionSubmitted }>;

export type SubmitStart =
  | { readonly kind: "submit"; readonly event: SubmittedEvent; readonly draft: JobDraft }
  | { readonly kind: "refuse"; readonly reason: string };

/** A guard kept failing on fresh reads: the event is redelivered. */
export class DraftContentionError extends AppError {
  override readonly name = "DraftContentionError";
  readonly code = "DRAFT_CONTENTION";
  override readonly retryable = true;
  constructor(jobId: string) {
    super(`draft ${jobId} kept changing under ${ATTEMPTS} attempts to change it`);
  }
}

export class Drafts {
  readonly #d: DraftDeps;

  constructor(deps: DraftDeps) {
    this.#d = deps;
  }

  /**
   * `Job Draft Saved` or `Job Draft Deleted`. `written`: a save's spec as its envelope carried it,
   * before defaults (ParsedBatch.written), kept so the draft is submitted as written.
   */
  async apply(
    event: Exclude<DraftEvent, { detailType: typeof DetailType.JobDraftSubmitted }>,
    written?: unknown,
  ): Promise<DraftOutcome> {
    const { jobId } = event.detail;
    return this.#decideAndWrite(jobId, (facts) =>
      event.detailType === DetailType.JobDraftSaved
        ? decideDraftSave(
            { ...event.detail, ...(written !== undefined ? { written } : {}) },
            facts,
            this.#d.clock.nowMs(),
          )
        : decideDraftDelete(event.detail, facts),
    );
  }

  /** Marks the draft for this submission and returns the `Session Submitted` it makes. */
  async startSubmit(
    event: Extract<DraftEvent, { detailType: typeof DetailType.JobDraftSubmitted }>,
  ): Promise<SubmitStart> {
    const { jobId } = event.detail;
    for (let n = 0; n < ATTEMPTS; n++) {
      const decision = decideDraftSubmit(
        { jobId, eventId: event.id },
        await this.#facts(jobId),
        this.#d.clock.nowMs(),
      );
      if (decision.kind === "refuse") return decision;
      if (
        decision.mark &&
        !(await this.#d.store.replaceDraft(decision.mark.draft, decision.mark.expectedVersion))
      )
        continue;
      const parsed = parseInboundEvent({
        id: event.id,
        time: event.time,
        source: EventSource.Client,
        "detail-type": DetailType.SessionSubmitted,
        // As written when it was sent so: a job template's defaults apply to what it left unset.
        detail: { sessionId: jobId, spec: decision.draft.written ?? decision.draft.spec },
      });
      // A stored spec was valid when saved: one that no longer parses is refused, never lost.
      if (!parsed.ok) {
        await this.afterSubmit(decision.draft);
        return { kind: "refuse", reason: parsed.error.message };
      }
      this.#d.log.info("submitting a draft", { jobId, eventId: event.id });
      return { kind: "submit", event: parsed.event as SubmittedEvent, draft: decision.draft };
    }
    throw new DraftContentionError(jobId);
  }

  /** After the draft's submission: removed once its job exists, else a draft again. */
  async afterSubmit(draft: JobDraft): Promise<void> {
    const jobExists = (await this.#d.store.getJob(draft.id)) !== undefined;
    const decision = decideAfterSubmit(draft, jobExists, this.#d.clock.nowMs());
    // A guard failing here means another submission of the draft moved it on: nothing to do.
    await this.#write(decision);
  }

  async #decideAndWrite(jobId: string, decide: (facts: DraftFacts) => DraftDecision): Promise<DraftOutcome> {
    for (let n = 0; n < ATTEMPTS; n++) {
      const decision = decide(await this.#facts(jobId));
      if (decision.kind === "refuse") return { ok: false, reason: decision.reason };
      if (await this.#write(decision)) return { ok: true };
    }
    throw new DraftContentionError(jobId);
  }

  async #facts(jobId: string): Promise<DraftFacts> {
    const [draft, job] = await Promise.all([this.#d.store.getDraft(jobId), this.#d.store.getJob(jobId)]);
    return { draft, jobExists: job !== undefined };
  }

  /** False when the write's guard failed. */
  async #write(decision: DraftDecision): Promise<boolean> {
    const { store } = this.#d;
    switch (decision.kind) {
      case "create":
        return store.createDraft(decision.draft);
      case "replace":
        return store.replaceDraft(decision.draft, decision.expectedVersion);
      case "delete":
        return store.deleteDraft(decision.jobId, decision.expectedVersion);
      case "none":
      case "refuse":
        return true;
    }
  }
}

/**
 * Before a batch is stepped: each `Job Draft Submitted` becomes the `Session Submitted` its draft
 * makes (`fromDrafts` keeps the draft by the event's index, for afterSubmit), or the refusal of it
 * (as an event refused on receipt, recorded where its sender reads it); one whose draft could not
 * be read is redelivered.
 */
export async function startDraftSubmissions(
  drafts: Drafts,
  events: readonly BatchEvent[],
  log: Logger,
): Promise<{ readonly events: BatchEvent[]; readonly fromDrafts: Map<number, JobDraft> }> {
  const fromDrafts = new Map<number, JobDraft>();
  const out: BatchEvent[] = [];
  for (const [index, e] of events.entries()) {
    if (e.kind !== "inbound" || e.event.detailType !== DetailType.JobDraftSubmitted) {
      out.push(e);
      continue;
    }
    const { event } = e;
    try {
      const start = await drafts.startSubmit(event);
      if (start.kind === "submit") {
        fromDrafts.set(index, start.draft);
        out.push({ kind: "inbound", event: start.event });
      } else {
        out.push({
          kind: "invalid",
          eventId: event.id,
          detailType: event.detailType,
          message: start.reason,
          submission: { id: event.detail.jobId, eventId: event.id },
        });
      }
    } catch (error) {
      log.warn("starting a draft's submission failed; it will be redelivered", {
        jobId: event.detail.jobId,
        error: error instanceof Error ? error.message : String(error),
      });
      out.push({ kind: "unloaded" });
    }
  }
  return { events: out, fromDrafts };
}
