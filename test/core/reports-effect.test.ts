/**
 * What a session's reports of one batch write (core/kernel-reports.ts reportsEffect): nothing,
 * the kernels alone, or the kernels with the claim of the stage they complete.
 */
import { describe, expect, test } from "vitest";
import { reportsEffect } from "../../functions/core/kernel-reports.ts";
import { sessionAfterWrite } from "../../functions/core/session-after-write.ts";
import { newSession, T0 } from "../store-fixtures.ts";

const NOW = T0 + 5_000;
const running = (kernelIndex: number) => ({ kernelIndex, status: "RUNNING" as const, atMs: NOW });

describe("reportsEffect", () => {
  test("the last kernel of a gang to run completes CREATING: kernels and claim in one write", () => {
    const read = newSession("g", {
      status: "CREATING",
      replicas: 2,
      kernelStatus: "CREATING",
      taskToken: "tok",
    });
    const first = {
      ...read,
      kernels: read.kernels.map((k) => (k.index === 0 ? { ...k, status: "RUNNING" as const } : k)),
    };
    const effect = reportsEffect(first, [running(1)], NOW);
    expect(effect.kind).toBe("claim");
    if (effect.kind !== "claim") return;
    expect(effect.token).toBe("tok");
    expect(effect.write).toMatchObject({
      expected: { status: "CREATING", version: 0 },
      claimStage: true,
      kernels: [{ index: 1, status: "RUNNING", expectedVersion: 0 }],
      kernelGuards: [{ index: 0, version: 0 }],
    });
    // The writer knows the session exactly: no token in the table, both kernels running.
    const after = sessionAfterWrite(first, effect.write);
    expect(after.session.stage.taskToken).toBeUndefined();
    expect(after.kernels.map((k) => k.status)).toEqual(["RUNNING", "RUNNING"]);
  });

  test("a report that completes nothing is the kernel alone", () => {
    const read = newSession("g", {
      status: "CREATING",
      replicas: 2,
      kernelStatus: "CREATING",
      taskToken: "tok",
    });
    expect(reportsEffect(read, [running(0)], NOW)).toMatchObject({
      kind: "patch",
      patches: [{ index: 0, status: "RUNNING", expectedVersion: 0 }],
    });
  });

  test("a stage already claimed (no token) is never claimed again: the kernels alone", () => {
    const read = newSession("s", {
      status: "CREATING",
      replicas: 1,
      kernelStatus: "CREATING",
      taskToken: null,
    });
    expect(reportsEffect(read, [running(0)], NOW).kind).toBe("patch");
  });

  test("a report that changes nothing writes nothing", () => {
    const read = newSession("s", { status: "RUNNING", replicas: 1, kernelStatus: "RUNNING" });
    expect(reportsEffect(read, [running(0)], NOW)).toEqual({ kind: "none" });
  });
});
