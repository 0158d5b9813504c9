/**
 * Replayed early reports: the pass that decides a stage sends its commands to the agents
 * (PrepareSessions the prepare, StartSessions the start) before it completes the stage, so a
 * fast agent's report can reach the coordinator while Step Functions is still carrying the
 * callback on to the next stage's entry. The report moves the kernel forward; the entry, written
 * after it, keeps what the report set (it never moves a kernel back), and the session goes on from
 * there. Step Functions is made slow through the harness's `slowTransitions` fault switch: each
 * execution moves one state per delivery of the bus. Invariants after every step (harness.ts).
 */
import { expect, test } from "vitest";
import { sessionResult } from "../../functions/core/sessions.ts";
import { HISTORY_TO_RUNNING } from "../support/histories.ts";
import { CAP, replaysClosedAfterEach, type Replay } from "./harness.ts";

const open = replaysClosedAfterEach();

/** The position in the step log of the first line that contains `text`. */
function lineOf(h: Replay, text: string): number {
  const i = h.lines.findIndex((l) => l.includes(text));
  if (i < 0) throw new Error(`the step log has no line with "${text}"\n${h.stepLog}`);
  return i;
}

test("the prepare's PREPARED and the start's RUNNING reach the coordinator before PREPARING and CREATING are entered: both are kept, and the session runs", async () => {
  const h = await open("early-reports");
  await h.register("agent-a", CAP);
  h.slowTransitions = true;
  await h.submit("s-001", { name: "early", command: ["sleep", "60"] });

  // Each report was delivered before the entry of the stage it belongs to.
  expect(lineOf(h, "s-001/0 PREPARED"), h.stepLog).toBeLessThan(lineOf(h, "EnterStage PREPARING"));
  expect(lineOf(h, "s-001/0 RUNNING"), h.stepLog).toBeLessThan(lineOf(h, "EnterStage CREATING"));
  const running = await h.session("s-001");
  expect(running.session.status, h.stepLog).toBe("RUNNING");
  expect(running.kernels, h.stepLog).toMatchObject([{ index: 0, status: "RUNNING", agentId: "agent-a" }]);
  expect(await h.history("s-001"), h.stepLog).toEqual(HISTORY_TO_RUNNING);
  expect(h.errors, h.stepLog).toEqual([]);

  await h.exit("s-001", 0, 0);
  expect(sessionResult(await h.session("s-001")), h.stepLog).toBe("succeeded");
});

test("a gang whose kernels exit as they start: every exit is in before CREATING is entered, and the run ends as it would have", async () => {
  const h = await open("early-exits");
  for (const id of ["agent-a", "agent-b"]) (await h.register(id, CAP)).exitsOnStart = 0;
  h.slowTransitions = true;
  await h.submit("s-001", {
    name: "early-gang",
    command: ["true"],
    replicas: 2,
    resources: { cpu: 4 },
  });

  expect(lineOf(h, "s-001/1 TERMINATED"), h.stepLog).toBeLessThan(lineOf(h, "EnterStage CREATING"));
  const done = await h.session("s-001");
  expect(done.session.status, h.stepLog).toBe("TERMINATED");
  expect(sessionResult(done), h.stepLog).toBe("succeeded");
  expect(
    done.kernels.map((k) => [k.index, k.status, k.exitCode]),
    h.stepLog,
  ).toEqual([
    [0, "TERMINATED", 0],
    [1, "TERMINATED", 0],
  ]);
  expect((await h.history("s-001")).slice(0, HISTORY_TO_RUNNING.length), h.stepLog).toEqual(
    HISTORY_TO_RUNNING,
  );
});
