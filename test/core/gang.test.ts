/**
 * Co-scheduled gangs: a task exiting 0 does not end its gang; one failing does, and the
 * siblings stopped for it end WORKER_FAILED (Iris's coscheduled cascade), unlike a cancel
 * (KILLED), the run-time limit (KILLED, DeadlineExceeded: Iris's per-task timeout) or a
 * preemption (PREEMPTED).
 */
import { describe, expect, test } from "vitest";
import { PROMOTION_HANDLERS } from "../../functions/core/handlers.ts";
import { kernelReportPatch, type KernelReport } from "../../functions/core/kernel-reports.ts";
import type { Kernel } from "../../functions/core/model.ts";
import { sessionsToPromote } from "../../functions/core/promotion.ts";
import { runOutcome } from "../../functions/core/runs.ts";
import type { AttemptOutcome, KernelStatus } from "../../functions/core/status.ts";
import { kernel, NOW_MS, session } from "./fixtures.ts";

const ended = (index: number, outcome: AttemptOutcome, finishedAtMs = NOW_MS): Kernel =>
  kernel("g", index, outcome === "KILLED" ? "CANCELLED" : "TERMINATED", { outcome, finishedAtMs });
const alive = (index: number, status: KernelStatus = "RUNNING"): Kernel => kernel("g", index, status);

describe("DetectTermination on a gang", () => {
  const detect = (kernels: Kernel[]) =>
    sessionsToPromote(PROMOTION_HANDLERS.DetectTermination, [{ session: session("g", "RUNNING"), kernels }]);

  test.each<[string, Kernel[], boolean]>([
    ["every task running: nothing to detect", [alive(0), alive(1), alive(2)], false],
    [
      "one task exited 0, the others run on: the gang keeps running",
      [ended(0, "SUCCEEDED"), alive(1), alive(2)],
      false,
    ],
    ["one task failed: the gang is torn down", [ended(0, "FAILED"), alive(1), alive(2)], true],
    [
      "a task succeeded and another failed: torn down",
      [ended(0, "SUCCEEDED"), ended(1, "FAILED"), alive(2)],
      true,
    ],
    [
      "a task ERROR (could not start) counts as a failure",
      [kernel("g", 0, "ERROR", { outcome: "FAILED" }), alive(1)],
      true,
    ],
    [
      "every task exited 0: the gang ends",
      [ended(0, "SUCCEEDED"), ended(1, "SUCCEEDED"), ended(2, "SUCCEEDED")],
      true,
    ],
    ["a single kernel that exited 0 ends its session", [ended(0, "SUCCEEDED")], true],
  ])("%s", (_name, kernels, promoted) => {
    expect(detect(kernels)).toEqual(promoted ? ["g"] : []);
  });
});

describe("how a stopped kernel's end is recorded", () => {
  const report = (over: Partial<KernelReport> = {}): KernelReport => ({
    status: "TERMINATED",
    exitCode: 143,
    atMs: NOW_MS,
    ...over,
  });
  test.each<[string, KernelStatus, Partial<KernelReport>, boolean, AttemptOutcome]>([
    ["stopped for a sibling's failure → WORKER_FAILED", "TERMINATING", {}, false, "WORKER_FAILED"],
    ["stopped by a cancel → KILLED", "TERMINATING", {}, true, "KILLED"],
    // Iris: KILLED is "Set by the controller: … per-task timeout" and "never retried".
    [
      "stopped at the run-time limit → KILLED (Iris's per-task timeout)",
      "TERMINATING",
      { condition: "DeadlineExceeded" },
      false,
      "KILLED",
    ],
    [
      "stopped at the run-time limit, exiting 0 on the SIGTERM → KILLED all the same",
      "TERMINATING",
      { condition: "DeadlineExceeded", exitCode: 0 },
      false,
      "KILLED",
    ],
    ["stopped by preemption → PREEMPTED", "TERMINATING", { condition: "Preempted" }, false, "PREEMPTED"],
    ["a stopped task that still exited 0 → SUCCEEDED", "TERMINATING", { exitCode: 0 }, false, "SUCCEEDED"],
    ["exiting non-zero on its own → FAILED", "RUNNING", { exitCode: 1 }, false, "FAILED"],
    ["OOM-killed on its own → FAILED", "RUNNING", { exitCode: 137, condition: "OOMKilled" }, false, "FAILED"],
  ])("%s", (_name, status, over, cancelled, outcome) => {
    expect(kernelReportPatch(kernel("g", 1, status), report(over), { cancelled })?.outcome).toBe(outcome);
  });
});

test("the gang's run outcome is the task that failed first, not its stopped siblings", () => {
  const kernels = [
    ended(0, "WORKER_FAILED", NOW_MS + 300),
    ended(1, "FAILED", NOW_MS),
    ended(2, "WORKER_FAILED", NOW_MS + 200),
    ended(3, "WORKER_FAILED", NOW_MS + 250),
  ];
  expect(runOutcome(kernels)).toBe("FAILED");
});
