/**
 * What has ended is kept for the retention, then DynamoDB's TTL deletes it: against DynamoDB
 * Local, which stores the TTL setting but never deletes, so these tests read the expiry each item
 * is given (`expiresAtEpochSec`, epoch seconds) when it reaches its end, and that nothing under
 * way has one.
 */
import { DescribeTimeToLiveCommand, GetItemCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  agentPk,
  AGENT_SK,
  JOB_SK,
  jobPk,
  runSk,
  sessionPk,
  SESSION_SK,
} from "../functions/adapters/dynamo/keys.ts";
import type { Item } from "../functions/adapters/dynamo/item-codec.ts";
import { newJob } from "../functions/core/jobs.ts";
import type { RunRecord, SessionWithKernels } from "../functions/core/model.ts";
import { parseSessionSpec } from "../functions/core/spec.ts";
import type { SessionWrite } from "../functions/core/effects.ts";
import { TABLE_SCHEMA } from "../functions/topology/table-schema.ts";
import { agentRegistration, freshTable, newSession, T0, type TestTable } from "./store-fixtures.ts";

const DAY_SEC = 86_400;
/** The expiry's hour past the retention (an execution closes moments after its session ends). */
const MARGIN_SEC = 3_600;
const expiryOf = (endedAtMs: number, days: number): number =>
  Math.ceil(endedAtMs / 1000) + days * DAY_SEC + MARGIN_SEC;

