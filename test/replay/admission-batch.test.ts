/**
 * A batch's submissions go through the submission filter at once: the filter is
 * an administrator's Lambda function, and asked one after another its calls would pace intake.
 * Planned together, and the new jobs stored together: what each admission writes is unchanged.
 */
import { describe, expect, test } from "vitest";
import type { SubmissionFilterRequest } from "../../functions/core/submission-filter.ts";
import { CAP, replaysClosedAfterEach } from "./harness.ts";

/** A filter that answers once every call of the batch has arrived (or after 2 s), recording overlap. */
function gatheringFilter(expected: number) {
  const calls: string[] = [];
  let inFlight = 0;
  let most = 0;
  let release: () => void = () => undefined;
  const all = new Promise<void>((resolve) => (release = resolve));
  const port = {
    async ask(request: SubmissionFilterRequest): Promise<unknown> {
      calls.push(request.jobId);
      most = Math.max(most, ++inFlight);
      if (inFlight >= expected) release();
      await Promise.race([all, new Promise((resolve) => setTimeout(resolve, 2_000))]);
      inFlight--;
      return request.spec.name === "refused"
        ? { decision: "reject", reason: "not this one" }
        : { decision: "accept" };
    },
  };
  return { port, calls, most: () => most };
}

describe("a batch of submissions and the submission filter", () => {
  const filter = gatheringFilter(3);
  const open = replaysClosedAfterEach({
    submissionFilter: { port: filter.port, timeoutMs: 5_000, onFailure: "reject" },
  });

  test("four submissions of three jobs in one batch are filtered at once; each is stored as it was decided", async () => {
    const h = await open("admission-batch");
    await h.register("agent-a", CAP);
    const submit = (id: string, name: string) => ({
      source: "cairn.client",
      detailType: "Session Submitted",
      detail: { sessionId: id, spec: { name, command: ["true"], resources: { cpu: 1 } } },
    });
    await h.put(
      "four submissions",
      submit("s-001", "one"),
      submit("s-002", "refused"),
      submit("s-003", "three"),
      submit("s-001", "one"),
    );
    // Three jobs, each asked once (the repeat of s-001 in the same batch is not asked again).
    expect(filter.calls.sort()).toEqual(["s-001", "s-002", "s-003"]);
    expect(filter.most()).toBe(3);
    // The three jobs are stored at once (the refused one as its refusal, FAILED); the repeat of
    // s-001 in its turn, after them.
    expect(h.mostAtOnce.get("createJobWithSessions"), h.stepLog).toBe(3);
    expect((await h.store.getJob("s-002"))?.final).toMatchObject({
      state: "FAILED",
      reason: "rejected by the submission filter: not this one",
    });
    for (const id of ["s-001", "s-003"]) {
      expect((await h.session(id)).session.status, h.stepLog).toBe("RUNNING");
    }
    expect(h.errors).toEqual([]);
  });
});
