/**
 * The sweep's repair decision: what becomes of a session whose stage was entered a while ago,
 * given what DescribeExecution says of its lifecycle execution. An execution waiting to be
 * redriven (PENDING_REDRIVE) still carries its session, as a RUNNING one does.
 */
import { describe, expect, test } from "vitest";
import { repairDecision, type ObservedExecution } from "../../functions/core/repair.ts";
import { SessionStatus } from "../../functions/core/status.ts";
import { historyRecord, session } from "./fixtures.ts";

const running = session("s1", SessionStatus.RUNNING);
const pending = session("s2", SessionStatus.PENDING);

describe("given an execution that still carries its session", () => {
  test.each<ObservedExecution["status"]>(["RUNNING", "PENDING_REDRIVE"])(
    "%s: the session is left alone, whatever its stage",
    (status) => {
      expect(repairDecision(running, { status })).toEqual({ kind: "leave" });
      expect(repairDecision(pending, { status })).toEqual({ kind: "leave" });
    },
  );

  test("PENDING_REDRIVE after a failure: the error the execution failed with does not end the session", () => {
    const redriven = { status: "PENDING_REDRIVE", error: "States.TaskFailed", cause: "boom" } as const;
    expect(repairDecision(running, redriven)).toEqual({ kind: "leave" });
  });
});

describe("given an execution that has ended", () => {
  test.each<ObservedExecution["status"]>(["SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"])(
    "%s: a running session ends TERMINATED, a waiting one CANCELLED, with the reason",
    (status) => {
      expect(repairDecision(running, { status, error: "Operator.Stopped" })).toEqual({
        kind: "end",
        from: "RUNNING",
        to: "TERMINATED",
        reason: `its lifecycle execution s1 is ${status} (Operator.Stopped) while the session was RUNNING: ended by the sweep's repair`,
      });
      expect(repairDecision(pending, { status })).toEqual({
        kind: "end",
        from: "PENDING",
        to: "CANCELLED",
        reason: `its lifecycle execution s2 is ${status} while the session was PENDING: ended by the sweep's repair`,
      });
    },
  );
});

describe("given no execution of the session's name", () => {
  test("a session that never entered a stage: its execution is started", () => {
    const unstarted = session("s3", SessionStatus.PENDING, {
      stage: { enteredAtMs: 0, expiresAtMs: 1 },
    });
    expect(repairDecision(unstarted, undefined)).toEqual({ kind: "start" });
  });

  test("a session that entered a stage: ended, saying its execution does not exist", () => {
    const entered = session("s4", SessionStatus.PENDING, { lastHistory: historyRecord({ sessionId: "s4" }) });
    expect(repairDecision(entered, undefined)).toEqual({
      kind: "end",
      from: "PENDING",
      to: "CANCELLED",
      reason: "its lifecycle execution s4 does not exist: ended by the sweep's repair",
    });
  });

  test("a session already ended is left alone", () => {
    expect(repairDecision(session("s5", SessionStatus.TERMINATED), { status: "ABORTED" })).toEqual({
      kind: "leave",
    });
  });
});
