/**
 * A failure category an agent reports (Armada's error categories) travels the whole
 * way: the event's schema, the kernel, the stored run record, and a retry rule that matches on it.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { DetailType, toPutEventsEntry } from "../functions/core/events.ts";
import { kernelReportPatch } from "../functions/core/kernel-reports.ts";
import type { Kernel } from "../functions/core/model.ts";
import { RETRY_CONFIG_DEFAULTS } from "../functions/core/retry/config.ts";
import { evaluateRetry, INITIAL_RETRY_STATE } from "../functions/core/retry/evaluate.ts";
import { parseRetryPolicy } from "../functions/core/retry/policy.ts";
import { runRecord } from "../functions/core/runs.ts";
import { kernel, NOW_MS, session } from "./core/fixtures.ts";
import { freshTable, newSession, T0, type TestTable } from "./store-fixtures.ts";

const report = {
  agentId: "agent-1",
  incarnation: "incarnation-1",
  signature: "0".repeat(64),
  sessionId: "s-cat",
  kernelIndex: 0,
  runIndex: 0,
  status: "TERMINATED" as const,
  exitCode: 1,
  failureCategory: "cuda_error",
  atMs: NOW_MS,
};

describe("failure categories", () => {
  test("an agent's report carries the category, only once the kernel has ended", () => {
    expect(() => toPutEventsEntry("cairn", DetailType.KernelStatusChanged, report)).not.toThrow();
    expect(() =>
      toPutEventsEntry("cairn", DetailType.KernelStatusChanged, {
        ...report,
        status: "RUNNING",
        exitCode: undefined,
      }),
    ).toThrow("detail.failureCategory: only allowed when status is TERMINATED or ERROR");
    expect(() =>
      toPutEventsEntry("cairn", DetailType.KernelStatusChanged, { ...report, failureCategory: "Not Valid" }),
    ).toThrow("detail.failureCategory: must be 1 to 64 of a-z, 0-9, '_', '.', '-'");
  });

  test("given a categorised failure, the run record keeps it and a category rule retries it", () => {
    const running = kernel("s-cat", 0, "RUNNING", { agentId: "agent-1", startedAtMs: NOW_MS - 5_000 });
    const patch = kernelReportPatch(running, report, { cancelled: false });
    expect(patch).toMatchObject({ status: "TERMINATED", failureCategory: "cuda_error", outcome: "FAILED" });
    const ended: Kernel = {
      ...running,
      status: "TERMINATED",
      exitCode: 1,
      outcome: "FAILED",
      failureCategory: "cuda_error",
      finishedAtMs: NOW_MS,
    };
    const s = { session: session("s-cat", "TERMINATING"), kernels: [ended] };
    expect(runRecord(s, { decision: "finished", reason: "x" }, NOW_MS).kernels[0]?.failureCategory).toBe(
      "cuda_error",
    );

    const policy = parseRetryPolicy({
      apiVersion: "cairn.dev/v1",
      kind: "RetryPolicy",
      metadata: { name: "gpu" },
      spec: { rules: [{ action: "Retry", onFailureCategory: ["cuda_error"] }] },
    });
    const decision = evaluateRetry({
      run: { startedRunning: true, kernels: [ended] },
      policies: [policy],
      state: INITIAL_RETRY_STATE,
      config: RETRY_CONFIG_DEFAULTS,
    });
    expect(decision).toMatchObject({ action: "retry", matchedRule: { policy: "gpu", index: 0 } });
  });
});

describe("failure categories in the store (DynamoDB Local)", () => {
  let table: TestTable;
  beforeAll(async () => {
    table = await freshTable("category");
  });
  afterAll(async () => {
    await table?.drop();
  });

  test("a kernel patch and a run record keep the category; resetRun clears it from the kernel", async () => {
    const store = table.store();
    const created = newSession("s-cat-store", { replicas: 1, status: "TERMINATING" });
    await store.createSession(created);
    const s0 = (await store.getSession("s-cat-store"))!;
    await store.applyWrite({
      sessionId: "s-cat-store",
      expected: { status: "TERMINATING", version: s0.session.version },
      nowMs: T0,
      kernels: [
        { index: 0, status: "TERMINATED", exitCode: 1, failureCategory: "cuda_error", outcome: "FAILED" },
      ],
    });
    const s1 = (await store.getSession("s-cat-store"))!;
    expect(s1.kernels[0]?.failureCategory).toBe("cuda_error");
    await store.applyWrite({
      sessionId: "s-cat-store",
      expected: { status: "TERMINATING", version: s1.session.version },
      nowMs: T0,
      run: runRecord(s1, { decision: "retry", reason: "cuda" }, T0),
      kernels: [{ index: 0, status: "PENDING", agentId: null, resetRun: true }],
    });
    const s2 = (await store.getSession("s-cat-store"))!;
    expect(s2.kernels[0]?.failureCategory).toBeUndefined();
    expect((await store.listRuns("s-cat-store"))[0]?.kernels[0]?.failureCategory).toBe("cuda_error");
  });
});
