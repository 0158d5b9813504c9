/**
 * A lifecycle handler's pass selects its targets by Backend.AI's two declarations
 * (LifecycleHandler): `target_session_statuses`, and `target_kernel_statuses` — "Kernel statuses
 * to filter sessions. None: No kernel filtering (include sessions regardless of kernel status);
 * list[KernelStatus]: Include sessions that have kernels in these statuses. Note: This is simple
 * filtering, not condition checking." The table: "| TerminateSessions | TERMINATING |
 * non-terminal |". The step applies it before any handler runs.
 */
import { describe, expect, test } from "vitest";
import { step } from "../../functions/core/coordinator/step.ts";
import { LIFECYCLE_HANDLERS, selectsTarget } from "../../functions/core/handlers.ts";
import type { KernelStatus, SessionStatus } from "../../functions/core/status.ts";
import type { SessionWithKernels } from "../../functions/core/model.ts";
import { kernel, NOW_MS, session } from "./fixtures.ts";

function withKernels(id: string, status: SessionStatus, kernels: KernelStatus[]): SessionWithKernels {
  return { session: session(id, status), kernels: kernels.map((k, i) => kernel(id, i, k)) };
}

describe("target kernel statuses: include sessions that have kernels in these statuses", () => {
  test("TerminateSessions selects a TERMINATING session only while a kernel is non-terminal", () => {
    const spec = LIFECYCLE_HANDLERS.TerminateSessions;
    expect(selectsTarget(spec, withKernels("a", "TERMINATING", ["RUNNING", "TERMINATED"]))).toBe(true);
    expect(selectsTarget(spec, withKernels("b", "TERMINATING", ["TERMINATING"]))).toBe(true);
    // Every kernel ended: nothing left to stop. PromoteToTerminated (NOT_ANY non-terminal) moves it on.
    expect(selectsTarget(spec, withKernels("c", "TERMINATING", ["TERMINATED", "CANCELLED"]))).toBe(false);
  });

  test("the target session statuses come first: a kernel in a target status does not make another stage a target", () => {
    expect(
      selectsTarget(LIFECYCLE_HANDLERS.TerminateSessions, withKernels("d", "RUNNING", ["RUNNING"])),
    ).toBe(false);
    expect(
      selectsTarget(LIFECYCLE_HANDLERS.ScheduleNewSessions, withKernels("e", "SCHEDULED", ["PENDING"])),
    ).toBe(false);
  });

  test("ScheduleNewSessions (PENDING | PENDING) and StartSessions (PREPARED | PREPARED), as the table gives them", () => {
    expect(
      selectsTarget(LIFECYCLE_HANDLERS.ScheduleNewSessions, withKernels("f", "PENDING", ["PENDING"])),
    ).toBe(true);
    expect(selectsTarget(LIFECYCLE_HANDLERS.StartSessions, withKernels("g", "PREPARED", ["PREPARED"]))).toBe(
      true,
    );
    expect(selectsTarget(LIFECYCLE_HANDLERS.StartSessions, withKernels("h", "PREPARED", ["CREATING"]))).toBe(
      false,
    );
  });

  test("PrepareSessions: SCHEDULED kernels in SCHEDULED, and in PREPARING its kernels still preparing (Cairn's judging of a failed preparation)", () => {
    const spec = LIFECYCLE_HANDLERS.PrepareSessions;
    expect(selectsTarget(spec, withKernels("i", "SCHEDULED", ["SCHEDULED"]))).toBe(true);
    expect(selectsTarget(spec, withKernels("j", "PREPARING", ["PREPARING", "PREPARED"]))).toBe(true);
    // Every kernel past preparing (pulling its image or prepared): PromoteToPrepared's, not this handler's.
    expect(selectsTarget(spec, withKernels("k", "PREPARING", ["PULLING", "PREPARED"]))).toBe(false);
  });

  test("a pass's targets are filtered before its handler runs: the unselected neither reach it nor end", () => {
    const over = withKernels("over", "TERMINATING", ["TERMINATED"]);
    const live = withKernels("live", "TERMINATING", ["RUNNING"]);
    const { ending, rest } = step({
      kind: "pass-targets",
      handler: "TerminateSessions",
      targets: [over, live],
      nowMs: NOW_MS,
    });
    expect(ending).toEqual([]);
    expect(rest.map((t) => t.session.id)).toEqual(["live"]);
  });
});
