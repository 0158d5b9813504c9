/**
 * Fault tolerance end to end: AWS faults the embedded runtime injects
 * (local/stepfunctions/faults.ts) against the real ASL, handlers, DynamoDB Local and agent
 * processes. Each scenario switches its faults on, drives a session through them, and ends with the
 * lifecycle invariants: no session under way without a RUNNING execution, no ended session holding
 * a task token.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { HistoryEvent } from "@aws-sdk/client-sfn";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { handler as enterStageHandler } from "../functions/handlers/enter-stage.ts";
import { sessionResult } from "../functions/core/sessions.ts";
import { parseRetryPolicy } from "../functions/core/retry/policy.ts";
import type { EventBridgeEvent } from "../local/eventbridge/index.ts";
import { MAX_PAYLOAD_BYTES, type FaultOptions } from "../local/stepfunctions/index.ts";
import { Coordinator } from "../functions/app/coordinator.ts";
import type { LifecycleExecutionsPort } from "../functions/core/ports/lifecycle-executions.ts";
import { loadConfig } from "../functions/config.ts";
import type { StageTransition } from "../functions/core/model.ts";
import { freshTable, newSession, T0 } from "./store-fixtures.ts";
import { assertLifecycleInvariants, startTestRuntime, type TestRuntime } from "./support/runtime.ts";
import { EMPTY_BATCH } from "../functions/app/coordinator.ts";

let rt: TestRuntime;
const seen: EventBridgeEvent[] = [];
let n = 0;
const newId = (label: string) => `faults-${label}-${Date.now().toString(36)}-${n++}`;
const sh = (script: string) => ["/bin/sh", "-c", script];

beforeAll(async () => {
  // Two agents of 32 CPUs: room for a 64-kernel gang at one CPU per kernel.
  rt = await startTestRuntime({ agents: 2, agentCapacity: { cpu: 32, memoryMiB: 32 * 1024 } });
  rt.runtime.bus.onEvent((event) => seen.push(event));
}, 120_000);

afterAll(async () => {
  await rt?.stop();
});

function switchFaults(options: FaultOptions): void {
  rt.runtime.stepFunctions.faults.set(options);
}

async function executionHistory(sessionId: string): Promise<HistoryEvent[]> {
  const executionArn = `${rt.runtime.info.stateMachineArn.replace(":stateMachine:", ":execution:")}:${sessionId}`;
  const events: HistoryEvent[] = [];
  let nextToken: string | undefined;
  do {
    const page = await rt.runtime.stepFunctions.getExecutionHistory({
      executionArn,
      maxResults: 1000,
      ...(nextToken !== undefined ? { nextToken } : {}),
    });
    events.push(...(page.events ?? []));
    nextToken = page.nextToken;
  } while (nextToken !== undefined);
  return events;
}

async function executionOf(sessionId: string) {
  const executionArn = `${rt.runtime.info.stateMachineArn.replace(":stateMachine:", ":execution:")}:${sessionId}`;
  return rt.runtime.stepFunctions.waitForExecution(executionArn, 30_000);
}

const bytes = (text: string | undefined) => (text === undefined ? 0 : Buffer.byteLength(text, "utf8"));

describe("AWS faults, end to end", () => {
  test("lost responses of the PENDING expiry's judgment and of Requeued: the retried run is recorded and counted once", async () => {
    const policy = `unsched-${Date.now().toString(36)}`;
    await rt.store.createRetryPolicy(
      parseRetryPolicy({
        apiVersion: "cairn.dev/v1",
        kind: "RetryPolicy",
        metadata: { name: policy },
        spec: { rules: [{ action: "Retry", onConditions: ["Unschedulable"], retryLimit: 1 }] },
      }),
      Date.now(),
    );
    switchFaults({
      rules: [
        { fault: "lose-lambda-response", state: "JudgePendingExpiry", count: 1 },
        { fault: "lose-lambda-response", state: "Requeued", count: 1 },
      ],
    });
    const id = newId("lost-requeue");
    // 64 cpu: no agent holds it; PENDING expires after 1 s, twice.
    await rt.submit({
      sessionId: id,
      spec: {
        name: "lost-requeue",
        resources: { cpu: 64, memoryMiB: 64 },
        command: sh("true"),
        timeouts: { pending: 1 },
        retry: { policies: [policy] },
      },
    });
    const s = await rt.waitForEnd(id, 30_000);
    expect(rt.runtime.stepFunctions.faults.fired.map((f) => f.state)).toEqual([
      "JudgePendingExpiry",
      "Requeued",
    ]);
    expect(s.session.status).toBe("CANCELLED");
    // Each entry ran twice; the session moved on by one run, with one record.
    expect(s.session.runIndex).toBe(1);
    expect(s.session.retry).toMatchObject({ totalRetries: 1 });
    expect((await rt.store.listRuns(id)).map((r) => [r.runIndex, r.decision])).toEqual([[0, "retry"]]);
    const history = await rt.store.listHistory(id);
    expect(history.filter((h) => h.result === "REQUEUED")).toHaveLength(2);
    await assertLifecycleInvariants(rt);
  });

  test("a lost EnterStage response in a callback state: the retry replaces the token, a late first attempt cannot undo it, the session carries on", async () => {
    switchFaults({ rules: [{ fault: "lose-lambda-response", state: "Running", count: 1 }] });
    const id = newId("lost-response");
    const gate = join(rt.dataDir, `${id}.go`);
    await rt.submit({
      sessionId: id,
      spec: { name: "lost", command: sh(`while [ ! -f '${gate}' ]; do sleep 0.1; done; echo done`) },
    });
    // The first attempt wrote RUNNING with its token, then its response was lost; the retry
    // (attempt 1 of the same state entry) replaced the token.
    const running = await rt.waitFor(
      id,
      (s) => s.session.status === "RUNNING" && s.session.stage.attempt === 1,
      "RUNNING, token of attempt 1",
    );
    expect(rt.runtime.stepFunctions.faults.fired).toEqual([
      { fault: "lose-lambda-response", state: "Running", function: "EnterStage" },
    ]);
    const { stage, version } = running.session;
    expect(stage.taskToken).toBeDefined();

    // A late delivery of the first attempt (a response lost because the call outlived its
    // timeout) arrives now: it must not put its dead token back.
    await enterStageHandler({
      sessionId: id,
      status: "RUNNING",
      transition: { from: "CREATING", to: "RUNNING", result: "SUCCESS", handler: "StartSessions" },
      taskToken: "a-dead-token-of-attempt-0",
      executionName: id,
      entry: { state: "Running", enteredTime: new Date(stage.entryAtMs!).toISOString(), retryCount: 0 },
    });
    const after = await rt.store.getSession(id);
    expect(after?.session.stage).toEqual(stage);
    expect(after?.session.version).toBe(version);

    writeFileSync(gate, "");
    const ended = await rt.waitForEnd(id, 60_000);
    expect(sessionResult(ended)).toBe("succeeded");
    expect(ended.session.stage.taskToken).toBeUndefined();
    // One RUNNING entry in the session's history, though its state ran twice.
    const history = await rt.store.listHistory(id);
    expect(history.filter((h) => h.toStatus === "RUNNING")).toHaveLength(1);
    const events = await executionHistory(id);
    expect(events.filter((e) => e.taskFailedEventDetails?.error === "Lambda.ServiceException")).toHaveLength(
      1,
    );
    expect((await executionOf(id)).status).toBe("SUCCEEDED");
    await assertLifecycleInvariants(rt);
  }, 90_000);

  test("a Task that times out (SCHEDULED) as EnterStage's own next step completes it, then a lost response (RUNNING): the session still succeeds", async () => {
    // EnterStage takes a SCHEDULED session's next step in its own call, so the stage's timer can
    // only beat the callback, not the call's return: the timeout lands just before SendTaskSuccess,
    // which the step sends after the entry was written with its token claimed for the step. The
    // callback finds the stage closed, and the expiry path's entry applies.
    // The lost response is RUNNING's, which the kernel's exit a second later completes: a stage
    // completed within the call would make a lost response moot, as on AWS.
    switchFaults({
      rules: [
        { fault: "send-task-success-timed-out", state: "Scheduled", count: 1 },
        {
          fault: "lose-lambda-response",
          state: "Running",
          count: 1,
          error: "Lambda.ClientExecutionTimeoutException",
        },
      ],
    });
    const id = newId("scheduled");
    await rt.submit({ sessionId: id, spec: { name: "scheduled", command: sh("sleep 1; echo ok") } });
    const ended = await rt.waitForEnd(id, 60_000);
    expect(rt.runtime.stepFunctions.faults.fired.map((f) => `${f.fault}@${f.state}`)).toEqual([
      "send-task-success-timed-out@Scheduled",
      "lose-lambda-response@Running",
    ]);
    expect(sessionResult(ended)).toBe("succeeded");
    const history = await rt.store.listHistory(id);
    // The timed-out SCHEDULED took the stage's EXPIRED route back to PENDING, and was placed again.
    expect(history).toContainEqual(
      expect.objectContaining({ fromStatus: "SCHEDULED", toStatus: "PENDING", result: "EXPIRED" }),
    );
    expect(history.filter((h) => h.toStatus === "PREPARING")).toHaveLength(1);
    const events = await executionHistory(id);
    expect(
      events.filter((e) => e.taskFailedEventDetails?.error === "Lambda.ClientExecutionTimeoutException"),
    ).toHaveLength(1);
    expect((await executionOf(id)).status).toBe("SUCCEEDED");
    await assertLifecycleInvariants(rt);
  }, 90_000);

  test("a CREATING timeout sends the run back to PENDING; the agent takes the new placement of the same run, and it succeeds", async () => {
    // The stage's timer beats the callback (EnterStage may complete CREATING within its own call
    // when the RUNNING report is already in, so a timeout after the call could find it closed).
    switchFaults({ rules: [{ fault: "send-task-success-timed-out", state: "Creating", count: 1 }] });
    const id = newId("creating");
    await rt.submit({ sessionId: id, spec: { name: "creating", command: sh("echo ok") } });
    const ended = await rt.waitForEnd(id, 60_000);
    expect(rt.runtime.stepFunctions.faults.fired.map((f) => `${f.fault}@${f.state}`)).toEqual([
      "send-task-success-timed-out@Creating",
    ]);
    expect(sessionResult(ended)).toBe("succeeded");
    expect(ended.session.runIndex).toBe(0);
    const history = await rt.store.listHistory(id);
    expect(history).toContainEqual(
      expect.objectContaining({ fromStatus: "CREATING", toStatus: "PENDING", result: "EXPIRED" }),
    );
    // Placed, prepared and started twice in one run, not once and then stuck in PREPARING.
    expect(history.filter((h) => h.toStatus === "CREATING")).toHaveLength(2);
    await assertLifecycleInvariants(rt);
  }, 90_000);

  test("Lambda.Unknown beyond its retries is caught: the session ends TERMINATED, FAILED, with its history, a status event and its capacity back; the execution fails (the alarm's metric)", async () => {
    // Three: the first attempt and Lambda.Unknown's two retries.
    switchFaults({ rules: [{ fault: "lambda-unknown", state: "Scheduled", count: 3 }] });
    const id = newId("unknown");
    await rt.submit({ sessionId: id, spec: { name: "unknown", command: sh("echo never") } });
    const ended = await rt.waitForEnd(id, 60_000);
    expect(rt.runtime.stepFunctions.faults.fired).toHaveLength(3);

    expect(ended.session.status).toBe("TERMINATED");
    expect(ended.session.stage.taskToken).toBeUndefined();
    const history = await rt.store.listHistory(id);
    const failed = history.at(-1)!;
    expect(failed).toMatchObject({ handler: "Lifecycle", result: "FAILED", toStatus: "TERMINATED" });
    expect(failed.message).toContain("the lifecycle failed entering SCHEDULED with Lambda.Unknown");
    expect(await rt.store.allocationsOf(id)).toEqual([]);
    const announced = seen.filter(
      (e) =>
        e["detail-type"] === "Session Status Changed" &&
        (e.detail as { sessionId: string }).sessionId === id &&
        (e.detail as { to: string }).to === "TERMINATED",
    );
    expect(announced.map((e) => e.detail)).toEqual([
      expect.objectContaining({ result: "FAILED", handler: "Lifecycle" }),
    ]);
    // Recorded, and still a failed execution: the ExecutionsFailed alarm counts it.
    expect(await executionOf(id)).toMatchObject({ status: "FAILED", error: "Cairn.LifecycleFailed" });
    await assertLifecycleInvariants(rt);
  }, 90_000);

  test("SendTaskSuccess refused with TaskTimedOut (the stage timed out first): the expiry path ends the session, its run recorded once", async () => {
    switchFaults({ rules: [{ fault: "send-task-success-timed-out", state: "Terminating", count: 1 }] });
    const id = newId("timed-out");
    await rt.submit({ sessionId: id, spec: { name: "timed-out", command: sh("echo ok") } });
    const ended = await rt.waitForEnd(id, 60_000);
    expect(rt.runtime.stepFunctions.faults.fired).toHaveLength(1);
    expect(ended.session.status).toBe("TERMINATED");
    const history = await rt.store.listHistory(id);
    expect(history.at(-1)).toMatchObject({
      fromStatus: "TERMINATING",
      toStatus: "TERMINATED",
      result: "EXPIRED",
    });
    const runs = await rt.store.listRuns(id);
    expect(runs.map((r) => [r.runIndex, r.outcome])).toEqual([[0, "SUCCEEDED"]]);
    expect((await executionOf(id)).status).toBe("SUCCEEDED");
    await assertLifecycleInvariants(rt);
  }, 90_000);

  test("64 kernels with maximal multibyte messages, retried once: every callback's transition and every state input stays far under 256 KiB", async () => {
    switchFaults({ rules: [] });
    const id = newId("payload");
    // 1,365 three-byte characters: 4,095 bytes, the most a kernel's termination message keeps.
    const message = "€".repeat(1365);
    await rt.submit({
      sessionId: id,
      spec: {
        name: "payload",
        replicas: 64,
        perAgent: 32,
        resources: { cpu: 1, memoryMiB: 64 },
        command: sh(`printf '€%.0s' $(seq 1365) > "$CAIRN_TERMINATION_LOG"; exit 3`),
        retry: { maxRetriesFailure: 1 },
      },
    });
    const ended = await rt.waitForEnd(id, 120_000);
    expect(ended.session.status).toBe("TERMINATED");
    expect(ended.session.runIndex).toBe(1);
    // The records are whole, in the table: both runs, every kernel, every message.
    const runs = await rt.store.listRuns(id);
    expect(runs.map((r) => [r.runIndex, r.decision, r.kernels.length])).toEqual([
      [0, "retry", 64],
      [1, "finished", 64],
    ]);
    for (const run of runs) for (const k of run.kernels) expect(k.message).toBe(message);
    const recorded = runs.reduce((sum, r) => sum + bytes(JSON.stringify(r)), 0);
    expect(recorded).toBeGreaterThan(MAX_PAYLOAD_BYTES);

    const events = await executionHistory(id);
    // A stage completes with SendTaskSuccess (its first success status) or SendTaskFailure
    // Cairn.To.<STATUS> (any other: the requeue), the transition being the output or the cause.
    const outputs = events.flatMap((e) =>
      e.taskSucceededEventDetails
        ? [e.taskSucceededEventDetails.output]
        : e.taskFailedEventDetails?.error?.startsWith("Cairn.To.")
          ? [e.taskFailedEventDetails.cause]
          : [],
    );
    const inputs = events.flatMap((e) =>
      e.stateEnteredEventDetails ? [e.stateEnteredEventDetails.input] : [],
    );
    // Two TERMINATING completions (retry, then finished) among them, carrying the run's index.
    const terminating = outputs.filter((o) => o?.includes('"from":"TERMINATING"'));
    expect(terminating.map((o) => JSON.parse(o!) as { runIndex?: number; run?: unknown })).toEqual([
      expect.objectContaining({ runIndex: 0, to: "PENDING" }),
      expect.objectContaining({ runIndex: 1, to: "TERMINATED" }),
    ]);
    for (const o of terminating) expect(JSON.parse(o!)).not.toHaveProperty("run");
    // The session's copy rides along only while it is small: with 64 kernels' messages
    // (256 KiB) it is left out, and the next entry reads the session instead.
    for (const o of terminating) expect(JSON.parse(o!)).not.toHaveProperty("known");
    expect(outputs.some((o) => o !== undefined && "known" in (JSON.parse(o) as object))).toBe(true);
    const largest = Math.max(...outputs.map(bytes), ...inputs.map(bytes));
    // Small by construction: ids, a capped message, and a session copy of at most 64 KiB.
    expect(largest).toBeLessThan(72 * 1024);
    expect((await executionOf(id)).status).toBe("SUCCEEDED");
    await assertLifecycleInvariants(rt);
  }, 180_000);
});

/**
 * The coordinator's side of a retried callback state, in isolation (its own table, a recording
 * Step Functions port): the retry's token lands between the claim and SendTaskSuccess, whose
 * answer for the claimed token is TaskTimedOut. The newer token is the one completed.
 */
