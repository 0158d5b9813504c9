/**
 * Preemption against DynamoDB Local, one step at a time with a frozen clock: the store's
 * lowest-priority-first read, the preemption step after a scheduling pass (victims claimed and
 * their stages completed with a PREEMPTED transition), the victim's stage entry (free requeue,
 * or TERMINATING whose kernels are stopped as Preempted), and the pending reasons on the way.
 * The lifecycle executions and the bus are fakes that record what they are asked to do.
 */
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import type { CairnConfig } from "../functions/config.ts";
import type { DynamoSessionStore } from "../functions/adapters/dynamo/dynamo-session-store.ts";
import { enterStage } from "../functions/app/enter-stage.ts";
import type { KernelCommandDetailInput } from "../functions/core/ports/event-bus.ts";
import type { Logger } from "../functions/app/logger.ts";
import { RunSnapshot } from "../functions/app/snapshot.ts";
import { KernelCommands } from "../functions/app/kernel-commands.ts";
import type { AgentChannelPort, AgentDelivery } from "../functions/core/ports/agent-channel.ts";
import type { EventsPort } from "../functions/core/ports/event-bus.ts";
import type { LifecycleExecutionsPort } from "../functions/core/ports/lifecycle-executions.ts";
import { Preemption } from "../functions/app/preemption.ts";
import type { Agent, SessionWithKernels, StageTransition } from "../functions/core/model.ts";
import type { HandlerResult } from "../functions/core/scheduling.ts";
import type { HandlerContext } from "../functions/app/lifecycle/handler.ts";
import { scheduleNewSessions } from "../functions/app/lifecycle/schedule-new-sessions.ts";
import { terminateSessions } from "../functions/app/lifecycle/terminate-sessions.ts";
import type { KernelStatus, SessionStatus } from "../functions/core/status.ts";
import { freshTable, newSession, T0, type TestTable } from "./store-fixtures.ts";

const NOW = T0 + 60_000;
const clock = { nowMs: () => NOW };
const quiet: Logger = { info: () => {}, warn: () => {}, error: () => {} };
const config: CairnConfig = {
  tableName: "unused",
  eventBusName: "unused",
  stateMachineArn: "unused",
  shards: 4,
  agentTimeoutMs: 30_000,
  batchLimit: 50,
  terminationGraceMs: 1_000,
  logLevel: "error",
  retryCacheMs: 0,
  repairAfterMs: 60_000,
  agentQueuePrefix: "cairn-agent-",
  retentionDays: 90,
};

class RecordingExecutions implements LifecycleExecutionsPort {
  readonly completed: { token: string; transition: StageTransition }[] = [];
  start(): Promise<string> {
    return Promise.reject(new Error("not used"));
  }
  complete(token: string, transition: StageTransition): Promise<"completed"> {
    this.completed.push({ token, transition });
    return Promise.resolve("completed");
  }
}

/** Kernel commands as the agents' queues would receive them. */
class RecordingChannel implements AgentChannelPort {
  readonly commands: KernelCommandDetailInput[] = [];
  open(): Promise<void> {
    return Promise.resolve();
  }
  send(deliveries: readonly AgentDelivery[]): Promise<void> {
    for (const { message } of deliveries) if (message.type === "command") this.commands.push(message.command);
    return Promise.resolve();
  }
}

class RecordingEvents implements EventsPort {
  statusChanged(): Promise<void> {
    return Promise.resolve();
  }
  rejected(): Promise<void> {
    return Promise.resolve();
  }
  requeued(): Promise<void> {
    return Promise.resolve();
  }
  jobStateChanged(): Promise<void> {
    return Promise.resolve();
  }
}

let table: TestTable;
let store: DynamoSessionStore;
let executions: RecordingExecutions;
let events: RecordingEvents;
let channel: RecordingChannel;
let preemption: Preemption;

beforeEach(async () => {
  table = await freshTable("cairn-preemption");
  store = table.store({ clock: () => NOW });
  executions = new RecordingExecutions();
  events = new RecordingEvents();
  channel = new RecordingChannel();
  preemption = new Preemption({ store, executions, config, clock, log: quiet });
});

afterEach(() => table.drop());

/** Stages a handler claimed with its own write (a placement), as the coordinator would record them. */
const claimed: { sessionId: string; status: string }[] = [];

