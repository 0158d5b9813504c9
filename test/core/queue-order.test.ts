/**
 * Queue order. Armada: "Queue ordering: Requeued jobs are scheduled before new jobs at the same
 * priority." Priority still comes first; among requeued sessions, and among new ones, the oldest
 * submission goes first.
 */
import { describe, expect, test } from "vitest";
import { stageEntryWrite } from "../../functions/core/effects.ts";
import { compareQueueOrder, isRequeued } from "../../functions/core/queue-order.ts";
import { sessionAfterWrite } from "../../functions/core/session-after-write.ts";
import { NOW_MS, session } from "./fixtures.ts";

const queued = (id: string, priority: number, createdAtMs: number, requeuedAtMs?: number) =>
  session(id, "PENDING", {
    spec: { ...session(id, "PENDING").spec, priority },
    createdAtMs,
    ...(requeuedAtMs !== undefined ? { requeuedAtMs } : {}),
  });

describe("requeued before new at the same priority", () => {
  test("priority first, then requeued, then oldest, then id", () => {
    const sessions = [
      queued("new-old", 10, NOW_MS),
      queued("new-young", 10, NOW_MS + 1),
      queued("requeued-young", 10, NOW_MS + 5, NOW_MS + 50),
      queued("requeued-old", 10, NOW_MS + 2, NOW_MS + 90),
      queued("urgent-new", 20, NOW_MS + 9),
      queued("low-requeued", 0, NOW_MS, NOW_MS + 10),
      queued("new-old-b", 10, NOW_MS),
    ];
    expect([...sessions].sort(compareQueueOrder).map((s) => s.id)).toEqual([
      "urgent-new",
      "requeued-old",
      "requeued-young",
      "new-old",
      "new-old-b",
      "new-young",
      "low-requeued",
    ]);
  });

  test("a return to PENDING marks the session requeued once; submission is not a requeue", () => {
    const scheduled = session("s", "SCHEDULED");
    const back = stageEntryWrite({
      session: scheduled,
      kernels: [],
      transition: { from: "SCHEDULED", to: "PENDING", result: "GIVE_UP", handler: "PrepareSessions" },
      taskToken: "t",
      nowMs: NOW_MS,
    });
    expect(back.requeue).toEqual({
      atMs: NOW_MS,
      priority: scheduled.spec.priority,
      createdAtMs: scheduled.createdAtMs,
    });
    const after = sessionAfterWrite({ session: scheduled, kernels: [] }, back).session;
    expect(isRequeued(after)).toBe(true);
    expect(after.requeuedAtMs).toBe(NOW_MS);
    // Placed and back again: the mark (and so its place) stays.
    const again = stageEntryWrite({
      session: { ...after, status: "SCHEDULED" },
      kernels: [],
      transition: { from: "SCHEDULED", to: "PENDING", result: "GIVE_UP", handler: "PrepareSessions" },
      taskToken: "t2",
      nowMs: NOW_MS + 1,
    });
    expect(again.requeue).toBeUndefined();
    // Going forward is no requeue, and neither is a new session.
    const forward = stageEntryWrite({
      session: session("n", "PENDING"),
      kernels: [],
      transition: { from: "PENDING", to: "SCHEDULED", result: "SUCCESS", handler: "ScheduleNewSessions" },
      taskToken: "t3",
      nowMs: NOW_MS,
    });
    expect(forward.requeue).toBeUndefined();
    expect(isRequeued(session("n", "PENDING"))).toBe(false);
  });
});
