/**
 * The pure scheduling pass (functions/core/placement-pass.ts) that ScheduleNewSessions and
 * bench/placement.ts both run: placements draw capacity down only once taken, a session that a
 * higher-priority placement crowded out says so, and an agent read again replaces its copy.
 */
import { describe, expect, test } from "vitest";
import { PlacementPass } from "../../functions/core/placement-pass.ts";
import type { AgentFree } from "../../functions/core/placement.ts";
import { newSession } from "../store-fixtures.ts";

const agent = (id: string, cpu: number): AgentFree => ({
  id,
  free: { cpu, memoryMiB: cpu * 1024 },
  capacity: { cpu, memoryMiB: cpu * 1024 },
});
const oneKernel = (id: string, priority: number, cpu: number) =>
  newSession(id, { priority, replicas: 1, resources: { cpu, memoryMiB: 512 } });

describe("PlacementPass", () => {
  test("a placement takes capacity only once taken; the next session sees what is left", () => {
    const pass = new PlacementPass([agent("a", 4)]);
    const first = oneKernel("s1", 10, 3);
    const planned = pass.place(first);
    expect(planned).toMatchObject({ kind: "place", message: "placed on a" });
    // Not taken yet (the reservation has not held): the same capacity is still on offer.
    expect(pass.place(oneKernel("s2", 10, 3)).kind).toBe("place");
    if (planned.kind === "place") pass.taken(first, planned.kernels);
    expect(pass.free.get("a")?.free.cpu).toBe(1);
    expect(pass.place(oneKernel("s3", 10, 3))).toMatchObject({ kind: "wait", forPriority: false });
  });

  test("a lower-priority session crowded out by a higher-priority placement waits for priority", () => {
    const pass = new PlacementPass([agent("a", 4)]);
    const high = oneKernel("high", 50, 3);
    const planned = pass.place(high);
    if (planned.kind === "place") pass.taken(high, planned.kernels);
    const low = pass.place(oneKernel("low", 10, 3));
    expect(low).toMatchObject({ kind: "wait", forPriority: true });
    expect(low.message).toMatch(/^capacity: higher-priority sessions were placed first \(/);
    // One of the same priority is plain first come, first served.
    expect(pass.place(oneKernel("peer", 50, 3))).toMatchObject({ kind: "wait", forPriority: false });
  });

  test("kernels placed by an earlier run are success as they are, and take nothing", () => {
    const pass = new PlacementPass([agent("a", 1)]);
    const placedBefore = newSession("before", { replicas: 2 });
    const withAgents = {
      ...placedBefore,
      kernels: placedBefore.kernels.map((k) => ({ ...k, agentId: "a" })),
    };
    expect(pass.place(withAgents)).toEqual({ kind: "placed-before", message: "placed on a" });
    expect(pass.place(oneKernel("small", 10, 1)).kind).toBe("place");
    expect(pass.place(oneKernel("big", 10, 2)).kind).toBe("wait");
  });
});
