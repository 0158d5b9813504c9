// Drafts (HPC Pack's Configuring: "The job or task is in the system, but has not
// been submitted to the queue."): each decision on a create, an edit, a delete, a submission and
// what follows it, as given / when / then, with every refusal's text verbatim.
import { describe, expect, test } from "vitest";
import {
  decideAfterSubmit,
  decideDraftDelete,
  decideDraftSave,
  decideDraftSubmit,
  type JobDraft,
} from "../../functions/core/drafts.ts";
import type { SessionSpec } from "../../functions/core/model.ts";
import { NOW_MS, SPEC } from "./fixtures.ts";

const EDITED: SessionSpec = { ...SPEC, command: ["/bin/echo", "edited"] };
const DRAFT: JobDraft = {
  id: "d-1",
  spec: SPEC,
  version: 1,
  createdAtMs: NOW_MS - 60_000,
  updatedAtMs: NOW_MS - 60_000,
};
const SUBMITTING: JobDraft = {
  ...DRAFT,
  version: 2,
  submitting: { eventId: "ev-1", atMs: NOW_MS - 1_000 },
};
const NOTHING = { draft: undefined, jobExists: false };

describe("given no draft under the id", () => {
  test("when a draft is saved without a version, then it is created at version 1", () => {
    expect(decideDraftSave({ jobId: "d-1", spec: SPEC }, NOTHING, NOW_MS)).toEqual({
      kind: "create",
      draft: { id: "d-1", spec: SPEC, version: 1, createdAtMs: NOW_MS, updatedAtMs: NOW_MS },
    });
  });

  test("when the save carries the spec as written, then the draft keeps it, to be submitted as written", () => {
    const written = { name: "train", command: ["/bin/true"] };
    expect(decideDraftSave({ jobId: "d-1", spec: SPEC, written }, NOTHING, NOW_MS)).toEqual({
      kind: "create",
      draft: { id: "d-1", spec: SPEC, written, version: 1, createdAtMs: NOW_MS, updatedAtMs: NOW_MS },
    });
  });

  test("when a job holds the id, then a create is refused", () => {
    expect(
      decideDraftSave({ jobId: "d-1", spec: SPEC }, { draft: undefined, jobExists: true }, NOW_MS),
    ).toEqual({
      kind: "refuse",
      reason: "detail.jobId: job d-1 exists already (it was submitted); a draft needs an id of its own",
    });
  });

  test("when an edit, a delete or a submission names it, then each is refused, naming the field", () => {
    expect(decideDraftSave({ jobId: "d-1", spec: SPEC, expectedVersion: 1 }, NOTHING, NOW_MS)).toEqual({
      kind: "refuse",
      reason: "detail.jobId: no draft d-1",
    });
    expect(decideDraftDelete({ jobId: "d-1" }, NOTHING)).toEqual({
      kind: "refuse",
      reason: "detail.jobId: no draft d-1",
    });
    expect(decideDraftSubmit({ jobId: "d-1", eventId: "ev-1" }, NOTHING, NOW_MS)).toEqual({
      kind: "refuse",
      reason: "detail.jobId: no draft d-1",
    });
  });

  test("when the id is a submitted job, then an edit, a delete and a submission say it is not a draft", () => {
    const submitted = { draft: undefined, jobExists: true };
    expect(decideDraftSave({ jobId: "d-1", spec: SPEC, expectedVersion: 1 }, submitted, NOW_MS)).toEqual({
      kind: "refuse",
      reason: "detail.jobId: job d-1 is not a draft: it was submitted",
    });
    expect(decideDraftDelete({ jobId: "d-1" }, submitted)).toEqual({
      kind: "refuse",
      reason: "detail.jobId: job d-1 is not a draft: it was submitted (cancel it with `cairn cancel d-1`)",
    });
    expect(decideDraftSubmit({ jobId: "d-1", eventId: "ev-1" }, submitted, NOW_MS)).toEqual({
      kind: "refuse",
      reason: "detail.jobId: job d-1 is not a draft: it was submitted",
    });
  });
});

describe("given a spec that a submission would be refused", () => {
  test("when its independent tasks' ids would be too long, then the save is refused", () => {
    const wide: SessionSpec = { ...SPEC, replicas: 12, coscheduled: false };
    const id = `w-${"x".repeat(58)}`;
    expect(decideDraftSave({ jobId: id, spec: wide }, NOTHING, NOW_MS)).toEqual({
      kind: "refuse",
      reason:
        "detail.jobId: must be at most 59 characters for 12 independent tasks (their sessions are <id>-t<index>)",
    });
  });

  test("when its command and env would not fit a Fargate task's overrides, then the save is refused as a submission is", () => {
    const huge: SessionSpec = {
      ...SPEC,
      executor: "fargate",
      image: "public.ecr.aws/docker/library/busybox:latest",
      env: { BIG: "x".repeat(9_000) },
    };
    const decision = decideDraftSave({ jobId: "d-1", spec: huge }, NOTHING, NOW_MS);
    expect(decision.kind).toBe("refuse");
    expect(decision.kind === "refuse" ? decision.reason : "").toMatch(
      /^detail\.spec\.env: too large for executor fargate: spec\.command and spec\.env make RunTask overrides of up to \d+ characters, and ECS takes at most 8192 \(JSON included\)$/,
    );
  });
});

