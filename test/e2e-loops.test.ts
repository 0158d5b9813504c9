/**
 * Lifecycle loop limits end to end on the embedded runtime: loops that never ended now end,
 * FAILED with a reason, long before one execution's 25,000-event history could fill.
 *
 * - A command that does not exist is not retried at all: the agent marks the error as one no
 *   retry can clear, and the run ends FAILED from PREPARING.
 * - A preparation that keeps failing (a program that exists but cannot run) returns to PENDING
 *   at most `maxPendingReturns` times in a run, then the session ends FAILED naming the stage
 *   and the count.
 * - The engine's measured events per cycle (a return to PENDING, a retried run) times the bounds
 *   stay under 25,000. That a session at the largest `maxPendingReturns` ends at the session's own
 *   bound on free returns (101 cycles) is a replay (test/replay/gang-retry.test.ts): no real
 *   process is needed to count them.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { HistoryEvent } from "@aws-sdk/client-sfn";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import type { HistoryRecord } from "../functions/core/model.ts";
import {
  EVENTS_PER_CYCLE_BUDGET,
  MAX_EXECUTION_HISTORY_EVENTS,
  worstCaseHistoryEvents,
} from "../functions/core/retry/history-budget.ts";
import { sessionResult } from "../functions/core/sessions.ts";
import { STATE_MACHINES } from "../functions/topology/index.ts";
import { executionArn } from "../local/stepfunctions/arns.ts";
import { assertLifecycleInvariants, startTestRuntime, type TestRuntime } from "./support/runtime.ts";

let rt: TestRuntime;
// After every scenario: no session under way without a live execution, no ended one holding a token.
afterEach(() => assertLifecycleInvariants(rt));
let scratch: string;
/** A program that exists but cannot run (mode 0644): a preparation error a retry might clear. */
let notRunnable: string;
let n = 0;
const newId = (label: string) => `loops-${label}-${Date.now().toString(36)}-${n++}`;

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), "cairn-loops-"));
  notRunnable = join(scratch, "not-runnable.sh");
  writeFileSync(notRunnable, "#!/bin/sh\necho never\n");
  chmodSync(notRunnable, 0o644);
  rt = await startTestRuntime({ agents: 1 });
}, 120_000);

