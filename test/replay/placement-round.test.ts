/**
 * Replayed: a placement pass plans every target, then sends the reservations (on different
 * agents together, on one agent one after another). A reservation that fails gives back the
 * capacity the pass had counted for it, and the sessions that waited are placed again in the
 * same pass, as they were when reservations went one by one. Sessions on the same agent are
 * reserved in one write; refused, each is reserved alone.
 */
import { expect, test } from "vitest";
import type { DynamoSessionStore } from "../../functions/adapters/dynamo/dynamo-session-store.ts";
import { CAP, replaysClosedAfterEach } from "./harness.ts";

const open = replaysClosedAfterEach();

/** A competing write: the session's version moves on, nothing else. */
function movesOn(clock: { readonly nowMs: number }, sessionId: string) {
  return async (store: DynamoSessionStore): Promise<void> => {
    const { session } = (await store.getSession(sessionId))!;
    await store.applyWrite({
      sessionId,
      expected: { status: session.status, version: session.version },
      nowMs: clock.nowMs,
    });
  };
}

test("a reservation refused mid-pass gives its capacity to the session that waited for it, in the same pass", async () => {
  const h = await open("placement-round");
  const spec = (name: string) => ({ name, command: ["true"], resources: { cpu: CAP.cpu } });
  // No agent yet: both wait, oldest first.
  await h.submit("s-001", spec("first"));
  await h.submit("s-002", spec("second"));
  expect((await h.session("s-001")).session.status, h.stepLog).toBe("PENDING");
  expect((await h.session("s-002")).session.status, h.stepLog).toBe("PENDING");

  // Room for one. Just before its reservation, another writer moves s-001 on (its version):
  // the reservation is refused, and the capacity planned for it is free after all.
  h.interpose("reserveCapacity", movesOn(h, "s-001"));
  await h.register("agent-a", CAP);

  expect((await h.session("s-002")).kernels[0]?.agentId, h.stepLog).toBe("agent-a");
  expect((await h.session("s-002")).session.status, h.stepLog).not.toBe("PENDING");
  expect((await h.session("s-001")).session.status, h.stepLog).toBe("PENDING");
  const reservations = h.storeCalls.filter((c) => c.method === "reserveCapacity").map((c) => c.sessionId);
  expect(reservations.slice(0, 2), h.stepLog).toEqual(["s-001", "s-002"]);
});

test("sessions placed on one agent are reserved in one write; refused, each is reserved alone in the same pass", async () => {
  const h = await open("placement-together");
  const third = (name: string) => ({ name, command: ["true"], resources: { cpu: CAP.cpu / 4 } });
  for (const id of ["t-001", "t-002", "t-003"]) await h.submit(id, third(id));
  await h.register("agent-a", CAP);
  for (const id of ["t-001", "t-002", "t-003"])
    expect((await h.session(id)).kernels[0]?.agentId, h.stepLog).toBe("agent-a");
  const reservations = h.storeCalls.filter((c) => c.method.startsWith("reserveCapacity"));
  expect(
    reservations.map((c) => c.method),
    h.stepLog,
  ).toEqual(["reserveCapacityTogether"]);

  // Three more, each larger than agent-a: they wait for agent-b. Just before their write, another
  // writer moves u-002 on: the write is refused, and the other two are placed alone in the same pass.
  const large = (name: string) => ({ name, command: ["true"], resources: { cpu: CAP.cpu + 1 } });
  for (const id of ["u-001", "u-002", "u-003"]) await h.submit(id, large(id));
  h.interpose("reserveCapacityTogether", movesOn(h, "u-002"));
  const before = h.storeCalls.length;
  await h.register("agent-b", { cpu: 3 * (CAP.cpu + 1), memoryMiB: CAP.memoryMiB });
  expect((await h.session("u-001")).kernels[0]?.agentId, h.stepLog).toBe("agent-b");
  expect((await h.session("u-003")).kernels[0]?.agentId, h.stepLog).toBe("agent-b");
  const alone = h.storeCalls
    .slice(before)
    .filter((c) => c.method.startsWith("reserveCapacity"))
    .map((c) => c.sessionId ?? c.method);
  expect(alone.slice(0, 4), h.stepLog).toEqual(["reserveCapacityTogether", "u-001", "u-002", "u-003"]);
});
