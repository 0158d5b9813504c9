/**
 * Iris's and HPC Pack's rules where Cairn follows them to the letter, replayed end to end (the
 * real ASL, DynamoDB Local, the coordinator; a frozen clock; invariants after every step):
 * - Iris: "PENDING: Default (no tasks have started)" — a job that has started stays
 *   RUNNING while its task waits to run again;
 * - Iris: "ASSIGNED tasks: always retry to PENDING regardless of budget … BUILDING or RUNNING
 *   tasks: preemption_count is incremented" — an agent lost while BUILDING costs the budget;
 * - Iris: KILLED is set by the "per-task timeout" and "never retried"; HPC Pack marks
 *   such a task Failed; an Armada rule on DeadlineExceeded retries it;
 * - HPC Pack: "If a job or task fails to start because of a cluster failure, the job or task is
 *   automatically retried a specified number of times before it is marked as Failed."
 */
import { describe, expect, test } from "vitest";
import { readJob } from "../../bin/cli/job-read.ts";
import { jobView } from "../../bin/cli/job-views.ts";
import { hpcSessionState } from "../../functions/core/hpc-view.ts";
import { parseRetryPolicy } from "../../functions/core/retry/policy.ts";
import { AGENT_TIMEOUT_MS, CAP, replaysClosedAfterEach } from "./harness.ts";

const open = replaysClosedAfterEach();

describe("a job that has started stays RUNNING (Iris)", () => {
  test("its only task back in PENDING after its agent was lost, no agent left: RUNNING, not PENDING", async () => {
    const h = await open("job-started");
    const a = await h.register("agent-a", CAP);
    await h.submit("j-001", { name: "train", command: ["sleep", "600"] });
    expect((await readJob(h.store, "j-001")).state, h.stepLog).toBe("RUNNING");

    // The host dies; with no other agent's heartbeat, the safety sweep finds it silent.
    a.silent = true;
    await h.advance(AGENT_TIMEOUT_MS + 10_000);
    await h.sweep();
    const waiting = await h.session("j-001");
    expect(waiting.session.status, h.stepLog).toBe("PENDING");
    expect(waiting.session.runIndex).toBe(1);
    const job = await readJob(h.store, "j-001");
    expect(job.tasks[0]).toMatchObject({ state: "PENDING", started: true });
    expect(job.state).toBe("RUNNING");
    expect(job.reason).toBe("1 of 1 task started; none placed now (waiting to run again)");
    expect(h.errors).toEqual([]);
  });

  test("a job none of whose tasks was ever placed is PENDING", async () => {
    const h = await open("job-pending");
    await h.submit("j-002", { name: "wait", command: ["true"] });
    expect(await readJob(h.store, "j-002")).toMatchObject({
      state: "PENDING",
      reason: "no task has been placed yet",
    });
  });
});

describe("an agent lost while the run is BUILDING costs the preemption budget (Iris)", () => {
  test("lost while PREPARING with maxRetriesPreemption 0: the run ends WORKER_FAILED; the job WORKER_FAILED; HPC Failed", async () => {
    const h = await open("building-lost");
    const a = await h.register("agent-a", CAP);
    a.prepare = "hold";
    await h.submit("b-001", { name: "b", command: ["true"], retry: { maxRetriesPreemption: 0 } });
    expect((await h.session("b-001")).session.status, h.stepLog).toBe("PREPARING");

    a.silent = true;
    await h.advance(AGENT_TIMEOUT_MS + 10_000);
    await h.sweep();
    const done = await h.session("b-001");
    expect(done.session.status, h.stepLog).toBe("TERMINATED");
    expect(done.kernels[0]?.outcome).toBe("WORKER_FAILED");
    expect(done.session.retry).toMatchObject({ preemptionCount: 1, budgetSpentBy: "WORKER_FAILED" });
    expect(hpcSessionState(done.session, done.kernels)).toBe("Failed");
    expect(await readJob(h.store, "b-001")).toMatchObject({ state: "WORKER_FAILED" });
    const history = await h.history("b-001");
    expect(history.slice(-2), h.stepLog).toEqual([
      "Liveness AGENT_LOST PREPARING->PENDING",
      "ScheduleNewSessions FAILED PENDING->TERMINATED",
    ]);
    expect(h.errors).toEqual([]);
  });

  test("lost while PREPARING with budget left: placed again, one preemption charged", async () => {
    const h = await open("building-retried");
    const a = await h.register("agent-a", CAP);
    a.prepare = "hold";
    await h.submit("b-002", { name: "b", command: ["sleep", "600"] });
    await h.register("agent-b", CAP);
    expect((await h.session("b-002")).kernels[0]?.agentId, h.stepLog).toBe("agent-a");

    a.silent = true;
    await h.advance(AGENT_TIMEOUT_MS + 10_000);
    const again = await h.session("b-002");
    expect(again.session.status, h.stepLog).toBe("RUNNING");
    expect(again.kernels[0]?.agentId).toBe("agent-b");
    expect(again.session.retry).toMatchObject({ preemptionCount: 1, totalRetries: 1 });
    const lost = (await h.store.listHistory("b-002")).find((r) => r.result === "AGENT_LOST");
    expect(lost?.message).toMatch(
      /lost while BUILDING \(PREPARING\): WORKER_FAILED: preemption count 1 <= maxRetriesPreemption 100; placed again$/,
    );
  });
});