afterAll(async () => {
  await rt?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

async function executionHistory(id: string): Promise<HistoryEvent[]> {
  const arn = executionArn(STATE_MACHINES[0]!.name, id);
  const events: HistoryEvent[] = [];
  let nextToken: string | undefined;
  do {
    const page = await rt.runtime.stepFunctions.getExecutionHistory({
      executionArn: arn,
      maxResults: 1000,
      ...(nextToken !== undefined ? { nextToken } : {}),
    });
    events.push(...(page.events ?? []));
    nextToken = page.nextToken;
  } while (nextToken !== undefined);
  return events;
}

/** How the session's execution ended (it ends just after the session's last state is entered). */
async function executionStatus(id: string): Promise<string | undefined> {
  const arn = executionArn(STATE_MACHINES[0]!.name, id);
  return (await rt.runtime.stepFunctions.waitForExecution(arn, 30_000)).status;
}

/** Indexes of the events where the execution entered the callback state `name`. */
function entries(events: readonly HistoryEvent[], name: string): number[] {
  return events.flatMap((e, i) =>
    e.type === "TaskStateEntered" && e.stateEnteredEventDetails?.name === name ? [i] : [],
  );
}

const returnsToPending = (history: readonly HistoryRecord[]) =>
  history
    .filter((h) => h.toStatus === "PENDING" && h.fromStatus !== "PENDING")
    .reduce((sum, h) => sum + h.count, 0);

describe("loops that never ended", () => {
  test("a command that does not exist ends FAILED from PREPARING, never retried", async () => {
    const id = newId("nobin");
    await rt.submit({ sessionId: id, spec: { name: "nobin", command: ["/no/such/binary"] } });
    const s = await rt.waitForEnd(id, 30_000);
    const history = await rt.store.listHistory(id);

    expect(s.session.status).toBe("TERMINATED");
    expect(sessionResult(s)).toBe("failed");
    expect(s.kernels).toHaveLength(1);
    expect(s.kernels[0]).toMatchObject({
      status: "ERROR",
      outcome: "FAILED",
      failureCategory: "executable_not_found",
    });
    expect(s.kernels[0]?.message).toContain("/no/such/binary");
    expect(returnsToPending(history)).toBe(0);
    const last = history.at(-1);
    expect(last).toMatchObject({ result: "FAILED", fromStatus: "PREPARING", toStatus: "TERMINATED" });
    expect(last?.message).toMatch(
      /kernel 0: executable "\/no\/such\/binary" not found.*executable_not_found/,
    );
    const runs = await rt.store.listRuns(id);
    expect(runs).toEqual([expect.objectContaining({ outcome: "FAILED", decision: "finished" })]);
    expect(await executionStatus(id)).toBe("SUCCEEDED");
  }, 60_000);

  test("a preparation that keeps failing returns to PENDING maxPendingReturns times, then ends FAILED", async () => {
    const id = newId("cap");
    // The HPC Pack view of the same life (its docs: "If a job or task fails to start because of a
    // cluster failure, it is automatically retried a specified number of times before it is
    // marked as Failed"), as every Session Status Changed event carries it.
    const hpc: string[] = [];
    rt.runtime.bus.onEvent((e) => {
      const d = e.detail as { sessionId?: string; to?: string; hpcState?: string };
      if (e["detail-type"] === "Session Status Changed" && d.sessionId === id)
        hpc.push(`${d.to}:${d.hpcState}`);
    });
    await rt.submit({
      sessionId: id,
      spec: { name: "cap", command: [notRunnable], maxPendingReturns: 3, maxTries: { preparing: 1 } },
    });
    const s = await rt.waitForEnd(id, 60_000);
    await expect.poll(() => hpc.at(-1), { timeout: 10_000 }).toBe("TERMINATED:Failed");
    // Queued on entry and after each of its four returns (the fourth, one too many, is judged
    // there), Dispatching in between, then Failed: the retries on cluster failure, then Failed.
    expect(hpc.filter((h) => h === "PENDING:Queued")).toHaveLength(5);
    expect(hpc.filter((h) => h.endsWith(":Dispatching")).length).toBeGreaterThanOrEqual(4);
    expect(hpc.filter((h) => !/:(Queued|Dispatching)$/.test(h))).toEqual(["TERMINATED:Failed"]);
    const history = await rt.store.listHistory(id);

    expect(sessionResult(s)).toBe("failed");
    expect(s.kernels[0]).toMatchObject({ status: "ERROR", outcome: "FAILED" });
    // The fourth return is one too many: it ends the session instead of placing it again.
    expect(returnsToPending(history)).toBe(4);
    const last = history.at(-1);
    expect(last).toMatchObject({ result: "FAILED", fromStatus: "PENDING", toStatus: "TERMINATED" });
    expect(last?.message).toContain("returned to PENDING 4 times in run 0, more than maxPendingReturns 3");
    expect(last?.message).toContain("the last from PREPARING (give_up: kernel 0:");
    expect(last?.message).toContain("is not executable");
    expect(await executionStatus(id)).toBe("SUCCEEDED");
  }, 90_000);
});

describe("the 25,000-event history limit", () => {
  /** Events of one retried run, measured: the longest cycle a session repeats. */
  let eventsPerRun = 0;
  /** Events of one return to PENDING from PREPARING, measured. */
  let eventsPerReturn = 0;

  test("a return to PENDING's events, measured on the engine: the execution closes normally, far below the limit", async () => {
    const id = newId("returns");
    await rt.submit({
      sessionId: id,
      spec: { name: "returns", command: [notRunnable], maxPendingReturns: 2, maxTries: { preparing: 1 } },
    });
    const s = await rt.waitForEnd(id, 60_000);
    const events = await executionHistory(id);

    expect(sessionResult(s)).toBe("failed");
    expect(returnsToPending(await rt.store.listHistory(id))).toBe(3);
    expect(await executionStatus(id)).toBe("SUCCEEDED");
    const pendings = entries(events, "Pending");
    expect(pendings).toHaveLength(4);
    eventsPerReturn = Math.max(...pendings.slice(1).map((at, i) => at - pendings[i]!));
  }, 90_000);

  test("a retried run's events, measured on the engine, times the bounds stay under 25,000", async () => {
    const one = newId("one");
    const three = newId("three");
    for (const [id, retries] of [
      [one, 0],
      [three, 2],
    ] as const) {
      await rt.submit({
        sessionId: id,
        spec: { name: "fails", command: ["/bin/sh", "-c", "exit 1"], retry: { maxRetriesFailure: retries } },
      });
    }
    await rt.waitForEnd(one, 60_000);
    await rt.waitForEnd(three, 60_000);
    expect(await rt.store.listRuns(three)).toHaveLength(3);
    eventsPerRun = ((await executionHistory(three)).length - (await executionHistory(one)).length) / 2;

    expect(eventsPerRun).toBeGreaterThan(0);
    expect(eventsPerReturn).toBeGreaterThan(0);
    // A return to PENDING is a part of a run's cycle; the run is what the budget is set by.
    expect(eventsPerReturn).toBeLessThan(eventsPerRun);
    expect(eventsPerRun).toBeLessThanOrEqual(EVENTS_PER_CYCLE_BUDGET);
    expect(worstCaseHistoryEvents(eventsPerRun)).toBeLessThan(MAX_EXECUTION_HISTORY_EVENTS);
    expect(worstCaseHistoryEvents()).toBeLessThan(MAX_EXECUTION_HISTORY_EVENTS);
  }, 120_000);
});
