/**
 * The run snapshot and the agent cache (functions/app/snapshot.ts), against a recording store:
 * what they read, and when they read again.
 */
import { describe, expect, test } from "vitest";
import { AgentCache, agentCacheTtlMs, RunSnapshot } from "../functions/app/snapshot.ts";
import type { Agent, SessionWithKernels } from "../functions/core/model.ts";
import { newSession } from "./store-fixtures.ts";

class RecordingStore {
  readonly sessionReads: string[][] = [];
  readonly agentReads: string[] = [];
  readonly sessions = new Map<string, SessionWithKernels>();
  readonly agents = new Map<string, Agent>();
  failNextAgentRead = false;

  getSessions(ids: readonly string[]): Promise<SessionWithKernels[]> {
    this.sessionReads.push([...ids]);
    return Promise.resolve(ids.flatMap((id) => (this.sessions.has(id) ? [this.sessions.get(id)!] : [])));
  }

  getAgent(id: string): Promise<Agent | undefined> {
    this.agentReads.push(id);
    if (this.failNextAgentRead) {
      this.failNextAgentRead = false;
      return Promise.reject(new Error("throttled"));
    }
    return Promise.resolve(this.agents.get(id));
  }
}

function agent(id: string, incarnation: string): Agent {
  return { id, incarnation } as unknown as Agent;
}

describe("RunSnapshot", () => {
  test("the sessions a run names are read once, in one request; a forgotten one is read again", async () => {
    const store = new RecordingStore();
    for (const id of ["a", "b"]) store.sessions.set(id, newSession(id));
    const snapshot = new RunSnapshot(store);
    expect((await snapshot.sessions(["a", "b", "missing", "a"])).map((s) => s.session.id)).toEqual([
      "a",
      "b",
    ]);
    await snapshot.sessions(["b", "a"]);
    expect(await snapshot.session("missing")).toBeUndefined();
    expect(store.sessionReads).toEqual([["a", "b", "missing"]]);
    snapshot.forget("a");
    await snapshot.sessions(["a", "b"]);
    expect(store.sessionReads).toEqual([["a", "b", "missing"], ["a"]]);
  });

  test("copies read some other way replace those held; clear reads everything again", async () => {
    const store = new RecordingStore();
    store.sessions.set("a", newSession("a"));
    const snapshot = new RunSnapshot(store);
    const newer = newSession("a", { priority: 7 });
    snapshot.remember([newer]);
    expect(await snapshot.session("a")).toBe(newer);
    expect(store.sessionReads).toEqual([]);
    snapshot.clear();
    await snapshot.session("a");
    expect(store.sessionReads).toEqual([["a"]]);
  });
});

describe("AgentCache", () => {
  test("an agent is read once per time to live", async () => {
    const store = new RecordingStore();
    store.agents.set("x", agent("x", "i1"));
    let nowMs = 0;
    const cache = new AgentCache(store, { nowMs: () => nowMs }, 1_000);
    await cache.get("x");
    nowMs = 999;
    await cache.get("x");
    expect(store.agentReads).toEqual(["x"]);
    nowMs = 1_000;
    await cache.get("x");
    expect(store.agentReads).toEqual(["x", "x"]);
  });

  test("a copy of another incarnation than the caller's is read again, and the newer one kept", async () => {
    const store = new RecordingStore();
    store.agents.set("x", agent("x", "old"));
    const cache = new AgentCache(store, { nowMs: () => 0 }, 1_000);
    expect((await cache.get("x"))?.incarnation).toBe("old");
    store.agents.set("x", agent("x", "new"));
    expect((await cache.get("x", "new"))?.incarnation).toBe("new");
    expect((await cache.get("x"))?.incarnation).toBe("new");
    expect(store.agentReads).toEqual(["x", "x"]);
  });

  test("a failed read is not remembered; forget reads again", async () => {
    const store = new RecordingStore();
    store.agents.set("x", agent("x", "i1"));
    const cache = new AgentCache(store, { nowMs: () => 0 }, 1_000);
    store.failNextAgentRead = true;
    await expect(cache.get("x")).rejects.toThrow("throttled");
    expect((await cache.get("x"))?.incarnation).toBe("i1");
    cache.forget("x");
    await cache.get("x");
    expect(store.agentReads).toEqual(["x", "x", "x"]);
  });

  test("the time to live is a tenth of the liveness window, from 250 ms to 5 s", () => {
    // A test runtime's 3 s window, the runtime's default of 30 s, the stack's default of 90 s.
    expect(agentCacheTtlMs(3_000)).toBe(300);
    expect(agentCacheTtlMs(30_000)).toBe(3_000);
    expect(agentCacheTtlMs(90_000)).toBe(5_000);
    expect(agentCacheTtlMs(1_000)).toBe(250);
  });
});
