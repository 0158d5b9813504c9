/**
 * HPC Pack's submission filter end to end: a submission filter that fails open — one that times out or
 * throws lets the submission through, and it runs (e2e-admission.test.ts fails closed).
 */
import { afterAll, afterEach, beforeAll, expect, test } from "vitest";
import { FILTER_MODULE, waitForJobEnd } from "./support/admission.ts";
import { assertLifecycleInvariants, startTestRuntime, type TestRuntime } from "./support/runtime.ts";

let rt: TestRuntime;
afterEach(() => assertLifecycleInvariants(rt));
let n = 0;
const newId = (label: string) => `open-${label}-${Date.now().toString(36)}-${n++}`;

beforeAll(async () => {
  rt = await startTestRuntime({
    agents: 1,
    agentCapacity: { cpu: 4, memoryMiB: 4096 },
    submissionFilter: { module: FILTER_MODULE, timeoutMs: 1_000, onFailure: "accept" },
  });
}, 120_000);

afterAll(async () => {
  await rt?.stop();
});

test("the filter timing out fails open: the submission runs", async () => {
  const id = newId("slow");
  await rt.submit({ sessionId: id, spec: { name: "slow", command: ["/bin/true"] } });
  const ended = await waitForJobEnd(rt, id);
  expect(ended.job.final?.state).toBe("SUCCEEDED");
  expect(ended.hpc).toBe("Finished");
  // Its first history record says the filter did not answer and let it through.
  const [first] = await rt.store.listHistory(ended.sessions[0]!.session.id);
  expect(first).toMatchObject({ seq: 0, handler: "Submit", result: "SUBMITTED" });
  expect(first?.message).toContain(
    "the submission filter did not answer (no answer within 1000 ms) and fails open; queued",
  );
}, 60_000);

test("the filter throwing fails open too; its rejections still apply", async () => {
  const thrown = newId("throws");
  await rt.submit({ sessionId: thrown, spec: { name: "throws", command: ["/bin/true"] } });
  expect((await waitForJobEnd(rt, thrown)).job.final?.state).toBe("SUCCEEDED");
  const rejected = newId("reject");
  await rt.submit({ sessionId: rejected, spec: { name: "reject-me", command: ["/bin/true"] } });
  expect((await waitForJobEnd(rt, rejected)).job.final?.state).toBe("FAILED");
}, 60_000);
