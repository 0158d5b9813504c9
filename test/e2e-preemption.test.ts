/**
 * Priority preemption end to end, with real processes on two local agents of 2 cpu:
 * a high-priority job that cannot be placed preempts a running low-priority task, which is
 * stopped as Preempted, retried under the preemption budget, and resumes once the high-priority
 * job is done; and a gang that would not fit even after preempting every lower-priority session
 * preempts no one.
 * The victim still before RUNNING (requeued free) is covered step by step in
 * test/preemption-store.test.ts: in this runtime the window between placement and RUNNING is
 * too short to aim at.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import type { HistoryRecord, SessionWithKernels } from "../functions/core/model.ts";
import { hpcSessionState } from "../functions/core/hpc-view.ts";
import { sessionResult } from "../functions/core/sessions.ts";
import type { SessionSpecInput } from "../functions/core/spec.ts";
import { assertLifecycleInvariants, startTestRuntime, type TestRuntime } from "./support/runtime.ts";

let rt: TestRuntime;
// After every scenario: no session under way without a live execution, no ended one holding a token.
afterEach(() => assertLifecycleInvariants(rt));
let n = 0;
const newId = (label: string) => `pre-${label}-${Date.now().toString(36)}-${n++}`;
const sh = (script: string) => ["/bin/sh", "-c", script];
/** Each agent holds exactly one of these. */
const WHOLE_AGENT = { cpu: 2, memoryMiB: 512 };
/**
 * Low-priority tasks run until the test releases them (a file appears), so none can end on its
 * own before the preemption under test, however slow the machine.
 */
function untilReleased(label: string): { command: string[]; env: Record<string, string>; release(): void } {
  const marker = join(rt.dataDir, `release-${label}`);
  return {
    command: sh('while [ ! -e "$RELEASE" ]; do sleep 0.2; done; exit 0'),
    env: { RELEASE: marker },
    release: () => writeFileSync(marker, ""),
  };
}

beforeAll(async () => {
  rt = await startTestRuntime({ agents: 2, agentCapacity: { cpu: 2, memoryMiB: 2048 } });
}, 120_000);

afterAll(async () => {
  await rt?.stop();
});

async function submit(id: string, spec: SessionSpecInput): Promise<void> {
  await rt.submit({ sessionId: id, spec });
}

const running = (s: SessionWithKernels) => s.session.status === "RUNNING";

