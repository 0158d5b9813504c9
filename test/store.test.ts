/**
 * The DynamoDB store against DynamoDB Local: creating and reading sessions, queue-ordered
 * targets across shards, atomic conditional writes, history merging and
 * listings. Each describe block owns a fresh table, so index queries see only its own sessions.
 */
import { GetItemCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { RequestCounter } from "../functions/adapters/dynamo/metrics.ts";
import { planReservation } from "../functions/adapters/dynamo/capacity.ts";
import { INLINE_HISTORY_MAX } from "../functions/adapters/dynamo/item-codec.ts";
import { MAX_KERNELS_PER_SESSION } from "../functions/adapters/dynamo/new-session.ts";
import {
  fitsExpressions,
  planKernelPatches,
  planSessionWrite,
} from "../functions/adapters/dynamo/session-write.ts";
import {
  historySk,
  queueSk,
  RESERVED_PREFIXES,
  sessionPk,
  shardOf,
  USED_PREFIXES,
} from "../functions/adapters/dynamo/keys.ts";
import { stageEntryWrite } from "../functions/core/effects.ts";
import { sessionAfterWrite } from "../functions/core/session-after-write.ts";
import type { SessionWrite } from "../functions/core/effects.ts";
import { placeHistory } from "../functions/core/history.ts";
import { DynamoSessionStore } from "../functions/adapters/dynamo/dynamo-session-store.ts";
import {
  agentRegistration,
  caught,
  freshTable,
  localClient,
  newSession,
  skip,
  T0,
  type TestTable,
} from "./store-fixtures.ts";

const DAY_MS = 86_400_000;

describe("sessions: create, read, write", () => {
  let table: TestTable;
  beforeAll(async () => {
    table = await freshTable("cairn-store-sessions");
  });
  afterAll(() => table.drop());

  test("a created session reads back with its kernels in index order", async () => {
    const store = table.store();
    const input = newSession("create-1", { replicas: 3 });
    const created = await store.createSession({
      session: input.session,
      kernels: [...input.kernels].reverse(),
    });
    expect(created).toEqual({ created: true, session: input });
    expect(await store.getSession("create-1")).toEqual(input);
    expect(await store.getSession("create-missing")).toBeUndefined();
  });

  test("a duplicate id writes nothing and returns the stored session", async () => {
    const store = table.store();
    const first = newSession("dup-1", { replicas: 2, priority: 5 });
    await store.createSession(first);
    const again = newSession("dup-1", { replicas: 3, priority: 99 });
    const result = await store.createSession(again);
    expect(result).toEqual({ created: false, session: first });
    expect((await store.getSession("dup-1"))?.kernels).toHaveLength(2);
  });

  test("getSessions reads session items, which hold their kernels, in one request, the widest gang included", async () => {
    const client = localClient();
    const sent: { command: string; keys: string[] }[] = [];
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { RequestItems?: Record<string, { Keys: { sk: { S: string } }[] }> };
        const keys = Object.values(input.RequestItems ?? {}).flatMap((r) => r.Keys.map((k) => k.sk.S));
        sent.push({ command: context.commandName ?? "", keys });
        return next(args);
      },
      { step: "initialize" },
    );
    const store = new DynamoSessionStore({ client, tableName: table.tableName });
    await table.store().createSession(newSession("order-a", { replicas: 2 }));
    const gang = newSession("order-gang", { replicas: MAX_KERNELS_PER_SESSION });
    await table.store().createSession(gang);
    const got = await store.getSessions(["order-a", "order-gang"]);
    client.destroy();
    expect(got).toEqual([await table.store().getSession("order-a"), gang]);
    expect(sent.map((r) => [r.command, r.keys])).toEqual([["BatchGetItemCommand", ["SESSION", "SESSION"]]]);
  });

  test("getSessions keeps the order asked for and leaves absent ids out", async () => {
    const store = table.store();
    await store.createSession(newSession("many-a"));
    await store.createSession(newSession("many-b"));
    const got = await store.getSessions(["many-b", "many-nope", "many-a", "many-b"]);
    expect(got.map((s) => s.session.id)).toEqual(["many-b", "many-a"]);
  });

  test("one write commits status, stage, kernels, tries, history and pending reason together", async () => {
    const store = table.store();
    const { session } = newSession("apply-1");
    await store.createSession(newSession("apply-1"));
    await store.applyWrite({
      sessionId: "apply-1",
      expected: { status: "PENDING", version: 0 },
      nowMs: T0 + 1_000,
      tries: "increment",
      pendingReason: "no agent has 1 cpu free",
      history: placeHistory(undefined, [skip("apply-1", T0 + 1_000, "no agent has 1 cpu free")]),
    });
    const history = placeHistory((await store.getSession("apply-1"))?.session.lastHistory, [
      {
        sessionId: "apply-1",
        handler: "ScheduleNewSessions",
        result: "SUCCESS",
        fromStatus: "PENDING",
        toStatus: "SCHEDULED",
        atMs: T0 + 2_000,
      },
    ]);
    const applied = await store.applyWrite({
      sessionId: "apply-1",
      expected: { status: "PENDING", version: 1 },
      nowMs: T0 + 2_000,
      status: "SCHEDULED",
      stage: { enteredAtMs: T0 + 2_000, expiresAtMs: T0 + 302_000, taskToken: "tok-scheduled" },
      tries: "reset",
      pendingReason: null,
      kernels: [
        { index: 0, status: "SCHEDULED", agentId: "agent-a" },
        { index: 1, status: "SCHEDULED", agentId: "agent-b", message: "placed" },
      ],
      history,
    });
    expect(applied).toEqual({ sessionId: "apply-1", version: 2 });
    const after = await store.getSession("apply-1");
    expect(after?.session).toEqual({
      ...session,
      status: "SCHEDULED",
      version: 2,
      updatedAtMs: T0 + 2_000,
      stage: { enteredAtMs: T0 + 2_000, expiresAtMs: T0 + 302_000, taskToken: "tok-scheduled" },
      tries: 0,
      lastHistory: history[0],
    });
    expect(after?.kernels.map((k) => [k.status, k.agentId, k.statusChangedAtMs])).toEqual([
      ["SCHEDULED", "agent-a", T0 + 2_000],
      ["SCHEDULED", "agent-b", T0 + 2_000],
    ]);
    expect(after?.kernels[1]?.message).toBe("placed");
    expect((await store.listHistory("apply-1")).map((r) => [r.seq, r.result, r.toStatus])).toEqual([
      [0, "SKIPPED", undefined],
      [1, "SUCCESS", "SCHEDULED"],
    ]);
  });

  test("sessionAfterWrite is what a read right after the write returns, field by field", async () => {
    const store = table.store();
    await store.createSession(newSession("after-1", { replicas: 2 }));
    let copy = (await store.getSession("after-1"))!;
    const check = async (write: Omit<SessionWrite, "sessionId" | "expected">) => {
      const full: SessionWrite = {
        ...write,
        sessionId: "after-1",
        expected: { status: copy.session.status, version: copy.session.version },
      };
      await store.applyWrite(full);
      const computed = sessionAfterWrite(copy, full);
      const read = (await store.getSession("after-1"))!;
      expect(computed).toEqual(read);
      copy = read;
    };
    await check({
      nowMs: T0 + 1,
      tries: "increment",
      pendingReason: "waiting",
      avoidAgentIds: ["agent-x"],
      history: placeHistory(copy.session.lastHistory, [skip("after-1", T0 + 1, "waiting")]),
    });
    await check(
      stageEntryWrite({
        session: copy.session,
        kernels: copy.kernels,
        transition: { from: "PENDING", to: "SCHEDULED", result: "SUCCESS", handler: "ScheduleNewSessions" },
        taskToken: "tok-1",
        nowMs: T0 + 2,
      }),
    );
    await check({
      nowMs: T0 + 3,
      claimStage: true,
      cancelRequestedAtMs: T0 + 3,
      cancelReason: "asked",
      preemption: { atMs: T0 + 3, by: "other", byPriority: 9 },
      kernels: [
        {
          index: 0,
          expectedVersion: copy.kernels[0]!.version ?? 0,
          agentId: "agent-a",
          exitCode: 3,
          taskArn: "arn:aws:ecs:us-east-1:123456789012:task/cairn/0123456789abcdef0",
          message: "m",
        },
      ],
      kernelGuards: [{ index: 1, version: copy.kernels[1]!.version ?? 0 }],
    });
    await check({
      nowMs: T0 + 4,
      // A second cancel keeps the first time and reason; the rest clears.
      cancelRequestedAtMs: T0 + 4,
      cancelReason: "again",
      preemption: null,
      avoidAgentIds: null,
      pendingReason: null,
      runIndex: "increment",
      retry: { totalRetries: 1, ruleRetries: { r: 1 }, failureCount: 1, preemptionCount: 0 },
      kernels: [
        {
          index: 0,
          expectedVersion: copy.kernels[0]!.version ?? 0,
          agentId: null,
          resetRun: true,
          status: "PENDING",
        },
      ],
    });
    // The run's reset took the task with it.
    expect(copy.kernels[0]?.taskArn).toBeUndefined();
    await check({
      nowMs: T0 + 5,
      kernels: [
        {
          index: 1,
          expectedVersion: copy.kernels[1]!.version ?? 0,
          taskArn: "arn:aws:ecs:us-east-1:123456789012:task/cairn/fedcba9876543210f",
        },
      ],
    });
    expect(copy.kernels[1]?.taskArn).toBe("arn:aws:ecs:us-east-1:123456789012:task/cairn/fedcba9876543210f");
    await check({
      nowMs: T0 + 6,
      kernels: [{ index: 1, expectedVersion: copy.kernels[1]!.version ?? 0, taskArn: null }],
    });
    expect(copy.kernels[1]?.taskArn).toBeUndefined();
    // Back in PENDING: the session is requeued (its queue key moves ahead of new sessions); the
    // first requeue's time is kept.
    const requeue = { priority: copy.session.spec.priority, createdAtMs: copy.session.createdAtMs };
    await check({ nowMs: T0 + 7, requeue: { atMs: T0 + 7, ...requeue } });
    expect(copy.session.requeuedAtMs).toBe(T0 + 7);
    await check({ nowMs: T0 + 8, requeue: { atMs: T0 + 8, ...requeue } });
    expect(copy.session.requeuedAtMs).toBe(T0 + 7);
  });

  test("a write whose kernel part fails changes nothing at all", async () => {
    const store = table.store();
    const { session, kernels } = newSession("atomic-1");
    await store.createSession({ session, kernels });
    const error = await caught(() =>
      store.applyWrite({
        sessionId: "atomic-1",
        expected: { status: "PENDING", version: 0 },
        nowMs: T0 + 5_000,
        status: "SCHEDULED",
        stage: { enteredAtMs: T0 + 5_000, expiresAtMs: T0 + 9_000, taskToken: "t2" },
        tries: "increment",
        kernels: [
          { index: 0, status: "SCHEDULED" },
          { index: 7, status: "SCHEDULED" },
        ],
        history: placeHistory(undefined, [skip("atomic-1", T0 + 5_000, "x")]),
      }),
    );
    expect(error).toMatchObject({
      code: "NOT_FOUND",
      name: "NotFoundError",
      entity: "kernel",
      id: "atomic-1/7",
    });
    expect(await store.getSession("atomic-1")).toEqual({ session, kernels });
    expect(await store.listHistory("atomic-1")).toEqual([]);
  });

  test("a stale expected status or version is a ConflictError naming what was found", async () => {
    const store = table.store();
    await store.createSession(newSession("conflict-1"));
    await store.applyWrite({
      sessionId: "conflict-1",
      expected: { status: "PENDING", version: 0 },
      nowMs: T0 + 1,
      claimStage: true,
    });
    const staleVersion = await caught(() =>
      store.applyWrite({
        sessionId: "conflict-1",
        expected: { status: "PENDING", version: 0 },
        nowMs: T0 + 2,
        tries: "increment",
      }),
    );
    expect(staleVersion).toMatchObject({
      name: "ConflictError",
      code: "CONFLICT",
      sessionId: "conflict-1",
      expected: { status: "PENDING", version: 0 },
      found: { status: "PENDING", version: 1 },
    });
    const staleStatus = await caught(() =>
      store.applyWrite({
        sessionId: "conflict-1",
        expected: { status: "SCHEDULED", version: 1 },
        nowMs: T0 + 2,
        tries: "increment",
      }),
    );
    expect(staleStatus).toMatchObject({
      code: "CONFLICT",
      expected: { status: "SCHEDULED", version: 1 },
      found: { status: "PENDING", version: 1 },
    });
    expect(staleStatus.message).toBe("session conflict-1: expected SCHEDULED v1, found PENDING v1");
    const missing = await caught(() =>
      store.applyWrite({
        sessionId: "conflict-nope",
        expected: { status: "PENDING", version: 0 },
        nowMs: T0,
        tries: "increment",
      }),
    );
    expect(missing).toMatchObject({ code: "NOT_FOUND", entity: "session", id: "conflict-nope" });
  });

  test("claiming a stage drops the token; agentId null clears a placement; a cancel time is kept once", async () => {
    const store = table.store();
    await store.createSession(newSession("claim-1"));
    await store.applyWrite({
      sessionId: "claim-1",
      expected: { status: "PENDING", version: 0 },
      nowMs: T0 + 1,
      kernels: [{ index: 0, agentId: "agent-a", error: "pull failed" }],
      cancelRequestedAtMs: T0 + 1,
    });
    await store.applyWrite({
      sessionId: "claim-1",
      expected: { status: "PENDING", version: 1 },
      nowMs: T0 + 2,
      claimStage: true,
      kernels: [{ index: 0, agentId: null, error: null }],
      cancelRequestedAtMs: T0 + 2,
    });
    const after = await store.getSession("claim-1");
    expect(after?.session.stage).toEqual({ enteredAtMs: T0, expiresAtMs: T0 + 600_000 });
    expect(after?.session.cancelRequestedAtMs).toBe(T0 + 1);
    expect(after?.kernels[0]).not.toHaveProperty("agentId");
    expect(after?.kernels[0]).not.toHaveProperty("error");
  });

  test("repeated outcomes merge into one record; a different one appends; records carry their TTL", async () => {
    const retentionDays = 7;
    const store = table.store({ historyRetentionDays: retentionDays, clock: () => T0 });
    await store.createSession(newSession("hist-1"));
    let version = 0;
    const record = async (atMs: number, message: string): Promise<void> => {
      const s = (await store.getSession("hist-1"))!.session;
      const write: SessionWrite = {
        sessionId: "hist-1",
        expected: { status: s.status, version: s.version },
        nowMs: atMs,
        history: placeHistory(s.lastHistory, [skip("hist-1", atMs, message)]),
      };
      version = (await store.applyWrite(write)).version;
    };
    await record(T0 + 1_000, "no capacity");
    await record(T0 + 2_000, "no capacity");
    await record(T0 + 3_000, "no capacity");
    await record(T0 + 10_000, "queue paused");
    expect(version).toBe(4);
    const history = await store.listHistory("hist-1");
    expect(history.map((r) => [r.seq, r.message, r.count, r.firstAtMs, r.lastAtMs])).toEqual([
      [0, "no capacity", 3, T0 + 1_000, T0 + 3_000],
      [1, "queue paused", 1, T0 + 10_000, T0 + 10_000],
    ]);
    // The first records are kept in the session item, not as items of their own.
    const raw = async (sk: string) =>
      (
        await table.client.send(
          new GetItemCommand({
            TableName: table.tableName,
            Key: { pk: { S: sessionPk("hist-1") }, sk: { S: sk } },
          }),
        )
      ).Item;
    expect(await raw(historySk(0))).toBeUndefined();
    expect((await raw("SESSION"))?.["history"]?.M?.["0"]?.M?.["count"]).toEqual({ N: "3" });
    // Past the first record's expiry, readers no longer see it.
    const later = table.store({
      historyRetentionDays: retentionDays,
      clock: () => T0 + 5_000 + retentionDays * DAY_MS,
    });
    expect((await later.listHistory("hist-1")).map((r) => r.seq)).toEqual([1]);
    expect((await store.listHistory("hist-1", { fromSeq: 1 })).map((r) => r.seq)).toEqual([1]);
  });

  test("records past the session item's first ones are items of their own, with their TTL", async () => {
    const retentionDays = 7;
    const store = table.store({ historyRetentionDays: retentionDays, clock: () => T0 });
    await store.createSession(newSession("hist-many"));
    const drafts = Array.from({ length: INLINE_HISTORY_MAX + 2 }, (_, i) =>
      skip("hist-many", T0 + i, `r${i}`),
    );
    await store.applyWrite({
      sessionId: "hist-many",
      expected: { status: "PENDING", version: 0 },
      nowMs: T0,
      history: placeHistory(undefined, drafts),
    });
    expect((await store.listHistory("hist-many")).map((r) => r.message)).toEqual(
      drafts.map((d) => d.message),
    );
    expect(
      (await store.listHistory("hist-many", { fromSeq: INLINE_HISTORY_MAX - 1, limit: 2 })).map((r) => r.seq),
    ).toEqual([INLINE_HISTORY_MAX - 1, INLINE_HISTORY_MAX]);
    const item = await table.client.send(
      new GetItemCommand({
        TableName: table.tableName,
        Key: { pk: { S: sessionPk("hist-many") }, sk: { S: historySk(INLINE_HISTORY_MAX) } },
      }),
    );
    expect(item.Item?.["expiresAtEpochSec"]).toEqual({
      N: String(Math.ceil((T0 + INLINE_HISTORY_MAX + retentionDays * DAY_MS) / 1000)),
    });
  });

  test("kernel reports write kernels alone: a stage write and a report collide only on one kernel", async () => {
    const store = table.store();
    await store.createSession(newSession("kver-1", { replicas: 2 }));
    const at = { status: "PENDING" as const, version: 0 };
    // A report on kernel 0 leaves the session item (its version) alone.
    await store.patchKernels("kver-1", at, [{ index: 0, expectedVersion: 0, message: "report" }], T0 + 1);
    let read = await store.getSession("kver-1");
    expect(read?.session.version).toBe(0);
    expect(read?.kernels.map((k) => k.version)).toEqual([1, undefined]);
    // A write at the session's version read before the report still commits, and may patch
    // kernel 1, which the report left alone…
    await store.applyWrite({
      sessionId: "kver-1",
      expected: at,
      nowMs: T0 + 2,
      tries: "increment",
      kernels: [{ index: 1, expectedVersion: 0, message: "entry" }],
    });
    // …but not kernel 0 as it was before the report.
    const clash = await caught(() =>
      store.applyWrite({
        sessionId: "kver-1",
        expected: { status: "PENDING", version: 1 },
        nowMs: T0 + 3,
        kernels: [{ index: 0, expectedVersion: 0, message: "stale" }],
      }),
    );
    expect(clash).toMatchObject({ code: "CONFLICT", reason: "kernel 0 changed since it was read" });
    // The refusal carries the session as it stands (DynamoDB's ALL_OLD): the caller's next
    // attempt plans from it instead of reading it again.
    expect(clash["current"]).toEqual(await store.getSession("kver-1"));
    // Carried, not written out: a logged error does not hold the session (spec, task token).
    expect(Object.keys(clash)).not.toContain("current");
    expect(JSON.parse(JSON.stringify(clash))).not.toHaveProperty("current");
    // A report computed from a stale kernel conflicts too, said in its one request: the session
    // is not read just to name it, and is carried as the refusal showed it. One for a missing
    // kernel is not found.
    const now = { status: "PENDING" as const, version: 1 };
    const metrics = new RequestCounter();
    const counted = table.store({ metrics });
    const stale = await caught(() =>
      counted.patchKernels("kver-1", now, [{ index: 1, expectedVersion: 0 }], T0 + 4),
    );
    expect(stale).toMatchObject({
      code: "CONFLICT",
      reason: "kernel 1 changed since it was read",
      found: undefined,
    });
    expect((stale as Error).message).toBe(
      "session kver-1: expected PENDING v1 (kernel 1 changed since it was read)",
    );
    expect([metrics.operations, metrics.reads.requests]).toEqual([1, 0]);
    expect(stale["current"]).toEqual(await store.getSession("kver-1"));
    expect(
      await caught(() => store.patchKernels("kver-1", now, [{ index: 5, expectedVersion: 0 }], T0 + 4)),
    ).toMatchObject({ code: "NOT_FOUND", entity: "kernel" });
    // Every patch names the version it was read at.
    expect(
      await caught(() => store.patchKernels("kver-1", now, [{ index: 0, status: "PREPARED" }], T0 + 4)),
    ).toMatchObject({ field: "patches[0].expectedVersion" });
    // Written, the session comes back as written (ALL_NEW), in the one request.
    const writes = new RequestCounter();
    const written = await table.store({ metrics: writes }).patchKernels(
      "kver-1",
      now,
      [
        { index: 0, expectedVersion: 1, message: "a" },
        { index: 1, expectedVersion: 1, message: "b" },
      ],
      T0 + 5,
    );
    expect([writes.operations, writes.reads.requests]).toEqual([1, 0]);
    read = await store.getSession("kver-1");
    expect(written).toEqual(read);
    expect(read?.kernels.map((k) => [k.version, k.message])).toEqual([
      [2, "a"],
      [2, "b"],
    ]);
    expect(read?.session.version).toBe(1);
  });

  test("a write that asks for the session back leaves the kernels it only guards unguarded; one it patches stays guarded", async () => {
    const store = table.store();
    await store.createSession(newSession("kret-1", { replicas: 2 }));
    const copy = (await store.getSession("kret-1"))!;
    // A report lands after the copy was read: kernel 1 moves on.
    await store.patchKernels(
      "kret-1",
      copy.session,
      [{ index: 1, expectedVersion: 0, message: "report" }],
      T0 + 1,
    );
    const entry = {
      sessionId: "kret-1",
      expected: { status: "PENDING" as const, version: 0 },
      nowMs: T0 + 2,
      tries: "increment" as const,
      kernels: [{ index: 0, expectedVersion: 0, message: "entry" }],
      kernelGuards: [{ index: 1, version: 0 }],
    };
    // Guarded, the write is refused…
    expect(await caught(() => store.applyWrite(entry))).toMatchObject({
      code: "CONFLICT",
      reason: "kernel 1 changed since it was read",
    });
    // …asked to return the session, it commits in one request and returns it, the report's change in it.
    const metrics = new RequestCounter();
    const applied = await table.store({ metrics }).applyWrite(entry, { returnSession: true });
    expect([metrics.operations, metrics.reads.requests]).toEqual([1, 0]);
    const read = await store.getSession("kret-1");
    expect(applied).toEqual({ sessionId: "kret-1", version: 1, session: read });
    expect(read?.kernels.map((k) => k.message)).toEqual(["entry", "report"]);
    // A kernel the write patches keeps its guard: a stale one is refused either way.
    const stale = await caught(() =>
      store.applyWrite(
        { ...entry, expected: { status: "PENDING", version: 1 }, kernelGuards: [{ index: 1, version: 1 }] },
        { returnSession: true },
      ),
    );
    expect(stale).toMatchObject({ code: "CONFLICT", reason: "kernel 0 changed since it was read" });
  });

  test("the core's stage entry write applies as one transaction", async () => {
    const store = table.store();
    const { session, kernels } = newSession("entry-1");
    await store.createSession({ session, kernels });
    await store.applyWrite({
      sessionId: "entry-1",
      expected: { status: "PENDING", version: 0 },
      nowMs: T0 + 1,
      claimStage: true,
    });
    const current = (await store.getSession("entry-1"))!;
    const write = stageEntryWrite({
      session: current.session,
      kernels: current.kernels,
      transition: { from: "PENDING", to: "SCHEDULED", result: "SUCCESS", handler: "ScheduleNewSessions" },
      taskToken: "tok-2",
      nowMs: T0 + 10,
    });
    await store.applyWrite(write);
    const after = (await store.getSession("entry-1"))!;
    expect(after.session).toMatchObject({
      status: "SCHEDULED",
      version: 2,
      tries: 0,
      stage: { taskToken: "tok-2" },
    });
    expect(after.kernels.map((k) => k.status)).toEqual(["SCHEDULED", "SCHEDULED"]);
    expect(after.session.lastHistory).toMatchObject({ seq: 0, result: "SUCCESS", toStatus: "SCHEDULED" });
  });

  test("bad writes are refused before anything is sent, naming the field", async () => {
    const metrics = new RequestCounter();
    const store = table.store({ metrics });
    const base = { sessionId: "bad-1", expected: { status: "PENDING", version: 0 }, nowMs: T0 } as const;
    expect(await caught(() => store.applyWrite({ ...base, status: "SCHEDULED" }))).toMatchObject({
      code: "INVALID_STORE_REQUEST",
      field: "stage",
    });
    expect(
      await caught(() =>
        store.applyWrite({
          ...base,
          kernels: [
            { index: 0, status: "RUNNING" },
            { index: 0, exitCode: 1 },
          ],
        }),
      ),
    ).toMatchObject({ field: "kernels[1].index", message: "kernels[1].index: kernel 0 is patched twice" });
    // The session item and a record item each for the records past the item's first ones.
    const drafts = Array.from({ length: INLINE_HISTORY_MAX + 100 }, (_, i) =>
      skip("bad-1", T0 + i, `reason ${i}`),
    );
    const tooLarge = await caught(() =>
      store.applyWrite({ ...base, history: placeHistory(undefined, drafts) }),
    );
    expect(tooLarge).toMatchObject({ code: "TRANSACTION_TOO_LARGE", items: 101, limit: 100 });
    expect(metrics.operations).toBe(0);
  });

  /** A write that sets every field of the session and of each of `kernels` kernels. */
  function widestWrite(id: string, kernels: number): SessionWrite {
    return {
      sessionId: id,
      expected: { status: "PENDING", version: 0 },
      nowMs: T0 + 1,
      status: "SCHEDULED",
      stage: { enteredAtMs: T0 + 1, expiresAtMs: T0 + 600_000, taskToken: "t", entryAtMs: T0, attempt: 0 },
      tries: "increment",
      runIndex: "increment",
      pendingReason: "waiting for capacity",
      cancelRequestedAtMs: T0 + 1,
      cancelReason: "because",
      cancelForcedAtMs: T0 + 1,
      avoidAgentIds: ["agent-a", "agent-b"],
      preemption: { atMs: T0, by: "other", byPriority: 9 },
      retry: { failureCount: 1, preemptionCount: 1, totalRetries: 2, ruleRetries: { "p#0": 1 } },
      kernels: Array.from({ length: kernels }, (_, index) => ({
        index,
        expectedVersion: 0,
        status: "TERMINATED" as const,
        agentId: "agent-a",
        exitCode: 137,
        taskArn: "arn:aws:ecs:eu-west-1:123456789012:task/c/0123456789abcdef",
        condition: "OOMKilled" as const,
        message: "killed",
        failureCategory: "memory",
        outcome: "FAILED" as const,
        error: "out of memory",
        startedAtMs: T0,
        finishedAtMs: T0 + 1,
      })),
      history: placeHistory(undefined, [skip(id, T0 + 1, "a"), skip(id, T0 + 1, "b")]),
    };
  }

  const LAYOUT = { shards: 4, historyRetentionDays: 30, retentionDays: 90 };

  test("a session of few kernels is written field by field, one UpdateItem inside DynamoDB's 4 KB expressions", async () => {
    const metrics = new RequestCounter();
    const store = table.store({ metrics });
    const id = "widest-8";
    await store.createSession(newSession(id, { replicas: 8 }));
    const write = widestWrite(id, 8);
    const plan = planSessionWrite(write, { tableName: table.tableName, ...LAYOUT });
    expect(plan.items[0]!.Update!.UpdateExpression!.length).toBeLessThan(3_000);
    expect(fitsExpressions(plan)).toBe(true);
    const before = metrics.operations;
    await store.applyWrite(write);
    expect(metrics.operations - before).toBe(1);
    expect(
      (await store.getSession(id))!.kernels.every((k) => k.status === "TERMINATED" && k.exitCode === 137),
    ).toBe(true);
  });

  test("the widest gang's writes (every kernel, every field) are sent with the kernels whole, inside 4 KB", async () => {
    const store = table.store();
    const id = "widest-gang";
    const n = MAX_KERNELS_PER_SESSION;
    await store.createSession(newSession(id, { replicas: n }));
    const layout = { tableName: table.tableName, ...LAYOUT };
    const write = widestWrite(id, n);
    // Field by field it would not fit; with the kernels as read, written whole, it does.
    expect(fitsExpressions(planSessionWrite(write, layout))).toBe(false);
    const stored = (await store.getSession(id))!;
    expect(fitsExpressions(planSessionWrite(write, layout, stored.kernels))).toBe(true);
    await store.applyWrite(write);
    const after = (await store.getSession(id))!;
    expect(after).toEqual(sessionAfterWrite(stored, write));

    // Reports of every kernel at once: the same, without touching the session's own fields.
    const patches = after.kernels.map((k) => ({
      index: k.index,
      expectedVersion: k.version ?? 0,
      status: "TERMINATED" as const,
      exitCode: 0,
      message: "finished, every kernel at once",
      finishedAtMs: T0 + 2,
    }));
    expect(fitsExpressions(planKernelPatches(id, patches, T0 + 2, layout))).toBe(false);
    const reported = await store.patchKernels(id, after.session, patches, T0 + 2);
    expect(reported!.kernels.map((k) => [k.exitCode, k.version])).toEqual(
      after.kernels.map((k) => [0, (k.version ?? 0) + 1]),
    );
    expect(reported!.session).toEqual(after.session);

    // A kernel that moved since it was read refuses the whole write, as it does field by field.
    const stale = await caught(() => store.patchKernels(id, after.session, patches, T0 + 3));
    expect(stale).toMatchObject({ code: "CONFLICT", reason: "kernel 0 changed since it was read" });
  });

  test("the widest gang is placed in one reservation, every kernel written whole", async () => {
    const store = table.store();
    const id = "widest-placed";
    const n = MAX_KERNELS_PER_SESSION;
    await store.createSession(newSession(id, { replicas: n, resources: { cpu: 0.25, memoryMiB: 64 } }));
    const agents = ["wide-a", "wide-b", "wide-c", "wide-d"];
    for (const agentId of agents)
      await store.registerAgent(agentRegistration(agentId, { cpu: 4, memoryMiB: 1024 }));
    const request = {
      sessionId: id,
      expected: { status: "PENDING" as const, version: 0 },
      nowMs: T0 + 1,
      claimStage: true,
      placements: Array.from({ length: n }, (_, kernelIndex) => ({
        kernelIndex,
        agentId: agents[kernelIndex % agents.length]!,
        resources: { cpu: 0.25, memoryMiB: 64 },
        incarnation: `${agents[kernelIndex % agents.length]!}-1`,
      })),
    };
    expect(fitsExpressions(planReservation(request, { tableName: table.tableName, ...LAYOUT }))).toBe(false);
    const allocations = await store.reserveCapacity(request);
    expect(allocations.map((a) => [a.agentId, a.kernelIndexes.length])).toEqual(
      agents.map((a) => [a, n / 4]),
    );
    const placed = (await store.getSession(id))!;
    expect(placed.session.stage.taskToken).toBeUndefined();
    expect(placed.kernels.map((k) => [k.agentId, k.agentIncarnation, k.version])).toEqual(
      request.placements.map((p) => [p.agentId, p.incarnation, 1]),
    );
    // Placing it again is refused whole: its kernels are placed.
    const again = await caught(() => store.reserveCapacity({ ...request, expected: placed.session }));
    expect(again).toMatchObject({ code: "CONFLICT" });
    expect((await store.getAgent("wide-a"))!.free).toEqual({ cpu: 0, memoryMiB: 0 });
  });

  test("the metrics hook counts write requests, items and capacity", async () => {
    const metrics = new RequestCounter({ capacity: true });
    const store = table.store({ metrics });
    await createAndSkip(store, "metrics-1");
    await store.createSession(newSession("metrics-1")); // duplicate: a failed condition
    await store.createSession(newSession("metrics-gang", { replicas: MAX_KERNELS_PER_SESSION }));
    // A session is one item, whatever its kernels (they and its first history records are in it).
    expect(metrics.operations).toBe(4);
    expect(metrics.items).toBe(4);
    expect(metrics.failedOperations).toBe(1);
    expect(metrics.byOperation.get("PutItem")).toEqual({ operations: 3, items: 3 });
    expect(metrics.byOperation.get("UpdateItem")).toEqual({ operations: 1, items: 1 });
    expect(metrics.capacityUnits).toBeGreaterThan(0);
    // A one-item write is no transaction: nothing of it is billed double.
    expect(metrics.transactionCapacityUnits).toBe(0);
    // Reads report theirs too: a consistent read of an item under 4 KB is one unit.
    const before = metrics.readCapacityUnits;
    await store.getSession("metrics-1");
    expect(metrics.readCapacityUnits - before).toBe(1);
  });

  test("consumed capacity is asked for only by a counter that sums it", async () => {
    // A counter without `capacity` (the product's own) does not ask: DynamoDB then returns none.
    const metrics = new RequestCounter();
    await createAndSkip(table.store({ metrics }), "metrics-nocap");
    expect(metrics.operations).toBe(2);
    expect(metrics.capacityUnits).toBe(0);
    await table.store({ metrics }).getSession("metrics-nocap");
    expect(metrics.readCapacityUnits).toBe(0);
  });
});

