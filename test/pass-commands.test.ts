/**
 * The commands a pass sends, against DynamoDB Local: PrepareSessions sends `prepare` to a
 * SCHEDULED session's kernels and StartSessions sends `start` to a PREPARED one's, each to the
 * agent incarnation the kernel was placed with, before the stage is completed; a send that fails
 * makes the session the pass's failure (the coordinator judges the try), not a success. The
 * stage's entry that follows records the status and sends nothing.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { DynamoSessionStore } from "../functions/adapters/dynamo/dynamo-session-store.ts";
import { loadConfig } from "../functions/config.ts";
import { enterStage, type EnterStageInput } from "../functions/app/enter-stage.ts";
import { KernelCommands } from "../functions/app/kernel-commands.ts";
import type { HandlerContext } from "../functions/app/lifecycle/handler.ts";
import { prepareSessions } from "../functions/app/lifecycle/prepare-sessions.ts";
import { startSessions } from "../functions/app/lifecycle/start-sessions.ts";
import { RunSnapshot } from "../functions/app/snapshot.ts";
import type { Agent, SessionWithKernels, StageTransition } from "../functions/core/model.ts";
import type { AgentChannelPort } from "../functions/core/ports/agent-channel.ts";
import type { SessionStatus } from "../functions/core/status.ts";
import { freshTable, newSession, T0, type TestTable, SILENT_EVENTS } from "./store-fixtures.ts";

const NOW = T0 + 60_000;
const events = SILENT_EVENTS;
const config = loadConfig({
  CAIRN_TABLE_NAME: "unused",
  CAIRN_EVENT_BUS_NAME: "unused",
  CAIRN_STATE_MACHINE_ARN: "arn:aws:states:local:000000000000:stateMachine:unused",
});

let table: TestTable;
let store: DynamoSessionStore;
beforeAll(async () => {
  table = await freshTable("cairn-pass-commands");
  store = table.store();
  // agent-b restarted since the sessions here were placed on it (with incarnation inc-2).
  for (const [agentId, incarnation] of [
    ["agent-a", "inc-1"],
    ["agent-b", "inc-3"],
  ] as const) {
    await store.registerAgent({
      agentId,
      incarnation,
      capacity: { cpu: 8, memoryMiB: 8192 },
      labels: {},
      signingKey: "k".repeat(32),
      nowMs: NOW,
    });
  }
});
afterAll(() => table.drop());

interface Sent {
  readonly agentId: string;
  readonly incarnation: string;
  readonly action: string;
  readonly kernelIndex: number;
  /** The session's status in the table when the command went out. */
  readonly storedStatus: string | undefined;
}

/**
 * A pass's context and EnterStage's deps; the channel records what it is sent (and the session's
 * status in the table as it went out) and fails as `failures` say.
 */
function deps(sessionId: string, failures: Error[] = []) {
  const sent: Sent[] = [];
  const agentReads: string[] = [];
  const errors: string[] = [];
  const channel: AgentChannelPort = {
    open: () => Promise.resolve(),
    send: async (deliveries) => {
      const failure = failures.shift();
      if (failure) throw failure;
      const storedStatus = (await store.getSession(sessionId))?.session.status;
      for (const { agentId, message } of deliveries) {
        if (message.type !== "command") continue;
        const { incarnation, command } = message;
        sent.push({
          agentId,
          incarnation,
          action: command.action,
          kernelIndex: command.kernelIndex,
          storedStatus,
        });
      }
    },
  };
  const agents = { getAgent: (id: string) => (agentReads.push(id), store.getAgent(id)) };
  const commands = new KernelCommands(agents, channel);
  const ctx: HandlerContext = {
    store,
    snapshot: new RunSnapshot(store),
    events,
    commands,
    config,
    nowMs: NOW,
    claimed: () => {},
    queue: () => Promise.resolve(undefined),
    liveAgents: async (refs) => {
      const found = await Promise.all([...refs].map((r) => store.getAgent(r.agentId)));
      return new Map(found.flatMap((a): [string, Agent][] => (a ? [[a.id, a]] : [])));
    },
  };
  return {
    sent,
    agentReads,
    errors,
    ctx,
    deps: {
      store,
      events,
      commands,
      clock: { nowMs: () => NOW },
      log: { info: () => {}, warn: () => {}, error: (m: string) => void errors.push(m) },
      terminationGraceMs: 1_000,
    },
  };
}

/** A session of two kernels, placed on agent-a (incarnation inc-1) and agent-b (inc-2). */
async function placed(id: string, status: SessionStatus, kernelStatus: string): Promise<SessionWithKernels> {
  const s = newSession(id, { status, replicas: 2, taskToken: null });
  const kernels = s.kernels.map((k) => ({
    ...k,
    status: kernelStatus,
    agentId: k.index === 0 ? "agent-a" : "agent-b",
    agentIncarnation: k.index === 0 ? "inc-1" : "inc-2",
  })) as SessionWithKernels["kernels"];
  await store.createSession({ session: s.session, kernels });
  return (await store.getSession(id))!;
}

const transition = (
  from: SessionStatus,
  to: SessionStatus,
  handler: string,
  known?: SessionWithKernels,
): StageTransition =>
  ({ from, to, result: "SUCCESS", handler, ...(known ? { known } : {}) }) as StageTransition;