describe("priority preemption", () => {
  test("a high-priority job preempts one low-priority task, runs, and the task resumes and succeeds", async () => {
    const low = newId("low");
    const high = newId("high");
    const tasks = [`${low}-t0`, `${low}-t1`];
    const gate = untilReleased(low);
    // Each task's HPC Pack states, as its status events carry them.
    const hpc = new Map<string, string[]>(tasks.map((t) => [t, []]));
    rt.runtime.bus.onEvent((e) => {
      const d = e.detail as { sessionId?: string; to?: string; hpcState?: string };
      if (e["detail-type"] === "Session Status Changed")
        hpc.get(d.sessionId ?? "")?.push(`${d.to}:${d.hpcState}`);
    });
    await submit(low, {
      name: "low",
      priority: 0,
      replicas: 2,
      coscheduled: false,
      resources: WHOLE_AGENT,
      command: gate.command,
      env: gate.env,
    });
    for (const id of tasks) await rt.waitFor(id, running, "RUNNING", 60_000);

    await submit(high, {
      name: "high",
      priority: 10,
      resources: WHOLE_AGENT,
      command: sh("sleep 1; exit 0"),
    });

    const highDone = await rt.waitForEnd(high, 60_000);
    expect(sessionResult(highDone)).toBe("succeeded");
    gate.release();
    const ended = await Promise.all(tasks.map((id) => rt.waitForEnd(id, 60_000)));
    expect(ended.map(sessionResult)).toEqual(["succeeded", "succeeded"]);

    // Exactly one task was preempted (the fewest needed), the other ran once undisturbed.
    const runs = await Promise.all(tasks.map((id) => rt.store.listRuns(id)));
    const victimAt = runs.findIndex((r) => r.length > 1);
    expect(victimAt).toBeGreaterThanOrEqual(0);
    const victim = tasks[victimAt]!;
    const victimRuns = runs[victimAt]!;
    const bystanderRuns = runs[1 - victimAt]!;
    expect(bystanderRuns.map((r) => [r.outcome, r.decision])).toEqual([["SUCCEEDED", "finished"]]);
    expect(victimRuns.map((r) => [r.runIndex, r.outcome, r.decision])).toEqual([
      [0, "PREEMPTED", "retry"],
      [1, "SUCCEEDED", "finished"],
    ]);
    expect(victimRuns[0]?.kernels[0]).toMatchObject({ outcome: "PREEMPTED", condition: "Preempted" });
    expect(victimRuns[0]?.reason).toContain("preemption count 1 <= maxRetriesPreemption 100");
    // HPC Pack: a preempted task that is rerunnable "is returned to the Queued state".
    const victimHpc = hpc.get(victim)!;
    const requeued = victimHpc.indexOf("PENDING:Queued", victimHpc.indexOf("RUNNING:Running") + 1);
    expect(requeued, victimHpc.join(" ")).toBeGreaterThan(0);
    await expect.poll(() => victimHpc.at(-1), { timeout: 10_000 }).toBe("TERMINATED:Finished");
    const victimEnd = ended[victimAt]!;
    expect(victimEnd.session.retry).toMatchObject({ preemptionCount: 1, failureCount: 0 });
    expect(victimEnd.session.preemption).toBeUndefined();

    // The victim's history names its preemptor; the preemptor's says what it did while waiting.
    const victimHistory = await rt.store.listHistory(victim);
    expect(victimHistory).toContainEqual(
      expect.objectContaining({
        handler: "Preempt",
        result: "PREEMPTED",
        fromStatus: "RUNNING",
        toStatus: "TERMINATING",
        message: `preempted by ${high} (priority 10)`,
      }),
    );
    const highHistory = await rt.store.listHistory(high);
    expect(highHistory).toContainEqual(
      expect.objectContaining({
        result: "SKIPPED",
        message: `preempting 1 lower-priority session (${victim}, priority 0) to make room`,
      }),
    );

    // The high-priority job was placed before the victim was placed again.
    const placedAtMs = (history: readonly HistoryRecord[], after = -1) =>
      history.find((h) => h.handler === "ScheduleNewSessions" && h.result === "SUCCESS" && h.seq > after)
        ?.firstAtMs;
    const preemptedSeq = victimHistory.find((h) => h.result === "PREEMPTED")!.seq;
    expect(placedAtMs(highHistory)).toBeDefined();
    expect(placedAtMs(victimHistory, preemptedSeq)).toBeGreaterThanOrEqual(placedAtMs(highHistory)!);
  }, 90_000);

  test("a task that is not rerunnable, preempted while running, ends Failed instead of queued again (HPC Pack)", async () => {
    const low = newId("once");
    const high = newId("urgent");
    const gate = untilReleased(low);
    await submit(low, {
      name: "once",
      priority: 0,
      replicas: 2,
      coscheduled: false,
      rerunnable: false,
      resources: WHOLE_AGENT,
      command: gate.command,
      env: gate.env,
    });
    const tasks = [`${low}-t0`, `${low}-t1`];
    for (const id of tasks) await rt.waitFor(id, running, "RUNNING", 60_000);
    await submit(high, { name: "urgent", priority: 10, resources: WHOLE_AGENT, command: sh("exit 0") });
    expect(sessionResult(await rt.waitForEnd(high, 60_000))).toBe("succeeded");
    gate.release();
    const ended = await Promise.all(tasks.map((id) => rt.waitForEnd(id, 60_000)));
    // One was preempted and is over, failed, with one run; the other ran once undisturbed.
    expect(ended.map(sessionResult).sort()).toEqual(["failed", "succeeded"]);
    const victim = ended.find((s) => sessionResult(s) === "failed")!;
    expect(await rt.store.listRuns(victim.session.id)).toMatchObject([
      {
        runIndex: 0,
        outcome: "PREEMPTED",
        decision: "finished",
        reason: "preempted while running, and the spec says rerunnable: false: not run again",
      },
    ]);
    expect(hpcSessionState(victim.session, victim.kernels)).toBe("Failed");
  }, 90_000);

  test("a gang that would not fit even after preempting every lower-priority session preempts nobody", async () => {
    // One agent runs a session of the gang's own priority, the other a low-priority one: the gang
    // needs both agents, and preempting the low one alone would not make room.
    const peer = newId("peer");
    const low = newId("low");
    const gang = newId("gang");
    const gate = untilReleased(peer);
    await submit(peer, {
      name: "peer",
      priority: 10,
      resources: WHOLE_AGENT,
      command: gate.command,
      env: gate.env,
    });
    await rt.waitFor(peer, running, "RUNNING", 60_000);
    await submit(low, {
      name: "low",
      priority: 0,
      resources: WHOLE_AGENT,
      command: gate.command,
      env: gate.env,
    });
    await rt.waitFor(low, running, "RUNNING", 60_000);

    await submit(gang, {
      name: "gang",
      priority: 10,
      replicas: 2,
      coscheduled: true,
      perAgent: 1,
      resources: WHOLE_AGENT,
      command: sh("exit 0"),
    });
    const waiting = await rt.waitFor(
      gang,
      (s) => s.session.pendingReason?.includes("would not make room") === true,
      "a pending reason saying preemption would not help",
      60_000,
    );
    // Placement's reason, then preemption's verdict.
    expect(waiting.session.pendingReason).toMatch(
      /^no agent has 2 cpu free.*; preempting every lower-priority session \(1\) would not make room$/,
    );
    await rt.cancel(gang, "cannot fit");
    expect((await rt.waitForEnd(gang)).session.status).toBe("CANCELLED");
    gate.release();

    const ended = await Promise.all([peer, low].map((id) => rt.waitForEnd(id, 60_000)));
    expect(ended.map(sessionResult)).toEqual(["succeeded", "succeeded"]);
    for (const id of [peer, low]) {
      expect((await rt.store.listRuns(id)).map((r) => r.outcome)).toEqual(["SUCCEEDED"]);
      expect((await rt.store.listHistory(id)).some((h) => h.result === "PREEMPTED")).toBe(false);
    }
  }, 90_000);
});