/** Two writes: a session of 3 kernels created, then a skip recorded on it. */
async function createAndSkip(store: DynamoSessionStore, id: string): Promise<void> {
  await store.createSession(newSession(id, { replicas: 3 }));
  await store.applyWrite({
    sessionId: id,
    expected: { status: "PENDING", version: 0 },
    nowMs: T0 + 1,
    history: placeHistory(undefined, [skip(id, T0 + 1, "wait")]),
  });
}

describe("targets and listings", () => {
  let table: TestTable;
  beforeAll(async () => {
    table = await freshTable("cairn-store-targets");
    const store = table.store();
    // Twelve PENDING sessions over three priorities and four creation times, spread over shards.
    for (let i = 0; i < 12; i++) {
      await store.createSession(
        newSession(`q-${i}`, { priority: [5, 50, 10][i % 3], createdAtMs: T0 + (11 - i) * 1_000 }),
      );
    }
    await store.createSession(
      newSession("q-running", { status: "RUNNING", kernelStatus: "RUNNING", priority: 70 }),
    );
    await store.createSession(
      newSession("q-scheduled", { status: "SCHEDULED", kernelStatus: "SCHEDULED", priority: 1 }),
    );
  });
  afterAll(() => table.drop());

  const expectedOrder = Array.from({ length: 12 }, (_, i) => ({
    id: `q-${i}`,
    priority: [5, 50, 10][i % 3] ?? 0,
    createdAtMs: T0 + (11 - i) * 1_000,
  }))
    .sort((a, b) => b.priority - a.priority || a.createdAtMs - b.createdAtMs)
    .map((s) => s.id);

  test("the sessions really are spread over several shards", () => {
    expect(new Set(expectedOrder.map((id) => shardOf(id, 4))).size).toBeGreaterThan(1);
  });

  test("targets come highest priority first, then oldest first, across all shards", async () => {
    const store = table.store();
    const all = await store.targetsByStatus({ statuses: ["PENDING"], limit: 100 });
    expect(all.map((s) => s.session.id)).toEqual(expectedOrder);
    expect(all[0]?.kernels).toHaveLength(2);
    const top = await store.targetsByStatus({ statuses: ["PENDING"], limit: 5 });
    expect(top.map((s) => s.session.id)).toEqual(expectedOrder.slice(0, 5));
    const mixed = await store.targetsByStatus({ statuses: ["PENDING", "SCHEDULED", "RUNNING"], limit: 3 });
    expect(mixed.map((s) => s.session.id)).toEqual(["q-running", ...expectedOrder.slice(0, 2)]);
  });

  test("targetable-only leaves out sessions whose stage was claimed; entering a stage brings them back", async () => {
    const store = table.store();
    const claimed = expectedOrder[0]!;
    await store.applyWrite({
      sessionId: claimed,
      expected: { status: "PENDING", version: 0 },
      nowMs: T0 + 99,
      claimStage: true,
    });
    const targetable = await store.targetsByStatus({ statuses: ["PENDING"], limit: 3, targetableOnly: true });
    expect(targetable.map((s) => s.session.id)).toEqual(expectedOrder.slice(1, 4));
    const everyone = await store.targetsByStatus({ statuses: ["PENDING"], limit: 1 });
    expect(everyone.map((s) => s.session.id)).toEqual([claimed]);
    await store.applyWrite({
      sessionId: claimed,
      expected: { status: "PENDING", version: 1 },
      nowMs: T0 + 100,
      stage: { enteredAtMs: T0 + 100, expiresAtMs: T0 + 700, taskToken: "again" },
    });
    const back = await store.targetsByStatus({ statuses: ["PENDING"], limit: 1, targetableOnly: true });
    expect(back.map((s) => s.session.id)).toEqual([claimed]);
  });

  test("a claim keeps its token in the table: found by claimed-only, not a target, a target again once given back", async () => {
    const store = table.store();
    const id = expectedOrder[1]!;
    const token = (await store.getSession(id))!.session.stage.taskToken!;
    await store.applyWrite({
      sessionId: id,
      expected: { status: "PENDING", version: 0 },
      nowMs: T0 + 50,
      claimStage: true,
      claimedToken: token,
    });
    const claimed = await store.getSession(id);
    expect(claimed?.session.stage).toMatchObject({ claimedToken: token, claimedAtMs: T0 + 50 });
    expect(claimed?.session.stage).not.toHaveProperty("taskToken");
    const targetable = await store.targetsByStatus({
      statuses: ["PENDING"],
      limit: 10,
      targetableOnly: true,
    });
    expect(targetable.map((s) => s.session.id)).not.toContain(id);
    const found = await store.targetsByStatus({ statuses: ["PENDING"], limit: 10, claimedOnly: true });
    expect(found.map((s) => s.session.id)).toContain(id);
    const { claimedToken: _t, claimedAtMs: _a, ...stage } = claimed!.session.stage;
    await store.applyWrite({
      sessionId: id,
      expected: { status: "PENDING", version: 1 },
      nowMs: T0 + 51,
      stage: { ...stage, taskToken: token },
    });
    const again = await store.targetsByStatus({ statuses: ["PENDING"], limit: 10, claimedOnly: true });
    expect(again.map((s) => s.session.id)).not.toContain(id);
    const back = await store.targetsByStatus({ statuses: ["PENDING"], limit: 10, targetableOnly: true });
    expect(back.map((s) => s.session.id)).toContain(id);
    await expect(
      store.targetsByStatus({ statuses: ["PENDING"], limit: 1, claimedOnly: true, targetableOnly: true }),
    ).rejects.toThrow(/claimedOnly: cannot be combined with targetableOnly/);
  });

  test("listing by status pages through every session once, in queue order", async () => {
    const store = table.store();
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await store.listSessionsByStatus("PENDING", { limit: 5, ...(cursor ? { cursor } : {}) });
      seen.push(...page.items.map((s) => s.id));
      cursor = page.cursor;
      pages++;
    } while (cursor !== undefined);
    expect(pages).toBe(3);
    expect(seen).toEqual(expectedOrder);
    const first = await store.listSessionsByStatus("PENDING", { limit: 1 });
    expect(await caught(() => store.listRecentSessions({ cursor: first.cursor! }))).toMatchObject({
      field: "cursor",
    });
  });

  test("recent sessions come newest first", async () => {
    const store = table.store();
    const page = await store.listRecentSessions({ limit: 4 });
    // q-running and q-scheduled were created at T0; q-0 is the newest of the rest (T0 + 11 s).
    expect(page.items.map((s) => s.id)).toEqual(["q-0", "q-1", "q-2", "q-3"]);
    const next = await store.listRecentSessions({ limit: 100, cursor: page.cursor! });
    expect(next.items).toHaveLength(10);
    expect(next.cursor).toBeUndefined();
  });
});

