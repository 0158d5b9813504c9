/**
 * A run lost before RUNNING. Iris, PREEMPTED: "ASSIGNED tasks: always retry to PENDING
 * regardless of budget (the task never started executing, so preemption is free). BUILDING or
 * RUNNING tasks: preemption_count is incremented and compared against max_retries_preemption …
 * If preemption_count > max_retries_preemption: task state is set to PREEMPTED (terminal)."
 * WORKER_FAILED: "Retry evaluation uses the preemption budget". Cairn's ASSIGNED is SCHEDULED;
 * its BUILDING is PREPARING, PREPARED and CREATING.
 */
import { describe, expect, test } from "vitest";
import { agentLossPlan } from "../../functions/core/agent-loss.ts";
import { chargeLossBeforeRunning } from "../../functions/core/building-loss.ts";
import { failRunDecision, unrecoverableReason } from "../../functions/core/coordinator/unrecoverable.ts";
import { stageEntryWrite } from "../../functions/core/effects.ts";
import { hpcTaskState } from "../../functions/core/hpc-view.ts";
import { deriveJobState, jobTasks, newJob } from "../../functions/core/jobs.ts";
import type { SessionWithKernels, StageTransition } from "../../functions/core/model.ts";
import { sessionAfterWrite } from "../../functions/core/session-after-write.ts";
import type { SessionStatus } from "../../functions/core/status.ts";
import { kernel, NOW_MS, session, SPEC } from "./fixtures.ts";

const onAgent = (status: SessionStatus, retry?: { maxRetriesPreemption: number }): SessionWithKernels => ({
  session: session("s-1", status, retry ? { spec: { ...SPEC, retry } } : {}),
  kernels: [kernel("s-1", 0, status === "SCHEDULED" ? "SCHEDULED" : "PREPARING", { agentId: "agent-1" })],
});

const preempted = (from: SessionStatus): StageTransition => ({
  from,
  to: "PENDING",
  result: "PREEMPTED",
  handler: "Preempt",
  message: "preempted by high (priority 10)",
});

describe("ASSIGNED is free; BUILDING is charged", () => {
  test("an agent lost while the session is SCHEDULED (ASSIGNED): back to PENDING at no cost", () => {
    const plan = agentLossPlan(onAgent("SCHEDULED"), "agent-1", "agent agent-1 lost", NOW_MS);
    expect(plan?.transition).toEqual({
      from: "SCHEDULED",
      to: "PENDING",
      result: "AGENT_LOST",
      handler: "Liveness",
      message: "agent agent-1 lost: placed again at no cost, it had not started",
    });
  });

  test.each<SessionStatus>(["PREPARING", "PREPARED", "CREATING"])(
    "an agent lost while %s (BUILDING): WORKER_FAILED charged to the preemption budget, then placed again",
    (status) => {
      const plan = agentLossPlan(onAgent(status), "agent-1", "agent agent-1 lost", NOW_MS);
      expect(plan?.transition).toMatchObject({
        from: status,
        to: "PENDING",
        result: "AGENT_LOST",
        message: `agent agent-1 lost; lost while BUILDING (${status}): WORKER_FAILED: preemption count 1 <= maxRetriesPreemption 100; placed again`,
        charged: { failureCount: 0, preemptionCount: 1, totalRetries: 1 },
      });
      expect(plan?.transition?.charged?.budgetSpentBy).toBeUndefined();
    },
  );

  test("a preemption while BUILDING is charged as PREEMPTED; one while ASSIGNED is not", () => {
    const { session: building } = onAgent("CREATING");
    expect(chargeLossBeforeRunning(building, preempted("CREATING"), "PREEMPTED")).toMatchObject({
      message:
        "preempted by high (priority 10); lost while BUILDING (CREATING): PREEMPTED: preemption count 1 <= maxRetriesPreemption 100; placed again",
      charged: { preemptionCount: 1, totalRetries: 1 },
    });
    const { session: assigned } = onAgent("SCHEDULED");
    expect(chargeLossBeforeRunning(assigned, preempted("SCHEDULED"), "PREEMPTED")).toEqual(
      preempted("SCHEDULED"),
    );
  });

  test("the PENDING entry stores the charged counters: a counted return, not one of the free ones", () => {
    const s = onAgent("PREPARED");
    const withFree = {
      ...s,
      session: {
        ...s.session,
        retry: { failureCount: 0, preemptionCount: 0, totalRetries: 0, ruleRetries: {}, freeReturns: 3 },
      },
    };
    const t = chargeLossBeforeRunning(withFree.session, preempted("PREPARED"), "PREEMPTED");
    const write = stageEntryWrite({ ...withFree, transition: t, taskToken: "t-2", nowMs: NOW_MS });
    expect(write.retry).toEqual({
      failureCount: 0,
      preemptionCount: 1,
      totalRetries: 1,
      ruleRetries: {},
      freeReturns: 3,
    });
  });
});

