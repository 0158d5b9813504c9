/**
 * Replayed lifecycles of one session (issue 12, item 8): scripted steps through the real
 * coordinator and EnterStage on DynamoDB Local, a simulated clock, invariants after every step
 * (harness.ts). Each scenario opens its own table, so ids repeat across scenarios.
 */
import { afterEach, describe, expect, test } from "vitest";
import { sessionResult } from "../../functions/core/sessions.ts";
import { Replay, T0 } from "./harness.ts";

let h: Replay | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function open(name: string): Promise<Replay> {
  h = await Replay.open(name);
  return h;
}

const CAP = { cpu: 4, memoryMiB: 4096 };

describe("one session, replayed", () => {
  test("happy path: one kernel runs PENDING → … → TERMINATED with its full history", async () => {
    const h = await open("happy");
    await h.register("agent-a", CAP);
    await h.submit("s-001", { name: "hello", command: ["echo", "hello"] });
    const running = await h.session("s-001");
    expect(running.session.status, h.stepLog).toBe("RUNNING");
    expect(running.kernels, h.stepLog).toMatchObject([{ index: 0, status: "RUNNING", agentId: "agent-a" }]);

    await h.advance(5_000);
    await h.exit("s-001", 0, 0);

    const done = await h.session("s-001");
    expect(done.session.status, h.stepLog).toBe("TERMINATED");
    expect(sessionResult(done)).toBe("succeeded");
    expect(done.kernels).toMatchObject([
      { index: 0, status: "TERMINATED", exitCode: 0, outcome: "SUCCEEDED" },
    ]);
    expect(await h.history("s-001"), h.stepLog).toEqual([
      "Submit SUBMITTED PENDING->PENDING",
      "ScheduleNewSessions SUCCESS PENDING->SCHEDULED",
      "PrepareSessions SUCCESS SCHEDULED->PREPARING",
      "PromoteToPrepared SUCCESS PREPARING->PREPARED",
      "StartSessions SUCCESS PREPARED->CREATING",
      "PromoteToRunning SUCCESS CREATING->RUNNING",
      "DetectTermination SUCCESS RUNNING->TERMINATING",
      "TerminateSessions SUCCESS TERMINATING->TERMINATED",
    ]);
    expect(h.statusChanges.filter((c) => c.sessionId === "s-001").map((c) => c.to)).toEqual([
      "PENDING",
      "SCHEDULED",
      "PREPARING",
      "PREPARED",
      "CREATING",
      "RUNNING",
      "TERMINATING",
      "TERMINATED",
    ]);
    expect(done.session.updatedAtMs).toBe(T0 + 5_000);
    expect(await h.store.allocationsOf("s-001")).toEqual([]);
    expect(h.driver.executions.get("s-001")?.status).toBe("SUCCEEDED");
    expect(h.errors).toEqual([]);
    if (process.env["REPLAY_LOG"]) console.log(h.stepLog);
  });
});