describe("queue order: requeued before new at the same priority", () => {
  let table: TestTable;
  beforeAll(async () => {
    table = await freshTable("cairn-store-requeued");
  });
  afterAll(() => table.drop());

  test("a session back in PENDING is listed and targeted before older new sessions of its priority, never before a higher one", async () => {
    const store = table.store();
    await store.createSession(newSession("new-old", { createdAtMs: T0, taskToken: "t-old" }));
    await store.createSession(newSession("new-young", { createdAtMs: T0 + 1, taskToken: "t-young" }));
    await store.createSession(
      newSession("urgent", { createdAtMs: T0 + 9, priority: 50, taskToken: "t-urgent" }),
    );
    await store.createSession(newSession("again", { createdAtMs: T0 + 5, taskToken: "t-again" }));
    const enter = async (
      id: string,
      from: "PENDING" | "SCHEDULED",
      to: "PENDING" | "SCHEDULED",
      nowMs: number,
    ) => {
      const read = (await store.getSession(id))!;
      await store.applyWrite(
        stageEntryWrite({
          session: read.session,
          kernels: read.kernels,
          transition: {
            from,
            to,
            result: to === "SCHEDULED" ? "SUCCESS" : "GIVE_UP",
            handler: "PrepareSessions",
          },
          taskToken: `t-${id}-${nowMs}`,
          nowMs,
        }),
      );
    };
    // "again" was scheduled, then gave up and went back to PENDING: requeued.
    await enter("again", "PENDING", "SCHEDULED", T0 + 10);
    await enter("again", "SCHEDULED", "PENDING", T0 + 11);
    expect((await store.getSession("again"))?.session.requeuedAtMs).toBe(T0 + 11);
    const order = ["urgent", "again", "new-old", "new-young"];
    const listed = await store.listSessionsByStatus("PENDING", { limit: 10 });
    expect(listed.items.map((s) => s.id)).toEqual(order);
    const targets = await store.targetsByStatus({ statuses: ["PENDING"], limit: 10, targetableOnly: true });
    expect(targets.map((t) => t.session.id)).toEqual(order);
    // Requeued again later: its place does not change (the first requeue's time is kept).
    await enter("again", "PENDING", "SCHEDULED", T0 + 12);
    await enter("again", "SCHEDULED", "PENDING", T0 + 13);
    expect((await store.getSession("again"))?.session.requeuedAtMs).toBe(T0 + 11);
    expect((await store.listSessionsByStatus("PENDING", { limit: 10 })).items.map((s) => s.id)).toEqual(
      order,
    );
  });
});