function ctx(): HandlerContext {
  return {
    store,
    snapshot: new RunSnapshot(store),
    events,
    commands: new KernelCommands(store, channel),
    config,
    nowMs: NOW,
    claimed: (sessionId, status) => claimed.push({ sessionId, status }),
    queue: () => Promise.resolve(undefined),
    liveAgents: async (refs) => {
      const wanted = new Set([...refs].map((r) => r.agentId));
      return new Map(
        (await store.listAgents()).filter((a) => wanted.has(a.id)).map((a): [string, Agent] => [a.id, a]),
      );
    },
  };
}

async function agents(...ids: string[]): Promise<void> {
  for (const agentId of ids) {
    await store.registerAgent({
      agentId,
      incarnation: `${agentId}-incarnation`,
      capacity: { cpu: 2, memoryMiB: 2048 },
      labels: {},
      signingKey: "k".repeat(32),
      nowMs: NOW,
    });
  }
}

/** A one-kernel session of 2 cpu, in `status`, holding its capacity on `agentId` when given. */
async function session(
  id: string,
  priority: number,
  status: SessionStatus,
  agentId?: string,
  more: {
    createdAtMs?: number;
    kernelStatus?: KernelStatus;
    cpu?: number;
    replicas?: number;
    /** The stage was claimed by a transition under way. */
    claimed?: boolean;
  } = {},
): Promise<void> {
  const s = newSession(id, {
    priority,
    status,
    replicas: more.replicas ?? 1,
    ...(more.claimed ? { taskToken: null } : {}),
    resources: { cpu: more.cpu ?? 2, memoryMiB: 512 },
    createdAtMs: more.createdAtMs ?? T0,
    ...(more.kernelStatus ? { kernelStatus: more.kernelStatus } : {}),
  });
  const running = more.kernelStatus === "RUNNING";
  await store.createSession({
    session: s.session,
    kernels: s.kernels.map((k) => (running ? { ...k, startedAtMs: T0 + 1 } : k)),
  });
  if (agentId !== undefined) {
    await store.reserveCapacity({
      sessionId: id,
      expected: { status, version: 0 },
      nowMs: T0,
      placements: [{ kernelIndex: 0, agentId, resources: { cpu: more.cpu ?? 2, memoryMiB: 512 } }],
    });
  }
}

async function read(id: string): Promise<SessionWithKernels> {
  const s = await store.getSession(id);
  if (!s) throw new Error(`no session ${id}`);
  return s;
}

/** One scheduling pass over `ids` (PENDING, in queue order), then the preemption step. */
async function schedule(...ids: string[]): Promise<HandlerResult> {
  const targets = await store.getSessions(ids);
  const placed = await scheduleNewSessions.execute(targets, ctx());
  return (await preemption.afterSchedule(targets, placed)).result;
}

describe("the store's preemption read", () => {
  test("below a priority: lowest first, newest first; above one: queue order", async () => {
    await session("p0-old", 0, "RUNNING", undefined, { createdAtMs: T0 });
    await session("p0-new", 0, "RUNNING", undefined, { createdAtMs: T0 + 5 });
    await session("p5", 5, "SCHEDULED");
    await session("p10", 10, "RUNNING");
    await session("p-neg", -3, "TERMINATING");
    const below = (priority: number, targetableOnly = false) =>
      store
        .targetsByStatus({
          statuses: ["SCHEDULED", "RUNNING", "TERMINATING"],
          limit: 10,
          belowPriority: priority,
          targetableOnly,
        })
        .then((ss) => ss.map((s) => s.session.id));

    expect(await below(10)).toEqual(["p-neg", "p0-new", "p0-old", "p5"]);
    expect(await below(5)).toEqual(["p-neg", "p0-new", "p0-old"]);
    expect(await below(0)).toEqual(["p-neg"]);
    expect(await below(-3)).toEqual([]);
    expect(await below(-1_000_000_000)).toEqual([]);
    expect(await below(1_000_000_001)).toEqual(["p-neg", "p0-new", "p0-old", "p5", "p10"]);
    expect(await below(10, true)).toEqual(["p-neg", "p0-new", "p0-old", "p5"]);
    await expect(below(1.5)).rejects.toMatchObject({ code: "INVALID_STORE_REQUEST", field: "belowPriority" });
    const above = (priority: number) =>
      store
        .targetsByStatus({
          statuses: ["SCHEDULED", "RUNNING", "TERMINATING"],
          limit: 10,
          abovePriority: priority,
        })
        .then((ss) => ss.map((s) => s.session.id));
    // Queue order: highest priority first, then oldest.
    expect(await above(0)).toEqual(["p10", "p5"]);
    expect(await above(-3)).toEqual(["p10", "p5", "p0-old", "p0-new"]);
    expect(await above(10)).toEqual([]);
    expect(await above(-1_000_000_001)).toEqual(["p10", "p5", "p0-old", "p0-new", "p-neg"]);
    expect(await above(1_000_000_000)).toEqual([]);
    await expect(
      store.targetsByStatus({ statuses: ["RUNNING"], limit: 1, abovePriority: 1, belowPriority: 5 }),
    ).rejects.toMatchObject({ code: "INVALID_STORE_REQUEST", field: "abovePriority" });
  });
});

