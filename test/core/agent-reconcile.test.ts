/**
 * Reconciliation (core/agent-reconcile.ts): of the runs an agent's heartbeat lists, exactly those
 * Cairn considers ended are named back, each with why; a run Cairn still expects is never named.
 */
import { describe, expect, test } from "vitest";
import { endedRuns } from "../../functions/core/agent-reconcile.ts";
import type { SessionWithKernels } from "../../functions/core/model.ts";
import type { KernelStatus, SessionStatus } from "../../functions/core/status.ts";
import { kernel, session } from "./fixtures.ts";

const AGENT = "agent-1";
const INCARNATION = "11111111-1111-4111-8111-111111111111";

function placed(
  id: string,
  status: SessionStatus,
  kernelStatus: KernelStatus,
  over: {
    runIndex?: number;
    freeReturns?: number;
    agentId?: string;
    incarnation?: string;
    exitCode?: number;
  } = {},
): SessionWithKernels {
  return {
    session: session(id, status, {
      runIndex: over.runIndex ?? 0,
      ...(over.freeReturns !== undefined
        ? {
            retry: {
              failureCount: 0,
              preemptionCount: 0,
              totalRetries: 0,
              ruleRetries: {},
              freeReturns: over.freeReturns,
            },
          }
        : {}),
    }),
    kernels: [
      kernel(id, 0, kernelStatus, {
        agentId: over.agentId ?? AGENT,
        agentIncarnation: over.incarnation ?? INCARNATION,
        ...(over.exitCode !== undefined ? { exitCode: over.exitCode } : {}),
      }),
    ],
  };
}

const run = (sessionId: string, runIndex = 0, placement = 0) => ({
  sessionId,
  kernelIndex: 0,
  runIndex,
  placement,
});

describe("endedRuns", () => {
  test("given runs Cairn still expects on this agent, when reconciled, then none is named", () => {
    const sessions = new Map([
      ["running", placed("running", "RUNNING", "RUNNING")],
      ["stopping", placed("stopping", "TERMINATING", "TERMINATING")],
      ["creating", placed("creating", "CREATING", "CREATING")],
      ["again", placed("again", "RUNNING", "RUNNING", { runIndex: 2, freeReturns: 1 })],
    ]);
    const runs = [run("running"), run("stopping"), run("creating"), run("again", 2, 1)];
    expect(endedRuns(AGENT, INCARNATION, runs, sessions)).toEqual([]);
  });

  test("given every way a run can have ended, when reconciled, then each is named with its reason", () => {
    const sessions = new Map([
      ["done", placed("done", "TERMINATED", "TERMINATED", { exitCode: 0 })],
      ["cancelled", placed("cancelled", "CANCELLED", "CANCELLED")],
      ["retried", placed("retried", "RUNNING", "RUNNING", { runIndex: 1 })],
      ["replaced", placed("replaced", "PREPARING", "PREPARING", { freeReturns: 1 })],
      ["moved", placed("moved", "RUNNING", "RUNNING", { agentId: "agent-2" })],
      [
        "reborn",
        placed("reborn", "RUNNING", "RUNNING", { incarnation: "22222222-2222-4222-8222-222222222222" }),
      ],
      ["gang", placed("gang", "RUNNING", "TERMINATED", { exitCode: 0 })],
    ]);
    const runs = [
      run("done"),
      run("cancelled"),
      run("retried"),
      run("replaced"),
      run("moved"),
      run("reborn"),
      run("gang"),
      run("gone"),
      { sessionId: "retried", kernelIndex: 3, runIndex: 1, placement: 0 },
    ];
    expect(
      endedRuns(AGENT, INCARNATION, runs, sessions).map(
        (r) => `${r.sessionId}/${r.kernelIndex}: ${r.reason}`,
      ),
    ).toEqual([
      "done/0: session done ended (TERMINATED)",
      "cancelled/0: session cancelled ended (CANCELLED)",
      "retried/0: run 0 of session retried has ended (the session is on run 1)",
      "replaced/0: placement 0 of run 0 of session replaced has ended (the session is on placement 1)",
      "moved/0: kernel 0 of session moved is placed on agent-2, not on agent-1",
      `reborn/0: kernel 0 of session reborn was placed with incarnation 22222222-2222-4222-8222-222222222222 of agent-1, not ${INCARNATION}`,
      "gang/0: kernel 0 of session gang ended (TERMINATED, exit code 0)",
      "gone/0: session gone does not exist",
      "retried/3: session retried has no kernel 3",
    ]);
  });
});
