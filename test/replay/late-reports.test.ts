/**
 * Replayed late reports: the bus delivers at least once and in no promised
 * order, so an agent's report may arrive after the control plane has moved the kernel on.
 * Invariants after every step (harness.ts).
 */
import { afterEach, describe, expect, test } from "vitest";
import { sessionResult } from "../../functions/core/sessions.ts";
import { Replay, CAP } from "./harness.ts";

let h: Replay | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("late reports", () => {
  // Found by this replay: a kernel report named its run (runIndex) but not its placement, so
  // Agents.checkReport accepted a late report answering a placement that was over, when the run
  // was placed again on the same agent. Here placement 0's PREPARED and "stopped before it
  // started" TERMINATED arrive during placement 1: they used to end the kernel TERMINATED
  // (outcome FAILED) without having run, and the start command sent meanwhile left a process
  // running on agent-a for a session that had ended (the no-orphan-process invariant). Now a
  // report echoes its command's `placement` and one of another placement is refused
  // (`detail.placement: … has ended`), as one of another run is.
  test("a report answering an earlier placement of the run does not move the kernel of the current one", async () => {
    h = await Replay.open("late-placement");
    const a = await h.register("agent-a", CAP);
    // agent-a prepares each kernel, but its reports are slow to arrive.
    a.deferReports = true;
    await h.submit("s-001", { name: "late", command: ["true"], timeouts: { preparing: 60 } });
    expect((await h.session("s-001")).session.status, h.stepLog).toBe("PREPARING");

    // No PREPARED in time: the stage expires, the kernel is stopped on agent-a (it answers
    // "stopped before it started", held) and the session is placed again, on agent-a.
    await h.advance(60_000);
    const replaced = await h.session("s-001");
    expect(replaced.session.status, h.stepLog).toBe("PREPARING");
    expect(replaced.session.retry?.freeReturns).toBe(1);
    expect(a.held.map((r) => `${String(r.detail["status"])} ${r.command.placement ?? 0}`)).toEqual([
      "PREPARED 0",
      "TERMINATED 0",
      "PREPARED 1",
    ]);

    // The first placement's reports arrive now: they answer commands of a placement that is over.
    await h.release("agent-a", (c) => (c.placement ?? 0) === 0, "placement 0");
    expect(h.rejections, h.stepLog).toEqual([
      "detail.placement: placement 0 of run 0 of session s-001 has ended (the session is on placement 1)",
      "detail.placement: placement 0 of run 0 of session s-001 has ended (the session is on placement 1)",
    ]);
    const after = await h.session("s-001");
    expect(after.kernels[0]?.status, h.stepLog).toBe("PREPARING");
    expect(after.session.status, h.stepLog).toBe("PREPARING");

    a.deferReports = false;
    await h.release("agent-a", (c) => c.placement === 1, "placement 1");
    expect((await h.session("s-001")).session.status, h.stepLog).toBe("RUNNING");
    await h.exit("s-001", 0, 0);
    expect(sessionResult(await h.session("s-001")), h.stepLog).toBe("succeeded");
  });

  // PULLING is informational. One that arrives after its PREPARED, once the
  // kernel runs, is accepted and changes nothing (no Event Rejected: a late report is not an error).
  test("a PULLING delivered after the kernel runs does not move it back", async () => {
    h = await Replay.open("late-pulling");
    const a = await h.register("agent-a", CAP);
    a.reportsPulling = true;
    a.deferReports = true;
    await h.submit("s-001", { name: "late-pulling", command: ["true"] });
    expect(a.held.map((r) => r.detail["status"])).toEqual(["PULLING", "PREPARED"]);

    // PREPARED overtakes PULLING; the session starts and runs.
    a.deferReports = false;
    await h.release("agent-a", (_, d) => d["status"] === "PREPARED", "PREPARED");
    expect((await h.session("s-001")).session.status, h.stepLog).toBe("RUNNING");

    await h.release("agent-a", (_, d) => d["status"] === "PULLING", "the late PULLING");
    const after = await h.session("s-001");
    expect(h.rejections, h.stepLog).toEqual([]);
    expect(after.session.status, h.stepLog).toBe("RUNNING");
    expect(after.kernels[0]?.status, h.stepLog).toBe("RUNNING");
    await h.exit("s-001", 0, 0);
    expect(sessionResult(await h.session("s-001")), h.stepLog).toBe("succeeded");
  });

  test("PULLING then PREPARED in order: the kernel is recorded PULLING, and the session is not promoted until PREPARED", async () => {
    h = await Replay.open("pulling-in-order");
    const a = await h.register("agent-a", CAP);
    a.reportsPulling = true;
    a.deferReports = true;
    await h.submit("s-001", { name: "pulling", command: ["true"] });
    await h.release("agent-a", (_, d) => d["status"] === "PULLING", "PULLING");
    const pulling = await h.session("s-001");
    expect(pulling.kernels[0]?.status, h.stepLog).toBe("PULLING");
    expect(pulling.session.status, h.stepLog).toBe("PREPARING");

    a.deferReports = false;
    await h.release("agent-a", () => true, "PREPARED");
    expect((await h.session("s-001")).session.status, h.stepLog).toBe("RUNNING");
    expect(h.rejections, h.stepLog).toEqual([]);
  });
});
