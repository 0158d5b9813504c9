/**
 * Job items against DynamoDB Local: created once, read back exactly, children added as
 * a set, the final state recorded exactly once; and the task identity and cancel reason that
 * independent tasks' sessions carry.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { MAX_KERNELS_PER_SESSION } from "../functions/adapters/dynamo/new-session.ts";
import { validationFailedRecord } from "../functions/core/history.ts";
import { newJob } from "../functions/core/jobs.ts";
import { parseSessionSpec } from "../functions/core/spec.ts";
import { caught, freshTable, newSession, T0, type TestTable } from "./store-fixtures.ts";

describe("job items", () => {
  let table: TestTable;
  beforeAll(async () => {
    table = await freshTable("cairn-store-jobs");
  });
  afterAll(() => table.drop());

  const spec = parseSessionSpec({
    name: "j",
    command: ["true"],
    replicas: 3,
    coscheduled: false,
    maxTaskFailures: 1,
  });

  test("a job reads back exactly; creating it again returns the stored one", async () => {
    const store = table.store();
    const job = newJob("job-one", spec, T0);
    expect(await store.createJob(job)).toEqual({ created: true, job });
    expect(await store.getJob("job-one")).toEqual(job);
    const again = await store.createJob({ ...job, createdAtMs: T0 + 5 });
    expect(again).toEqual({ created: false, job });
    expect(await store.getJob("no-such-job")).toBeUndefined();
  });

  test("a job and its sessions in one write, only if none exists; otherwise nothing is written", async () => {
    const store = table.store();
    const job = newJob("one-write", spec, T0);
    const sessions = job.sessionIds.map((id) => newSession(id, { replicas: 1 }));
    expect(await store.createJobWithSessions(job, sessions)).toEqual({ created: true });
    expect(await store.getJob("one-write")).toEqual(job);
    expect((await store.getSessions(job.sessionIds)).map((s) => s.session.id)).toEqual(job.sessionIds);
    // A repeat writes nothing (the step-by-step path tells it from a clash).
    expect(await store.createJobWithSessions(job, sessions)).toEqual({ created: false });
    // A session id another job holds: not even the job is written.
    const squatter = newJob("one-write-t1", parseSessionSpec({ name: "s", command: ["true"] }), T0);
    expect(
      await store.createJobWithSessions(squatter, [newSession("one-write-t1", { replicas: 1 })]),
    ).toEqual({ created: false });
    expect(await store.getJob("one-write-t1")).toBeUndefined();
    // More than one transaction holds (the job and a hundred sessions, one item each): nothing
    // is sent.
    const big = newJob(
      "one-write-big",
      parseSessionSpec({ name: "b", command: ["true"], replicas: 10, coscheduled: false }),
      T0,
    );
    const many = Array.from({ length: 100 }, (_, i) => newSession(`one-write-big-${i}`, { replicas: 1 }));
    expect(await store.createJobWithSessions(big, many)).toEqual({ created: false });
    expect(await store.getJob("one-write-big")).toBeUndefined();
  });

  test("a session created ended with its one history record: the record reads back, only as seq 0", async () => {
    const store = table.store();
    const failed = (id: string, replicas: number) => {
      const created = newSession(id, { replicas });
      const record = validationFailedRecord(id, "failed validation against job template small", T0);
      return { ...created, session: { ...created.session, lastHistory: record } };
    };
    // One of one kernel, and the widest gang: the record is in the session item either way.
    for (const [id, replicas] of [
      ["born-failed", 1],
      ["born-failed-wide", MAX_KERNELS_PER_SESSION],
    ] as const) {
      const job = newJob(id, parseSessionSpec({ name: "f", command: ["true"], replicas }), T0);
      expect(await store.createJobWithSessions(job, [failed(id, replicas)])).toEqual({ created: true });
      expect(await store.listHistory(id)).toEqual([failed(id, replicas).session.lastHistory]);
      const [read] = await store.getSessions([id]);
      expect(read?.session.lastHistory).toEqual(failed(id, replicas).session.lastHistory);
    }
    const wrong = failed("born-wrong", 1);
    const bad = {
      ...wrong,
      session: { ...wrong.session, lastHistory: { ...wrong.session.lastHistory, seq: 3 } },
    };
    const error = await caught(() => store.createSession(bad));
    expect(error.field).toBe("session.lastHistory");
    expect(error.message).toBe(
      "session.lastHistory: a new session's only record must be its seq 0 (session born-wrong), got seq 3 of born-wrong",
    );
    expect(await store.getSessions(["born-wrong"])).toEqual([]);
  });

  test("children are a set; a missing parent is reported as undefined", async () => {
    const store = table.store();
    await store.createJob(newJob("job-parent", spec, T0));
    await store.addChildJob("job-parent", "job-c1");
    await store.addChildJob("job-parent", "job-c2");
    const parent = await store.addChildJob("job-parent", "job-c1");
    expect(parent?.childIds).toEqual(["job-c1", "job-c2"]);
    expect(await store.addChildJob("no-such-job", "job-c3")).toBeUndefined();
    expect((await store.getJobs(["job-parent", "no-such-job", "job-one"])).map((j) => j.id).sort()).toEqual([
      "job-one",
      "job-parent",
    ]);
  });

  test("the final state is recorded once; a second record is refused", async () => {
    const store = table.store();
    await store.createJob(newJob("job-final", spec, T0));
    expect(
      await store.finishJob("job-final", { state: "FAILED", reason: "2 tasks failed", atMs: T0 + 1 }),
    ).toBe(true);
    expect(await store.finishJob("job-final", { state: "KILLED", reason: "late", atMs: T0 + 2 })).toBe(false);
    expect((await store.getJob("job-final"))?.final).toEqual({
      state: "FAILED",
      reason: "2 tasks failed",
      atMs: T0 + 1,
    });
    expect(await store.finishJob("no-such-job", { state: "FAILED", reason: "x", atMs: T0 })).toBe(false);
  });

  test("jobs with a run-time limit are on a roster until their final state is recorded; others never are", async () => {
    const store = table.store();
    const limited = parseSessionSpec({ name: "s", command: ["true"], replicas: 2, timeouts: { job: 60 } });
    await store.createJob(newJob("limit-b", limited, T0));
    await store.createJob(newJob("limit-a", limited, T0));
    await store.createJob(newJob("no-limit", spec, T0));
    // One created in one write with its sessions is on it too.
    const together = newJob("limit-c", limited, T0);
    const sessions = together.sessionIds.map((id) => newSession(id, { status: "PENDING" }));
    expect((await store.createJobWithSessions(together, sessions)).created).toBe(true);
    const ids = async () => (await store.listJobsWithRunTimeLimit()).map((j) => j.id);
    expect(await ids()).toEqual(["limit-a", "limit-b", "limit-c"]);
    await store.finishJob("limit-b", { state: "KILLED", reason: "job run-time limit", atMs: T0 + 1 });
    expect(await ids()).toEqual(["limit-a", "limit-c"]);
  });

  test("bad input names the field", async () => {
    const store = table.store();
    expect(
      (await caught(() => store.finishJob("job-one", { state: "RUNNING", reason: "x", atMs: T0 }))).message,
    ).toBe("final.state: RUNNING is not a terminal job state");
    expect(
      (await caught(() => store.createJob({ ...newJob("job-self", spec, T0), parentId: "job-self" })))
        .message,
    ).toBe("job.parentId: a job cannot be its own parent");
  });

  test("a task session keeps its identity; a cancel request keeps its first reason", async () => {
    const store = table.store();
    const fresh = newSession("job-one-t1");
    await store.createSession({
      ...fresh,
      session: { ...fresh.session, task: { jobId: "job-one", index: 1, count: 3 } },
    });
    const read = await store.getSession("job-one-t1");
    expect(read?.session.task).toEqual({ jobId: "job-one", index: 1, count: 3 });
    const expected = { status: read!.session.status, version: read!.session.version };
    await store.applyWrite({
      sessionId: "job-one-t1",
      expected,
      nowMs: T0 + 1,
      cancelRequestedAtMs: T0 + 1,
      cancelReason: "job job-one FAILED",
      history: [],
    });
    await store.applyWrite({
      sessionId: "job-one-t1",
      expected: { ...expected, version: expected.version + 1 },
      nowMs: T0 + 2,
      cancelRequestedAtMs: T0 + 2,
      cancelReason: "a later reason",
      history: [],
    });
    expect((await store.getSession("job-one-t1"))?.session).toMatchObject({
      cancelRequestedAtMs: T0 + 1,
      cancelReason: "job job-one FAILED",
    });
  });
});

describe("rejected submissions", () => {
  let table: TestTable;
  beforeAll(async () => {
    table = await freshTable("cairn-store-rejections");
  });
  afterAll(() => table.drop());

  test("each refused event is kept under its id, newest first, until its TTL; the same event again overwrites", async () => {
    let nowMs = T0;
    const store = table.store({ clock: () => nowMs });
    await store.recordRejection({ id: "job-x", eventId: "e-1", reason: "first", atMs: T0 }, 60);
    await store.recordRejection({ id: "job-x", eventId: "e-2", reason: "second", atMs: T0 + 10_000 }, 60);
    await store.recordRejection({ id: "job-x", eventId: "e-2", reason: "second", atMs: T0 + 10_000 }, 60);
    await store.recordRejection({ id: "job-y", eventId: "e-3", reason: "other id", atMs: T0 }, 60);
    expect(await store.listRejections("job-x")).toEqual([
      { id: "job-x", eventId: "e-2", reason: "second", atMs: T0 + 10_000 },
      { id: "job-x", eventId: "e-1", reason: "first", atMs: T0 },
    ]);
    // Past the first one's TTL (DynamoDB deletes lazily): readers no longer see it.
    nowMs = T0 + 61_000;
    expect((await store.listRejections("job-x")).map((r) => r.eventId)).toEqual(["e-2"]);
    expect(await store.listRejections("job-z")).toEqual([]);
  });

  test("more than a Query page holds (1 MB): the 100 newest are listed, whatever their event ids", async () => {
    const store = table.store({ clock: () => T0 });
    // 120 refusals of 4,096 three-byte characters (12 KB each, 1.4 MB in all); event ids run
    // against time, so the newest sort last.
    const reason = "€".repeat(4096);
    for (let i = 0; i < 120; i++) {
      await store.recordRejection(
        { id: "job-big", eventId: `e-${String(999 - i).padStart(3, "0")}`, reason, atMs: T0 + i * 1_000 },
        3_600,
      );
    }
    const listed = await store.listRejections("job-big");
    expect(listed).toHaveLength(100);
    expect(listed[0]).toMatchObject({ eventId: "e-880", atMs: T0 + 119_000 });
    expect(listed.at(-1)).toMatchObject({ eventId: "e-979", atMs: T0 + 20_000 });
    expect(listed.every((r) => r.reason === reason)).toBe(true);
  });

  test("bad input names the field", async () => {
    const store = table.store();
    expect(
      (await caught(() => store.recordRejection({ id: "", eventId: "e", reason: "r", atMs: T0 }, 60)))
        .message,
    ).toBe("rejection.id: must be a non-empty string");
    expect(
      (await caught(() => store.recordRejection({ id: "a", eventId: "e", reason: "r", atMs: T0 }, 0)))
        .message,
    ).toBe("ttlSeconds: must be an integer from 1 to 31622400, got 0");
  });
});

describe("the sweep's stale sessions", () => {
  let table: TestTable;
  beforeAll(async () => {
    table = await freshTable("cairn-store-stale");
  });
  afterAll(() => table.drop());

  test("one page of a status's queue at a time, keeping sessions whose stage was entered before the bound", async () => {
    const store = table.store();
    // Priority orders the queue: old-1, fresh, old-2, old-3 (claimed: no token), and a RUNNING one.
    await store.createSession(newSession("old-1", { priority: 40, createdAtMs: T0 }));
    await store.createSession(newSession("fresh", { priority: 30, createdAtMs: T0 + 120_000 }));
    await store.createSession(newSession("old-2", { priority: 20, createdAtMs: T0 + 1_000 }));
    await store.createSession(
      newSession("old-3", { priority: 10, createdAtMs: T0 + 2_000, taskToken: null }),
    );
    await store.createSession(newSession("running", { status: "RUNNING", createdAtMs: T0 }));
    const bound = T0 + 60_000;
    const first = await store.staleSessions("PENDING", bound, { limit: 2 });
    expect(first.items.map((s) => s.id)).toEqual(["old-1"]);
    expect(first.cursor).toBeDefined();
    const second = await store.staleSessions("PENDING", bound, { limit: 2, cursor: first.cursor! });
    expect(second).toEqual({
      items: [expect.objectContaining({ id: "old-2" }), expect.objectContaining({ id: "old-3" })],
    });
    expect((await store.staleSessions("RUNNING", bound)).items.map((s) => s.id)).toEqual(["running"]);
    expect((await caught(() => store.staleSessions("PENDING", bound, { cursor: "nonsense" }))).message).toBe(
      "cursor: is not a cursor from a stale:PENDING listing",
    );
  });
});
