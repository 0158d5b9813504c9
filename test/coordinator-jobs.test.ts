/**
 * The coordinator's job pass against DynamoDB Local: sessions that end make their job
 * judged; a terminal job kills its remaining tasks and records its final state once; and a job
 * pass that fails (a fault DynamoDB Local cannot produce, injected here) asks for the status
 * changes that triggered it to be redelivered, after which the job settles.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { DynamoSessionStore } from "../functions/adapters/dynamo/dynamo-session-store.ts";
import { Coordinator } from "../functions/app/coordinator.ts";
import type { EventsPort } from "../functions/core/ports/event-bus.ts";
import type { LifecycleExecutionsPort } from "../functions/core/ports/lifecycle-executions.ts";
import { loadConfig } from "../functions/config.ts";
import { stageEntryWrite } from "../functions/core/effects.ts";
import { DetailType, EventSource } from "../functions/core/events.ts";
import type { SessionStore } from "../functions/core/ports/store.ts";
import type { SessionSpecInput } from "../functions/core/spec.ts";
import type { SessionStatus } from "../functions/core/status.ts";
import { freshTable, T0, type TestTable } from "./store-fixtures.ts";
import { parseBatch } from "../functions/handlers/coordinator-envelopes.ts";

let table: TestTable;
beforeAll(async () => {
  table = await freshTable("cairn-coordinator-jobs");
});
afterAll(() => table.drop());

const config = loadConfig({
  CAIRN_TABLE_NAME: "unused",
  CAIRN_EVENT_BUS_NAME: "unused",
  CAIRN_STATE_MACHINE_ARN: "arn:aws:states:local:000000000000:stateMachine:unused",
});

const published: string[] = [];

function coordinator(store: SessionStore) {
  const started: string[] = [];
  const executions: LifecycleExecutionsPort = {
    start: (sessionId) => {
      started.push(sessionId);
      return Promise.resolve(`arn:${sessionId}`);
    },
    complete: () => Promise.resolve("completed"),
  };
  const events: EventsPort = {
    statusChanged: () => Promise.resolve(),
    rejected: () => Promise.resolve(),
    requeued: () => Promise.resolve(),
    jobStateChanged: (details) => {
      published.push(...details.map((d) => `${d.jobId} ${d.state}`));
      return Promise.resolve();
    },
  };
  const errors: string[] = [];
  const c = new Coordinator({
    store,
    executions,
    events,
    channel: { open: () => Promise.resolve(), send: () => Promise.resolve() },
    config,
    clock: { nowMs: () => T0 + 10_000 },
    log: { info: () => {}, warn: () => {}, error: (m) => errors.push(m) },
  });
  return { c, started, errors };
}

const TIME = new Date(T0).toISOString();

const submitted = (sessionId: string, spec: SessionSpecInput) => ({
  id: `evt-${sessionId}`,
  time: TIME,
  source: EventSource.Client,
  "detail-type": DetailType.SessionSubmitted,
  detail: { sessionId, spec },
});

const statusChanged = (sessionId: string, from: SessionStatus, to: SessionStatus) => ({
  id: `evt-${sessionId}-${to}`,
  time: TIME,
  source: EventSource.ControlPlane,
  "detail-type": DetailType.SessionStatusChanged,
  detail: {
    sessionId,
    executionName: sessionId,
    from,
    to,
    result: "SUCCESS",
    handler: "Lifecycle",
    atMs: T0,
  },
});

/** Ends a session's run the way its stage entry would: TERMINATED, its kernel with `outcome`. */
async function endRun(store: DynamoSessionStore, sessionId: string, outcome: "FAILED" | "SUCCEEDED") {
  const s = (await store.getSession(sessionId))!;
  const write = stageEntryWrite({
    session: s.session,
    kernels: s.kernels,
    transition: { from: s.session.status, to: "TERMINATED", result: "SUCCESS", handler: "TerminateSessions" },
    nowMs: T0 + 5_000,
  });
  await store.applyWrite({
    ...write,
    kernels: [{ index: 0, status: "TERMINATED", outcome, exitCode: outcome === "FAILED" ? 1 : 0 }],
  });
}

