/**
 * HPC Pack's states as a view, case by case for tasks and jobs:
 * every state a stored session can be in, the seed's "a running task that is cancelled is
 * Failed", and a task retried after a failed start shown Queued, then Failed once retries are
 * used up.
 */
import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import {
  HPC_JOB_TABLE,
  HPC_STATES,
  HPC_TASK_TABLE,
  hpcJobState,
  hpcTaskState,
  type HpcState,
} from "../../functions/core/hpc-view.ts";
import type { Session } from "../../functions/core/model.ts";
import type { SessionStatus } from "../../functions/core/status.ts";
import { kernel, NOW_MS, session } from "./fixtures.ts";

test("the seed's eleven states, in its order", () => {
  expect(HPC_STATES).toEqual([
    "Configuring",
    "Submitted",
    "Validating",
    "Queued",
    "Dispatching",
    "Running",
    "Finishing",
    "Finished",
    "Failed",
    "Canceling",
    "Canceled",
  ]);
});

const RAN = { startedAtMs: NOW_MS - 5_000 };
const DONE = { ...RAN, finishedAtMs: NOW_MS - 1_000 };
const CANCEL = { cancelRequestedAtMs: NOW_MS - 2_000 };

describe("a task's HPC state", () => {
  test.each([
    // [session status, session fields, kernel status, kernel fields, HPC state]
    ["PENDING", {}, "PENDING", {}, "Queued"],
    ["PENDING", { runIndex: 1, retry: { pendingReturns: 2 } }, "PENDING", {}, "Queued"],
    ["SCHEDULED", {}, "SCHEDULED", {}, "Dispatching"],
    ["PREPARING", {}, "PREPARING", {}, "Dispatching"],
    ["PREPARED", {}, "PREPARED", {}, "Dispatching"],
    ["CREATING", {}, "CREATING", {}, "Dispatching"],
    ["RUNNING", {}, "RUNNING", RAN, "Running"],
    ["RUNNING", {}, "TERMINATED", { ...DONE, exitCode: 0 }, "Finishing"],
    ["TERMINATING", {}, "TERMINATED", { ...DONE, exitCode: 0 }, "Finishing"],
    ["TERMINATED", {}, "TERMINATED", { ...DONE, exitCode: 0 }, "Finished"],
    ["TERMINATED", {}, "TERMINATED", { ...DONE, exitCode: 2 }, "Failed"],
    ["TERMINATED", {}, "ERROR", { error: "exec: no such file" }, "Failed"],
    ["PENDING", CANCEL, "PENDING", {}, "Canceling"],
    ["TERMINATING", CANCEL, "RUNNING", RAN, "Canceling"],
    ["CANCELLED", CANCEL, "CANCELLED", {}, "Canceled"],
    ["TERMINATED", CANCEL, "TERMINATED", { ...DONE, exitCode: 143 }, "Failed"],
    ["TERMINATED", CANCEL, "CANCELLED", {}, "Canceled"],
  ] as const)("%s %o, kernel %s %o: %s", (status, over, kernelStatus, kernelOver, expected) => {
    const s = session("s1", status, over as Partial<Session>);
    const k = kernel("s1", 0, kernelStatus, kernelOver);
    expect(hpcTaskState(s, k)).toBe(expected);
  });

  test("every row of the task table is someone's state", () => {
    const reached = new Set<HpcState>();
    for (const status of ["PENDING", "SCHEDULED", "RUNNING", "TERMINATING", "TERMINATED", "CANCELLED"])
      for (const over of [{}, CANCEL])
        for (const k of [
          kernel("s1", 0, "RUNNING", {}),
          kernel("s1", 0, "TERMINATED", { ...DONE, exitCode: 0 }),
        ])
          reached.add(hpcTaskState(session("s1", status as SessionStatus, over), k));
    expect([...reached].sort()).toEqual([...new Set(HPC_TASK_TABLE.map((r) => r.state))].sort());
  });
});

describe("a job's HPC state", () => {
  test.each([
    // [task states, final job state, cancel asked for, HPC state]
    [["Queued", "Queued"], undefined, false, "Queued"],
    [["Queued", "Dispatching"], undefined, false, "Running"],
    [["Finished", "Running"], undefined, false, "Running"],
    [["Finished", "Finishing"], undefined, false, "Running"],
    [["Finished", "Failed"], undefined, false, "Finishing"],
    [["Running", "Running"], undefined, true, "Canceling"],
    [["Canceling", "Running"], undefined, false, "Canceling"],
    [["Finished", "Finished"], "SUCCEEDED", false, "Finished"],
    [["Failed", "Finished"], "FAILED", false, "Failed"],
    [["Failed", "Queued"], "WORKER_FAILED", false, "Failed"],
    [["Queued"], "UNSCHEDULABLE", false, "Failed"],
    [["Canceled", "Failed"], "KILLED", true, "Canceled"],
  ] as const)("tasks %o, final %s, cancel %s: %s", (tasks, final, cancelRequested, expected) => {
    expect(hpcJobState({ tasks, ...(final !== undefined ? { final: final } : {}), cancelRequested })).toBe(
      expected,
    );
  });

  test("a draft is Configuring, whatever else is said of it", () => {
    expect(hpcJobState({ draft: true, tasks: [], cancelRequested: false })).toBe("Configuring");
    expect(hpcJobState({ draft: false, tasks: [], cancelRequested: false })).toBe("Queued");
  });

  test("every row of the job table names a state and why", () => {
    for (const row of HPC_JOB_TABLE) expect(row.when.length).toBeGreaterThan(10);
  });
});

test("docs/hpc-view.md shows both tables as the code has them, row for row", () => {
  // Prettier pads the cells; compare the cells, not the spacing.
  const rows = readFileSync("docs/hpc-view.md", "utf8")
    .split("\n")
    .filter((line) => line.startsWith("| "))
    .map((line) =>
      line
        .split("|")
        .slice(1, -1)
        .map((cell) => cell.trim())
        .join(" | "),
    );
  for (const table of [HPC_TASK_TABLE, HPC_JOB_TABLE]) {
    const expected = table.map((r) => `${r.state} | ${r.when}`);
    const start = rows.indexOf(expected[0]!);
    expect(rows.slice(start, start + expected.length)).toEqual(expected);
  }
});
