/**
 * Builders for the core's tests: plain data with literal epoch values (no wall clock), so every
 * scenario reads as given / when / then.
 */
import type { JudgedTarget } from "../../functions/core/coordinator/decide.ts";
import type { HistoryRecord, Kernel, Session, SessionSpec } from "../../functions/core/model.ts";
import type { HandlerResult } from "../../functions/core/scheduling.ts";
import type { KernelStatus, SessionStatus } from "../../functions/core/status.ts";

/** "Now" in every scenario: 2026-01-01T00:00:00Z. */
export const NOW_MS = 1_767_225_600_000;

export const SPEC: SessionSpec = {
  name: "train",
  queue: "default",
  priority: 0,
  replicas: 2,
  resources: { cpu: 1, memoryMiB: 512 },
  command: ["python", "train.py"],
  env: {},
  timeouts: {
    pending: 600,
    scheduled: 60,
    preparing: 900,
    prepared: 60,
    creating: 600,
    running: 3600,
    terminating: 120,
  },
  maxTries: { pending: 3, scheduled: 3, preparing: 3, prepared: 3, creating: 3, running: 1, terminating: 3 },
};

export function target(
  sessionId: string,
  status: SessionStatus,
  over: Partial<JudgedTarget> = {},
): JudgedTarget {
  // Not expired unless a test says so: the deadline is an hour ahead.
  return { sessionId, status, tries: 0, maxTries: 3, expiresAtMs: NOW_MS + 3_600_000, ...over };
}

export function result(over: Partial<HandlerResult> = {}): HandlerResult {
  return { successes: [], failures: [], skipped: [], ...over };
}

export function session(id: string, status: SessionStatus, over: Partial<Session> = {}): Session {
  return {
    id,
    spec: SPEC,
    status,
    version: 7,
    createdAtMs: NOW_MS - 60_000,
    updatedAtMs: NOW_MS - 1_000,
    executionName: id,
    stage: { enteredAtMs: NOW_MS - 1_000, expiresAtMs: NOW_MS + 60_000, taskToken: "token-old" },
    tries: 0,
    runIndex: 0,
    ...over,
  };
}

export function kernel(
  sessionId: string,
  index: number,
  status: KernelStatus,
  over: Partial<Kernel> = {},
): Kernel {
  return {
    sessionId,
    index,
    status,
    resources: { cpu: 1, memoryMiB: 512 },
    statusChangedAtMs: NOW_MS - 1_000,
    ...over,
  };
}

export function historyRecord(over: Partial<HistoryRecord> = {}): HistoryRecord {
  return {
    sessionId: "s1",
    seq: 4,
    handler: "ScheduleNewSessions",
    result: "SKIPPED",
    fromStatus: "PENDING",
    message: "queue full",
    count: 1,
    firstAtMs: NOW_MS - 10_000,
    lastAtMs: NOW_MS - 10_000,
    ...over,
  };
}
