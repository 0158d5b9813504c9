/**
 * The command a stage's entry sends (core/entry-commands.ts), against DynamoDB Local: PREPARING
 * entered on PrepareSessions' success sends `prepare`, CREATING entered on StartSessions' sends
 * `start`, each after the entry's write and to the incarnation the kernel was placed with; a
 * failure a retry may clear fails the entry, and the retried attempt sends again.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { DynamoSessionStore } from "../functions/adapters/dynamo/dynamo-session-store.ts";
import { enterStage, type EnterStageInput } from "../functions/app/enter-stage.ts";
import { KernelCommands } from "../functions/app/kernel-commands.ts";
import { isTransient } from "../functions/app/retryable.ts";
import type { AgentChannelPort } from "../functions/core/ports/agent-channel.ts";
import { entryCommand } from "../functions/core/entry-commands.ts";
import type { SessionStatus } from "../functions/core/status.ts";
import type { SessionWithKernels, StageTransition } from "../functions/core/model.ts";
import { caught, freshTable, newSession, T0, type TestTable, SILENT_EVENTS } from "./store-fixtures.ts";

const NOW = T0 + 60_000;
const events = SILENT_EVENTS;

let table: TestTable;
let store: DynamoSessionStore;
beforeAll(async () => {
  table = await freshTable("cairn-enter-commands");
  store = table.store();
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

/** EnterStage's deps; the channel records what it is sent and fails as `failures` say. */
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
  return {
    sent,
    agentReads,
    errors,
    deps: {
      store,
      events,
      commands: new KernelCommands(agents, channel),
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

describe("the command a stage's entry sends", () => {
  test("PREPARING on PrepareSessions' success: prepare to each kernel, after the write, to the placed incarnation, no agent read", async () => {
    const copy = await placed("cmd-1", "SCHEDULED", "SCHEDULED");
    const d = deps("cmd-1");
    await enterStage(
      input("cmd-1", "PREPARING", transition("SCHEDULED", "PREPARING", "PrepareSessions", copy), "tok-1"),
      d.deps,
    );
    expect(d.sent).toEqual([
      {
        agentId: "agent-a",
        incarnation: "inc-1",
        action: "prepare",
        kernelIndex: 0,
        storedStatus: "PREPARING",
      },
      {
        agentId: "agent-b",
        incarnation: "inc-2",
        action: "prepare",
        kernelIndex: 1,
        storedStatus: "PREPARING",
      },
    ]);
    expect(d.agentReads).toEqual([]);
  });

  test("CREATING on StartSessions' success: start to each kernel", async () => {
    const copy = await placed("cmd-2", "PREPARED", "PREPARED");
    const d = deps("cmd-2");
    await enterStage(
      input("cmd-2", "CREATING", transition("PREPARED", "CREATING", "StartSessions", copy), "tok-1"),
      d.deps,
    );
    expect(d.sent.map((s) => [s.action, s.kernelIndex, s.storedStatus])).toEqual([
      ["start", 0, "CREATING"],
      ["start", 1, "CREATING"],
    ]);
  });

  test("no other entry sends one: a promotion, an expiry, a Fargate session", () => {
    const agent = { executor: "agent" } as const;
    expect(entryCommand(transition("PREPARING", "PREPARED", "PromoteToPrepared"), agent)).toBeUndefined();
    expect(entryCommand(transition("SCHEDULED", "PREPARED", "PromoteToPrepared"), agent)).toBeUndefined();
    expect(entryCommand(transition("CREATING", "RUNNING", "PromoteToRunning"), agent)).toBeUndefined();
    expect(
      entryCommand({ ...transition("SCHEDULED", "PENDING", "PrepareSessions"), result: "EXPIRED" }, agent),
    ).toBeUndefined();
    expect(
      entryCommand(transition("SCHEDULED", "PREPARING", "PrepareSessions"), { executor: "fargate" }),
    ).toBe(undefined);
    // Specs written before executors existed run on agents.
    expect(entryCommand(transition("SCHEDULED", "PREPARING", "PrepareSessions"), {})).toBe("prepare");
    expect(entryCommand(transition("PREPARED", "CREATING", "StartSessions"), agent)).toBe("start");
  });

  test("a send a retry may clear fails the entry, which stays written; the retried attempt sends again", async () => {
    const copy = await placed("cmd-3", "SCHEDULED", "SCHEDULED");
    const throttled = Object.assign(new Error("throttled"), { $retryable: { throttling: true } });
    const d = deps("cmd-3", [throttled]);
    const t = transition("SCHEDULED", "PREPARING", "PrepareSessions", copy);
    const error = await caught(() => enterStage(input("cmd-3", "PREPARING", t, "tok-1"), d.deps));
    expect(isTransient(error)).toBe(true);
    expect((await store.getSession("cmd-3"))!.session).toMatchObject({
      status: "PREPARING",
      stage: { taskToken: "tok-1" },
    });
    expect(d.sent).toEqual([]);
    // The state's retry: the same entry, attempt 1, a new token.
    await enterStage(input("cmd-3", "PREPARING", t, "tok-2", 1), d.deps);
    expect((await store.getSession("cmd-3"))!.session.stage.taskToken).toBe("tok-2");
    expect(d.sent.map((s) => [s.action, s.kernelIndex])).toEqual([
      ["prepare", 0],
      ["prepare", 1],
    ]);
  });

  test("a send no retry can clear is logged, and the entry stands", async () => {
    const copy = await placed("cmd-4", "SCHEDULED", "SCHEDULED");
    const d = deps("cmd-4", [new Error("QueueDoesNotExist")]);
    await enterStage(
      input("cmd-4", "PREPARING", transition("SCHEDULED", "PREPARING", "PrepareSessions", copy), "tok-1"),
      d.deps,
    );
    expect((await store.getSession("cmd-4"))!.session.status).toBe("PREPARING");
    expect(d.errors).toEqual([expect.stringContaining("the stage's command could not be sent")]);
  });
});
