/**
 * Retries end to end: runs that fail are retried or not by real retry policies and budgets, with
 * real processes in the embedded runtime (two agents). Each command looks at CAIRN_RUN_INDEX to
 * fail on its first run and succeed on a retry, so a retry is visible as a succeeded session.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import type { HistoryRecord, RunRecord, SessionWithKernels } from "../functions/core/model.ts";
import { RETRY_CONFIG_DEFAULTS } from "../functions/core/retry/config.ts";
import { parseRetryPolicy } from "../functions/core/retry/policy.ts";
import { sessionResult } from "../functions/core/sessions.ts";
import { historyLines } from "./support/histories.ts";
import type { EventBridgeEvent } from "../local/eventbridge/index.ts";
import { assertLifecycleInvariants, startTestRuntime, type TestRuntime } from "./support/runtime.ts";

let rt: TestRuntime;
// After every scenario: no session under way without a live execution, no ended one holding a token.
afterEach(() => assertLifecycleInvariants(rt));
const seen: EventBridgeEvent[] = [];
let n = 0;
const newId = (label: string) => `retry-${label}-${Date.now().toString(36)}-${n++}`;
const sh = (script: string) => ["/bin/sh", "-c", script];
/** Fails its first run with `firstRun`, succeeds after. */
const failFirstRun = (firstRun: string) =>
  sh(`if [ "$CAIRN_RUN_INDEX" = "0" ]; then ${firstRun}; fi; echo ok`);

beforeAll(async () => {
  rt = await startTestRuntime({ agents: 2, agentCapacity: { cpu: 4, memoryMiB: 4096 }, retryCacheMs: 200 });
  rt.runtime.bus.onEvent((event) => seen.push(event));
}, 120_000);

afterAll(async () => {
  await rt?.stop();
});

async function policy(doc: Record<string, unknown>): Promise<string> {
  const name = `p-${Date.now().toString(36)}-${n++}`;
  await rt.store.createRetryPolicy(
    parseRetryPolicy({ apiVersion: "cairn.dev/v1", kind: "RetryPolicy", metadata: { name }, spec: doc }),
    Date.now(),
  );
  return name;
}

async function finished(
  id: string,
): Promise<{ s: SessionWithKernels; runs: RunRecord[]; history: HistoryRecord[] }> {
  const s = await rt.waitForEnd(id, 60_000);
  return { s, runs: await rt.store.listRuns(id), history: await rt.store.listHistory(id) };
}