describe("completing the newest token", () => {
  test("a closed token whose stage now holds a newer one: the newer one is claimed and completed", async () => {
    const table = await freshTable("cairn-newest-token");
    try {
      const store = table.store();
      const id = "newest-token";
      await store.createSession(
        newSession(id, {
          status: "SCHEDULED",
          kernelStatus: "SCHEDULED",
          replicas: 1,
          taskToken: "token-attempt-0",
        }),
      );
      const s = (await store.getSession(id))!;
      await store.applyWrite({
        sessionId: id,
        expected: { status: "SCHEDULED", version: s.session.version },
        nowMs: T0 + 1_000,
        cancelRequestedAtMs: T0 + 1_000,
        cancelReason: "test",
      });
      const completed: string[] = [];
      const executions: LifecycleExecutionsPort = {
        start: () => Promise.resolve("unused"),
        complete: async (token: string, transition: StageTransition) => {
          if (token !== "token-attempt-0") {
            completed.push(`${token} ${transition.from}->${transition.to}`);
            return "completed";
          }
          // Meanwhile EnterStage's retry (attempt 1 of the same entry) replaced the token.
          const now = (await store.getSession(id))!;
          await store.applyWrite({
            sessionId: id,
            expected: { status: now.session.status, version: now.session.version },
            nowMs: T0 + 2_000,
            stage: { ...now.session.stage, taskToken: "token-attempt-1", attempt: 1 },
          });
          return "already-closed";
        },
      };
      const coordinator = new Coordinator({
        store,
        executions,
        events: {
          statusChanged: () => Promise.resolve(),
          rejected: () => Promise.resolve(),
          requeued: () => Promise.resolve(),
          jobStateChanged: () => Promise.resolve(),
        },
        channel: { open: () => Promise.resolve(), send: () => Promise.resolve() },
        config: loadConfig({
          CAIRN_TABLE_NAME: table.tableName,
          CAIRN_EVENT_BUS_NAME: "unused",
          CAIRN_STATE_MACHINE_ARN: "arn:aws:states:local:000000000000:stateMachine:unused",
        }),
        clock: { nowMs: () => T0 + 10_000 },
        log: { info: () => {}, warn: () => {}, error: () => {} },
      });
      await coordinator.run(EMPTY_BATCH, { sweep: true });
      expect(completed).toEqual(["token-attempt-1 SCHEDULED->CANCELLED"]);
      // Claimed: no one else completes it, and the session is nobody's target any more.
      expect((await store.getSession(id))!.session.stage.taskToken).toBeUndefined();
    } finally {
      await table.drop();
    }
  });
});
