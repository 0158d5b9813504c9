/**
 * The session lifecycle's end-to-end scenarios that need real processes, against the embedded
 * runtime: the real ASL on the local Step Functions engine, DynamoDB Local, the local bus, the
 * handlers in-process, and two local agents (4 cpu, 4096 MiB each). What they check is what only a
 * real agent shows: a command's real output, an OOM kill (exit 137), a real process stopped. Every
 * other lifecycle scenario (expiry, cancel in PENDING, non-zero exit, duplicates, malformed events,
 * gangs, retries) is replayed deterministically in test/replay/.
 */
import { readCombinedLog } from "../agent/log-reader.ts";
import { runLogPaths } from "../agent/work-dir.ts";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import type { EventBridgeEvent } from "../local/eventbridge/index.ts";
import { sessionResult } from "../functions/core/sessions.ts";
import { assertLifecycleInvariants, startTestRuntime, type TestRuntime } from "./support/runtime.ts";
import { HISTORY_TO_RUNNING, historyLines } from "./support/histories.ts";

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

async function waitUntil(check: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
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
    expect(historyLines(await rt.store.listHistory(id))).toEqual([
      ...HISTORY_TO_RUNNING,
      "DetectTermination SUCCESS RUNNING->TERMINATING",
      // DetectTermination moves a one-kernel session on only once its kernel has ended, so the
      // TERMINATING entry's own pass finds nothing left to stop.
      "PromoteToTerminated SUCCESS TERMINATING->TERMINATED",
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
      .map((e) => e.detail as { to: string; hpcState?: string });
    // Each carries the session's HPC Pack state as the change left it. The echo ends
    // at once: when RUNNING is written its kernel may have ended already (Finishing).
    const states = changes.map((c) => `${c.to} ${c.hpcState}`);
    expect(states.filter((c) => !c.startsWith("RUNNING "))).toEqual([
      "PENDING Queued",
      "SCHEDULED Dispatching",
      "PREPARING Dispatching",
      "PREPARED Dispatching",
      "CREATING Dispatching",
      "TERMINATING Finishing",
      "TERMINATED Finished",
    ]);
    expect(["RUNNING Running", "RUNNING Finishing"]).toContain(states[5]);
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

  test("cancel in RUNNING stops the process: TERMINATING → TERMINATED, result cancelled", async () => {
    const id = newId("cancel-running");
    // SIGTERM ends it after half a second, with the shell's 143: its report cannot race the
    // TERMINATING entry's passes, which run within milliseconds of the stop being sent.
    await rt.submit({
      sessionId: id,
      spec: { name: "cancel-running", command: sh('trap "sleep 0.5; exit 143" TERM; sleep 60 & wait') },
    });
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
    expect(historyLines(await rt.store.listHistory(id)).slice(-2)).toEqual([
      "Cancel CANCELLED RUNNING->TERMINATING",
      // The kernel's report of its end comes after the TERMINATING entry's own passes (it takes
      // half a second to stop): with nothing left alive TerminateSessions has nothing to stop,
      // and PromoteToTerminated (no kernel non-terminal) moves the session on.
      "PromoteToTerminated SUCCESS TERMINATING->TERMINATED",
    ]);
  });
});