describe("the budget spent while BUILDING ends the run, terminal", () => {
  test("maxRetriesPreemption 0: the loss goes back to PENDING marked, and the next pass ends it WORKER_FAILED", () => {
    const s = onAgent("PREPARING", { maxRetriesPreemption: 0 });
    const plan = agentLossPlan(s, "agent-1", "agent agent-1 lost", NOW_MS);
    const t = plan!.transition!;
    expect(t.message).toBe(
      "agent agent-1 lost; lost while BUILDING (PREPARING): WORKER_FAILED: preemption count 1 > maxRetriesPreemption 0; the run ends",
    );
    expect(t.charged).toMatchObject({ preemptionCount: 1, totalRetries: 0, budgetSpentBy: "WORKER_FAILED" });

    // The lifecycle enters PENDING with it.
    const lost = {
      session: s.session,
      kernels: s.kernels.map((k) => ({ ...k, ...plan!.kernels[0] }) as typeof k),
    };
    const pending = sessionAfterWrite(
      lost,
      stageEntryWrite({ ...lost, transition: t, taskToken: "t-2", nowMs: NOW_MS }),
    );
    expect(pending.session.status).toBe("PENDING");
    const reason = unrecoverableReason(pending);
    expect(reason).toBe(
      "WORKER_FAILED while BUILDING with the preemption budget spent (preemption count 1 > maxRetriesPreemption 0)",
    );

    // The pass ends it: PENDING → TERMINATED, the run and its kernel WORKER_FAILED.
    const decision = failRunDecision(pending, reason!, "ScheduleNewSessions", NOW_MS + 1);
    expect(decision.complete).toMatchObject({
      from: "PENDING",
      to: "TERMINATED",
      run: { outcome: "WORKER_FAILED" },
    });
    const ended = sessionAfterWrite(
      pending,
      stageEntryWrite({ ...pending, transition: decision.complete, nowMs: NOW_MS + 2 }),
    );
    expect(ended.session.status).toBe("TERMINATED");
    expect(ended.kernels[0]?.outcome).toBe("WORKER_FAILED");

    // Iris: the task is WORKER_FAILED, finished, and its job WORKER_FAILED; HPC Pack: Failed.
    const job = newJob("s-1", { ...SPEC, replicas: 1 }, NOW_MS);
    const tasks = jobTasks(job, [ended]);
    expect(tasks[0]).toMatchObject({ state: "WORKER_FAILED", finished: true });
    expect(deriveJobState(tasks, 0).state).toBe("WORKER_FAILED");
    expect(hpcTaskState(ended.session, ended.kernels[0]!)).toBe("Failed");
  });

  test("a preemption that spends it ends the run PREEMPTED", () => {
    const s = onAgent("CREATING", { maxRetriesPreemption: 0 });
    const t = chargeLossBeforeRunning(s.session, preempted("CREATING"), "PREEMPTED");
    const pending = sessionAfterWrite(
      s,
      stageEntryWrite({ ...s, transition: t, taskToken: "t-2", nowMs: NOW_MS }),
    );
    const decision = failRunDecision(pending, unrecoverableReason(pending)!, "ScheduleNewSessions", NOW_MS);
    expect(decision.complete?.run?.outcome).toBe("PREEMPTED");
  });
});
