/**
 * A stage entry that carries the entry before it, not written (StageTransition.deferred: a stage
 * claimed on entry whose step completed it at once), against DynamoDB Local: both entries in one
 * write, both status changes announced in order; a copy made stale meanwhile costs a read and a
 * second try, never a lost field; a redelivery writes nothing.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { DynamoSessionStore } from "../functions/adapters/dynamo/dynamo-session-store.ts";
import { enterStage, EntryNotWrittenError, type EnterStageInput } from "../functions/app/enter-stage.ts";
import { isTransient } from "../functions/app/retryable.ts";
import { KernelCommands } from "../functions/app/kernel-commands.ts";
import type { EventsPort } from "../functions/core/ports/event-bus.ts";
import type { SessionWithKernels, StageTransition } from "../functions/core/model.ts";
import { caught, freshTable, newSession, T0, type TestTable, SILENT_EVENTS } from "./store-fixtures.ts";

const NOW = T0 + 60_000;
const SCHEDULED_AT = NOW - 40;

let table: TestTable;
let store: DynamoSessionStore;
beforeAll(async () => {
  table = await freshTable("cairn-enter-deferred");
  store = table.store();
});
afterAll(() => table.drop());

function deps(failures: Error[] = []) {
  const announced: string[] = [];
  const sent: string[] = [];
  const events: EventsPort = {
    ...SILENT_EVENTS,
    statusChanged: (details) => {
      announced.push(...details.map((d) => `${d.from}->${d.to} ${d.handler} at ${d.atMs - NOW}`));
      return Promise.resolve();
    },
  };
  const channel = {
    open: () => Promise.resolve(),
    send: (deliveries: readonly { message: { type: string; command?: { action: string } } }[]) => {
      const failure = failures.shift();
      if (failure) return Promise.reject(failure);
      sent.push(...deliveries.map((d) => d.message.command?.action ?? d.message.type));
      return Promise.resolve();
    },
  };
  return {
    announced,
    sent,
    deps: {
      store,
      events,
      commands: new KernelCommands(store, channel),
      clock: { nowMs: () => NOW },
      log: { info: () => {}, warn: () => {}, error: () => {} },
      terminationGraceMs: 1_000,
    },
  };
}

/** A session as a placement leaves it: PENDING, claimed (no token), its kernel placed. */
async function placedPending(id: string): Promise<SessionWithKernels> {
  const s = newSession(id, { status: "PENDING", replicas: 1, kernelStatus: "PENDING", taskToken: null });
  const kernels = s.kernels.map((k) => ({ ...k, agentId: "agent-a", agentIncarnation: "inc-1" }));
  await store.createSession({ session: s.session, kernels });
  return (await store.getSession(id))!;
}

function toPreparing(id: string, known: SessionWithKernels): EnterStageInput {
  const transition: StageTransition = {
    from: "SCHEDULED",
    to: "PREPARING",
    result: "SUCCESS",
    handler: "PrepareSessions",
    known,
    deferred: {
      transition: { from: "PENDING", to: "SCHEDULED", result: "SUCCESS", handler: "ScheduleNewSessions" },
      atMs: SCHEDULED_AT,
    },
  };
  return { sessionId: id, status: "PREPARING", transition, taskToken: "tok-1", executionName: id };
}

const lastTwo = async (id: string) =>
  (await store.listHistory(id))
    .slice(-2)
    .map((h) => `${h.handler} ${h.result} ${h.fromStatus}->${h.toStatus} at ${h.firstAtMs - NOW}`);

