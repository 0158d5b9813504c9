/**
 * Replayed: a kernel report that meets a competing write. DynamoDB refuses the
 * report's write and returns the session as it stands; the coordinator plans again from that
 * copy and does not read the session again, before the write or after it. And a batch's reports
 * for different sessions, which write different items, are written at once.
 */
import { expect, test } from "vitest";
import { KernelStatus } from "../../functions/core/status.ts";
import { CAP, replaysClosedAfterEach } from "./harness.ts";

const open = replaysClosedAfterEach();

test("a report refused by a competing write is written again from the refusal's copy, with no read", async () => {
  const h = await open("report-conflict");
  const a = await h.register("agent-a", CAP);
  a.reportsPulling = true;
  a.deferReports = true;
  await h.submit("s-001", { name: "conflict", command: ["true"] });
  expect(a.held.map((r) => r.detail["status"])).toEqual(["PULLING", "PREPARED"]);

  // Just before the coordinator writes the PULLING report, another writer changes the kernel.
  h.interpose("patchKernels", async (store) => {
    const { session, kernels } = (await store.getSession("s-001"))!;
    const kernel = kernels[0]!;
    await store.patchKernels(
      "s-001",
      session,
      [{ index: 0, expectedVersion: kernel.version ?? 0, message: "a competing writer" }],
      h.nowMs,
    );
  });
  const from = h.storeCalls.length;
  await h.release("agent-a", (_, d) => d["status"] === "PULLING", "PULLING");

  // The batch's one read, the refused write, the write again: nothing read between them or
  // after them (before, each write was followed by a read of the session).
  const calls = h.storeCalls.slice(from).map((c) => c.method);
  expect(calls, h.stepLog).toEqual(["getSessions", "patchKernels", "patchKernels"]);
  const { kernels } = await h.session("s-001");
  expect(kernels[0]).toMatchObject({ status: KernelStatus.PULLING, message: "a competing writer" });
  expect(h.rejections, h.stepLog).toEqual([]);

  a.deferReports = false;
  await h.release("agent-a", () => true, "PREPARED");
  expect((await h.session("s-001")).session.status, h.stepLog).toBe("RUNNING");
});

test("a batch's reports for different sessions are written at once, one write each", async () => {
  const h = await open("report-side-by-side");
  const a = await h.register("agent-a", CAP);
  a.reportsPulling = true;
  a.deferReports = true;
  const ids = ["s-001", "s-002", "s-003"];
  for (const id of ids) await h.submit(id, { name: id, command: ["true"], resources: { cpu: 1 } });
  const pulling = (d: Record<string, unknown>) => d["status"] === "PULLING";
  expect(a.held.filter((r) => pulling(r.detail)).map((r) => r.detail["sessionId"])).toEqual(ids);

  // Three PULLING reports (each a write of its kernel alone) in one batch.
  h.mostAtOnce.delete("patchKernels");
  const from = h.storeCalls.length;
  await h.release("agent-a", (_, d) => pulling(d), "three PULLING reports");
  const patches = h.storeCalls.slice(from).filter((c) => c.method === "patchKernels");
  expect(patches.map((c) => c.sessionId).sort(), h.stepLog).toEqual(ids);
  // One after another, the third would wait for two round trips; side by side, none waits.
  expect(h.mostAtOnce.get("patchKernels"), h.stepLog).toBe(3);
  for (const id of ids)
    expect((await h.session(id)).kernels[0]?.status, h.stepLog).toBe(KernelStatus.PULLING);

  a.deferReports = false;
  await h.release("agent-a", () => true, "PREPARED");
  for (const id of ids) expect((await h.session(id)).session.status, h.stepLog).toBe("RUNNING");
});