function input(
  id: string,
  status: SessionStatus,
  t: StageTransition,
  token: string,
  retryCount = 0,
): EnterStageInput {
  return {
    sessionId: id,
    status,
    transition: t,
    taskToken: token,
    executionName: id,
    entry: { state: status, enteredTime: new Date(NOW).toISOString(), retryCount },
  };
}

describe("the commands a pass sends", () => {
  test("PrepareSessions in SCHEDULED: prepare to each kernel, at the incarnation it was placed with, before the stage moves on", async () => {
    const target = await placed("cmd-1", "SCHEDULED", "SCHEDULED");
    const d = deps("cmd-1");
    const result = await prepareSessions.execute([target], d.ctx);
    expect(result.successes).toEqual(["cmd-1"]);
    // agent-b runs as inc-3 now: the prepare for the kernel placed with inc-2 goes to inc-2,
    // which agent-b refuses, and the lost placement is judged as any other.
    expect(d.sent).toEqual([
      {
        agentId: "agent-a",
        incarnation: "inc-1",
        action: "prepare",
        kernelIndex: 0,
        storedStatus: "SCHEDULED",
      },
      {
        agentId: "agent-b",
        incarnation: "inc-2",
        action: "prepare",
        kernelIndex: 1,
        storedStatus: "SCHEDULED",
      },
    ]);
    expect(d.agentReads).toEqual([]);
  });

  test("StartSessions in PREPARED: start to each kernel", async () => {
    const target = await placed("cmd-2", "PREPARED", "PREPARED");
    const d = deps("cmd-2");
    const result = await startSessions.execute([target], d.ctx);
    expect(result.successes).toEqual(["cmd-2"]);
    expect(d.sent.map((s) => [s.action, s.kernelIndex, s.incarnation, s.storedStatus])).toEqual([
      ["start", 0, "inc-1", "PREPARED"],
      ["start", 1, "inc-2", "PREPARED"],
    ]);
  });

  test("a send that fails makes the session the pass's failure, with the reason, not a success", async () => {
    const target = await placed("cmd-3", "SCHEDULED", "SCHEDULED");
    const d = deps("cmd-3", [new Error("the agents' queues are unreachable")]);
    const result = await prepareSessions.execute([target], d.ctx);
    expect(result.successes).toEqual([]);
    expect(result.failures).toEqual(["cmd-3"]);
    expect(result.messages?.["cmd-3"]).toContain("the agents' queues are unreachable");
    expect(d.sent).toEqual([]);
  });
});

/** PREPARING entered on PrepareSessions' success, from the pass's copy of the session. */
function enterPreparing(scheduled: SessionWithKernels, entryDeps: ReturnType<typeof deps>["deps"]) {
  const id = scheduled.session.id;
  const t = transition("SCHEDULED", "PREPARING", "PrepareSessions", scheduled);
  return enterStage(input(id, "PREPARING", t, "tok-1"), entryDeps);
}

describe("the stage entry after a pass's success", () => {
  test("PREPARING and CREATING are recorded, and nothing is sent: the pass sent it", async () => {
    const scheduled = await placed("cmd-5", "SCHEDULED", "SCHEDULED");
    const d = deps("cmd-5");
    await enterPreparing(scheduled, d.deps);
    expect((await store.getSession("cmd-5"))!.session.status).toBe("PREPARING");
    const prepared = await placed("cmd-6", "PREPARED", "PREPARED");
    await enterStage(
      input("cmd-6", "CREATING", transition("PREPARED", "CREATING", "StartSessions", prepared), "tok-2"),
      d.deps,
    );
    expect((await store.getSession("cmd-6"))!.session.status).toBe("CREATING");
    expect(d.sent).toEqual([]);
  });

  test("a kernel a report moved past the stage before its entry keeps the report's status", async () => {
    const scheduled = await placed("cmd-7", "SCHEDULED", "SCHEDULED");
    // The agent's PREPARED for kernel 1 lands before the entry, which starts from the pass's copy.
    await store.patchKernels(
      "cmd-7",
      scheduled.session,
      [{ index: 1, expectedVersion: scheduled.kernels[1]!.version ?? 0, status: "PREPARED" }],
      NOW,
    );
    const d = deps("cmd-7");
    await enterPreparing(scheduled, d.deps);
    const after = (await store.getSession("cmd-7"))!;
    expect(after.session.status).toBe("PREPARING");
    expect(after.kernels.map((k) => k.status)).toEqual(["PREPARING", "PREPARED"]);
  });
});

describe("a session leaving its agents after the prepare went out", () => {
  test("SCHEDULED expiring back to PENDING stops its kernels, which may be preparing", async () => {
    const scheduled = await placed("cmd-8", "SCHEDULED", "SCHEDULED");
    const d = deps("cmd-8");
    const expired = {
      from: "SCHEDULED",
      to: "PENDING",
      result: "EXPIRED",
      handler: "Lifecycle",
      known: scheduled,
    } as StageTransition;
    await enterStage(input("cmd-8", "PENDING", expired, "tok-9"), d.deps);
    expect((await store.getSession("cmd-8"))!.session.status).toBe("PENDING");
    expect(d.sent.map((s) => [s.action, s.agentId, s.kernelIndex])).toEqual([
      ["stop", "agent-a", 0],
      ["stop", "agent-b", 1],
    ]);
  });
});
