/**
 * A run never placed, retried by a rule on Armada's `Unschedulable` condition: the pending timeout
 * ends its kernels Unschedulable, and the rule sends the session back to PENDING as a new run
 * instead of ending it CANCELLED. Both ways an expiry is seen are replayed: the execution's own
 * timer (JudgePendingExpiry), and a pass that sees it first and completes the stage
 * (Cairn.To.PENDING). Invariants after every step (harness.ts).
 */
import { describe, expect, test } from "vitest";
import { parseRetryPolicy } from "../../functions/core/retry/policy.ts";
import { runRecord } from "../../functions/core/runs.ts";
import { sessionResult } from "../../functions/core/sessions.ts";
import { CAP, replaysClosedAfterEach, type Replay } from "./harness.ts";

const open = replaysClosedAfterEach();

/** A policy whose one rule retries an unschedulable run once, at once. */
async function unschedulableRule(h: Replay, rule: Record<string, unknown> = {}): Promise<void> {
  await h.store.createRetryPolicy(
    parseRetryPolicy({
      apiVersion: "cairn.dev/v1",
      kind: "RetryPolicy",
      metadata: { name: "unsched" },
      spec: { rules: [{ action: "Retry", onConditions: ["Unschedulable"], retryLimit: 1, ...rule }] },
    }),
    h.nowMs,
  );
}

/** 16 cpu: no 4-cpu agent holds it; PENDING expires after 60 s. */
const BIG = {
  name: "big",
  command: ["true"],
  resources: { cpu: 16 },
  timeouts: { pending: 60 },
  retry: { policies: ["unsched"] },
} as const;

describe("a rule on Unschedulable", () => {
  test("the PENDING timer's judgment retries the run once, then the rule's limit ends it CANCELLED", async () => {
    const h = await open("unsched-timer");
    await h.register("agent-a", CAP);
    await unschedulableRule(h);
    await h.submit("s-001", BIG);

    await h.advance(60_000);
    const again = await h.session("s-001");
    expect(again.session.status, h.stepLog).toBe("PENDING");
    expect(again.session.runIndex).toBe(1);
    expect(again.session.retry).toMatchObject({ totalRetries: 1, ruleRetries: { "unsched#0": 1 } });
    expect(again.kernels.map((k) => [k.status, k.outcome])).toEqual([["PENDING", undefined]]);
    const [first] = await h.store.listRuns("s-001");
    expect(first).toMatchObject({
      runIndex: 0,
      decision: "retry",
      outcome: "UNSCHEDULABLE",
      kernels: [{ index: 0, outcome: "UNSCHEDULABLE", condition: "Unschedulable" }],
    });
    expect(first?.reason).toMatch(/^unsched rule 0 \(Retry\) matched kernel 0.*retry 1 of 1/);

    // The second run waits its own pending timeout, and the rule has no retry left.
    await h.advance(60_000);
    const done = await h.session("s-001");
    expect(done.session.status, h.stepLog).toBe("CANCELLED");
    expect(sessionResult(done)).toBe("cancelled");
    expect(done.kernels).toEqual([
      expect.objectContaining({ status: "CANCELLED", outcome: "UNSCHEDULABLE", condition: "Unschedulable" }),
    ]);
    expect(await h.history("s-001"), h.stepLog).toEqual([
      "Submit SUBMITTED PENDING->PENDING",
      "ScheduleNewSessions SKIPPED PENDING->=",
      "Retry REQUEUED PENDING->PENDING",
      "Retry REQUEUED PENDING->PENDING",
      "ScheduleNewSessions SKIPPED PENDING->=",
      "Lifecycle EXPIRED PENDING->CANCELLED",
    ]);
    const last = (await h.store.listHistory("s-001")).at(-1);
    expect(last?.message).toMatch(
      /^pending stage timed out; unsched rule 0 \(Retry\) matched .*1 retry is used up/,
    );
    expect((await h.store.listRuns("s-001")).map((r) => r.runIndex)).toEqual([0]);
    expect(h.driver.executions.get("s-001")?.trail).toEqual(
      expect.arrayContaining(["PendingExpired", "JudgePendingExpiry", "PendingExpiryJudged", "Requeued"]),
    );
    expect(h.errors).toEqual([]);
  });

  test("a pass that sees the expiry first retries it the same way, and the retried run is placed and runs", async () => {
    const h = await open("unsched-pass");
    await h.register("agent-a", CAP);
    await unschedulableRule(h);
    await h.submit("s-001", BIG);

    // The coordinator's clock is past the stage's expiry before the execution's timer fires.
    await h.advance(59_999);
    h.nowMs += 1;
    await h.sweep();
    // The backoff (0 s) is a Wait: its end is a timer.
    await h.advance(0);
    const again = await h.session("s-001");
    expect(again.session.status, h.stepLog).toBe("PENDING");
    expect(again.session.runIndex).toBe(1);
    expect(h.driver.executions.get("s-001")?.trail).toContain("PendingToRequeued");
    expect(h.driver.executions.get("s-001")?.trail).not.toContain("PendingExpired");
    expect(await h.store.listRuns("s-001")).toEqual([
      expect.objectContaining({ runIndex: 0, decision: "retry", outcome: "UNSCHEDULABLE" }),
    ]);

    // Capacity arrives: the second run is placed and runs to the end.
    await h.register("agent-big", { cpu: 16, memoryMiB: 4096 });
    expect((await h.session("s-001")).session.status, h.stepLog).toBe("RUNNING");
    await h.exit("s-001", 0, 0);
    const done = await h.session("s-001");
    expect(done.session.status, h.stepLog).toBe("TERMINATED");
    expect(sessionResult(done)).toBe("succeeded");
    expect(h.errors).toEqual([]);
  });

  test("when a pass recorded the retry and its callback found the stage closed, the timer's judgment names that record", async () => {
    const h = await open("unsched-race");
    // No agent: nothing heartbeats while the stage is claimed but its execution still waits.
    await unschedulableRule(h);
    await h.submit("s-001", BIG);
    // What a pass's claim writes before its SendTaskFailure meets a closed token.
    const s = await h.session("s-001");
    await h.store.applyWrite({
      sessionId: "s-001",
      expected: { status: "PENDING", version: s.session.version },
      nowMs: h.nowMs,
      claimStage: true,
      run: runRecord(s, { decision: "retry", reason: "judged by a pass" }, h.nowMs),
    });

    await h.advance(60_000);
    const again = await h.session("s-001");
    expect(again.session.status, h.stepLog).toBe("PENDING");
    expect(again.session.runIndex).toBe(1);
    expect(await h.store.listRuns("s-001")).toEqual([
      expect.objectContaining({ runIndex: 0, reason: "judged by a pass" }),
    ]);
    expect(h.errors).toEqual([]);
  });

  test("a rule that does not match leaves the expiry as it was: CANCELLED, no run recorded", async () => {
    const h = await open("unsched-nomatch");
    await h.register("agent-a", CAP);
    await unschedulableRule(h, { onConditions: ["OOMKilled"] });
    await h.submit("s-001", BIG);
    await h.advance(60_000);
    const done = await h.session("s-001");
    expect(done.session.status, h.stepLog).toBe("CANCELLED");
    expect(await h.store.listRuns("s-001")).toEqual([]);
    expect(h.errors).toEqual([]);
  });
});
