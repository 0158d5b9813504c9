/**
 * The replay invariants catch what they claim to (a check that never fails proves nothing):
 * each is shown one hand-built dump that breaks it, and one that does not.
 */
import { describe, expect, test } from "vitest";
import type { Agent, Kernel, SessionWithKernels } from "../../functions/core/model.ts";
import type { Allocation } from "../../functions/core/ports/agents.ts";
import type { SessionStatus } from "../../functions/core/status.ts";
import { newSession, T0 } from "../store-fixtures.ts";
import type { Execution } from "./driver.ts";
import {
  capacityConserved,
  noOrphanProcess,
  noOrphanToken,
  noSplitGang,
  noStrandedStage,
  singleWriter,
  triesMonotonic,
  type Dump,
} from "./invariants.ts";

function session(
  id: string,
  status: SessionStatus,
  options: { token?: string | null; agents?: (string | undefined)[]; tries?: number } = {},
): SessionWithKernels {
  const s = newSession(id, {
    status,
    taskToken: options.token === undefined ? null : options.token,
    replicas: options.agents?.length ?? 1,
  });
  const kernels: Kernel[] = s.kernels.map((k, i) => {
    const agentId = options.agents?.[i];
    return agentId !== undefined ? { ...k, agentId } : k;
  });
  return { session: { ...s.session, tries: options.tries ?? 0 }, kernels };
}

function execution(name: string, status: Execution["status"], token?: string): Execution {
  return {
    name,
    input: "{}",
    status,
    state: "Pending",
    data: {},
    trail: [],
    ...(token !== undefined
      ? { open: { token, state: "Pending", enteredAtMs: T0, timeoutAtMs: undefined } }
      : {}),
  };
}

const agent = (id: string, freeCpu: number): Agent => ({
  id,
  capacity: { cpu: 4, memoryMiB: 4096 },
  free: { cpu: freeCpu, memoryMiB: 4096 - (4 - freeCpu) * 512 },
  lastHeartbeatAtMs: T0,
  version: 1,
});

const allocation = (sessionId: string, agentId: string, cpu: number): Allocation => ({
  sessionId,
  agentId,
  resources: { cpu, memoryMiB: cpu * 512 },
  kernelIndexes: [0],
  allocatedAtMs: T0,
});

function dump(parts: Partial<Omit<Dump, "executions">> & { executions?: Execution[] } = {}): Dump {
  return {
    atMs: T0,
    sessions: parts.sessions ?? [],
    agents: parts.agents ?? [],
    allocations: parts.allocations ?? [],
    executions: new Map((parts.executions ?? []).map((e) => [e.name, e])),
    executionsCreated: parts.executionsCreated ?? new Map(),
    processes: parts.processes ?? [],
  };
}

describe("replay invariants", () => {
  test("single writer: the session's token is the one its execution holds open", () => {
    const s = session("s-001", "PENDING", { token: "tok-2" });
    expect(
      singleWriter(dump({ sessions: [s], executions: [execution("s-001", "RUNNING", "tok-2")] })),
    ).toEqual([]);
    expect(
      singleWriter(dump({ sessions: [s], executions: [execution("s-001", "RUNNING", "tok-3")] })),
    ).toEqual(["s-001: holds token tok-2 but its execution holds tok-3"]);
  });

  test("no stranded stage: a callback its execution holds open is held by the session too", () => {
    const held = session("s-001", "SCHEDULED", { token: "tok-2" });
    const claimed = session("s-002", "SCHEDULED");
    expect(
      noStrandedStage(
        dump({
          sessions: [held, claimed],
          executions: [execution("s-001", "RUNNING", "tok-2"), execution("s-002", "RUNNING", "tok-5")],
        }),
      ),
    ).toEqual(["s-002: SCHEDULED holds no token but its execution waits in Pending on tok-5"]);
  });

  test("no orphan token: an ended session holds no token, and its execution has ended", () => {
    const ok = session("s-001", "TERMINATED");
    const orphan = session("s-002", "CANCELLED", { token: "tok-9" });
    const stranded = session("s-003", "RUNNING", { token: "tok-4" });
    expect(
      noOrphanToken(
        dump({
          sessions: [ok, orphan, stranded],
          executions: [
            execution("s-001", "SUCCEEDED"),
            execution("s-002", "RUNNING", "tok-9"),
            execution("s-003", "FAILED"),
          ],
        }),
      ),
    ).toEqual([
      "s-002: CANCELLED but holds token tok-9",
      "s-002: CANCELLED but its execution runs",
      "s-003: RUNNING but its execution is FAILED (stranded)",
    ]);
  });

  test("capacity conserved: taken = allocated = the placed kernels of sessions still on their agents", () => {
    const running = session("s-001", "RUNNING", { agents: ["agent-a"] });
    const ended = session("s-002", "TERMINATED", { agents: ["agent-a"] });
    expect(
      capacityConserved(
        dump({
          sessions: [running, ended],
          agents: [agent("agent-a", 3)],
          allocations: [allocation("s-001", "agent-a", 1)],
        }),
      ),
    ).toEqual([]);
    // The ended session's capacity never went back.
    expect(
      capacityConserved(
        dump({
          sessions: [running, ended],
          agents: [agent("agent-a", 2)],
          allocations: [allocation("s-001", "agent-a", 1), allocation("s-002", "agent-a", 1)],
        }),
      ),
    ).toEqual(["s-002@agent-a: kernels placed 0 cpu/0 MiB but allocated 1 cpu/512 MiB"]);
    // The ledger and the agent disagree.
    expect(
      capacityConserved(
        dump({
          sessions: [running],
          agents: [agent("agent-a", 4)],
          allocations: [allocation("s-001", "agent-a", 1)],
        }),
      ),
    ).toEqual(["agent-a: 0 cpu/0 MiB taken but 1 cpu/512 MiB allocated"]);
  });

  test("no split gang: all of a gang's kernels are placed, or none", () => {
    const whole = session("s-001", "SCHEDULED", { agents: ["agent-a", "agent-b"] });
    const none = session("s-002", "PENDING", { agents: [undefined, undefined] });
    const split = session("s-003", "SCHEDULED", { agents: ["agent-a", undefined] });
    expect(noSplitGang(dump({ sessions: [whole, none, split] }))).toEqual([
      "s-003: 1 of 2 kernels placed (SCHEDULED)",
    ]);
  });

  test("tries monotonic: within a stage entry tries never go down", () => {
    const before = dump({ sessions: [session("s-001", "PREPARING", { tries: 2 })] });
    expect(triesMonotonic(before, dump({ sessions: [session("s-001", "PREPARING", { tries: 2 })] }))).toEqual(
      [],
    );
    expect(triesMonotonic(before, dump({ sessions: [session("s-001", "PREPARING", { tries: 1 })] }))).toEqual(
      ["s-001: tries went from 2 to 1"],
    );
  });

  test("no orphan process: no agent runs a kernel of an ended session", () => {
    const sessions = [session("s-001", "TERMINATED"), session("s-002", "RUNNING")];
    const processes = [
      { agentId: "agent-a", sessionId: "s-001", kernelIndex: 0 },
      { agentId: "agent-a", sessionId: "s-002", kernelIndex: 0 },
    ];
    expect(noOrphanProcess(dump({ sessions, processes }))).toEqual([
      "agent-a runs s-001/0 but the session is TERMINATED",
    ]);
  });
});
