/**
 * placeHistory: identical consecutive outcomes merge into one record with a count; anything
 * different appends the next seq.
 */
import { describe, expect, test } from "vitest";
import { placeHistory, validationFailedRecord } from "../../functions/core/history.ts";
import type { HistoryDraft } from "../../functions/core/model.ts";
import { historyRecord, NOW_MS } from "./fixtures.ts";

const skip: HistoryDraft = {
  sessionId: "s1",
  handler: "ScheduleNewSessions",
  result: "SKIPPED",
  fromStatus: "PENDING",
  message: "queue full",
  atMs: NOW_MS,
};

describe("placeHistory", () => {
  test("the first record of a session gets seq 0 and count 1", () => {
    expect(placeHistory(undefined, [skip])).toEqual([
      {
        sessionId: "s1",
        handler: "ScheduleNewSessions",
        result: "SKIPPED",
        fromStatus: "PENDING",
        message: "queue full",
        seq: 0,
        count: 1,
        firstAtMs: NOW_MS,
        lastAtMs: NOW_MS,
      },
    ]);
  });

  test("no drafts, nothing to write", () => {
    expect(placeHistory(historyRecord(), [])).toEqual([]);
  });

  test("an outcome identical to the latest record merges: same seq, count + 1, lastAtMs moves", () => {
    const last = historyRecord({ seq: 4, count: 3, firstAtMs: NOW_MS - 60_000, lastAtMs: NOW_MS - 30_000 });
    expect(placeHistory(last, [skip])).toEqual([
      { ...last, count: 4, firstAtMs: NOW_MS - 60_000, lastAtMs: NOW_MS },
    ]);
  });

  test("a merge never moves lastAtMs backwards (a late, out-of-order draft)", () => {
    const last = historyRecord({ lastAtMs: NOW_MS + 5_000 });
    expect(placeHistory(last, [skip])[0]?.lastAtMs).toBe(NOW_MS + 5_000);
  });

  test.each([
    ["message", { message: "agent lost" }],
    ["no message", { message: undefined }],
    ["handler", { handler: "PrepareSessions" }],
    ["result", { result: "NEED_RETRY" }],
    ["from status", { fromStatus: "SCHEDULED" }],
    ["to status", { toStatus: "CANCELLED" }],
  ] as const)("a different %s appends the next seq", (_what, change) => {
    const last = historyRecord({ seq: 4, count: 3 });
    const draft: HistoryDraft = { ...skip, ...change };
    const [placed, ...rest] = placeHistory(last, [draft]);
    expect(rest).toEqual([]);
    expect(placed).toMatchObject({ seq: 5, count: 1, firstAtMs: NOW_MS, lastAtMs: NOW_MS });
  });

  test("two identical drafts in one batch come back as one record counting both", () => {
    const out = placeHistory(undefined, [skip, { ...skip, atMs: NOW_MS + 1_000 }]);
    expect(out).toEqual([
      expect.objectContaining({ seq: 0, count: 2, firstAtMs: NOW_MS, lastAtMs: NOW_MS + 1_000 }),
    ]);
  });

  test("identical drafts after a merge with the latest record still return that one record", () => {
    const last = historyRecord({ seq: 4, count: 1 });
    const out = placeHistory(last, [skip, skip, skip]);
    expect(out).toEqual([{ ...last, count: 4, lastAtMs: NOW_MS }]);
  });

  test("alternating outcomes append one record each", () => {
    const retry: HistoryDraft = { ...skip, result: "NEED_RETRY", message: "pull failed" };
    const out = placeHistory(historyRecord({ seq: 4 }), [retry, skip, retry]);
    expect(out.map((r) => [r.seq, r.result, r.count])).toEqual([
      [5, "NEED_RETRY", 1],
      [6, "SKIPPED", 1],
      [7, "NEED_RETRY", 1],
    ]);
  });

  test("a merge with the latest record, then a new outcome: both are returned in seq order", () => {
    const retry: HistoryDraft = { ...skip, result: "NEED_RETRY" };
    const out = placeHistory(historyRecord({ seq: 4, count: 2 }), [skip, retry, retry]);
    expect(out.map((r) => [r.seq, r.result, r.count])).toEqual([
      [4, "SKIPPED", 3],
      [5, "NEED_RETRY", 2],
    ]);
  });

  test("records of another session never merge", () => {
    const [placed] = placeHistory(historyRecord({ sessionId: "s2", seq: 0 }), [skip]);
    expect(placed).toMatchObject({ sessionId: "s1", count: 1, firstAtMs: NOW_MS });
  });
});

describe("validationFailedRecord", () => {
  // HPC Pack: "If the job passes validation, it moves to the Queued state. If the job does not
  // pass validation, the job displays an error message and the job moves to the Failed state."
  test("a task that failed validation has one record: Submit FAILED, PENDING to TERMINATED, the reason", () => {
    const reason =
      "failed validation against job template small: resources.cpu: must be at most 2 (template small), got 4";
    expect(validationFailedRecord("j-t0", reason, NOW_MS)).toEqual({
      sessionId: "j-t0",
      seq: 0,
      handler: "Submit",
      result: "FAILED",
      fromStatus: "PENDING",
      toStatus: "TERMINATED",
      message: reason,
      count: 1,
      firstAtMs: NOW_MS,
      lastAtMs: NOW_MS,
    });
  });

  test("the reason is cut to an event message's length", () => {
    const record = validationFailedRecord("s1", "x".repeat(10_000), NOW_MS);
    expect(record.message).toHaveLength(4096);
  });
});
