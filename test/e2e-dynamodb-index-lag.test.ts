/**
 * Global secondary indexes that lag the table, end to end. On AWS a GSI is updated
 * asynchronously (eventually consistent, usually within a fraction of a second, with no bound):
 * a Query on it may miss an item written a moment ago. DynamoDB Local updates its indexes at
 * once, so the fault switch (local/dynamodb-faults.ts, `index-lag`) answers the functions' GSI
 * Queries as the index stood some hundreds of milliseconds earlier. The product reads the items
 * behind index entries consistently and the sweep finds what an event's pass missed: sessions
 * still end, with the history and the capacity they have without the lag.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { sessionResult } from "../functions/core/sessions.ts";
import { HISTORY_TO_RUNNING, historyLines } from "./support/histories.ts";
import { assertLifecycleInvariants, startTestRuntime, type TestRuntime } from "./support/runtime.ts";

const LAG_MS = 800;

describe("GSI Queries that lag the table (end to end)", () => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startTestRuntime({
      agents: 1,
      dynamoDbFaults: { rules: [{ fault: "index-lag", lagMs: LAG_MS }] },
      // What an index entry not yet visible hid from an event's pass, the sweep finds.
      sweepMs: 1_000,
    });
    // An agent registered less than the lag ago is not in the roster's index yet, as on AWS: a
    // session submitted then would wait a sweep ("no live agents are registered") and its
    // history would not be the one to compare with.
    await new Promise((resolve) => setTimeout(resolve, LAG_MS + 200));
  }, 120_000);
  afterAll(async () => {
    await rt?.stop();
  });

  test("sessions submitted together, one retried once: each runs to its end with the history and capacity of an index without lag", async () => {
    const run = Date.now().toString(36);
    const ok = [0, 1, 2].map((i) => `ddb-lag-ok-${run}-${i}`);
    const retried = `ddb-lag-retried-${run}`;
    await Promise.all([
      ...ok.map((sessionId) =>
        rt.submit({ sessionId, spec: { name: "ok", command: ["/bin/sh", "-c", "echo ran"] } }),
      ),
      rt.submit({
        sessionId: retried,
        spec: { name: "retried", command: ["/bin/sh", "-c", "exit 3"], retry: { maxRetriesFailure: 1 } },
      }),
    ]);
    const ended = await Promise.all([...ok, retried].map((id) => rt.waitForEnd(id, 120_000)));
    for (const s of ended.slice(0, ok.length)) {
      expect(s.session.status, s.session.id).toBe("TERMINATED");
      expect(sessionResult(s), s.session.id).toBe("succeeded");
      expect(historyLines(await rt.store.listHistory(s.session.id)), s.session.id).toEqual([
        ...HISTORY_TO_RUNNING,
        "DetectTermination SUCCESS RUNNING->TERMINATING",
        "PromoteToTerminated SUCCESS TERMINATING->TERMINATED",
      ]);
      expect((await rt.store.listRuns(s.session.id)).map((r) => [r.runIndex, r.decision])).toEqual([
        [0, "finished"],
      ]);
    }
    expect(sessionResult(ended[ok.length]!)).toBe("failed");
    expect((await rt.store.listRuns(retried)).map((r) => [r.runIndex, r.decision])).toEqual([
      [0, "retry"],
      [1, "finished"],
    ]);
    // The lag did hide entries from the functions' GSI Queries.
    expect(rt.runtime.dynamoDbFaults!.fired().filter((f) => f.fault === "index-lag").length).toBeGreaterThan(
      0,
    );
    // Every agent's capacity is back, once.
    for (const agent of await rt.store.listAgents()) expect(agent.free, agent.id).toEqual(agent.capacity);
    await assertLifecycleInvariants(rt);
  }, 180_000);
});
