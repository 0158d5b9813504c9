/**
 * Job run-time limits end to end (HPC Pack's rules), with real processes on one local agent: a
 * job's run-time limit (`timeouts.job`) cancelling a running job, and the cancellation rules in the
 * HPC view — a running task that is cancelled is Failed, one cancelled before it started Canceled,
 * while the Sokovan status reads TERMINATED / CANCELLED. The limit is checked by the sweep, every
 * second here (the test runtime's default is 5 s).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { hpcJobState, hpcSessionState } from "../functions/core/hpc-view.ts";
import { jobTasks, type TaskView } from "../functions/core/jobs.ts";
import type { Job } from "../functions/core/model.ts";
import { TERMINAL_SESSION_STATUSES } from "../functions/core/status.ts";
import { runCairn } from "./support/cli.ts";
import { until } from "./support/until.ts";
import { assertLifecycleInvariants, startTestRuntime, type TestRuntime } from "./support/runtime.ts";

let rt: TestRuntime;
afterEach(() => assertLifecycleInvariants(rt));
let n = 0;
const newId = (label: string) => `lim-${label}-${Date.now().toString(36)}-${n++}`;
const sh = (script: string) => ["/bin/sh", "-c", script];

beforeAll(async () => {
  // One agent of 4 cpu: tasks of 4 cpu run one at a time.
  rt = await startTestRuntime({ agents: 1, agentCapacity: { cpu: 4, memoryMiB: 4096 }, sweepMs: 1_000 });
}, 120_000);

afterAll(async () => {
  await rt?.stop();
});

async function jobNow(jobId: string): Promise<{ job: Job; tasks: TaskView[] } | undefined> {
  const job = await rt.store.getJob(jobId);
  if (!job) return undefined;
  return { job, tasks: jobTasks(job, await rt.store.getSessions(job.sessionIds)) };
}

async function waitForJob(
  jobId: string,
  predicate: (s: { job: Job; tasks: TaskView[] }) => boolean,
  what: string,
  timeoutMs = 40_000,
): Promise<{ job: Job; tasks: TaskView[] }> {
  const deadline = Date.now() + timeoutMs;
  let last: { job: Job; tasks: TaskView[] } | undefined;
  while (Date.now() < deadline) {
    last = await jobNow(jobId);
    if (last && predicate(last)) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(
    `job ${jobId} did not reach ${what} within ${timeoutMs} ms; last seen: ${JSON.stringify(
      last && { final: last.job.final, tasks: last.tasks.map((t) => [t.sessionStatus, t.state, t.hpcState]) },
    )}`,
  );
}

const settled = (s: { job: Job; tasks: TaskView[] }) =>
  s.job.final !== undefined && s.tasks.every((t) => TERMINAL_SESSION_STATUSES.has(t.sessionStatus));

describe("a job's run-time limit (timeouts.job)", () => {
  test("cancels the running job: the task running then ends Failed, the one not started Canceled, the job Canceled with the limit as its reason", async () => {
    const id = newId("job");
    // Whichever task runs first finishes after 2 s; the next then runs until the job's limit
    // (8 s from the first start) cancels the job; the third is still waiting for the agent.
    const marker = mkdtempSync(join(tmpdir(), "cairn-limit-"));
    await rt.submit({
      sessionId: id,
      spec: {
        name: "limited",
        replicas: 3,
        coscheduled: false,
        resources: { cpu: 4, memoryMiB: 64 },
        // timeouts.running unwritten: its default capped at the job's limit (8), so the second
        // task's own limit (8 s from its start) comes after the job's.
        timeouts: { job: 8 },
        command: sh(`if mkdir "${marker}/first" 2>/dev/null; then sleep 2; exit 0; fi; exec sleep 60`),
      },
    });
    const job = await waitForJob(id, () => true, "the job to exist");
    expect(job.job.spec.timeouts).toMatchObject({ running: 8, job: 8 });
    const done = await waitForJob(id, settled, "the job cancelled by its limit");

    const reason = "job run-time limit of 8 s (timeouts.job) exceeded";
    expect(done.job.final?.state).toBe("KILLED");
    expect(done.job.final?.reason).toMatch(
      /^[12] tasks? killed: job run-time limit of 8 s \(timeouts\.job\) exceeded$/,
    );
    expect(
      hpcJobState({
        tasks: done.tasks.map((t) => t.hpcState),
        final: done.job.final!.state,
        cancelRequested: false,
      }),
    ).toBe("Canceled");

    // One task finished on its own; one was running when the limit passed; one never started.
    const byHpc = (state: string) => done.tasks.filter((t) => t.hpcState === state);
    expect(byHpc("Finished").map((t) => [t.sessionStatus, t.state, t.exitCode])).toEqual([
      ["TERMINATED", "SUCCEEDED", 0],
    ]);
    expect(byHpc("Failed").map((t) => [t.sessionStatus, t.state, t.reason])).toEqual([
      ["TERMINATED", "KILLED", reason],
    ]);
    expect(byHpc("Failed")[0]?.startedAtMs).toBeDefined();
    expect(byHpc("Canceled").map((t) => [t.sessionStatus, t.state, t.reason, t.startedAtMs])).toEqual([
      ["CANCELLED", "KILLED", reason, undefined],
    ]);

    // Cancelled after the limit, within about a sweep period (1 s here) and the stop.
    const firstStartMs = byHpc("Finished")[0]!.startedAtMs!;
    const cancelledAtMs = (await rt.store.getSession(byHpc("Failed")[0]!.sessionId))!.session
      .cancelRequestedAtMs!;
    expect(cancelledAtMs - firstStartMs).toBeGreaterThanOrEqual(8_000);
    expect(cancelledAtMs - firstStartMs).toBeLessThan(8_000 + 5_000);
  }, 60_000);
});

describe("cancellation rules in the HPC view", () => {
  test("a running task that is cancelled ends Failed (TERMINATED); one cancelled before it ran Canceled (CANCELLED)", async () => {
    const running = newId("run");
    const waiting = newId("wait");
    await rt.submit({
      sessionId: running,
      spec: { name: "running", resources: { cpu: 1, memoryMiB: 64 }, command: sh("exec sleep 60") },
    });
    // No agent has 64 cpu: it waits in PENDING, never started.
    await rt.submit({
      sessionId: waiting,
      spec: { name: "waiting", resources: { cpu: 64, memoryMiB: 64 }, command: sh("exec sleep 60") },
    });
    await rt.waitForStatus(running, "RUNNING");
    await rt.waitFor(waiting, (s) => s.session.pendingReason !== undefined, "a pending reason");
    await rt.cancel(running, "not needed");
    await rt.cancel(waiting, "not needed");

    const ranEnd = await rt.waitForEnd(running);
    const waitedEnd = await rt.waitForEnd(waiting);
    expect(ranEnd.session.status).toBe("TERMINATED");
    expect(hpcSessionState(ranEnd.session, ranEnd.kernels)).toBe("Failed");
    expect(waitedEnd.session.status).toBe("CANCELLED");
    expect(hpcSessionState(waitedEnd.session, waitedEnd.kernels)).toBe("Canceled");

    // The same through the jobs (a session is a job of one task) and their tasks.
    const ranJob = await waitForJob(running, settled, "the running job settled");
    const waitedJob = await waitForJob(waiting, settled, "the waiting job settled");
    expect(ranJob.tasks.map((t) => [t.state, t.hpcState, t.reason])).toEqual([
      ["KILLED", "Failed", "not needed"],
    ]);
    expect(waitedJob.tasks.map((t) => [t.state, t.hpcState, t.reason])).toEqual([
      ["KILLED", "Canceled", "not needed"],
    ]);
    for (const { job, tasks } of [ranJob, waitedJob]) {
      expect(job.final).toMatchObject({ state: "KILLED", reason: "1 task killed: not needed" });
      expect(
        hpcJobState({ tasks: tasks.map((t) => t.hpcState), final: job.final!.state, cancelRequested: false }),
      ).toBe("Canceled");
    }
  }, 60_000);
  test("Force Cancel: a run whose agent stopped answering ends at once, Failed (HPC), its capacity given back", async () => {
    const id = newId("force");
    await rt.submit({
      sessionId: id,
      spec: { name: "stuck", resources: { cpu: 4, memoryMiB: 64 }, command: sh("exec sleep 60") },
    });
    await rt.waitForStatus(id, "RUNNING");
    const agent = rt.runtime.agents[0]!;
    // The agent stops answering, but is not yet lost (30 s): a plain cancel waits for its report.
    process.kill(agent.pid, "SIGSTOP");
    try {
      await rt.cancel(id, "stuck");
      await rt.waitForStatus(id, "TERMINATING");
      // The stage is entered first, and its pass marks the kernel TERMINATING (the stop sent) in
      // a write of its own right after; the session stays TERMINATING, waiting for the report.
      const terminating = await until("the stop sent to the stopped agent", async () => {
        const now = (await rt.store.getSession(id))!;
        return now.kernels[0]?.status === "TERMINATING" ? now : undefined;
      });
      expect(terminating.session.status).toBe("TERMINATING");
      expect(terminating.kernels.map((k) => k.status)).toEqual(["TERMINATING"]);

      const run = await runCairn(rt.dataDir, ["cancel", id, "--force"]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toContain(`force cancel requested for session ${id} (it was TERMINATING)`);
      const ended = await rt.waitForEnd(id, 15_000);
      expect(ended.session.status).toBe("TERMINATED");
      expect(ended.session.cancelForcedAtMs).toBeGreaterThan(ended.session.cancelRequestedAtMs!);
      expect(ended.kernels).toEqual([
        expect.objectContaining({
          status: "TERMINATED",
          outcome: "KILLED",
          message: `force cancelled: killed without a grace period; its end was not waited for on agent ${agent.id}`,
        }),
      ]);
      expect(hpcSessionState(ended.session, ended.kernels)).toBe("Failed");
      expect((await rt.store.getAgent(agent.id))?.free.cpu).toBe(4);
    } finally {
      process.kill(agent.pid, "SIGCONT");
    }
    // The agent, answering again, kills the process; its late report changes nothing.
    await new Promise((r) => setTimeout(r, 1_500));
    const after = await rt.store.getSession(id);
    expect(after?.session.status).toBe("TERMINATED");
    expect(after?.kernels[0]?.message).toMatch(/^force cancelled/);
  }, 60_000);
});
