/**
 * Issue 3's end-to-end scenarios against the embedded runtime: the real ASL on the local Step
 * Functions engine, DynamoDB Local, the local bus, the handlers in-process, and two local agents
 * (4 cpu, 4096 MiB each) running real processes. Scenarios run one after another on one runtime.
 */
import { resolve } from "node:path";
import { ListExecutionsCommand, SFNClient } from "@aws-sdk/client-sfn";
import { readCombinedLog } from "../agent/log-reader.ts";
import { runLogPaths } from "../agent/work-dir.ts";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import type { EventBridgeEvent } from "../local/eventbridge/index.ts";
import type { HistoryRecord } from "../functions/core/model.ts";
import { sessionResult } from "../functions/core/sessions.ts";
import { assertLifecycleInvariants, startTestRuntime, type TestRuntime } from "./support/runtime.ts";

let rt: TestRuntime;
// After every scenario: no session under way without a live execution, no ended one holding a token.
afterEach(() => assertLifecycleInvariants(rt));
const seen: EventBridgeEvent[] = [];
let n = 0;
const newId = (label: string) => `e2e-${label}-${Date.now().toString(36)}-${n++}`;

beforeAll(async () => {
  rt = await startTestRuntime({ agents: 2, agentCapacity: { cpu: 4, memoryMiB: 4096 } });
  rt.runtime.bus.onEvent((event) => seen.push(event));
}, 120_000);

afterAll(async () => {
  await rt?.stop();
});

const sh = (script: string) => ["/bin/sh", "-c", script];
/**
 * A program that exists but cannot run (this repository's package.json, mode 0644): preparation
 * fails in a way a retry might clear. A missing one is not retried at all (e2e-loops.test.ts).
 */
const NOT_RUNNABLE = resolve("package.json");

