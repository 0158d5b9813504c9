/**
 * PULLING reported by an agent: Backend.AI's kernel status between PREPARING and
 * PREPARED, Iris's BUILDING ("worker sets this during bundle download and dependency
 * sync"). Informational: recorded on the kernel, never moving it (or its session) backwards, and
 * a late one is ignored like any report that would (kernel-reports.ts), not refused.
 */
import { describe, expect, test } from "vitest";
import { stepReports, type SessionReport } from "../../functions/core/coordinator/inbound.ts";
import { parseInboundEvent } from "../../functions/core/events.ts";
import { taskView } from "../../functions/core/jobs.ts";
import { kernelReportPatch } from "../../functions/core/kernel-reports.ts";
import type { Kernel, SessionWithKernels } from "../../functions/core/model.ts";
import { promotionDue } from "../../functions/core/promotion.ts";
import { kernelsAfter } from "../../functions/core/session-after-write.ts";
import {
  KernelStatus,
  SessionStatus,
  TaskState,
  type KernelStatus as Status,
} from "../../functions/core/status.ts";
import { taskStateProto } from "../../functions/core/task-state-proto.ts";
import { kernel, NOW_MS, session } from "./fixtures.ts";

function report(status: string, over: Record<string, unknown> = {}): SessionReport {
  const parsed = parseInboundEvent({
    version: "0",
    id: `ev-${status}`,
    source: "cairn.agent",
    "detail-type": "Kernel Status Changed",
    account: "123456789012",
    time: "2026-01-01T00:00:00Z",
    region: "local",
    resources: [],
    detail: {
      agentId: "agent-1",
      incarnation: "incarnation-1",
      signature: "ab".repeat(32),
      sessionId: "ses-1",
      kernelIndex: 0,
      runIndex: 0,
      status,
      atMs: NOW_MS,
      ...over,
    },
  });
  if (!parsed.ok) throw parsed.error;
  if (parsed.event.detailType !== "Kernel Status Changed") throw new Error("not a kernel report");
  return { event: parsed.event };
}

function preparing(kernelStatus: Status, over: Partial<Kernel> = {}): SessionWithKernels {
  return {
    session: session("ses-1", SessionStatus.PREPARING),
    kernels: [kernel("ses-1", 0, kernelStatus, { agentId: "agent-1", version: 3, ...over })],
  };
}

const apply = (read: SessionWithKernels, ...reports: SessionReport[]) =>
  stepReports({ kind: "reports", sessionId: "ses-1", session: read, reports, nowMs: NOW_MS });

describe("PULLING reports", () => {
  test("given a PREPARING kernel, a PULLING report is accepted and recorded on the kernel; the stage is not promoted", () => {
    const read = preparing(KernelStatus.PREPARING);
    const { outcomes, effect } = apply(read, report("PULLING"));
    expect(outcomes).toEqual([undefined]);
    expect(effect).toEqual({
      kind: "patch",
      patches: [{ index: 0, status: KernelStatus.PULLING, expectedVersion: 3 }],
    });
    // PromoteToPrepared waits: Backend.AI lists PULLING among the statuses that hold it back.
    const after = {
      session: read.session,
      kernels: kernelsAfter(read.kernels, [{ index: 0, status: "PULLING" }], NOW_MS),
    };
    expect(after.kernels[0]?.status).toBe(KernelStatus.PULLING);
    expect(promotionDue(after)).toBe(false);
  });

  test("a kernel still SCHEDULED (the agent answered before PREPARING was written) moves to PULLING", () => {
    expect(
      kernelReportPatch(
        preparing(KernelStatus.SCHEDULED).kernels[0]!,
        { status: "PULLING", atMs: NOW_MS },
        { cancelled: false },
      ),
    ).toEqual({
      index: 0,
      status: KernelStatus.PULLING,
    });
  });

  test("PULLING then PREPARED in one batch: one write, the kernel PREPARED and the stage claimed", () => {
    const { outcomes, effect } = apply(
      preparing(KernelStatus.PREPARING),
      report("PULLING"),
      report("PREPARED"),
    );
    expect(outcomes).toEqual([undefined, undefined]);
    expect(effect).toMatchObject({
      kind: "claim",
      token: "token-old",
      write: { kernels: [{ index: 0, status: KernelStatus.PREPARED, expectedVersion: 3 }] },
    });
  });

  test("from PULLING, PREPARED and ERROR apply as from PREPARING", () => {
    const pulling = preparing(KernelStatus.PULLING).kernels[0]!;
    expect(kernelReportPatch(pulling, { status: "PREPARED", atMs: NOW_MS }, { cancelled: false })).toEqual({
      index: 0,
      status: KernelStatus.PREPARED,
      error: null,
    });
    expect(
      kernelReportPatch(
        pulling,
        { status: "ERROR", message: "disk full", atMs: NOW_MS },
        { cancelled: false },
      ),
    ).toEqual({ index: 0, status: KernelStatus.PREPARING, error: "disk full" });
  });

  test.each([
    KernelStatus.PULLING,
    KernelStatus.PREPARED,
    KernelStatus.CREATING,
    KernelStatus.RUNNING,
    KernelStatus.TERMINATING,
    KernelStatus.TERMINATED,
  ])(
    "a late PULLING on a %s kernel is ignored: accepted, nothing written, no status regression",
    (status) => {
      const { outcomes, effect } = apply(preparing(status), report("PULLING"));
      expect(outcomes).toEqual([undefined]);
      expect(effect).toEqual({ kind: "none" });
    },
  );

  test("PREPARED before PULLING in one batch (out of order): the PULLING changes nothing", () => {
    const { effect } = apply(preparing(KernelStatus.PREPARING), report("PREPARED"), report("PULLING"));
    expect(effect).toMatchObject({ write: { kernels: [{ index: 0, status: KernelStatus.PREPARED }] } });
  });

  test("a PULLING landing on a preparation error not yet judged does not hide it from PrepareSessions", () => {
    const failed = preparing(KernelStatus.PREPARING, { error: "cannot create work directory" });
    expect(apply(failed, report("PULLING")).effect).toEqual({ kind: "none" });
  });

  test("a PULLING report of another placement is refused as any report is", () => {
    const { outcomes } = apply(preparing(KernelStatus.PREPARING), report("PULLING", { placement: 1 }));
    expect(outcomes[0]?.reason).toBe(
      "detail.placement: placement 1 of run 0 of session ses-1 has ended (the session is on placement 0)",
    );
  });

  test("the Iris task view shows a PULLING kernel as BUILDING (proto 2)", () => {
    const read = preparing(KernelStatus.PULLING);
    const view = taskView("ses-1", 0, read.session, read.kernels[0]!);
    expect(view.state).toBe(TaskState.BUILDING);
    expect(taskStateProto(view.state)).toBe(2);
  });
});
