/**
 * A coordinator invocation killed between claiming a stage and completing its callback. The
 * claim is in the table (`stage.claimedToken`, with the time), not in the dead invocation's
 * memory: the sweep gives the token back once the claim is older than any claimer lives, and its
 * own passes finish what the dead one started — long before the stage's own timer would have.
 */
import { describe, expect, test } from "vitest";
import { sessionResult } from "../../functions/core/sessions.ts";
import { CAP, CLAIM_LIFETIME_MS, HISTORY_TO_RUNNING, replaysClosedAfterEach, T0 } from "./harness.ts";

const open = replaysClosedAfterEach();

describe("a claimer that dies", () => {
  test("killed after the exit report claimed RUNNING: the claim outlives it in the table, and the first sweep past its lifetime ends the run as it would have ended", async () => {
    const h = await open("killed-mid-claim");
    await h.register("agent-a", CAP);
    // RUNNING's own timer is an hour away: recovery must not wait for it.
    await h.submit("s-001", { name: "killed", command: ["sleep", "60"], timeouts: { running: 3_600 } });
    h.killBeforeComplete = 1;
    await h.exit("s-001", 0, 0);

    // The report's write claimed the stage; the invocation died before the callback went out,
    // and its batch, delivered again, finds the report applied and the stage claimed.
    expect(h.stepLog).toContain(
      "fault: the coordinator's invocation is killed before completing RUNNING's callback",
    );
    const stranded = await h.session("s-001");
    expect(stranded.session.status, h.stepLog).toBe("RUNNING");
    expect(stranded.session.stage.taskToken, h.stepLog).toBeUndefined();
    expect(stranded.session.stage, h.stepLog).toMatchObject({ claimedAtMs: T0 });
    expect(stranded.session.stage.claimedToken, h.stepLog).toBe(
      h.driver.executions.get("s-001")?.open?.token,
    );
    expect(stranded.kernels[0], h.stepLog).toMatchObject({ status: "TERMINATED", exitCode: 0 });

    // Within the claim's lifetime its claimer may still be at work: the sweep leaves it.
    await h.advance(CLAIM_LIFETIME_MS / 2);
    await h.sweep();
    expect((await h.session("s-001")).session.stage.claimedToken, h.stepLog).toBeDefined();

    // One sweep period later the claim has outlived any claimer: the token is given back and the
    // sweep's own passes complete the stage.
    await h.advance(CLAIM_LIFETIME_MS / 2);
    await h.sweep();
    const done = await h.session("s-001");
    expect(sessionResult(done), h.stepLog).toBe("succeeded");
    expect(done.session.updatedAtMs, h.stepLog).toBe(T0 + CLAIM_LIFETIME_MS);
    expect(await h.history("s-001"), h.stepLog).toEqual([
      ...HISTORY_TO_RUNNING,
      "DetectTermination SUCCESS RUNNING->TERMINATING",
      "PromoteToTerminated SUCCESS TERMINATING->TERMINATED",
    ]);
    expect(h.stepLog).toContain("a stage's claim outlived its claimer; its token is given back");
    const [agent] = await h.store.listAgents();
    expect(agent?.free, h.stepLog).toEqual(agent?.capacity);
  });
});
