/**
 * Replayed agent restarts: an agent process that starts again registers a new
 * incarnation; what the old one ran is lost (WORKER_FAILED) and retried, and the old one's late
 * reports are refused. Invariants after every step (harness.ts).
 */
import { afterEach, describe, expect, test } from "vitest";
import { sessionResult } from "../../functions/core/sessions.ts";
import { Replay, type ScriptedAgent, CAP } from "./harness.ts";

let h: Replay | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** s-001 runs on agent-a, whose process then starts again (a new incarnation registers). */
async function restartMidRun(name: string): Promise<{ h: Replay; old: ScriptedAgent }> {
  const replay = await Replay.open(name);
  h = replay;
  const old = await replay.register("agent-a", CAP);
  await replay.submit("s-001", { name: "restart", command: ["sleep", "600"] });
  expect((await replay.session("s-001")).session.status, replay.stepLog).toBe("RUNNING");
  await replay.advance(5_000);
  await replay.register("agent-a", CAP);
  expect(replay.agent("agent-a").incarnation).toBe("inc-agent-a-2");
  // What the old process ran is lost: the run is recorded WORKER_FAILED in the registration's run.
  const [run0] = await replay.store.listRuns("s-001");
  expect(run0?.kernels[0], replay.stepLog).toMatchObject({
    outcome: "WORKER_FAILED",
    condition: "AgentLost",
  });
  return { h: replay, old };
}

describe("agent restarts", () => {
  test("an agent restarting mid-RUNNING: the run is retried; the old incarnation's report is refused", async () => {
    const { h, old } = await restartMidRun("restart");
    // The retry's backoff (0 s) is the execution's Wait state: the clock reaches it.
    await h.advance(0);
    const retried = await h.session("s-001");
    expect(retried.session.status, h.stepLog).toBe("RUNNING");
    expect(retried.session.runIndex, h.stepLog).toBe(1);
    expect(retried.kernels[0]?.agentId).toBe("agent-a");
    const [run0] = await h.store.listRuns("s-001");
    expect(run0?.kernels[0]).toMatchObject({ outcome: "WORKER_FAILED", condition: "AgentLost" });

    // The old process's end, reported late by the old incarnation.
    await h.step("the old incarnation reports its kernel's end", () => old.exit("s-001", 0, 137));
    expect(h.rejections, h.stepLog).toEqual([
      "detail.incarnation: inc-agent-a-1 is not agent agent-a's registered incarnation",
    ]);
    expect((await h.session("s-001")).kernels[0]?.status).toBe("RUNNING");

    await h.exit("s-001", 0, 0);
    const done = await h.session("s-001");
    expect(sessionResult(done), h.stepLog).toBe("succeeded");
    expect((await h.store.listRuns("s-001")).map((r) => [r.runIndex, r.decision])).toEqual([
      [0, "retry"],
      [1, "finished"],
    ]);
    expect(h.errors).toEqual([]);
  });

  // Found by this replay: a registration that retires the agent's old incarnation ends the
  // kernels it ran WORKER_FAILED, and the coordinator's run then wakes every status, as for an
  // agent lost by silence, so the RUNNING session moves on without waiting for the sweep.
  test("an agent restarting mid-RUNNING: the run is retried at once, without waiting for the sweep", async () => {
    const { h } = await restartMidRun("restart-no-sweep");
    await h.advance(0);
    const retried = await h.session("s-001");
    expect(retried.session.status, h.stepLog).toBe("RUNNING");
    expect(retried.session.runIndex, h.stepLog).toBe(1);
  });
});