describe("job pass", () => {
  test("a failed task ends the job: the rest are asked to cancel with the reason, the final state recorded once", async () => {
    const store = table.store();
    const { c, started } = coordinator(store);
    const spec: SessionSpecInput = { name: "j", command: ["true"], replicas: 3, coscheduled: false };
    const first = await c.run(parseBatch([submitted("job-pass-a", spec)]));
    expect(first.rejected).toEqual([]);
    expect(started).toEqual(["job-pass-a-t0", "job-pass-a-t1", "job-pass-a-t2"]);
    expect((await store.getSession("job-pass-a-t2"))?.session.task).toEqual({
      jobId: "job-pass-a",
      index: 2,
      count: 3,
    });

    await endRun(store, "job-pass-a-t1", "FAILED");
    await c.run(parseBatch([statusChanged("job-pass-a-t1", "PENDING", "TERMINATED")]));
    const job = await store.getJob("job-pass-a");
    expect(job?.final).toMatchObject({ state: "FAILED", reason: "1 task failed (maxTaskFailures 0)" });
    expect(published).toContain("job-pass-a FAILED");
    // Judged again (another task's end): recorded already, so neither cascaded nor published twice.
    await c.run(parseBatch([statusChanged("job-pass-a-t1", "PENDING", "TERMINATED")]));
    expect(published.filter((p) => p === "job-pass-a FAILED")).toHaveLength(1);
    for (const id of ["job-pass-a-t0", "job-pass-a-t2"]) {
      expect((await store.getSession(id))?.session).toMatchObject({
        cancelReason: "job job-pass-a FAILED: 1 task failed (maxTaskFailures 0)",
      });
    }
  });

  test("a job pass that fails has its status changes redelivered; the job settles on the next run", async () => {
    const real = table.store();
    let failures = 1;
    const flaky = new Proxy(real, {
      get(target, key, receiver) {
        if (key === "getJobs" && failures > 0) {
          return () => {
            failures--;
            return Promise.reject(new Error("ProvisionedThroughputExceededException (injected)"));
          };
        }
        const value = Reflect.get(target, key, receiver) as unknown;
        return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const { c, errors } = coordinator(flaky);
    await c.run(
      parseBatch([
        submitted("job-pass-b", { name: "j", command: ["true"], replicas: 2, coscheduled: false }),
      ]),
    );
    await endRun(real, "job-pass-b-t0", "SUCCEEDED");
    await endRun(real, "job-pass-b-t1", "SUCCEEDED");
    const batch = [
      statusChanged("job-pass-b-t0", "PENDING", "TERMINATED"),
      statusChanged("job-pass-b-t1", "PENDING", "TERMINATED"),
    ];
    const report = await c.run(parseBatch(batch));
    expect([...report.retry].sort()).toEqual([0, 1]);
    expect(errors).toContain("job pass failed; its status changes will be redelivered");
    expect((await real.getJob("job-pass-b"))?.final).toBeUndefined();

    const again = await c.run(parseBatch(report.retry.map((i) => batch[i])));
    expect(again.retry).toEqual([]);
    expect((await real.getJob("job-pass-b"))?.final).toMatchObject({ state: "SUCCEEDED" });
  });

  test("cancelling a job id with no session of that name cancels its tasks; an unknown id is rejected", async () => {
    const store = table.store();
    const { c } = coordinator(store);
    await c.run(
      parseBatch([
        submitted("job-pass-c", { name: "j", command: ["true"], replicas: 2, coscheduled: false }),
      ]),
    );
    const cancel = (sessionId: string) => ({
      id: `evt-cancel-${sessionId}`,
      time: TIME,
      source: EventSource.Client,
      "detail-type": DetailType.SessionCancelRequested,
      detail: { sessionId, reason: "stop it" },
    });
    const report = await c.run(parseBatch([cancel("job-pass-c"), cancel("no-such-thing")]));
    expect(report.rejected.map((r) => r.reason)).toEqual([
      "detail.sessionId: no session or job no-such-thing",
    ]);
    for (const id of ["job-pass-c-t0", "job-pass-c-t1"]) {
      expect((await store.getSession(id))?.session.cancelReason).toBe("stop it");
    }
  });
});
