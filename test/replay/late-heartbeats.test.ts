/**
 * Replayed late heartbeats: EventBridge and SQS hand an event over at least once and possibly
 * long after the bus took it (a target's retries; a failed batch comes back only after its
 * visibility timeout, 90 s on AWS). A heartbeat counts as of when the bus took it (the envelope's
 * `time`), so a dead agent's last heartbeat, handed over late, does not keep it alive longer.
 * Invariants after every step (harness.ts).
 */
import { afterEach, describe, expect, test } from "vitest";
import { DetailType, EventSource } from "../../functions/core/events.ts";
import { AGENT_TIMEOUT_MS, CAP, HEARTBEAT_MS, Replay, T0 } from "./harness.ts";

let h: Replay | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("late heartbeats", () => {
  test("a dead agent's last heartbeat handed over 15 s late counts as of when it was sent: the agent is lost on time", async () => {
    h = await Replay.open("late-heartbeat");
    const a = await h.register("agent-a", CAP);
    await h.register("agent-b", CAP);
    await h.advance(HEARTBEAT_MS);
    expect((await h.store.getAgent("agent-a"))?.lastHeartbeatAtMs, h.stepLog).toBe(T0 + HEARTBEAT_MS);

    // agent-a's next heartbeat is put on the bus at t+20 s, and then its host dies; the bus
    // hands the heartbeat over only at t+35 s. agent-b's heartbeats go on every 10 s.
    a.silent = true;
    await h.advance(HEARTBEAT_MS);
    const sentAtMs = h.nowMs;
    const detail = a.sign(DetailType.AgentHeartbeat, {
      agentId: a.id,
      incarnation: a.incarnation,
      capacity: { ...CAP },
      atMs: sentAtMs,
    });
    await h.advance(15_000);
    await h.put("agent-a's last heartbeat, handed over late", {
      source: EventSource.Agent,
      detailType: DetailType.AgentHeartbeat,
      detail,
      sentAtMs,
    });
    // As of when the bus took it (the end of the envelope's second), not when it was handed over.
    expect((await h.store.getAgent("agent-a"))?.lastHeartbeatAtMs, h.stepLog).toBe(sentAtMs + 999);

    // Silent past the window since t+21 s: lost by agent-b's heartbeat at t+60 s (counted as of
    // its handover at t+35 s, it would look alive until t+65 s).
    await h.advance(sentAtMs + AGENT_TIMEOUT_MS + HEARTBEAT_MS - h.nowMs);
    expect(h.nowMs).toBe(T0 + 60_000);
    const lost = await h.store.getAgent("agent-a");
    expect(lost?.lostAtMs, h.stepLog).toBeDefined();
    expect(h.errors).toEqual([]);
  });

  test("an older heartbeat handed over after a newer one moves the agent's time neither back nor forward", async () => {
    h = await Replay.open("heartbeat-order");
    const a = await h.register("agent-a", CAP);
    await h.advance(HEARTBEAT_MS);
    // Handed over 3 s after the newer one (sent at t+10 s) was; sent itself at t+5 s.
    await h.advance(3_000);
    const olderSentAtMs = T0 + 5_000;
    const older = a.sign(DetailType.AgentHeartbeat, {
      agentId: a.id,
      incarnation: a.incarnation,
      capacity: { ...CAP },
      atMs: olderSentAtMs,
    });
    await h.put("an older heartbeat of agent-a, handed over after its newer one", {
      source: EventSource.Agent,
      detailType: DetailType.AgentHeartbeat,
      detail: older,
      sentAtMs: olderSentAtMs,
    });
    expect((await h.store.getAgent("agent-a"))?.lastHeartbeatAtMs, h.stepLog).toBe(T0 + HEARTBEAT_MS);
    expect(h.errors).toEqual([]);
  });
});
