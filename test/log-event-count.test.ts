/**
 * The count of events in a run's log stream that an agent reports with the run's end
 * (`logEventCount`) travels the whole way: validated at the edge, kept on the kernel by the
 * report's patch, copied into the run's record, stored and read back (DynamoDB Local), and
 * cleared from the kernel when it runs again. `cairn logs` reads a finished run until it has
 * read that many events.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { checkAgentSignature } from "../functions/app/agents.ts";
import { DetailType, parseInboundEvent, toPutEventsEntry } from "../functions/core/events.ts";
import { stageEntryWrite } from "../functions/core/effects.ts";
import { kernelReportPatch } from "../functions/core/kernel-reports.ts";
import type { Agent, Kernel } from "../functions/core/model.ts";
import { runRecord } from "../functions/core/runs.ts";
import { signDetail } from "../functions/topology/agent-signature.ts";
import { kernel, NOW_MS, session } from "./core/fixtures.ts";
import { freshTable, newSession, T0, type TestTable } from "./store-fixtures.ts";

const report = {
  agentId: "agent-1",
  incarnation: "incarnation-1",
  signature: "0".repeat(64),
  sessionId: "s-count",
  kernelIndex: 0,
  runIndex: 0,
  status: "TERMINATED" as const,
  exitCode: 1,
  logEventCount: 42,
  atMs: NOW_MS,
};

const envelope = (detail: Record<string, unknown>) => ({
  id: "e-1",
  time: "2026-01-01T00:00:00Z",
  source: "cairn.agent",
  "detail-type": DetailType.KernelStatusChanged,
  detail,
});

/** The reason the edge gives for refusing `detail`. */
function refusal(detail: Record<string, unknown>): string {
  const parsed = parseInboundEvent(envelope(detail));
  if (parsed.ok) throw new Error("accepted");
  return parsed.error.message;
}

describe("a run's log event count at the edge", () => {
  test("a count of 0 or more goes with the run's end", () => {
    expect(parseInboundEvent(envelope(report)).ok).toBe(true);
    expect(parseInboundEvent(envelope({ ...report, logEventCount: 0 })).ok).toBe(true);
    expect(parseInboundEvent(envelope({ ...report, status: "ERROR", exitCode: undefined })).ok).toBe(true);
    expect(() => toPutEventsEntry("cairn", DetailType.KernelStatusChanged, report)).not.toThrow();
  });

  test("a negative, fractional or non-number count is refused, naming the field", () => {
    expect(refusal({ ...report, logEventCount: -1 })).toBe(
      "rejected event e-1 (Kernel Status Changed): detail.logEventCount: must be at least 0",
    );
    expect(refusal({ ...report, logEventCount: 2.5 })).toBe(
      "rejected event e-1 (Kernel Status Changed): detail.logEventCount: must be an integer",
    );
    expect(refusal({ ...report, logEventCount: "42" })).toBe(
      "rejected event e-1 (Kernel Status Changed): detail.logEventCount: expected a number, got a string",
    );
    expect(() =>
      toPutEventsEntry("cairn", DetailType.KernelStatusChanged, { ...report, logEventCount: -3 }),
    ).toThrow("detail.logEventCount: must be at least 0");
  });

  test("the signature covers it: a report whose count was changed on the way is refused", () => {
    const key = "k".repeat(43);
    const agent = { id: "agent-1", incarnation: "incarnation-1", signingKey: key } as Agent;
    const signed = { ...report, signature: signDetail(key, DetailType.KernelStatusChanged, report) };
    const check = (detail: typeof signed) =>
      checkAgentSignature(agent, "agent-1", "incarnation-1", DetailType.KernelStatusChanged, detail);
    expect(check(signed)).toBeUndefined();
    expect(check({ ...signed, logEventCount: 41 })).toBe(
      "detail.signature: does not match agent agent-1's key: the event is not from that agent",
    );
    const { logEventCount: _dropped, ...without } = signed;
    expect(check(without as typeof signed)).toBe(
      "detail.signature: does not match agent agent-1's key: the event is not from that agent",
    );
  });

  test("only a run's end says it", () => {
    expect(refusal({ ...report, status: "RUNNING", exitCode: undefined })).toContain(
      "detail.logEventCount: only allowed when status is TERMINATED or ERROR",
    );
  });
});