describe("preemption after a scheduling pass", () => {
  test("a victim not yet running goes back to PENDING at no cost, and the preemptor then takes its place", async () => {
    await agents("a1", "a2");
    await session("low-scheduled", 0, "SCHEDULED", "a1", { kernelStatus: "SCHEDULED" });
    await session("low-running", 0, "RUNNING", "a2", { kernelStatus: "RUNNING" });
    await session("high", 10, "PENDING");

    const first = await schedule("high");

    // The unstarted one is chosen (free), and only it.
    expect(executions.completed).toEqual([
      {
        token: "token-low-scheduled",
        transition: {
          from: "SCHEDULED",
          to: "PENDING",
          result: "PREEMPTED",
          handler: "Preempt",
          message: "preempted by high (priority 10): queued again at no cost, it had not started running",
        },
      },
    ]);
    expect(first.skipped).toEqual(["high"]);
    expect(first.messages?.["high"]).toBe(
      "preempting 1 lower-priority session (low-scheduled, priority 0) to make room",
    );
    const claimed = (await read("low-scheduled")).session;
    expect(claimed.stage.taskToken).toBeUndefined();
    expect(claimed.preemption).toEqual({ atMs: NOW, by: "high", byPriority: 10 });

    // Until the victim has left, the preemptor waits for it and preempts no one else.
    const second = await schedule("high");
    expect(executions.completed).toHaveLength(1);
    expect(second.messages?.["high"]).toBe(
      "waiting for 1 preempted session (low-scheduled, priority 0) to release capacity",
    );

    // The lifecycle execution enters PENDING with the transition: capacity back, kernel reset.
    await enterStage(
      {
        sessionId: "low-scheduled",
        status: "PENDING",
        transition: executions.completed[0]!.transition,
        taskToken: "token-2",
        executionName: "low-scheduled",
      },
      {
        store,
        events,
        commands: new KernelCommands(store, channel),
        clock,
        log: quiet,
        terminationGraceMs: 1_000,
      },
    );
    const requeued = await read("low-scheduled");
    expect(requeued.session).toMatchObject({ status: "PENDING", runIndex: 0 });
    // No budget is spent; the return is only counted against the free-returns bound.
    expect(requeued.session.retry).toMatchObject({
      failureCount: 0,
      preemptionCount: 0,
      totalRetries: 0,
      freeReturns: 1,
    });
    expect(requeued.session.preemption).toBeUndefined();
    expect(requeued.kernels.map((k) => [k.status, k.agentId])).toEqual([["PENDING", undefined]]);
    expect(requeued.session.lastHistory).toMatchObject({
      handler: "Preempt",
      result: "PREEMPTED",
      fromStatus: "SCHEDULED",
      toStatus: "PENDING",
    });
    expect(await store.listRuns("low-scheduled")).toEqual([]);
    expect((await store.getAgent("a1"))?.free).toEqual({ cpu: 2, memoryMiB: 2048 });

    // The next pass places the preemptor first; the victim waits, and its reason says why.
    const third = await scheduleNewSessions.execute(
      await store.getSessions(["high", "low-scheduled"]),
      ctx(),
    );
    expect(third.successes).toEqual(["high"]);
    expect(third.messages?.["low-scheduled"]).toBe(
      "capacity: higher-priority sessions were placed first (no agent has 2 cpu free; largest free is 0)",
    );
  });

  test("a running victim goes to TERMINATING and its kernels are stopped as Preempted", async () => {
    await agents("b1");
    await session("low", 0, "RUNNING", "b1", { kernelStatus: "RUNNING" });
    await session("high", 5, "PENDING");

    await schedule("high");
    expect(executions.completed.map((c) => c.transition)).toEqual([
      {
        from: "RUNNING",
        to: "TERMINATING",
        result: "PREEMPTED",
        handler: "Preempt",
        message: "preempted by high (priority 5)",
      },
    ]);
    await enterStage(
      {
        sessionId: "low",
        status: "TERMINATING",
        transition: executions.completed[0]!.transition,
        taskToken: "token-t",
        executionName: "low",
      },
      {
        store,
        events,
        commands: new KernelCommands(store, channel),
        clock,
        log: quiet,
        terminationGraceMs: 1_000,
      },
    );
    const terminating = await read("low");
    expect(terminating.session.status).toBe("TERMINATING");
    expect(terminating.session.preemption).toEqual({ atMs: NOW, by: "high", byPriority: 5 });
    // Still holding its capacity until its kernels have stopped.
    expect((await store.getAgent("b1"))?.free.cpu).toBe(0);

    await terminateSessions.execute([terminating], ctx());
    expect(channel.commands).toEqual([
      expect.objectContaining({
        action: "stop",
        sessionId: "low",
        agentId: "b1",
        condition: "Preempted",
        reason: "preempted by high (priority 5)",
      }),
    ]);

    // Terminating counts as leaving: the preemptor waits and preempts nothing more.
    const again = await schedule("high");
    expect(executions.completed).toHaveLength(1);
    expect(again.messages?.["high"]).toBe(
      "waiting for 1 preempted session (low, priority 0) to release capacity",
    );
  });

  test("nobody is preempted for a session that would not fit even if every lower-priority one were", async () => {
    // A gang of two needs both agents; one is held by a session of its own priority.
    await agents("c1", "c2");
    await session("peer", 10, "RUNNING", "c1", { kernelStatus: "RUNNING" });
    await session("low", 0, "RUNNING", "c2", { kernelStatus: "RUNNING" });
    await session("gang", 10, "PENDING", undefined, { replicas: 2 });

    const result = await schedule("gang");

    expect(executions.completed).toEqual([]);
    expect((await read("low")).session.preemption).toBeUndefined();
    expect(result.messages?.["gang"]).toBe(
      "no agent has 2 cpu free; largest free is 0; preempting every lower-priority session (1) would not make room",
    );
    // Remembered for a while, reason included: the next pass says the same without looking.
    const again = await schedule("gang");
    expect(again.messages?.["gang"]).toBe(result.messages?.["gang"]);
  });

  test("a session no live agent could hold even idle is not looked at: it waits for an agent", async () => {
    await agents("h1");
    await session("low", 0, "RUNNING", "h1", { kernelStatus: "RUNNING" });
    await session("huge", 10, "PENDING", undefined, { cpu: 3 });
    let reads = 0;
    const real = store.targetsByStatus.bind(store);
    store.targetsByStatus = (query) => {
      if (query.belowPriority !== undefined) reads++;
      return real(query);
    };
    const targets = await store.getSessions(["huge"]);
    const placed = await scheduleNewSessions.execute(targets, ctx());
    const { result } = await preemption.afterSchedule(targets, placed);
    expect(reads).toBe(0);
    expect(executions.completed).toEqual([]);
    // Its reason is placement's own, untouched.
    expect(result.messages?.["huge"]).toBe(placed.messages?.["huge"]);
  });

  test("sessions of the same priority are never preempted", async () => {
    await agents("d1");
    await session("peer", 10, "RUNNING", "d1", { kernelStatus: "RUNNING" });
    await session("late", 10, "PENDING");
    const result = await schedule("late");
    expect(executions.completed).toEqual([]);
    expect(result.messages?.["late"]).toBe("no agent has 2 cpu free; largest free is 0");
  });

  test("a victim that moved on since it was read is left alone", async () => {
    await agents("e1");
    await session("low", 0, "RUNNING", "e1", { kernelStatus: "RUNNING" });
    await session("high", 10, "PENDING");
    const targets = await store.getSessions(["high"]);
    const placed = await scheduleNewSessions.execute(targets, ctx());
    // A kernel report lands between the read and the claim: the claim conflicts.
    const real = store.targetsByStatus.bind(store);
    store.targetsByStatus = async (query) => {
      const found = await real(query);
      const low = found.find((s) => s.session.id === "low")!;
      await store.applyWrite({
        sessionId: "low",
        expected: { status: "RUNNING", version: low.session.version },
        nowMs: NOW,
        kernels: [{ index: 0, message: "still here" }],
      });
      return found;
    };
    const { result, completed } = await preemption.afterSchedule(targets, placed);
    expect(completed).toBe(0);
    expect(executions.completed).toEqual([]);
    expect((await read("low")).session.preemption).toBeUndefined();
    expect(result.messages?.["high"]).toMatch(/^preempting 1 lower-priority session/);
  });

  test("with no lower-priority holder, the read is trusted for a while, and forgotten when one is placed", async () => {
    await agents("f1");
    await session("peer", 10, "RUNNING", "f1", { kernelStatus: "RUNNING" });
    await session("late", 10, "PENDING");
    await session("small", 0, "PENDING", undefined, { cpu: 1 });
    let nowMs = NOW;
    const memo = new Preemption({
      store,
      executions,
      config,
      clock: { nowMs: () => nowMs },
      log: quiet,
      noLowerPriorityCacheMs: 1_000,
    });
    let reads = 0;
    const real = store.targetsByStatus.bind(store);
    store.targetsByStatus = (query) => {
      if (query.belowPriority !== undefined) reads++;
      return real(query);
    };
    const [late, small] = await store.getSessions(["late", "small"]);
    const skippedLate: HandlerResult = { successes: [], failures: [], skipped: ["late"] };

    await memo.afterSchedule([late!], skippedLate);
    await memo.afterSchedule([late!], skippedLate);
    expect(reads).toBe(1);
    // A pass that placed a lower-priority session: it may now be worth preempting.
    await memo.afterSchedule([late!, small!], { successes: ["small"], failures: [], skipped: ["late"] });
    expect(reads).toBe(2);
    // (It found none again: remembered afresh.)
    await memo.afterSchedule([late!], skippedLate);
    expect(reads).toBe(2);
    nowMs += 1_000;
    await memo.afterSchedule([late!], skippedLate);
    expect(reads).toBe(3);
    expect(executions.completed).toEqual([]);
  });

  test("a session waiting behind an older one of its own priority is told plain capacity, not priority", async () => {
    await agents("g1");
    await session("first", 10, "PENDING", undefined, { createdAtMs: T0 });
    await session("second", 10, "PENDING", undefined, { createdAtMs: T0 + 1 });
    await session("lower", 5, "PENDING", undefined, { createdAtMs: T0 });
    const result = await scheduleNewSessions.execute(
      await store.getSessions(["first", "second", "lower"]),
      ctx(),
    );
    expect(result.successes).toEqual(["first"]);
    expect(result.messages?.["second"]).toBe("no agent has 2 cpu free; largest free is 0");
    expect(result.messages?.["lower"]).toBe(
      "capacity: higher-priority sessions were placed first (no agent has 2 cpu free; largest free is 0)",
    );
  });

  test("a chosen victim between two stages is not replaced by a worse one: the preemptor waits a pass", async () => {
    await agents("i1", "i2");
    // Just placed and on its way to PREPARING (stage claimed): the cheapest victim, not claimable yet.
    await session("moving", 0, "SCHEDULED", "i1", { kernelStatus: "SCHEDULED", claimed: true });
    await session("running", 0, "RUNNING", "i2", { kernelStatus: "RUNNING" });
    await session("high", 10, "PENDING");

    const result = await schedule("high");

    expect(executions.completed).toEqual([]);
    expect((await read("running")).session.preemption).toBeUndefined();
    expect(result.messages?.["high"]).toBe(
      "preempting 1 lower-priority session (moving, priority 0) to make room",
    );
  });
});
