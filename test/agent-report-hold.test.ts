/**
 * A kernel's PULLING waits for its successor (agent/report-hold.ts), so that the two reach the
 * control plane as one event. The hold itself on simulated time; then the agent host with a real
 * LocalAgent preparing a real run, its SQS and EventBridge faked to record what it sends, and its
 * work directory made slow to create (a busy disk), which the real one cannot be made on demand.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, test, vi } from "vitest";
import { LocalAgent } from "../agent/local-agent.ts";
import { ReportHold } from "../agent/report-hold.ts";
import { DetailType, type EventDetailInput } from "../functions/core/events.ts";
import { KernelStatusChangedDetailSchema, withPassed } from "../functions/core/agent-events.ts";
import type { PutEventsRequestEntry } from "@aws-sdk/client-eventbridge";
import { fakeHost } from "./support/agent-host.ts";
import { until } from "./support/until.ts";

type Detail = EventDetailInput<"Kernel Status Changed">;

const detail = (status: Detail["status"], atMs: number, over: Partial<Detail> = {}): Detail => ({
  agentId: "a1",
  incarnation: "i1",
  sessionId: "s1",
  kernelIndex: 0,
  runIndex: 0,
  status,
  atMs,
  signature: "",
  ...over,
});

describe("ReportHold", () => {
  afterEach(() => vi.useRealTimers());

  /** A hold of 250 ms whose sends are recorded. */
  function recorded() {
    const sent: Detail[] = [];
    const hold = new ReportHold<Detail>(250, withPassed);
    const send = (d: Detail) => {
      sent.push(d);
      return Promise.resolve();
    };
    return { hold, sent, send };
  }

  test("a held report goes with its successor, as a status passed through: one send", async () => {
    vi.useFakeTimers();
    const { hold, sent, send } = recorded();
    const pulling = hold.report("s1/0", detail("PULLING", 1_000), send, true);
    await vi.advanceTimersByTimeAsync(100);
    expect(sent).toEqual([]);
    const prepared = hold.report("s1/0", detail("PREPARED", 1_040), send, false);
    await Promise.all([pulling, prepared]);
    expect(sent).toEqual([{ ...detail("PREPARED", 1_040), passed: [{ status: "PULLING", atMs: 1_000 }] }]);
    expect(hold.size).toBe(0);
    // Its timer was cleared: nothing more is sent.
    await vi.advanceTimersByTimeAsync(1_000);
    expect(sent).toHaveLength(1);
  });

  test("a held report without a successor goes alone when the hold runs out, with the time it began", async () => {
    vi.useFakeTimers();
    const { hold, sent, send } = recorded();
    const pulling = hold.report("s1/0", detail("PULLING", 1_000), send, true);
    await vi.advanceTimersByTimeAsync(249);
    expect(sent).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    await pulling;
    expect(sent).toEqual([detail("PULLING", 1_000)]);
    // Its successor, later, goes alone.
    await hold.report("s1/0", detail("PREPARED", 5_000), send, false);
    expect(sent.map((d) => [d.status, d.passed])).toEqual([
      ["PULLING", undefined],
      ["PREPARED", undefined],
    ]);
  });

  test("a successor that cannot carry it (another incarnation) is sent after it, in order", async () => {
    vi.useFakeTimers();
    const { hold, sent, send } = recorded();
    const pulling = hold.report("s1/0", detail("PULLING", 1_000), send, true);
    await hold.report("s1/0", detail("PREPARED", 1_010, { incarnation: "i2" }), send, false);
    await pulling;
    expect(sent.map((d) => [d.status, d.incarnation, d.passed])).toEqual([
      ["PULLING", "i1", undefined],
      ["PREPARED", "i2", undefined],
    ]);
  });

  test("reports of other runs neither release nor carry it; releaseAll sends it at once", async () => {
    vi.useFakeTimers();
    const { hold, sent, send } = recorded();
    const pulling = hold.report("s1/0", detail("PULLING", 1_000), send, true);
    await hold.report("s2/0", detail("PREPARED", 1_010, { sessionId: "s2" }), send, false);
    expect(sent.map((d) => d.sessionId)).toEqual(["s2"]);
    hold.releaseAll();
    await pulling;
    expect(sent.map((d) => [d.sessionId, d.status])).toEqual([
      ["s2", "PREPARED"],
      ["s1", "PULLING"],
    ]);
    expect(hold.size).toBe(0);
  });

  test("not asked to hold, or a hold of 0, sends at once; a failed send fails the held report", async () => {
    const sent: Detail[] = [];
    const send = (d: Detail) => {
      sent.push(d);
      return Promise.resolve();
    };
    await new ReportHold<Detail>(250, withPassed).report("s1/0", detail("PULLING", 1), send, false);
    await new ReportHold<Detail>(0, withPassed).report("s1/0", detail("PULLING", 2), send, true);
    expect(sent.map((d) => d.atMs)).toEqual([1, 2]);

    const failing = new ReportHold<Detail>(250, withPassed);
    const held = failing.report(
      "s1/0",
      detail("PULLING", 3),
      () => Promise.reject(new Error("bus down")),
      true,
    );
    failing.releaseAll();
    await expect(held).rejects.toThrow("bus down");
  });
});