describe("an entry that carries the one before it", () => {
  test("both entries in one write, both changes announced in order, the command sent", async () => {
    const stored = await placedPending("def-1");
    const d = deps();
    await enterStage(toPreparing("def-1", stored), d.deps);
    const after = (await store.getSession("def-1"))!;
    expect(after.session).toMatchObject({ status: "PREPARING", version: stored.session.version + 1 });
    expect(after.session.stage.taskToken).toBe("tok-1");
    expect(after.kernels.map((k) => k.status)).toEqual(["PREPARING"]);
    expect(await lastTwo("def-1")).toEqual([
      "ScheduleNewSessions SUCCESS PENDING->SCHEDULED at -40",
      "PrepareSessions SUCCESS SCHEDULED->PREPARING at 0",
    ]);
    expect(d.announced).toEqual([
      "PENDING->SCHEDULED ScheduleNewSessions at -40",
      "SCHEDULED->PREPARING PrepareSessions at 0",
    ]);
    expect(d.sent).toEqual(["prepare"]);
  });

  test("a copy made stale by a cancel request: read again, both entries written, the request kept", async () => {
    const stored = await placedPending("def-2");
    await store.applyWrite({
      sessionId: "def-2",
      expected: { status: "PENDING", version: stored.session.version },
      nowMs: NOW - 10,
      cancelRequestedAtMs: NOW - 10,
      cancelReason: "changed my mind",
    });
    const d = deps();
    await enterStage(toPreparing("def-2", stored), d.deps);
    const after = (await store.getSession("def-2"))!;
    expect(after.session).toMatchObject({
      status: "PREPARING",
      cancelRequestedAtMs: NOW - 10,
      version: stored.session.version + 2,
    });
    expect(await lastTwo("def-2")).toEqual([
      "ScheduleNewSessions SUCCESS PENDING->SCHEDULED at -40",
      "PrepareSessions SUCCESS SCHEDULED->PREPARING at 0",
    ]);
  });

  test("a redelivery finds the stage entered and writes nothing", async () => {
    const stored = await placedPending("def-3");
    await enterStage(toPreparing("def-3", stored), deps().deps);
    const once = (await store.getSession("def-3"))!;
    const records = (await store.listHistory("def-3")).length;
    const again = deps();
    await enterStage(toPreparing("def-3", stored), again.deps);
    expect((await store.getSession("def-3"))!.session.version).toBe(once.session.version);
    expect(again.announced).toEqual([]);
    expect(await store.listHistory("def-3")).toHaveLength(records);
  });

  test("an expiry that beats the entry it leaves (its step completed it first): refused as retryable until the entry is written", async () => {
    const stored = await placedPending("def-4");
    const expired: EnterStageInput = {
      sessionId: "def-4",
      status: "PENDING",
      transition: { from: "SCHEDULED", to: "PENDING", result: "EXPIRED", handler: "Lifecycle" },
      taskToken: "tok-p",
      executionName: "def-4",
    };
    const error = await caught(() => enterStage(expired, deps().deps));
    expect(error).toBeInstanceOf(EntryNotWrittenError);
    expect(isTransient(error)).toBe(true);
    expect(error.message).toBe(
      "session def-4 is PENDING: the entry of SCHEDULED is not written yet; a retry will find it",
    );
    // The entry lands (written claimed, as when its completion failed); the retry applies.
    await store.applyWrite({
      sessionId: "def-4",
      expected: { status: "PENDING", version: stored.session.version },
      nowMs: NOW,
      status: "SCHEDULED",
      stage: { enteredAtMs: NOW, expiresAtMs: NOW + 300_000 },
    });
    await enterStage(expired, deps().deps);
    expect((await store.getSession("def-4"))!.session).toMatchObject({
      status: "PENDING",
      stage: { taskToken: "tok-p" },
    });
  });

  test("a first attempt that wrote both and failed to send: the retried attempt sends and announces both", async () => {
    const stored = await placedPending("def-5");
    const throttled = Object.assign(new Error("throttled"), { $retryable: { throttling: true } });
    const d = deps([throttled]);
    const first = {
      ...toPreparing("def-5", stored),
      entry: { state: "Preparing", enteredTime: new Date(NOW).toISOString(), retryCount: 0 },
    };
    expect(isTransient(await caught(() => enterStage(first, d.deps)))).toBe(true);
    expect(d.announced).toEqual([]);
    await enterStage({ ...first, taskToken: "tok-2", entry: { ...first.entry, retryCount: 1 } }, d.deps);
    expect((await store.getSession("def-5"))!.session.stage.taskToken).toBe("tok-2");
    expect(d.sent).toEqual(["prepare"]);
    expect(d.announced).toEqual([
      "PENDING->SCHEDULED ScheduleNewSessions at -40",
      "SCHEDULED->PREPARING PrepareSessions at 0",
    ]);
  });
});
