/**
 * inAgentLanes (ScheduleNewSessions): a pass's reservations go out together across agents and
 * one after another on each agent, at most `limit` at once, results in the tasks' order.
 */
import { describe, expect, test } from "vitest";
import { inAgentLanes } from "../functions/app/lifecycle/schedule-new-sessions.ts";

/** A task that records when it starts and ends, and settles when `release` is called. */
function gated(log: string[], name: string, fail = false) {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  return {
    release: () => release(),
    run: async () => {
      log.push(`start ${name}`);
      await gate;
      log.push(`end ${name}`);
      if (fail) throw new Error(`${name} refused`);
      return name;
    },
  };
}

const tick = () => new Promise((r) => setImmediate(r));

describe("reservations in agent lanes", () => {
  test("different agents at once; one agent's one after another, the next after a failure too", async () => {
    const log: string[] = [];
    const a1 = gated(log, "a1", true);
    const a2 = gated(log, "a2");
    const b1 = gated(log, "b1");
    const done = inAgentLanes(
      [
        { agentIds: ["a"], run: a1.run },
        { agentIds: ["a"], run: a2.run },
        { agentIds: ["b"], run: b1.run },
      ],
      8,
    );
    await tick();
    expect(log).toEqual(["start a1", "start b1"]);
    a1.release();
    await tick();
    await tick();
    expect(log).toEqual(["start a1", "start b1", "end a1", "start a2"]);
    a2.release();
    b1.release();
    const settled = await done;
    expect(settled.map((s) => (s.status === "fulfilled" ? s.value : String(s.reason)))).toEqual([
      "Error: a1 refused",
      "a2",
      "b1",
    ]);
  });

  test("a gang across two agents waits for both lanes, and both wait for it", async () => {
    const log: string[] = [];
    const a = gated(log, "a");
    const gang = gated(log, "gang");
    const b = gated(log, "b");
    const done = inAgentLanes(
      [
        { agentIds: ["a"], run: a.run },
        { agentIds: ["a", "b", "a"], run: gang.run },
        { agentIds: ["b"], run: b.run },
      ],
      8,
    );
    await tick();
    expect(log).toEqual(["start a"]);
    a.release();
    await tick();
    await tick();
    expect(log).toEqual(["start a", "end a", "start gang"]);
    gang.release();
    await tick();
    await tick();
    expect(log.at(-1)).toBe("start b");
    b.release();
    expect((await done).every((s) => s.status === "fulfilled")).toBe(true);
  });

  test("at most `limit` run at once, across agents", async () => {
    const log: string[] = [];
    const tasks = ["a", "b", "c"].map((id) => ({ id, ...gated(log, id) }));
    const done = inAgentLanes(
      tasks.map((t) => ({ agentIds: [t.id], run: t.run })),
      2,
    );
    await tick();
    expect(log).toEqual(["start a", "start b"]);
    tasks[0]!.release();
    await tick();
    await tick();
    expect(log).toEqual(["start a", "start b", "end a", "start c"]);
    for (const t of tasks) t.release();
    await done;
  });
});