describe("the agent host holds a run's PULLING for its PREPARED", () => {
  const workRoot = mkdtempSync(join(tmpdir(), "cairn-report-hold-"));
  afterAll(() => rmSync(workRoot, { recursive: true, force: true }));

  /** Makes creating a run's work directory take `ms` longer (a busy disk); restore it after. */
  function slowWorkDirs(ms: number) {
    const makeWorkDir = Reflect.get(LocalAgent.prototype, "makeWorkDir") as (dir: string) => Promise<void>;
    return vi
      .spyOn(
        LocalAgent.prototype as unknown as { makeWorkDir: (dir: string) => Promise<void> },
        "makeWorkDir",
      )
      .mockImplementation(async function (this: LocalAgent, dir: string) {
        await new Promise((r) => setTimeout(r, ms));
        return makeWorkDir.call(this, dir);
      });
  }

  const prepare = (sessionId: string) => ({
    action: "prepare" as const,
    sessionId,
    kernelIndex: 0,
    numKernels: 1,
    runIndex: 0,
    command: ["/bin/sh", "-c", "true"],
    env: {},
    cpu: 1,
    memoryMiB: 256,
  });

  const reportsIn = (put: readonly PutEventsRequestEntry[]) =>
    put
      .filter((e) => e.DetailType === DetailType.KernelStatusChanged)
      .map((e) => KernelStatusChangedDetailSchema.parse(JSON.parse(e.Detail!)));

  test("a preparation slower than the outbox's linger sends one Kernel Status Changed: PREPARED, having passed PULLING", async () => {
    // Slower than the outbox's linger (25 ms): without the hold, PULLING leaves on its own.
    const slow = slowWorkDirs(200);
    const { host, put, start, command } = fakeHost("host-h", workRoot, {
      // Far longer than any preparation: the PREPARED always comes within it.
      pullingHoldMs: 60_000,
    });
    try {
      await start();
      command(prepare("hold-s1"));
      const reports = () => reportsIn(put);
      const report = await until("the preparation reported", () => reports()[0], 10_000);
      expect(report.status).toBe("PREPARED");
      expect(report.passed?.map((p) => p.status)).toEqual(["PULLING"]);
      expect(report.passed?.[0]?.atMs).toBeLessThanOrEqual(report.atMs);
      // Nothing else about the run follows: the PULLING went with it.
      await new Promise((r) => setTimeout(r, 100));
      expect(reports()).toHaveLength(1);
    } finally {
      await host.drain();
      slow.mockRestore();
    }
  });

  test("a drain sends a held PULLING on its own at once, without waiting for its successor", async () => {
    const slow = slowWorkDirs(2_000);
    const { host, put, start, command } = fakeHost("host-d", workRoot, { pullingHoldMs: 600_000 });
    try {
      await start();
      command(prepare("hold-d1"));
      // PULLING is reported (and held) before the work directory is made.
      await until("the preparation began", () => (slow.mock.calls.length > 0 ? true : undefined), 10_000);
      expect(reportsIn(put)).toEqual([]);
      await host.drain();
      // Sent by the drain on its own, not carried later by the preparation's PREPARED.
      expect(reportsIn(put)[0]).toMatchObject({ status: "PULLING", sessionId: "hold-d1" });
      expect(reportsIn(put)[0]?.passed).toBeUndefined();
      // The preparation ends on its own later: let it, before its work root is removed.
      await slow.mock.results[0]?.value;
    } finally {
      await host.drain();
      slow.mockRestore();
    }
  }, 30_000);
});