describe("given a draft at version 1", () => {
  const facts = { draft: DRAFT, jobExists: false };

  test("when it is edited from version 1, then its spec is replaced at version 2, guarded by version 1", () => {
    expect(decideDraftSave({ jobId: "d-1", spec: EDITED, expectedVersion: 1 }, facts, NOW_MS)).toEqual({
      kind: "replace",
      draft: { ...DRAFT, spec: EDITED, version: 2, updatedAtMs: NOW_MS },
      expectedVersion: 1,
    });
  });

  test("when an edit carries no written spec, then the one written before is not kept", () => {
    const before = { draft: { ...DRAFT, written: { name: "old" } }, jobExists: false };
    expect(decideDraftSave({ jobId: "d-1", spec: EDITED, expectedVersion: 1 }, before, NOW_MS)).toEqual({
      kind: "replace",
      draft: { ...DRAFT, spec: EDITED, version: 2, updatedAtMs: NOW_MS },
      expectedVersion: 1,
    });
  });

  test("when two edits are made from the same read, then the second is refused: only one wins", () => {
    const afterFirst = { draft: { ...DRAFT, spec: EDITED, version: 2 }, jobExists: false };
    const other: SessionSpec = { ...SPEC, command: ["/bin/echo", "other"] };
    expect(decideDraftSave({ jobId: "d-1", spec: other, expectedVersion: 1 }, afterFirst, NOW_MS)).toEqual({
      kind: "refuse",
      reason:
        "detail.expectedVersion: draft d-1 is at version 2, not 1: it was changed meanwhile (read it again with `cairn job get d-1`)",
    });
  });

  test("when the same edit arrives again (a redelivery), then nothing is written", () => {
    const afterFirst = { draft: { ...DRAFT, spec: EDITED, version: 2 }, jobExists: false };
    expect(decideDraftSave({ jobId: "d-1", spec: EDITED, expectedVersion: 1 }, afterFirst, NOW_MS)).toEqual({
      kind: "none",
    });
  });

  test("when it is created again with the same spec (a redelivery), then nothing is written; another spec is refused", () => {
    expect(decideDraftSave({ jobId: "d-1", spec: SPEC }, facts, NOW_MS)).toEqual({ kind: "none" });
    expect(decideDraftSave({ jobId: "d-1", spec: EDITED }, facts, NOW_MS)).toEqual({
      kind: "refuse",
      reason: "detail.jobId: draft d-1 exists already (version 1); change it with `cairn job edit d-1`",
    });
  });

  test("when it is deleted, then the delete is guarded by the version read; a stale one is refused", () => {
    expect(decideDraftDelete({ jobId: "d-1" }, facts)).toEqual({
      kind: "delete",
      jobId: "d-1",
      expectedVersion: 1,
    });
    expect(decideDraftDelete({ jobId: "d-1", expectedVersion: 3 }, facts)).toEqual({
      kind: "refuse",
      reason:
        "detail.expectedVersion: draft d-1 is at version 1, not 3: it was changed meanwhile (read it again with `cairn job get d-1`)",
    });
  });

  test("when it is submitted, then it is marked (version 2, guarded by 1) and its spec submitted", () => {
    const marked: JobDraft = {
      ...DRAFT,
      version: 2,
      updatedAtMs: NOW_MS,
      submitting: { eventId: "ev-9", atMs: NOW_MS },
    };
    expect(decideDraftSubmit({ jobId: "d-1", eventId: "ev-9" }, facts, NOW_MS)).toEqual({
      kind: "submit",
      draft: marked,
      mark: { draft: marked, expectedVersion: 1 },
    });
  });
});

describe("given a draft being submitted", () => {
  const facts = { draft: SUBMITTING, jobExists: false };

  test("when it is edited or deleted, then either is refused", () => {
    const reason = "detail.jobId: draft d-1 is being submitted; it can no longer change";
    expect(decideDraftSave({ jobId: "d-1", spec: EDITED, expectedVersion: 2 }, facts, NOW_MS)).toEqual({
      kind: "refuse",
      reason,
    });
    expect(decideDraftDelete({ jobId: "d-1" }, facts)).toEqual({ kind: "refuse", reason });
  });

  test("when the submission arrives again (a redelivery), then it goes on without marking again", () => {
    expect(decideDraftSubmit({ jobId: "d-1", eventId: "ev-1" }, facts, NOW_MS)).toEqual({
      kind: "submit",
      draft: SUBMITTING,
    });
  });

  test("when its job exists afterwards, then the draft is deleted, guarded by its version", () => {
    expect(decideAfterSubmit(SUBMITTING, true, NOW_MS)).toEqual({
      kind: "delete",
      jobId: "d-1",
      expectedVersion: 2,
    });
  });

  test("when the submission was refused without a job, then it is a draft again, at the next version", () => {
    expect(decideAfterSubmit(SUBMITTING, false, NOW_MS)).toEqual({
      kind: "replace",
      draft: { ...DRAFT, version: 3, updatedAtMs: NOW_MS },
      expectedVersion: 2,
    });
  });

  test("when a draft not being submitted is settled, then nothing is written", () => {
    expect(decideAfterSubmit(DRAFT, true, NOW_MS)).toEqual({ kind: "none" });
  });
});