describe("the count on the kernel and the run's record", () => {
  const running = kernel("s-count", 0, "RUNNING", { agentId: "agent-1", startedAtMs: NOW_MS - 5_000 });

  test("the run's end keeps it on the kernel, and the run's record copies it", () => {
    expect(kernelReportPatch(running, report, { cancelled: false })).toMatchObject({
      status: "TERMINATED",
      logEventCount: 42,
    });
    const failedStart = { ...report, status: "ERROR" as const, exitCode: undefined, logEventCount: 3 };
    expect(kernelReportPatch(running, failedStart, { cancelled: false })).toMatchObject({
      status: "ERROR",
      logEventCount: 3,
    });
    const ended: Kernel = { ...running, status: "TERMINATED", exitCode: 1, logEventCount: 42 };
    const s = { session: session("s-count", "TERMINATING"), kernels: [ended] };
    expect(runRecord(s, { decision: "finished", reason: "x" }, NOW_MS).kernels[0]?.logEventCount).toBe(42);
  });

  test("a kernel sent back to PENDING within its run loses its count: placed again, it writes on in the same stream", () => {
    const write = stageEntryWrite({
      session: session("s-count", "CREATING"),
      kernels: [
        kernel("s-count", 0, "TERMINATED", { agentId: "agent-1", logEventCount: 42 }),
        kernel("s-count", 1, "CREATING", { agentId: "agent-2" }),
      ],
      transition: { from: "CREATING", to: "PENDING", result: "EXPIRED", handler: "Lifecycle" },
      taskToken: "tok",
      nowMs: NOW_MS,
    });
    expect(write.kernels).toMatchObject([
      { index: 0, status: "PENDING", agentId: null, logEventCount: null },
      { index: 1, status: "PENDING", agentId: null, logEventCount: null },
    ]);
  });

  test("a failed preparation's count is not kept: the run may be prepared again and write on", () => {
    const preparing = kernel("s-count", 0, "PREPARING", { agentId: "agent-1" });
    const patch = kernelReportPatch(
      preparing,
      { ...report, status: "ERROR", exitCode: undefined, message: "no image", logEventCount: 1 },
      { cancelled: false },
    );
    expect(patch).toMatchObject({ status: "PREPARING", error: "no image" });
    expect(patch).not.toHaveProperty("logEventCount");
  });
});

describe("the count in the store (DynamoDB Local)", () => {
  let table: TestTable;
  beforeAll(async () => {
    table = await freshTable("logcount");
  });
  afterAll(async () => {
    await table?.drop();
  });

  test("a kernel patch and a run record keep it; resetRun clears it from the kernel", async () => {
    const store = table.store();
    await store.createSession(newSession("s-count-store", { replicas: 1, status: "TERMINATING" }));
    const s0 = (await store.getSession("s-count-store"))!;
    await store.applyWrite({
      sessionId: "s-count-store",
      expected: { status: "TERMINATING", version: s0.session.version },
      nowMs: T0,
      kernels: [{ index: 0, status: "TERMINATED", exitCode: 0, outcome: "SUCCEEDED", logEventCount: 1234 }],
    });
    const s1 = (await store.getSession("s-count-store"))!;
    expect(s1.kernels[0]?.logEventCount).toBe(1234);
    await store.applyWrite({
      sessionId: "s-count-store",
      expected: { status: "TERMINATING", version: s1.session.version },
      nowMs: T0,
      run: runRecord(s1, { decision: "retry", reason: "again" }, T0),
      kernels: [{ index: 0, status: "PENDING", agentId: null, resetRun: true }],
    });
    const s2 = (await store.getSession("s-count-store"))!;
    expect(s2.kernels[0]).not.toHaveProperty("logEventCount");
    expect((await store.listRuns("s-count-store"))[0]?.kernels[0]?.logEventCount).toBe(1234);
  });
});
