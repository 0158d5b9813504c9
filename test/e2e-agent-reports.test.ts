/**
 * Agent reports end to end, with `cairn agent` processes and real kernels in the embedded
 * runtime: an agent reports PULLING when it begins preparing a run and the coordinator accepts it
 * (no Event Rejected, the session moves on); and a failed run's kernel carries the failure category
 * the agent classified (core/retry/failure-categories.ts), which a retry rule matches. And an agent
 * restarted with the same id reports at registration that its old incarnation's kernels
 * are gone, so they are retried at once rather than after the liveness window.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { parseRetryPolicy } from "../functions/core/retry/policy.ts";
import { sessionResult } from "../functions/core/sessions.ts";
import type { EventBridgeEvent } from "../local/eventbridge/index.ts";
import { assertLifecycleInvariants, startTestRuntime, type TestRuntime } from "./support/runtime.ts";

let rt: TestRuntime;
afterEach(() => assertLifecycleInvariants(rt));
const seen: EventBridgeEvent[] = [];
let n = 0;
const newId = (label: string) => `rep-${label}-${Date.now().toString(36)}-${n++}`;
const sh = (script: string) => ["/bin/sh", "-c", script];

beforeAll(async () => {
  rt = await startTestRuntime({ agents: 2, agentCapacity: { cpu: 4, memoryMiB: 4096 }, retryCacheMs: 200 });
  rt.runtime.bus.onEvent((event) => seen.push(event));
}, 120_000);
afterAll(() => rt?.stop());

interface ReportDetail {
  readonly sessionId: string;
  readonly status: string;
  readonly passed?: readonly { readonly status: string }[];
  readonly failureCategory?: string;
}
/** Each report's statuses, with those it says its kernel passed through (sent with it) first. */
const statusesOf = (reports: readonly ReportDetail[]) =>
  reports.flatMap((r) => [...(r.passed ?? []).map((p) => p.status), r.status]);
const reportsOf = (id: string) =>
  seen
    .filter((e) => e["detail-type"] === "Kernel Status Changed")
    .map((e) => e.detail as ReportDetail)
    .filter((d) => d.sessionId === id);
const rejectionsAbout = (id: string) =>
  seen
    .filter((e) => e["detail-type"] === "Event Rejected")
    .map((e) => (e.detail as { reason: string }).reason)
    .filter((reason) => reason.includes(id));

describe("agent reports, end to end", () => {
  test("PULLING is sent as preparation begins, accepted, and the session runs on to success", async () => {
    const id = newId("pulling");
    await rt.submit({ sessionId: id, spec: { name: "pulling", command: sh("echo ok") } });
    const s = await rt.waitForEnd(id, 60_000);
    expect(sessionResult(s)).toBe("succeeded");
    // A preparation of milliseconds sends its PULLING with its PREPARED, as a status passed.
    expect(statusesOf(reportsOf(id))).toEqual(["PULLING", "PREPARED", "RUNNING", "TERMINATED"]);
    expect(rejectionsAbout(id)).toEqual([]);
    // Exit 0: no failure, no category.
    expect(s.kernels[0]?.failureCategory).toBeUndefined();
  }, 90_000);

  test("a SIGKILLed kernel ends with category killed, an `exit 1` one with user_error; a rule on killed retries", async () => {
    const name = `p-${Date.now().toString(36)}-${n++}`;
    await rt.store.createRetryPolicy(
      parseRetryPolicy({
        apiVersion: "cairn.dev/v1",
        kind: "RetryPolicy",
        metadata: { name },
        spec: { rules: [{ action: "Retry", onFailureCategory: ["killed"] }] },
      }),
      Date.now(),
    );
    const killed = newId("killed");
    const failed = newId("exit1");
    // Killed by SIGKILL on its first run only, so the retry is seen to succeed.
    await rt.submit({
      sessionId: killed,
      spec: {
        name: "killed",
        command: sh('if [ "$CAIRN_RUN_INDEX" = "0" ]; then kill -KILL $$; fi; echo ok'),
        retry: { policies: [name] },
      },
    });
    await rt.submit({
      sessionId: failed,
      spec: { name: "exit1", command: sh("exit 1"), retry: { policies: [name] } },
    });

    const k = await rt.waitForEnd(killed, 60_000);
    expect(sessionResult(k)).toBe("succeeded");
    const killedRuns = await rt.store.listRuns(killed);
    expect(killedRuns.map((r) => [r.runIndex, r.outcome, r.decision])).toEqual([
      [0, "FAILED", "retry"],
      [1, "SUCCEEDED", "finished"],
    ]);
    expect(killedRuns[0]?.kernels[0]).toMatchObject({ exitCode: 137, failureCategory: "killed" });
    expect(reportsOf(killed).find((r) => r.status === "TERMINATED")).toMatchObject({
      failureCategory: "killed",
    });

    const f = await rt.waitForEnd(failed, 60_000);
    expect(sessionResult(f)).toBe("failed");
    expect(f.kernels[0]).toMatchObject({ exitCode: 1, failureCategory: "user_error" });
    // No rule matches user_error and the default action is Fail: one run only.
    expect(f.session.runIndex).toBe(0);
    expect([...rejectionsAbout(killed), ...rejectionsAbout(failed)]).toEqual([]);
  }, 120_000);
});

describe("agent restarts, end to end", () => {
  test("an agent restarted with the same id reconciles at once: what the old process ran is lost, not waited for", async () => {
    const id = newId("restart");
    await rt.submit({
      sessionId: id,
      spec: {
        name: "restart",
        resources: { cpu: 1, memoryMiB: 64 },
        command: sh('if [ "$CAIRN_RUN_INDEX" = 0 ]; then sleep 30; fi'),
      },
    });
    const running = await rt.waitForStatus(id, "RUNNING");
    const agentId = running.kernels[0]!.agentId!;
    const old = rt.runtime.agents.find((a) => a.id === agentId)!;
    old.kill("SIGKILL");
    await old.exited;
    await rt.runtime.startAgent({ id: agentId });
    // This runtime's liveness window is 30 s (e2e-agents' is 3 s, shorter than a `cairn agent` can take
    // to start on a loaded machine): only the registration itself can retire the old incarnation here.
    const moved = await rt.waitFor(
      id,
      (s) => s.session.runIndex === 1 || s.session.status === "TERMINATED",
      "a retry",
    );
    const runs = await rt.store.listRuns(id);
    expect(runs[0]?.kernels[0]?.message).toMatch(new RegExp(`^agent ${agentId} restarted \\(incarnation `));
    expect(runs[0]?.outcome).toBe("WORKER_FAILED");
    expect(moved.session.retry?.preemptionCount).toBe(1);
    expect(sessionResult(await rt.waitForEnd(id))).toBe("succeeded");
  }, 60_000);
});
