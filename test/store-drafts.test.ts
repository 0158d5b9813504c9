/**
 * Drafts against DynamoDB Local: created once and only where no job holds the
 * id, replaced and deleted only at the version read (two edits from one read cannot both win),
 * beside a job of the same id without touching it, and invisible to every session listing.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { JobDraft } from "../functions/core/drafts.ts";
import { newJob } from "../functions/core/jobs.ts";
import { parseSessionSpec } from "../functions/core/spec.ts";
import { SESSION_STATUSES } from "../functions/core/status.ts";
import { caught, freshTable, newSession, T0, type TestTable } from "./store-fixtures.ts";

const SPEC = parseSessionSpec({ name: "d", command: ["true"], replicas: 2, coscheduled: false });
const EDITED = parseSessionSpec({ name: "d", command: ["echo", "edited"], replicas: 2, coscheduled: false });

function draft(id: string, over: Partial<JobDraft> = {}): JobDraft {
  return { id, spec: SPEC, version: 1, createdAtMs: T0, updatedAtMs: T0, ...over };
}

describe("draft items", () => {
  let table: TestTable;
  beforeAll(async () => {
    table = await freshTable("cairn-store-drafts");
  });
  afterAll(() => table.drop());

  test("given a free id, a draft is created once and reads back exactly", async () => {
    const store = table.store();
    expect(await store.createDraft(draft("d-one"))).toBe(true);
    expect(await store.getDraft("d-one")).toEqual(draft("d-one"));
    // A second create writes nothing, whatever it carries.
    expect(await store.createDraft(draft("d-one", { spec: EDITED, createdAtMs: T0 + 5 }))).toBe(false);
    expect(await store.getDraft("d-one")).toEqual(draft("d-one"));
    expect(await store.getDraft("no-such-draft")).toBeUndefined();
  });

  test("a draft sent as written keeps one copy, as written, and reads back with its defaults applied", async () => {
    const store = table.store();
    const written = { name: "d", command: ["true"], replicas: 2, coscheduled: false };
    expect(await store.createDraft(draft("d-written", { written }))).toBe(true);
    expect(await store.getDraft("d-written")).toEqual(draft("d-written", { written }));
  });

  test("given a job under the id, no draft is created, and the job is left as it was", async () => {
    const store = table.store();
    const job = newJob("d-job", SPEC, T0);
    await store.createJob(job);
    expect(await store.createDraft(draft("d-job"))).toBe(false);
    expect(await store.getDraft("d-job")).toBeUndefined();
    expect(await store.getJob("d-job")).toEqual(job);
  });

  test("given a draft at version 1, when two edits are made from that version, then only the first is written", async () => {
    const store = table.store();
    await store.createDraft(draft("d-race"));
    const first = draft("d-race", { spec: EDITED, version: 2, updatedAtMs: T0 + 10 });
    const second = draft("d-race", {
      spec: parseSessionSpec({ name: "d", command: ["echo", "second"], replicas: 2, coscheduled: false }),
      version: 2,
      updatedAtMs: T0 + 11,
    });
    const results = await Promise.all([store.replaceDraft(first, 1), store.replaceDraft(second, 1)]);
    expect(results.filter(Boolean)).toHaveLength(1);
    const stored = await store.getDraft("d-race");
    expect(stored?.version).toBe(2);
    expect([first, second]).toContainEqual(stored);
  });

  test("a replace of a draft that does not exist writes nothing", async () => {
    const store = table.store();
    expect(await store.replaceDraft(draft("d-absent", { version: 2 }), 1)).toBe(false);
    expect(await store.getDraft("d-absent")).toBeUndefined();
  });

  test("a draft being submitted keeps its mark; a delete at another version is refused, at its own it is done", async () => {
    const store = table.store();
    await store.createDraft(draft("d-del"));
    const marked = draft("d-del", {
      version: 2,
      updatedAtMs: T0 + 1,
      submitting: { eventId: "ev-1", atMs: T0 + 1 },
    });
    expect(await store.replaceDraft(marked, 1)).toBe(true);
    expect(await store.getDraft("d-del")).toEqual(marked);
    expect(await store.deleteDraft("d-del", 1)).toBe(false);
    expect(await store.getDraft("d-del")).toEqual(marked);
    expect(await store.deleteDraft("d-del", 2)).toBe(true);
    expect(await store.getDraft("d-del")).toBeUndefined();
    expect(await store.deleteDraft("d-del", 2)).toBe(false);
  });

  test("a draft and the job submitted from it live side by side until the draft is deleted", async () => {
    const store = table.store();
    await store.createDraft(draft("d-both"));
    const job = newJob("d-both", SPEC, T0 + 20);
    const sessions = job.sessionIds.map((id) => newSession(id, { replicas: 1 }));
    expect(await store.createJobWithSessions(job, sessions)).toEqual({ created: true });
    expect(await store.getJob("d-both")).toEqual(job);
    expect(await store.getDraft("d-both")).toEqual(draft("d-both"));
    expect(await store.deleteDraft("d-both", 1)).toBe(true);
    expect(await store.getJob("d-both")).toEqual(job);
  });

  test("no session listing sees a draft: placement, repair, run-time limits and settling start from sessions", async () => {
    const store = table.store();
    await store.createDraft(draft("d-hidden"));
    for (const status of SESSION_STATUSES) {
      const page = await store.listSessionsByStatus(status, { limit: 100 });
      expect(page.items.map((s) => s.id)).not.toContain("d-hidden");
    }
    const recent = await store.listRecentSessions({ limit: 100 });
    expect(recent.items.map((s) => s.id).some((id) => id.startsWith("d-hidden"))).toBe(false);
    expect(await store.getSessions(["d-hidden", "d-hidden-t0", "d-hidden-t1"])).toEqual([]);
  });

  test("a draft with an empty id or a version below 1 is refused before anything is sent", async () => {
    const store = table.store();
    const badId = await caught(() => store.createDraft(draft("")));
    expect(badId.code).toBe("INVALID_STORE_REQUEST");
    const badVersion = await caught(() => store.replaceDraft(draft("d-v", { version: 0 }), 1));
    expect(badVersion.message).toContain("draft.version");
  });
});