describe("the run-time limit KILLs (Iris), Failed in HPC Pack's view", () => {
  test("a run stopped at timeouts.running ends KILLED and is not retried, whatever its failure budget", async () => {
    const h = await open("deadline-killed");
    await h.register("agent-a", CAP);
    await h.submit("d-001", {
      name: "d",
      command: ["sleep", "600"],
      timeouts: { running: 30 },
      retry: { maxRetriesFailure: 3 },
    });
    await h.advance(30_000);
    const done = await h.session("d-001");
    expect(done.session.status, h.stepLog).toBe("TERMINATED");
    expect(done.session.runIndex).toBe(0);
    expect(done.kernels[0]).toMatchObject({
      outcome: "KILLED",
      condition: "DeadlineExceeded",
      message: "run-time limit of 30 s (timeouts.running) exceeded",
    });
    expect(hpcSessionState(done.session, done.kernels)).toBe("Failed");
    const job = await readJob(h.store, "d-001");
    expect(job).toMatchObject({
      state: "KILLED",
      reason: "1 task killed: run-time limit of 30 s (timeouts.running) exceeded",
    });
    // What `cairn job get` shows: Iris's KILLED, HPC Pack's Failed (the task's own limit).
    expect(jobView(job)).toMatchObject({ state: "KILLED", hpcState: "Failed" });
    const [run] = await h.store.listRuns("d-001");
    expect(run).toMatchObject({ outcome: "KILLED", decision: "finished" });
    expect(run?.reason).toMatch(/KILLED by its run-time limit: not retried/);
  });

  test("an operator's Armada rule on DeadlineExceeded retries it", async () => {
    const h = await open("deadline-rule");
    await h.register("agent-a", CAP);
    await h.store.createRetryPolicy(
      parseRetryPolicy({
        apiVersion: "cairn.dev/v1",
        kind: "RetryPolicy",
        metadata: { name: "timeouts" },
        spec: { rules: [{ action: "Retry", onConditions: ["DeadlineExceeded"], retryLimit: 1 }] },
      }),
      h.nowMs,
    );
    await h.submit("d-002", {
      name: "d",
      command: ["sleep", "600"],
      timeouts: { running: 30 },
      retry: { policies: ["timeouts"] },
    });
    await h.advance(30_000);
    const again = await h.session("d-002");
    expect(again.session.runIndex, h.stepLog).toBe(1);
    expect(again.session.status).toBe("RUNNING");
    expect(again.session.retry).toMatchObject({ ruleRetries: { "timeouts#0": 1 }, failureCount: 0 });

    // The second run's limit: the rule's one retry is used.
    await h.advance(30_000);
    const done = await h.session("d-002");
    expect(done.session.status, h.stepLog).toBe("TERMINATED");
    expect(done.kernels[0]?.outcome).toBe("KILLED");
    expect(h.errors).toEqual([]);
  });
});

describe("a task that cannot start because of the cluster is retried automatically (HPC Pack)", () => {
  test("three start failures retried (maxRetriesStart default 3), the fourth marks it Failed", async () => {
    const h = await open("start-failed");
    const a = await h.register("agent-a", CAP);
    a.startError = "spawn /usr/bin/train EAGAIN";
    await h.submit("f-001", { name: "f", command: ["train"] });
    // Each retry waits its backoff (0 s) in the execution's Wait state: its end is a timer.
    await h.advance(0);
    const done = await h.session("f-001");
    expect(done.session.status, h.stepLog).toBe("TERMINATED");
    expect(done.session.runIndex).toBe(3);
    expect(done.session.retry).toMatchObject({
      startRetries: 3,
      failureCount: 0,
      totalRetries: 0,
      freeReturns: 3,
    });
    expect(done.kernels[0]).toMatchObject({
      status: "ERROR",
      outcome: "FAILED",
      message: "spawn /usr/bin/train EAGAIN",
    });
    expect(hpcSessionState(done.session, done.kernels)).toBe("Failed");
    const runs = await h.store.listRuns("f-001");
    expect(runs.map((r) => [r.runIndex, r.decision])).toEqual([
      [0, "retry"],
      [1, "retry"],
      [2, "retry"],
      [3, "finished"],
    ]);
    expect(runs[3]?.reason).toMatch(/4 start failures, more than maxRetriesStart 3: not retried$/);
    expect(h.errors).toEqual([]);
  });

  test("a start that fails once is retried and the next run runs; the user's own exit 1 is not retried", async () => {
    const h = await open("start-once");
    const a = await h.register("agent-a", CAP);
    a.startError = "insufficient capacity on agent agent-a";
    await h.submit("f-002", { name: "f", command: ["train"], retry: { maxRetriesStart: 1 } });
    await h.advance(0);
    expect((await h.session("f-002")).session.status, h.stepLog).toBe("TERMINATED");

    a.startError = undefined;
    await h.submit("f-003", { name: "f", command: ["train"] });
    await h.exit("f-003", 0, 1);
    const failed = await h.session("f-003");
    expect(failed.session.status, h.stepLog).toBe("TERMINATED");
    expect(failed.session.runIndex).toBe(0);
    expect(failed.kernels[0]).toMatchObject({ status: "TERMINATED", exitCode: 1, outcome: "FAILED" });
  });
});