describe("retention of what has ended", () => {
  let table: TestTable;
  beforeAll(async () => {
    table = await freshTable("cairn-store-retention");
  });
  afterAll(() => table.drop());

  async function raw(pk: string, sk: string): Promise<Item | undefined> {
    const out = await table.client.send(
      new GetItemCommand({
        TableName: table.tableName,
        Key: { pk: { S: pk }, sk: { S: sk } },
        ConsistentRead: true,
      }),
    );
    return out.Item;
  }
  const expiry = async (pk: string, sk: string): Promise<number | undefined> => {
    const value = (await raw(pk, sk))?.[TABLE_SCHEMA.timeToLiveAttribute]?.N;
    return value === undefined ? undefined : Number(value);
  };

  /** TERMINATING → `status`, with the run's record when given. */
  function ending(
    s: SessionWithKernels,
    status: "TERMINATED" | "CANCELLED" | "PENDING",
    nowMs: number,
    run?: RunRecord,
  ): SessionWrite {
    return {
      sessionId: s.session.id,
      expected: { status: s.session.status, version: s.session.version },
      nowMs,
      status,
      stage: { enteredAtMs: nowMs, expiresAtMs: nowMs },
      kernels: s.kernels.map((k) => ({ index: k.index, status: "TERMINATED" as const })),
      ...(run !== undefined ? { run } : {}),
    };
  }

  function run(sessionId: string, endedAtMs: number, runIndex = 0): RunRecord {
    return {
      sessionId,
      runIndex,
      name: runIndex === 0 ? sessionId : `${sessionId}.${runIndex}`,
      outcome: "SUCCEEDED",
      startedAtMs: endedAtMs - 1_000,
      endedAtMs,
      decision: "finished",
      reason: "every kernel succeeded",
      kernels: [{ index: 0, status: "TERMINATED", outcome: "SUCCEEDED", exitCode: 0 }],
    };
  }

  test("the table the store creates has TTL on the schema's attribute", async () => {
    const out = await table.client.send(new DescribeTimeToLiveCommand({ TableName: table.tableName }));
    expect(out.TimeToLiveDescription).toEqual({
      TimeToLiveStatus: "ENABLED",
      AttributeName: TABLE_SCHEMA.timeToLiveAttribute,
    });
  });

  test("a session under way has no expiry; the write that ends it TERMINATED gives it and its run 90 days and an hour", async () => {
    const store = table.store();
    await store.createSession(newSession("ends", { replicas: 1, status: "TERMINATING" }));
    expect(await expiry(sessionPk("ends"), SESSION_SK)).toBeUndefined();
    const s = (await store.getSession("ends"))!;
    const endedAtMs = T0 + 5_500;
    await store.applyWrite(ending(s, "TERMINATED", endedAtMs, run("ends", T0 + 5_000)));
    expect(await expiry(sessionPk("ends"), SESSION_SK)).toBe(expiryOf(endedAtMs, 90));
    expect(await expiry(sessionPk("ends"), runSk(0))).toBe(expiryOf(T0 + 5_000, 90));
    expect((await store.getSession("ends"))?.session.status).toBe("TERMINATED");
  });

  test("a requeue out of TERMINATING keeps the session without expiry; its finished run gets one", async () => {
    const store = table.store();
    await store.createSession(newSession("requeued", { replicas: 1, status: "TERMINATING" }));
    const s = (await store.getSession("requeued"))!;
    await store.applyWrite({
      ...ending(s, "PENDING", T0 + 2_000, { ...run("requeued", T0 + 1_000), decision: "retry" }),
      runIndex: "increment",
    });
    expect(await expiry(sessionPk("requeued"), SESSION_SK)).toBeUndefined();
    expect(await expiry(sessionPk("requeued"), runSk(0))).toBe(expiryOf(T0 + 1_000, 90));
  });

  test("CANCELLED ends a session too; the store's retention option sets the days", async () => {
    const store = table.store({ retentionDays: 120 });
    await store.createSession(newSession("cancelled", { replicas: 1 }));
    const s = (await store.getSession("cancelled"))!;
    await store.applyWrite(ending(s, "CANCELLED", T0 + 700));
    expect(await expiry(sessionPk("cancelled"), SESSION_SK)).toBe(expiryOf(T0 + 700, 120));
  });

  test("a session created ended (a task of a job that failed validation) is retained from its creation", async () => {
    const store = table.store();
    await store.createSession(
      newSession("born-ended", { replicas: 1, status: "TERMINATED", createdAtMs: T0 + 42 }),
    );
    expect(await expiry(sessionPk("born-ended"), SESSION_SK)).toBe(expiryOf(T0 + 42, 90));
  });

  test("a job's final state gives it its expiry; a job under way has none", async () => {
    const store = table.store();
    const job = newJob("job-ends", parseSessionSpec({ name: "j", command: ["true"] }), T0);
    await store.createJob(job);
    expect(await expiry(jobPk("job-ends"), JOB_SK)).toBeUndefined();
    expect(await store.finishJob("job-ends", { state: "SUCCEEDED", reason: "done", atMs: T0 + 3_000 })).toBe(
      true,
    );
    expect(await expiry(jobPk("job-ends"), JOB_SK)).toBe(expiryOf(T0 + 3_000, 90));
  });

  test("a lost agent gets its expiry; registering again writes it anew without one", async () => {
    const store = table.store();
    await store.registerAgent(agentRegistration("agent-gone"));
    expect(await expiry(agentPk("agent-gone"), AGENT_SK)).toBeUndefined();
    expect(
      await store.markAgentLost({ agentId: "agent-gone", incarnation: "agent-gone-1", nowMs: T0 + 90_000 }),
    ).toBe(true);
    expect(await expiry(agentPk("agent-gone"), AGENT_SK)).toBe(expiryOf(T0 + 90_000, 90));
    await store.registerAgent({
      ...agentRegistration("agent-gone", undefined, T0 + 100_000),
      incarnation: "agent-gone-2",
    });
    expect(await expiry(agentPk("agent-gone"), AGENT_SK)).toBeUndefined();
  });

  test("a run record past its expiry is gone to readers, and the run of a new session of that id replaces it", async () => {
    // The earlier session's run, read 100 days after it ended (TTL has not deleted it yet).
    const later = T0 + 100 * DAY_SEC * 1000;
    const old = table.store();
    await old.createSession(newSession("reused", { replicas: 1, status: "TERMINATING" }));
    const s = (await old.getSession("reused"))!;
    await old.applyWrite({
      ...ending(s, "PENDING", T0 + 2_000, { ...run("reused", T0 + 1_000), decision: "retry" }),
      runIndex: "increment",
    });
    expect(await old.listRuns("reused")).toHaveLength(1);
    const now = table.store({ clock: () => later });
    expect(await now.listRuns("reused")).toEqual([]);
    // The same id's run 0 again, as a session created after the old one's item went: written.
    const again = (await now.getSession("reused"))!;
    await now.applyWrite({
      sessionId: "reused",
      expected: { status: again.session.status, version: again.session.version },
      nowMs: later,
      run: run("reused", later - 1_000),
    });
    expect((await now.listRuns("reused")).map((r) => r.endedAtMs)).toEqual([later - 1_000]);
    expect(await expiry(sessionPk("reused"), runSk(0))).toBe(expiryOf(later - 1_000, 90));
  });

  test("a run already recorded and not expired is written once: the replay is refused", async () => {
    const store = table.store();
    await store.createSession(newSession("replayed", { replicas: 1, status: "TERMINATING" }));
    const s = (await store.getSession("replayed"))!;
    const write: SessionWrite = {
      sessionId: "replayed",
      expected: { status: "TERMINATING", version: s.session.version },
      nowMs: T0 + 10,
      run: run("replayed", T0 + 5),
    };
    await store.applyWrite(write);
    const after = (await store.getSession("replayed"))!;
    await expect(
      store.applyWrite({ ...write, expected: { status: "TERMINATING", version: after.session.version } }),
    ).rejects.toThrow();
    expect(await store.listRuns("replayed")).toHaveLength(1);
  });
});
