/**
 * EnterStage starting from the session copy a callback carries (StageTransition.known), against
 * DynamoDB Local: a current copy costs no read; a copy a kernel report made stale costs a second
 * try (from the session the refusal carries) where the entry patches that kernel, and nothing
 * where it leaves the kernel alone; never a wrong write.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { DynamoSessionStore } from "../functions/adapters/dynamo/dynamo-session-store.ts";
import { enterStage } from "../functions/app/enter-stage.ts";
import { KernelCommands } from "../functions/app/kernel-commands.ts";
import type { Logger } from "../functions/app/logger.ts";
import type { StageTransition } from "../functions/core/model.ts";
import { freshTable, newSession, T0, type TestTable, SILENT_EVENTS } from "./store-fixtures.ts";

const NOW = T0 + 60_000;
const quiet: Logger = { info: () => {}, warn: () => {}, error: () => {} };
const events = SILENT_EVENTS;

let table: TestTable;
let store: DynamoSessionStore;
beforeAll(async () => {
  table = await freshTable("cairn-enter-known");
  store = table.store();
});
afterAll(() => table.drop());

/** EnterStage's deps, with its session reads counted. */
function deps(reads: string[]) {
  const counted = Object.assign(Object.create(store) as DynamoSessionStore, {
    getSession: (id: string) => {
      reads.push(id);
      return store.getSession(id);
    },
  });
  const channel = { open: () => Promise.resolve(), send: () => Promise.resolve() };
  return {
    store: counted,
    events,
    commands: new KernelCommands(store, channel),
    clock: { nowMs: () => NOW },
    log: quiet,
    terminationGraceMs: 1_000,
  };
}

const toPreparing = (known: unknown): StageTransition =>
  ({
    from: "SCHEDULED",
    to: "PREPARING",
    result: "SUCCESS",
    handler: "PrepareSessions",
    known,
  }) as StageTransition;

describe("an entry given the session's copy", () => {
  test("a current copy: the entry reads nothing", async () => {
    await store.createSession(newSession("known-1", { status: "SCHEDULED", replicas: 1, taskToken: null }));
    const copy = (await store.getSession("known-1"))!;
    const reads: string[] = [];
    await enterStage(
      {
        sessionId: "known-1",
        status: "PREPARING",
        transition: toPreparing(copy),
        taskToken: "tok-1",
        executionName: "known-1",
      },
      deps(reads),
    );
    expect(reads).toEqual([]);
    const entered = (await store.getSession("known-1"))!;
    expect(entered.session).toMatchObject({ status: "PREPARING", stage: { taskToken: "tok-1" } });
    expect(entered.kernels.map((k) => k.status)).toEqual(["PREPARING"]);
  });

  test("a copy a report made stale: the write fails on the kernel, and the entry applies from the session the refusal carried, with no read", async () => {
    await store.createSession(newSession("known-2", { status: "SCHEDULED", replicas: 1, taskToken: null }));
    const copy = (await store.getSession("known-2"))!;
    // The agent answers before the entry: its kernel moves on (and its version with it).
    await store.patchKernels(
      "known-2",
      { status: "SCHEDULED", version: copy.session.version },
      [{ index: 0, status: "PREPARED", expectedVersion: 0 }],
      NOW,
    );
    const reads: string[] = [];
    await enterStage(
      {
        sessionId: "known-2",
        status: "PREPARING",
        transition: toPreparing(copy),
        taskToken: "tok-2",
        executionName: "known-2",
      },
      deps(reads),
    );
    expect(reads).toEqual([]);
    const entered = (await store.getSession("known-2"))!;
    expect(entered.session).toMatchObject({ status: "PREPARING", stage: { taskToken: "tok-2" } });
    // The report is kept: the entry never moves a kernel back.
    expect(entered.kernels.map((k) => k.status)).toEqual(["PREPARED"]);
  });

  test("a kernel the entry leaves alone, changed by a report after the copy: one write, no read, the report kept", async () => {
    await store.createSession(
      newSession("known-alone", { status: "CREATING", replicas: 1, taskToken: null }),
    );
    await store.patchKernels(
      "known-alone",
      { status: "CREATING", version: 0 },
      [{ index: 0, status: "RUNNING", expectedVersion: 0 }],
      NOW,
    );
    const copy = (await store.getSession("known-alone"))!;
    // The kernel exits before RUNNING is entered: the promotion does not patch it, only read it.
    await store.patchKernels(
      "known-alone",
      { status: "CREATING", version: 0 },
      [{ index: 0, status: "TERMINATED", exitCode: 0, expectedVersion: 1 }],
      NOW,
    );
    const reads: string[] = [];
    const d = deps(reads);
    const writes: unknown[] = [];
    const reading = d.store;
    d.store = Object.assign(Object.create(reading) as DynamoSessionStore, {
      applyWrite: (...args: Parameters<DynamoSessionStore["applyWrite"]>) => {
        writes.push(args[0]);
        return reading.applyWrite(...args);
      },
    });
    await enterStage(
      {
        sessionId: "known-alone",
        status: "RUNNING",
        transition: {
          from: "CREATING",
          to: "RUNNING",
          result: "SUCCESS",
          handler: "PromoteToRunning",
          known: copy,
        },
        taskToken: "tok-alone",
        executionName: "known-alone",
      },
      d,
    );
    expect([reads, writes.length]).toEqual([[], 1]);
    const entered = (await store.getSession("known-alone"))!;
    expect(entered.session).toMatchObject({ status: "RUNNING", stage: { taskToken: "tok-alone" } });
    expect(entered.kernels.map((k) => [k.status, k.exitCode])).toEqual([["TERMINATED", 0]]);
  });

  test("the first entry: the execution's input carries the created session, or (an older input) not", async () => {
    const created = newSession("known-4", { status: "PENDING", replicas: 1, taskToken: null });
    await store.createSession(created);
    const copy = (await store.getSession("known-4"))!;
    const submitted = (start: unknown): StageTransition =>
      ({ from: "PENDING", to: "PENDING", result: "SUBMITTED", handler: "Submit", start }) as StageTransition;
    const reads: string[] = [];
    await enterStage(
      {
        sessionId: "known-4",
        status: "PENDING",
        transition: submitted({ sessionId: "known-4", timeouts: {}, known: copy }),
        taskToken: "tok-4",
        executionName: "known-4",
      },
      deps(reads),
    );
    expect(reads).toEqual([]);
    await store.createSession(newSession("known-5", { status: "PENDING", replicas: 1, taskToken: null }));
    await enterStage(
      {
        sessionId: "known-5",
        status: "PENDING",
        transition: submitted({ sessionId: "known-5", timeouts: {} }),
        taskToken: "tok-5",
        executionName: "known-5",
      },
      deps(reads),
    );
    expect(reads).toEqual(["known-5"]);
    for (const id of ["known-4", "known-5"]) {
      expect((await store.getSession(id))!.session.lastHistory).toMatchObject({ result: "SUBMITTED" });
    }
  });

  test("a copy of another session, or of another status, is ignored and the session read", async () => {
    await store.createSession(newSession("known-3", { status: "SCHEDULED", replicas: 1, taskToken: null }));
    const other = (await store.getSession("known-1"))!;
    const reads: string[] = [];
    await enterStage(
      {
        sessionId: "known-3",
        status: "PREPARING",
        transition: toPreparing(other),
        taskToken: "tok-3",
        executionName: "known-3",
      },
      deps(reads),
    );
    expect(reads).toEqual(["known-3"]);
    expect((await store.getSession("known-3"))!.session.status).toBe("PREPARING");
  });
});
