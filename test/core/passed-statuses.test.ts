/**
 * A kernel report that carries the statuses its kernel passed through (Kernel Status Changed
 * `passed`): how an agent makes one of two queued reports (withPassed), what the schema accepts,
 * and that the control plane applies each passed status before the report's own (reportsOf).
 */
import { describe, expect, test } from "vitest";
import { KernelStatusChangedDetailSchema, withPassed } from "../../functions/core/agent-events.ts";
import { reportsEffect, reportsOf } from "../../functions/core/kernel-reports.ts";
import { newSession, T0 } from "../store-fixtures.ts";

const base = {
  agentId: "agent-a",
  incarnation: "inc-00000001",
  sessionId: "s-001",
  kernelIndex: 0,
  runIndex: 0,
  placement: 0,
} as const;
const report = (status: "PULLING" | "PREPARED" | "RUNNING" | "TERMINATED" | "ERROR", atMs: number) => ({
  ...base,
  status,
  atMs,
});
const SIGNATURE = "0".repeat(64);
const issues = (detail: object) => {
  const parsed = KernelStatusChangedDetailSchema.safeParse({ ...detail, signature: SIGNATURE });
  return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
};

describe("withPassed: two queued reports as one", () => {
  test("PULLING then PREPARED; RUNNING then TERMINATED, with its exit", () => {
    expect(withPassed(report("PULLING", T0), report("PREPARED", T0 + 13))).toEqual({
      ...report("PREPARED", T0 + 13),
      passed: [{ status: "PULLING", atMs: T0 }],
    });
    const exited = { ...report("TERMINATED", T0 + 17), exitCode: 0 };
    expect(withPassed(report("RUNNING", T0), exited)).toEqual({
      ...exited,
      passed: [{ status: "RUNNING", atMs: T0 }],
    });
  });

  test("not a report that says more than a status passed, nor another placement's, nor out of order", () => {
    // PREPARED is where a kernel waits for its start: never passed through.
    expect(withPassed(report("PREPARED", T0), report("RUNNING", T0 + 1))).toBeUndefined();
    expect(
      withPassed({ ...report("PULLING", T0), message: "slow" }, report("PREPARED", T0 + 1)),
    ).toBeUndefined();
    expect(
      withPassed(report("PULLING", T0), { ...report("PREPARED", T0 + 1), placement: 1 }),
    ).toBeUndefined();
    expect(
      withPassed(report("PULLING", T0), { ...report("PREPARED", T0 + 1), kernelIndex: 1 }),
    ).toBeUndefined();
    expect(withPassed(report("RUNNING", T0), report("PULLING", T0 + 1))).toBeUndefined();
    expect(withPassed(report("PULLING", T0 + 5), report("PREPARED", T0))).toBeUndefined();
  });

  test("what the schema accepts, and why it refuses the rest, by field", () => {
    expect(issues({ ...report("PREPARED", T0 + 1), passed: [{ status: "PULLING", atMs: T0 }] })).toEqual([]);
    expect(issues({ ...report("ERROR", T0 + 1), passed: [{ status: "RUNNING", atMs: T0 }] })).toEqual([]);
    expect(issues({ ...report("PREPARED", T0 + 1), passed: [{ status: "RUNNING", atMs: T0 }] })).toEqual([
      expect.stringMatching(/^passed: a kernel reported PREPARED cannot have passed through RUNNING/),
    ]);
    expect(issues({ ...report("PREPARED", T0), passed: [{ status: "PULLING", atMs: T0 + 1 }] })).toEqual([
      expect.stringMatching(/^passed: /),
    ]);
    expect(
      issues({
        ...report("TERMINATED", T0 + 2),
        passed: [
          { status: "RUNNING", atMs: T0 },
          { status: "PULLING", atMs: T0 + 1 },
        ],
      }),
    ).toEqual([expect.stringMatching(/^passed\.1: must come after RUNNING/)]);
    expect(
      issues({ ...report("PREPARED", T0 + 1), passed: [{ status: "PREPARED", atMs: T0 }] }),
    ).toHaveLength(1);
    expect(issues({ ...report("PREPARED", T0 + 1), passed: [] })).toHaveLength(1);
  });
});

describe("the control plane applies what a kernel passed through", () => {
  test("TERMINATED with RUNNING passed, on a CREATING kernel: started and ended in one write that claims CREATING", () => {
    const read = newSession("s-001", {
      status: "CREATING",
      replicas: 1,
      kernelStatus: "CREATING",
      taskToken: "tok",
    });
    const exited = {
      ...report("TERMINATED", T0 + 17),
      exitCode: 0,
      passed: [{ status: "RUNNING" as const, atMs: T0 }],
    };
    expect(reportsOf(exited).map((r) => [r.status, r.atMs])).toEqual([
      ["RUNNING", T0],
      ["TERMINATED", T0 + 17],
    ]);
    const effect = reportsEffect(read, reportsOf(exited), T0 + 20);
    expect(effect).toMatchObject({
      kind: "claim",
      write: {
        kernels: [{ index: 0, status: "TERMINATED", startedAtMs: T0, finishedAtMs: T0 + 17, exitCode: 0 }],
      },
    });
  });

  test("a passed status the kernel is already past changes nothing; the report's own still applies", () => {
    const read = newSession("s-001", {
      status: "PREPARING",
      replicas: 1,
      kernelStatus: "PULLING",
      taskToken: "tok",
    });
    const prepared = { ...report("PREPARED", T0 + 13), passed: [{ status: "PULLING" as const, atMs: T0 }] };
    expect(reportsEffect(read, reportsOf(prepared), T0 + 20)).toMatchObject({
      kind: "claim",
      write: { kernels: [{ index: 0, status: "PREPARED" }] },
    });
  });
});
