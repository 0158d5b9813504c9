/**
 * An account whose Lambda concurrency is used up, end to end: the embedded Step Functions engine
 * refuses EnterStage's invocations with `Lambda.TooManyRequestsException` (the fault switch
 * `lambda-throttle`, on every call until switched off here, as throttling lasts while the
 * concurrency stays used up), and the real ASL's retrier rides it out with its real delays. Every session submitted into
 * the throttling runs and ends as it would have; the refusals are in the executions' histories.
 */
import type { HistoryEvent } from "@aws-sdk/client-sfn";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { sessionResult } from "../functions/core/sessions.ts";
import { FunctionName } from "../functions/topology/index.ts";
import { FaultConfigError, FaultInjector, parseFaultOptions } from "../local/stepfunctions/faults.ts";
import { assertLifecycleInvariants, startTestRuntime, type TestRuntime } from "./support/runtime.ts";

const THROTTLED = "Lambda.TooManyRequestsException";

describe("the lambda-throttle switch", () => {
  test("a window of time, or a number of calls; not both, and not a window with a probability", () => {
    expect(parseFaultOptions({ rules: [{ fault: "lambda-throttle", windowMs: 500 }] }).rules).toEqual([
      { fault: "lambda-throttle", windowMs: 500 },
    ]);
    expect(parseFaultOptions({ rules: [{ fault: "lambda-throttle", count: 3 }] }).rules).toHaveLength(1);
    for (const [rule, message] of [
      [{ fault: "lambda-throttle", windowMs: 0 }, "faults.rules[0].windowMs: must be an integer ≥ 1, got 0"],
      [
        { fault: "lambda-throttle", windowMs: 100, count: 2 },
        "faults.rules[0].windowMs: give count or windowMs, not both",
      ],
      [
        { fault: "lambda-throttle", windowMs: 100, probability: 0.5 },
        "faults.rules[0].windowMs: give probability or windowMs, not both",
      ],
    ] as const) {
      expect(() => parseFaultOptions({ rules: [rule] })).toThrow(FaultConfigError);
      expect(() => parseFaultOptions({ rules: [rule] })).toThrow(message);
    }
  });
});

describe("a throttling window", () => {
  test("fires on every matching call from its first firing until the window has passed, then never", async () => {
    const faults = new FaultInjector({ rules: [{ fault: "lambda-throttle", function: "F", windowMs: 200 }] });
    const at = { state: "Pending", function: "F" };
    expect(faults.take(["lambda-throttle"], { ...at, function: "G" })).toBeUndefined();
    for (let i = 0; i < 5; i++) expect(faults.take(["lambda-throttle"], at)?.fault).toBe("lambda-throttle");
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(faults.take(["lambda-throttle"], at)).toBeUndefined();
    expect(faults.fired).toHaveLength(5);
  });
});

describe("EnterStage throttled (end to end)", () => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startTestRuntime({ agents: 1 });
  }, 120_000);
  afterAll(async () => {
    await rt?.stop();
  });

  async function executionHistory(sessionId: string): Promise<HistoryEvent[]> {
    const executionArn = `${rt.runtime.info.stateMachineArn.replace(":stateMachine:", ":execution:")}:${sessionId}`;
    const events: HistoryEvent[] = [];
    let nextToken: string | undefined;
    do {
      const page = await rt.runtime.stepFunctions.getExecutionHistory({
        executionArn,
        maxResults: 1000,
        ...(nextToken !== undefined ? { nextToken } : {}),
      });
      events.push(...(page.events ?? []));
      nextToken = page.nextToken;
    } while (nextToken !== undefined);
    return events;
  }

  test("sessions whose every EnterStage invocation is refused, until the throttling ends, run and end succeeded", async () => {
    // Throttled until every session has been refused at least once; then the throttling ends and
    // the retrier's next attempt (its delays are real time: 2 s doubling, full jitter) goes through.
    rt.runtime.stepFunctions.faults.set({
      rules: [{ fault: "lambda-throttle", function: FunctionName.EnterStage, probability: 1 }],
    });
    const run = Date.now().toString(36);
    const ids = [0, 1, 2, 3].map((i) => `throttled-${run}-${i}`);
    for (const sessionId of ids) {
      await rt.submit({ sessionId, spec: { name: "throttled", command: ["/bin/sh", "-c", "echo ran"] } });
    }
    const refusals = async (id: string) => {
      const events = await executionHistory(id).catch(() => []);
      return events.filter((e) => e.taskFailedEventDetails?.error === THROTTLED);
    };
    await expect
      .poll(async () => (await Promise.all(ids.map(refusals))).filter((r) => r.length > 0).length, {
        timeout: 60_000,
        interval: 100,
      })
      .toBe(ids.length);
    const fired = [...rt.runtime.stepFunctions.faults.fired];
    rt.runtime.stepFunctions.faults.set({ rules: [] });
    expect(new Set(fired.map((f) => `${f.fault} ${f.function}`))).toEqual(
      new Set([`lambda-throttle ${FunctionName.EnterStage}`]),
    );
    // Refused, not caught: no session was recorded as failed meanwhile.
    for (const id of ids) {
      const [first] = await refusals(id);
      expect(first!.taskFailedEventDetails?.cause).toContain("Status Code: 429");
      expect((await rt.store.getSession(id))?.session.status).not.toBe("TERMINATED");
    }
    const ended = await Promise.all(ids.map((id) => rt.waitForEnd(id, 120_000)));
    for (const s of ended) {
      expect(s.session.status, s.session.id).toBe("TERMINATED");
      expect(sessionResult(s), s.session.id).toBe("succeeded");
      const executionArn = `${rt.runtime.info.stateMachineArn.replace(":stateMachine:", ":execution:")}:${s.session.id}`;
      const execution = await rt.runtime.stepFunctions.waitForExecution(executionArn, 30_000);
      expect(execution.status, s.session.id).toBe("SUCCEEDED");
    }
    await assertLifecycleInvariants(rt);
  }, 180_000);
});
