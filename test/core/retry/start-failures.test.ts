/**
 * A run that could not start because of the cluster. HPC Pack: "If a job or task
 * fails to start because of a cluster failure, the job or task is automatically retried a
 * specified number of times before it is marked as Failed." And, for what is the user's own:
 * "Failed: The job or task failed to complete, stopped running, or returned an exit code that
 * indicates failure (by default, any non-zero exit code)."
 */
import { describe, expect, test } from "vitest";
import { judgeFinishedRun } from "../../../functions/core/coordinator/finished-run.ts";
import { stageEntryWrite } from "../../../functions/core/effects.ts";
import type { SessionWithKernels, StageTransition } from "../../../functions/core/model.ts";
import { RETRY_CONFIG_DEFAULTS } from "../../../functions/core/retry/config.ts";
import {
  evaluateRetry,
  INITIAL_RETRY_STATE,
  type RetryInput,
  type RetryState,
} from "../../../functions/core/retry/evaluate.ts";
import { parseSessionSpec, SpecValidationError } from "../../../functions/core/spec.ts";
import { newSession, T0 } from "../../store-fixtures.ts";
import { config, kernels, policy, run } from "./fixtures.ts";

/** How a kernel that could not start is stored: ERROR, FAILED, with the agent's message. */
const spawnFailed = kernels.exited(0, {
  exitCode: undefined,
  status: "ERROR",
  message: "spawn /usr/bin/train EACCES",
  failureCategory: "start_failed",
});

function evaluate(input: Partial<RetryInput> & Pick<RetryInput, "run">) {
  return evaluateRetry({ policies: [], state: INITIAL_RETRY_STATE, config: config(), ...input });
}

describe("a run that could not start is retried automatically, then Failed", () => {
  test("retried up to maxRetriesStart (default 3) times, then not: the failure budget untouched", () => {
    let state: RetryState = INITIAL_RETRY_STATE;
    const actions: string[] = [];
    for (let i = 0; i < 4; i++) {
      const d = evaluate({ run: run(spawnFailed), state });
      actions.push(`${d.action}: ${d.reason}`);
      expect(d.state.failureCount).toBe(0);
      expect(d.state.totalRetries).toBe(0);
      state = d.state;
    }
    expect(actions).toEqual([
      "retry: kernel 0 could not start (spawn /usr/bin/train EACCES): start retry 1 of 3 (maxRetriesStart); wait 0s",
      "retry: kernel 0 could not start (spawn /usr/bin/train EACCES): start retry 2 of 3 (maxRetriesStart); wait 0s",
      "retry: kernel 0 could not start (spawn /usr/bin/train EACCES): start retry 3 of 3 (maxRetriesStart); wait 0s",
      "fail: kernel 0 could not start (spawn /usr/bin/train EACCES): 4 start failures, more than maxRetriesStart 3: not retried",
    ]);
    expect(state.startRetries).toBe(4);
  });

  test("the count is the spec's retry.maxRetriesStart: 0 marks it Failed at once", () => {
    expect(evaluate({ run: run(spawnFailed), budgets: { maxRetriesStart: 0 } })).toMatchObject({
      action: "fail",
      basis: "start-failure",
      outcome: "FAILED",
    });
    expect(evaluate({ run: run(spawnFailed), budgets: { maxRetriesStart: 1 } }).action).toBe("retry");
  });

  test("the user's non-zero exit is not a start failure: the failure budget (default 0) decides", () => {
    expect(evaluate({ run: run(kernels.exited(1)) })).toMatchObject({
      action: "fail",
      basis: "budget",
      reason: "FAILED: failure count 1 > maxRetriesFailure 0",
    });
  });

  test("a start no retry can clear (the executable is missing) is not retried", () => {
    const missing = { ...spawnFailed, failureCategory: "executable_not_found" };
    expect(evaluate({ run: run(missing) })).toMatchObject({ action: "fail", basis: "not-retriable" });
  });

  test("under policies too, without reading their rules; the global cap still stops it", () => {
    const strict = policy("strict", { defaultAction: "Fail" });
    expect(evaluate({ run: run(spawnFailed), policies: [strict] })).toMatchObject({
      action: "retry",
      basis: "start-failure",
    });
    expect(
      evaluate({ run: run(spawnFailed), policies: [strict], config: config({ globalMaxRetries: 0 }) }),
    ).toMatchObject({ action: "fail", basis: "global-cap" });
  });

  test("retry.maxRetriesStart is at most 100: each retry is a free return the execution's history holds", () => {
    const spec = parseSessionSpec({ name: "s", command: ["true"], retry: { maxRetriesStart: 100 } });
    expect(spec.retry?.maxRetriesStart).toBe(100);
    expect(() => parseSessionSpec({ name: "s", command: ["true"], retry: { maxRetriesStart: 101 } })).toThrow(
      SpecValidationError,
    );
    try {
      parseSessionSpec({ name: "s", command: ["true"], retry: { maxRetriesStart: 101 } });
    } catch (error) {
      expect((error as SpecValidationError).issues.map((i) => i.path)).toEqual(["retry.maxRetriesStart"]);
    }
  });
});

describe("through the finished run's judgment and the PENDING entry", () => {
  const ended: StageTransition = {
    from: "TERMINATING",
    to: "TERMINATED",
    result: "SUCCESS",
    handler: "TerminateSessions",
  };
  const NOW = T0 + 60_000;

  function couldNot(startRetries?: number): SessionWithKernels {
    const s = newSession("s-start", { status: "TERMINATING", replicas: 1, kernelStatus: "ERROR" });
    return {
      session: {
        ...s.session,
        ...(startRetries !== undefined ? { retry: { ...INITIAL_RETRY_STATE, startRetries } } : {}),
      },
      kernels: s.kernels.map((k) => ({
        ...k,
        agentId: "agent-a",
        finishedAtMs: T0 + 1_000,
        outcome: "FAILED" as const,
        message: "insufficient capacity on agent agent-a",
        failureCategory: "start_failed",
      })),
    };
  }

  test("retried as a new run, counted as a free return, not as a failure", () => {
    const s = couldNot();
    const t = judgeFinishedRun(s, ended, NOW, { config: RETRY_CONFIG_DEFAULTS, policies: [] });
    expect(t).toMatchObject({
      to: "PENDING",
      result: "REQUEUED",
      run: { decision: "retry", outcome: "FAILED" },
    });
    expect(t.requeue?.retry).toMatchObject({ startRetries: 1, failureCount: 0, totalRetries: 0 });
    const write = stageEntryWrite({ ...s, transition: t, taskToken: "t-2", nowMs: NOW });
    expect(write.retry).toMatchObject({ startRetries: 1, freeReturns: 1, pendingReturns: 0 });
    expect(write.runIndex).toBe("increment");
  });

  test("the count used up: the run is over, Failed", () => {
    const t = judgeFinishedRun(couldNot(3), ended, NOW, { config: RETRY_CONFIG_DEFAULTS, policies: [] });
    expect(t).toMatchObject({ to: "TERMINATED", run: { decision: "finished", outcome: "FAILED" } });
    expect(t.message).toContain("4 start failures, more than maxRetriesStart 3: not retried");
  });
});