describe("retries, end to end", () => {
  test("exit 137 is retried under a matching rule, after the rule's backoff", async () => {
    const name = await policy({
      rules: [
        { action: "Retry", onExitCodes: { operator: "In", values: [137] }, backoff: { initialDelay: "2s" } },
      ],
    });
    const id = newId("exit137");
    await rt.submit({
      sessionId: id,
      spec: { name: "exit137", command: failFirstRun("exit 137"), retry: { policies: [name] } },
    });
    const { s, runs, history } = await finished(id);

    expect(sessionResult(s)).toBe("succeeded");
    expect(s.session.runIndex).toBe(1);
    expect(runs.map((r) => [r.runIndex, r.name, r.outcome, r.decision])).toEqual([
      [0, id, "FAILED", "retry"],
      [1, `${id}.1`, "SUCCEEDED", "finished"],
    ]);
    expect(runs[0]).toMatchObject({ delayMs: 2000, kernels: [{ exitCode: 137 }] });
    const requeued = history.find((h) => h.result === "REQUEUED" && h.fromStatus === "TERMINATING");
    expect(requeued).toMatchObject({ handler: "Retry", toStatus: "PENDING" });
    expect(requeued?.message).toContain(`${name}`);
    // The backoff is waited in the state machine: the next placement comes 2 s after the requeue.
    const placedAgain = history.find((h) => h.handler === "ScheduleNewSessions" && h.seq > requeued!.seq);
    expect(placedAgain!.firstAtMs - requeued!.firstAtMs).toBeGreaterThanOrEqual(2000);
    const requeuedEvents = seen.filter(
      (e) => e["detail-type"] === "Session Requeued" && (e.detail as { sessionId: string }).sessionId === id,
    );
    expect(requeuedEvents.map((e) => e.detail)).toEqual([
      expect.objectContaining({ runIndex: 1, runName: `${id}.1`, delayMs: 2000 }),
    ]);
  });

  test("an OOM beyond the rule's limit fails for good", async () => {
    const name = await policy({ rules: [{ action: "Retry", onConditions: ["OOMKilled"], retryLimit: 1 }] });
    const id = newId("oom");
    await rt.submit({
      sessionId: id,
      spec: {
        name: "oom",
        resources: { memoryMiB: 64 },
        command: [process.execPath, "-e", "const k=[];for(;;){k.push(Buffer.alloc(16<<20,1))}"],
        retry: { policies: [name] },
      },
    });
    const { s, runs } = await finished(id);
    expect(sessionResult(s)).toBe("failed");
    expect(runs.map((r) => [r.runIndex, r.decision, r.kernels[0]?.condition])).toEqual([
      [0, "retry", "OOMKilled"],
      [1, "finished", "OOMKilled"],
    ]);
    expect(runs[1]?.reason).toMatch(/limit/i);
  });

  test("a failure no rule matches follows the policy's defaultAction", async () => {
    const retrying = await policy({
      defaultAction: "Retry",
      rules: [{ action: "Fail", onExitCodes: { operator: "In", values: [2] } }],
    });
    const failing = await policy({
      defaultAction: "Fail",
      rules: [{ action: "Retry", onExitCodes: { operator: "In", values: [2] } }],
    });
    const retried = newId("default-retry");
    const failed = newId("default-fail");
    await rt.submit({
      sessionId: retried,
      spec: { name: "dflt", command: failFirstRun("exit 3"), retry: { policies: [retrying] } },
    });
    await rt.submit({
      sessionId: failed,
      spec: { name: "dflt", command: failFirstRun("exit 3"), retry: { policies: [failing] } },
    });
    const a = await finished(retried);
    const b = await finished(failed);
    // What to look at if it fails: each run's decision and reason, and the history.
    const story = (f: Awaited<ReturnType<typeof finished>>) =>
      JSON.stringify({
        runs: f.runs.map((r) => [r.runIndex, r.decision, r.reason, r.kernels[0]?.exitCode]),
        history: historyLines(f.history),
      });
    expect(sessionResult(a.s), story(a)).toBe("succeeded");
    expect(a.runs.map((r) => r.decision)).toEqual(["retry", "finished"]);
    expect(sessionResult(b.s), story(b)).toBe("failed");
    expect(b.runs.map((r) => r.decision)).toEqual(["finished"]);
  });

  test("globalMaxRetries 0 stops every retry, effective without a restart", async () => {
    const name = await policy({
      rules: [{ action: "Retry", onExitCodes: { operator: "In", values: [137] } }],
    });
    await rt.store.putRetryConfig({ ...RETRY_CONFIG_DEFAULTS, globalMaxRetries: 0 }, Date.now());
    try {
      await new Promise((r) => setTimeout(r, 400)); // past the functions' 200 ms cache
      const id = newId("cap0");
      await rt.submit({
        sessionId: id,
        spec: { name: "cap0", command: failFirstRun("exit 137"), retry: { policies: [name] } },
      });
      const { s, runs } = await finished(id);
      expect(sessionResult(s)).toBe("failed");
      expect(runs.map((r) => r.decision)).toEqual(["finished"]);
      expect(runs[0]?.reason).toMatch(/global/i);
    } finally {
      await rt.store.putRetryConfig(RETRY_CONFIG_DEFAULTS, Date.now());
      await new Promise((r) => setTimeout(r, 400));
    }
  });

  test("node anti-affinity moves the retry to the other agent", async () => {
    const name = await policy({
      rules: [
        { action: "Retry", onExitCodes: { operator: "In", values: [137] }, antiAffinity: { mode: "node" } },
      ],
    });
    const id = newId("affinity");
    await rt.submit({
      sessionId: id,
      spec: { name: "affinity", command: failFirstRun("exit 137"), retry: { policies: [name] } },
    });
    const { s, runs } = await finished(id);
    expect(sessionResult(s)).toBe("succeeded");
    const first = runs[0]?.kernels[0]?.agentId;
    const second = runs[1]?.kernels[0]?.agentId;
    expect(runs[0]?.avoidAgentId).toBe(first);
    expect(first).toBeDefined();
    expect(second).toBeDefined();
    expect(second).not.toBe(first);
  });

  test("a termination message containing TRANSIENT is retried", async () => {
    const name = await policy({
      rules: [{ action: "Retry", onTerminationMessage: { pattern: ".*TRANSIENT.*" } }],
    });
    const id = newId("transient");
    await rt.submit({
      sessionId: id,
      spec: {
        name: "transient",
        command: failFirstRun('echo "upstream TRANSIENT error" > "$CAIRN_TERMINATION_LOG"; exit 1'),
        retry: { policies: [name] },
      },
    });
    const { s, runs } = await finished(id);
    expect(sessionResult(s)).toBe("succeeded");
    expect(runs[0]).toMatchObject({
      decision: "retry",
      kernels: [{ exitCode: 1, message: "upstream TRANSIENT error" }],
    });
  });

  test("an Armada pattern with (?i) matches any case; an empty termination message matches not even .*", async () => {
    const name = await policy({
      rules: [
        { action: "Retry", onTerminationMessage: { pattern: "(?i)transient" } },
        { action: "Retry", onTerminationMessage: { pattern: ".*" } },
      ],
    });
    const anyCase = newId("re2-case");
    const empty = newId("re2-empty");
    for (const [sessionId, firstRun] of [
      [anyCase, 'echo "upstream Transient error" > "$CAIRN_TERMINATION_LOG"; exit 1'],
      [empty, ': > "$CAIRN_TERMINATION_LOG"; exit 1'],
    ] as const) {
      await rt.submit({
        sessionId,
        spec: { name: "re2", command: failFirstRun(firstRun), retry: { policies: [name] } },
      });
    }
    const retried = await finished(anyCase);
    expect(sessionResult(retried.s)).toBe("succeeded");
    expect(retried.runs[0]).toMatchObject({
      decision: "retry",
      kernels: [{ exitCode: 1, message: "upstream Transient error" }],
    });
    const failed = await finished(empty);
    expect(sessionResult(failed.s)).toBe("failed");
    expect(failed.runs).toHaveLength(1);
    expect(failed.runs[0]?.decision).toBe("finished");
    expect(failed.runs[0]?.kernels[0]?.message ?? "").toBe("");
  });

  test("a rule combining an exit code and a message retries only a run that shows both", async () => {
    const name = await policy({
      rules: [
        {
          action: "Retry",
          containerName: 0,
          onExitCodes: { operator: "In", values: [3] },
          onTerminationMessage: { pattern: "TRANSIENT" },
        },
      ],
    });
    const both = newId("and-both");
    const codeOnly = newId("and-code");
    for (const [sessionId, firstRun] of [
      [both, 'echo "upstream TRANSIENT error" > "$CAIRN_TERMINATION_LOG"; exit 3'],
      [codeOnly, 'echo "bad input" > "$CAIRN_TERMINATION_LOG"; exit 3'],
    ] as const) {
      await rt.submit({
        sessionId,
        spec: { name: "and", command: failFirstRun(firstRun), retry: { policies: [name] } },
      });
    }
    const retried = await finished(both);
    expect(sessionResult(retried.s)).toBe("succeeded");
    expect(retried.runs[0]?.reason).toContain(
      `${name} rule 0 (Retry) matched kernel 0 (exit code 3 and termination message matches /TRANSIENT/)`,
    );
    const failed = await finished(codeOnly);
    expect(sessionResult(failed.s)).toBe("failed");
    expect(failed.runs.map((r) => r.decision)).toEqual(["finished"]);
  });

  test("a queue's policies apply to its sessions, its priority is added, and an unknown queue is rejected", async () => {
    const name = await policy({
      rules: [{ action: "Retry", onExitCodes: { operator: "In", values: [137] } }],
    });
    const queue = `q-${Date.now().toString(36)}`;
    await rt.store.createQueue({ name: queue, priority: 5, retryPolicies: [name] }, Date.now());
    const id = newId("queued");
    await rt.submit({
      sessionId: id,
      spec: { name: "queued", queue, priority: 1, command: failFirstRun("exit 137") },
    });
    const { s, runs } = await finished(id);
    expect(sessionResult(s)).toBe("succeeded");
    expect(runs.map((r) => r.decision)).toEqual(["retry", "finished"]);
    expect(s.session.spec.priority).toBe(6);

    const before = seen.length;
    const orphan = newId("no-queue");
    await rt.submit({
      sessionId: orphan,
      spec: { name: "orphan", queue: "no-such-queue", command: ["true"] },
    });
    const deadline = Date.now() + 10_000;
    const rejection = () =>
      seen
        .slice(before)
        .find(
          (e) =>
            e["detail-type"] === "Event Rejected" &&
            (e.detail as { reason: string }).reason.includes("detail.spec.queue"),
        );
    while (!rejection() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect((rejection()?.detail as { reason: string } | undefined)?.reason).toContain(
      'detail.spec.queue: no queue named "no-such-queue"',
    );
    expect(await rt.store.getSession(orphan)).toBeUndefined();
  });

  test("a pending timeout ends the kernels Unschedulable, and a rule on that condition retries the run", async () => {
    const name = await policy({
      rules: [{ action: "Retry", onConditions: ["Unschedulable"], retryLimit: 1 }],
    });
    const id = newId("unsched");
    // The agents have 4 cpu each: a 16-cpu kernel is never placed, and PENDING expires after 2 s.
    await rt.submit({
      sessionId: id,
      spec: {
        name: "unsched",
        resources: { cpu: 16, memoryMiB: 64 },
        command: sh("true"),
        timeouts: { pending: 2 },
        retry: { policies: [name] },
      },
    });
    const { s, runs, history } = await finished(id);
    // Run 0 expired and was retried by the rule; run 1 expired with the rule's one retry used.
    expect(s.session.status).toBe("CANCELLED");
    expect(s.session.runIndex).toBe(1);
    expect(runs).toEqual([
      expect.objectContaining({
        runIndex: 0,
        decision: "retry",
        outcome: "UNSCHEDULABLE",
        kernels: [expect.objectContaining({ outcome: "UNSCHEDULABLE", condition: "Unschedulable" })],
      }),
    ]);
    expect(history.filter((h) => h.result === "REQUEUED").map((h) => [h.fromStatus, h.toStatus])).toEqual([
      ["PENDING", "PENDING"],
      ["PENDING", "PENDING"],
    ]);
    const expired = history.find((h) => h.fromStatus === "PENDING" && h.toStatus === "CANCELLED");
    expect(expired).toMatchObject({ result: "EXPIRED" });
    expect(expired?.message).toContain(`${name} rule 0 (Retry) matched kernel 0`);
    expect(expired?.message).toContain("1 retry is used up");
    expect(s.kernels).toEqual([
      expect.objectContaining({
        index: 0,
        status: "CANCELLED",
        outcome: "UNSCHEDULABLE",
        condition: "Unschedulable",
      }),
    ]);
  });

  test("Armada: a requeued session waits ahead of an older new one of the same priority", async () => {
    // Neither fits an agent (4 cpu each). The older one waits as new; the younger one's PENDING
    // expires after 3 s and a rule on Unschedulable requeues it.
    const name = await policy({
      rules: [{ action: "Retry", onConditions: ["Unschedulable"], retryLimit: 1 }],
    });
    const older = newId("queue-old");
    const requeued = newId("queue-requeued");
    const big = { cpu: 16, memoryMiB: 64 };
    await rt.submit({
      sessionId: older,
      spec: { name: "old", resources: big, command: sh("true"), timeouts: { pending: 120 } },
    });
    await rt.submit({
      sessionId: requeued,
      spec: {
        name: "requeued",
        resources: big,
        command: sh("true"),
        timeouts: { pending: 3 },
        retry: { policies: [name] },
      },
    });
    const deadline = Date.now() + 30_000;
    let order: string[] = [];
    while (Date.now() < deadline) {
      const again = await rt.store.getSession(requeued);
      if (again?.session.runIndex === 1 && again.session.status === "PENDING") {
        const page = await rt.store.listSessionsByStatus("PENDING", { limit: 100 });
        order = page.items.map((s) => s.id).filter((id) => id === older || id === requeued);
        break;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(order).toEqual([requeued, older]);
    expect((await rt.store.getSession(requeued))?.session.requeuedAtMs).toBeGreaterThan(0);
    await rt.cancel(older, "done");
    await rt.cancel(requeued, "done");
    await rt.waitForEnd(older, 30_000);
    await rt.waitForEnd(requeued, 30_000);
  });

  test("without a policy the failure budget decides: maxRetriesFailure 1 allows one retry", async () => {
    const id = newId("budget");
    await rt.submit({
      sessionId: id,
      spec: { name: "budget", command: sh("exit 1"), retry: { maxRetriesFailure: 1 } },
    });
    const { s, runs } = await finished(id);
    expect(sessionResult(s)).toBe("failed");
    expect(runs.map((r) => r.decision)).toEqual(["retry", "finished"]);
    expect(s.session.retry).toMatchObject({ failureCount: 1 });
  });
});