describe("recordOnce", () => {
  let table: TestTable;
  beforeAll(async () => {
    table = await freshTable("cairn-store-dedup");
  });
  afterAll(() => table.drop());

  test("true the first time, false after, true again once the record expired", async () => {
    let nowMs = T0;
    const store = table.store({ clock: () => nowMs });
    expect(await store.recordOnce("event-1", 60)).toBe(true);
    expect(await store.recordOnce("event-1", 60)).toBe(false);
    expect(await store.recordOnce("event-2", 60)).toBe(true);
    nowMs = T0 + 61_000;
    expect(await store.recordOnce("event-1", 60)).toBe(true);
    expect(await store.recordOnce("event-1", 60)).toBe(false);
  });
});

describe("keys", () => {
  test("no reserved prefix collides with a prefix in use", () => {
    for (const reserved of Object.values(RESERVED_PREFIXES)) {
      for (const used of USED_PREFIXES) {
        expect(reserved.startsWith(used) || used.startsWith(reserved), `${reserved} vs ${used}`).toBe(false);
      }
    }
  });

  test("queue keys sort by priority (highest first), then requeued before new, then age, then id; out-of-range priorities are refused", () => {
    const keys = [
      queueSk(-5, false, T0, "a"),
      queueSk(10, false, T0 + 1, "b"),
      queueSk(10, false, T0, "c"),
      queueSk(1_000_000_000, false, T0 + 9, "d"),
      queueSk(10, false, T0, "b"),
      // Armada: "Requeued jobs are scheduled before new jobs at the same priority".
      queueSk(10, true, T0 + 5, "e"),
      queueSk(-5, true, T0 + 5, "f"),
    ];
    expect([...keys].sort()).toEqual([keys[3], keys[5], keys[4], keys[2], keys[1], keys[6], keys[0]]);
    expect(() => queueSk(1.5, false, T0, "x")).toThrow(
      "spec.priority: must be an integer from -1000000000 to 1000000000, got 1.5",
    );
  });
});