async function waitUntil(check: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function summary(history: readonly HistoryRecord[]): string[] {
  return history.map((h) => `${h.handler} ${h.result} ${h.fromStatus}->${h.toStatus ?? "="}`);
}

describe("the session lifecycle, end to end", () => {
  test("given a hello command, it runs PENDING → … → TERMINATED with every transition recorded", async () => {
    const id = newId("hello");
    await rt.submit({
      sessionId: id,
      spec: { name: "hello", command: sh('echo "hello from $CAIRN_SESSION_ID"') },
    });
    const done = await rt.waitForEnd(id);

    expect(done.session.status).toBe("TERMINATED");
    expect(sessionResult(done)).toBe("succeeded");
    expect(done.kernels).toMatchObject([
      { index: 0, status: "TERMINATED", exitCode: 0, outcome: "SUCCEEDED" },
    ]);
    expect(summary(await rt.store.listHistory(id))).toEqual([
      "Submit SUBMITTED PENDING->PENDING",
      "ScheduleNewSessions SUCCESS PENDING->SCHEDULED",
      "PrepareSessions SUCCESS SCHEDULED->PREPARING",
      "PromoteToPrepared SUCCESS PREPARING->PREPARED",
      "StartSessions SUCCESS PREPARED->CREATING",
      "PromoteToRunning SUCCESS CREATING->RUNNING",
      "DetectTermination SUCCESS RUNNING->TERMINATING",
      // Either ends TERMINATING: TerminateSessions when the kernel had already ended as the stage
      // was entered, PromoteToTerminated when its report came after (both are the seed's).
      expect.stringMatching(/^(TerminateSessions|PromoteToTerminated) SUCCESS TERMINATING->TERMINATED$/),
    ]);
    // The command really ran, with its identity in the environment.
    // (Its agent is another process: its output is in the run's directory under the work root.)
    const agent = rt.runtime.info.agents.find((a) => a.id === done.kernels[0]?.agentId);
    const lines = await readCombinedLog(runLogPaths(agent!.workRoot, id, 0, 0), {
      sessionId: id,
      kernelIndex: 0,
      runIndex: 0,
    });
    expect(lines.map((l) => l.text)).toContain(`hello from ${id}`);
    // Its capacity went back to the agent.
    expect(await rt.store.allocationsOf(id)).toEqual([]);
    // Subscribers saw every status change, in order (the last is published just after its write).
    await waitUntil(
      () =>
        Promise.resolve(
          seen.some(
            (e) =>
              e["detail-type"] === "Session Status Changed" &&
              (e.detail as { sessionId: string; to: string }).sessionId === id &&
              (e.detail as { to: string }).to === "TERMINATED",
          ),
        ),
      "the TERMINATED status event",
    );
    const changes = seen
      .filter(
        (e) =>
          e["detail-type"] === "Session Status Changed" &&
          (e.detail as { sessionId: string }).sessionId === id,
      )
      .map((e) => (e.detail as { to: string }).to);
    expect(changes).toEqual([
      "PENDING",
      "SCHEDULED",
      "PREPARING",
      "PREPARED",
      "CREATING",
      "RUNNING",
      "TERMINATING",
      "TERMINATED",
    ]);
  });

  test("a session no agent can hold is SKIPPED with its reason, then EXPIRED to CANCELLED", async () => {
    const id = newId("too-big");
    await rt.submit({
      sessionId: id,
      spec: { name: "too-big", command: ["true"], resources: { cpu: 64 }, timeouts: { pending: 3 } },
    });
    const skipped = await rt.waitFor(id, (s) => s.session.pendingReason !== undefined, "a pending reason");
    expect(skipped.session.pendingReason).toBe(
      "no agent matches: a task needs 64 cpu and 256 MiB; the largest agent has 4 cpu and 4096 MiB",
    );

    const done = await rt.waitForEnd(id);
    expect(done.session.status).toBe("CANCELLED");
    expect(done.kernels.map((k) => k.status)).toEqual(["CANCELLED"]);
    const history = await rt.store.listHistory(id);
    expect(history).toContainEqual(
      expect.objectContaining({
        handler: "ScheduleNewSessions",
        result: "SKIPPED",
        fromStatus: "PENDING",
        message:
          "no agent matches: a task needs 64 cpu and 256 MiB; the largest agent has 4 cpu and 4096 MiB",
      }),
    );
    expect(history.at(-1)).toMatchObject({ result: "EXPIRED", fromStatus: "PENDING", toStatus: "CANCELLED" });
  });

  test("a handler failing repeatedly gives NEED_RETRY records, then GIVE_UP at maxTries", async () => {
    const id = newId("missing-exe");
    await rt.submit({
      sessionId: id,
      spec: { name: "missing-exe", command: [NOT_RUNNABLE], maxTries: { preparing: 3 } },
    });
    // The give-up is read from the history: the session is placed again at once and may have
    // moved past it (or ended at maxPendingReturns) before any one poll of its latest record.
    const deadline = Date.now() + 30_000;
    let history = await rt.store.listHistory(id);
    while (!history.some((h) => h.result === "GIVE_UP") && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      history = await rt.store.listHistory(id);
    }
    const giveUp = history.find((h) => h.result === "GIVE_UP");
    // Only the first cycle: after the give-up the session is placed again and may already be
    // failing its next preparation by the time the history is read.
    const retries = history.filter(
      (h) =>
        h.handler === "PrepareSessions" && h.result === "NEED_RETRY" && h.seq < (giveUp?.seq ?? Infinity),
    );
    // maxTries 3: two failures are retried (merged into one record), the third gives up.
    expect(retries).toHaveLength(1);
    expect(retries[0]).toMatchObject({ fromStatus: "PREPARING", count: 2 });
    expect(retries[0]?.message).toContain(`${NOT_RUNNABLE}" is not executable`);
    expect(giveUp).toMatchObject({
      handler: "PrepareSessions",
      fromStatus: "PREPARING",
      toStatus: "PENDING",
    });
    expect(giveUp!.seq).toBeGreaterThan(retries[0]!.seq);
    await rt.cancel(id);
    expect((await rt.waitForEnd(id)).session.status).toBe("CANCELLED");
  });

  test("a stage expiry after SCHEDULED returns the session to PENDING with its capacity released", async () => {
    // Two kernels of 4 cpu fill both agents: it can only be placed again if the first placement
    // was released.
    const id = newId("prep-expiry");
    await rt.submit({
      sessionId: id,
      spec: {
        name: "prep-expiry",
        replicas: 2,
        resources: { cpu: 4 },
        command: [NOT_RUNNABLE],
        timeouts: { preparing: 2 },
        maxTries: { preparing: 100 },
      },
    });
    await rt.waitFor(
      id,
      (s) =>
        s.session.lastHistory?.result === "EXPIRED" ||
        (s.session.tries === 0 && s.session.status === "SCHEDULED" && false),
      "an EXPIRED record",
      20_000,
    );
    const replaced = await rt.waitFor(
      id,
      (s) =>
        s.session.lastHistory?.handler === "ScheduleNewSessions" &&
        s.session.lastHistory.result === "SUCCESS",
      "a second placement",
      20_000,
    );
    const history = await rt.store.listHistory(id);
    const expired = history.find((h) => h.result === "EXPIRED");
    expect(expired).toMatchObject({ fromStatus: "PREPARING", toStatus: "PENDING" });
    const placements = history.filter((h) => h.handler === "ScheduleNewSessions" && h.result === "SUCCESS");
    expect(placements.length).toBeGreaterThanOrEqual(2);
    expect(placements[1]!.seq).toBeGreaterThan(expired!.seq);
    expect(replaced.kernels.every((k) => k.agentId !== undefined)).toBe(true);

    await rt.cancel(id);
    await rt.waitForEnd(id);
    // The status is written first; the capacity goes back right after, in the same stage entry.
    await waitUntil(async () => (await rt.store.allocationsOf(id)).length === 0, "allocations released");
    for (const agent of await rt.store.listAgents()) expect(agent.free).toEqual(agent.capacity);
  });

  test("a non-zero exit ends RUNNING → TERMINATING → TERMINATED with the exit code recorded", async () => {
    const id = newId("exit3");
    await rt.submit({ sessionId: id, spec: { name: "exit3", command: sh("echo failing >&2; exit 3") } });
    const done = await rt.waitForEnd(id);
    expect(done.session.status).toBe("TERMINATED");
    expect(sessionResult(done)).toBe("failed");
    expect(done.kernels[0]).toMatchObject({ status: "TERMINATED", exitCode: 3, outcome: "FAILED" });
    expect(summary(await rt.store.listHistory(id)).slice(-2)).toEqual([
      "DetectTermination SUCCESS RUNNING->TERMINATING",
      // Either ends TERMINATING: TerminateSessions when the kernel had already ended as the stage
      // was entered, PromoteToTerminated when its report came after (both are the seed's).
      expect.stringMatching(/^(TerminateSessions|PromoteToTerminated) SUCCESS TERMINATING->TERMINATED$/),
    ]);
  });

  test("a kernel over its memory request is OOMKilled and recorded with exit 137", async () => {
    const id = newId("oom");
    await rt.submit({
      sessionId: id,
      spec: {
        name: "oom",
        resources: { memoryMiB: 64 },
        command: [process.execPath, "-e", "const k=[];for(;;){k.push(Buffer.alloc(16<<20,1))}"],
      },
    });
    const done = await rt.waitForEnd(id);
    expect(sessionResult(done)).toBe("failed");
    expect(done.kernels[0]).toMatchObject({ status: "TERMINATED", exitCode: 137, condition: "OOMKilled" });
  });

  test("cancel in PENDING ends the session CANCELLED", async () => {
    const id = newId("cancel-pending");
    await rt.submit({
      sessionId: id,
      spec: { name: "cancel-pending", command: ["true"], resources: { cpu: 64 } },
    });
    await rt.waitFor(id, (s) => s.session.pendingReason !== undefined, "a pending reason");
    await rt.cancel(id, "changed my mind");
    const done = await rt.waitForEnd(id);
    expect(done.session.status).toBe("CANCELLED");
    expect(sessionResult(done)).toBe("cancelled");
    expect((await rt.store.listHistory(id)).at(-1)).toMatchObject({
      handler: "Cancel",
      result: "CANCELLED",
      fromStatus: "PENDING",
      toStatus: "CANCELLED",
    });
  });

  test("cancel in RUNNING stops the process: TERMINATING → TERMINATED, result cancelled", async () => {
    const id = newId("cancel-running");
    await rt.submit({ sessionId: id, spec: { name: "cancel-running", command: ["sleep", "60"] } });
    await rt.waitFor(
      id,
      (s) => s.session.status === "RUNNING" && s.session.stage.taskToken !== undefined,
      "RUNNING",
    );
    await rt.cancel(id);
    const done = await rt.waitForEnd(id);
    expect(done.session.status).toBe("TERMINATED");
    expect(sessionResult(done)).toBe("cancelled");
    expect(done.kernels[0]).toMatchObject({ status: "TERMINATED", exitCode: 143, outcome: "KILLED" });
    expect(summary(await rt.store.listHistory(id)).slice(-2)).toEqual([
      "Cancel CANCELLED RUNNING->TERMINATING",
      expect.stringMatching(/^(TerminateSessions|PromoteToTerminated) SUCCESS TERMINATING->TERMINATED$/),
    ]);
  });

  test("a duplicate submission event creates one session and one execution", async () => {
    const id = newId("dup");
    const detail = { sessionId: id, spec: { name: "dup", command: ["true"] } };
    await Promise.all([rt.submit(detail), rt.submit(detail)]);
    await rt.submit(detail);
    await rt.waitForEnd(id);
    const history = await rt.store.listHistory(id);
    expect(history.filter((h) => h.result === "SUBMITTED")).toHaveLength(1);
    const sfn = new SFNClient({
      endpoint: rt.runtime.info.endpoints.stepFunctions,
      region: "local",
      credentials: { accessKeyId: "l", secretAccessKey: "l" },
    });
    const executions = await sfn.send(
      new ListExecutionsCommand({ stateMachineArn: rt.runtime.info.stateMachineArn }),
    );
    expect(executions.executions?.filter((e) => e.name === id)).toHaveLength(1);
    sfn.destroy();
  });

  test("malformed events and specs are rejected with named fields while good ones beside them proceed", async () => {
    const good = newId("good");
    const badSpec = newId("bad-spec");
    const before = seen.length;
    await Promise.all([
      rt.put({
        Source: "cairn.client",
        DetailType: "Session Submitted",
        Detail: JSON.stringify({
          sessionId: badSpec,
          spec: { name: "bad", command: ["true"], resources: { cpu: -1 } },
        }),
      }),
      rt.put({
        Source: "cairn.client",
        DetailType: "Session Cancel Requested",
        Detail: JSON.stringify({ reason: "x" }),
      }),
      rt.put(
        {
          Source: "cairn.agent",
          DetailType: "Agent Heartbeat",
          Detail: JSON.stringify({ agentId: "a" }),
        },
        "agent",
      ),
      rt.submit({ sessionId: good, spec: { name: "good", command: ["true"] } }),
    ]);
    const done = await rt.waitForEnd(good);
    expect(sessionResult(done)).toBe("succeeded");
    expect(await rt.store.getSession(badSpec)).toBeUndefined();

    const deadline = Date.now() + 10_000;
    const reasons = () =>
      seen
        .slice(before)
        .filter((e) => e["detail-type"] === "Event Rejected")
        .map((e) => (e.detail as { reason: string }).reason);
    while (reasons().length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const all = reasons().join("\n");
    expect(all).toContain("detail.spec.resources.cpu: must be greater than 0");
    expect(all).toContain("detail.sessionId: required");
    expect(all).toContain("detail.capacity: required");
  });
});
