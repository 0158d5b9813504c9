/**
 * What every lifecycle definition the stack deploys must hold, whatever its family, so that a
 * real account can deploy, destroy and deploy again, and ride out Lambda throttling:
 * - every callback state (`.waitForTaskToken`) has a timeout and a route for `States.Timeout`
 *   ahead of its catch-all: DeleteStateMachine leaves a state machine DELETING until each of its
 *   executions makes its next transition, which an unbounded wait never makes;
 * - the failure recorder catches its own failure, so the execution still ends in its Fail state;
 * - every Lambda task retries `Lambda.TooManyRequestsException` with its own retrier, whose budget
 *   is minutes, not the single minute the other transient errors get: a throttled invocation
 *   never ran (Lambda refuses it before it starts), so retrying it is always safe.
 */
import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { STATE_MACHINES } from "../functions/topology/index.ts";

interface Retrier {
  ErrorEquals: string[];
  IntervalSeconds?: number;
  MaxAttempts?: number;
  BackoffRate?: number;
  MaxDelaySeconds?: number;
  JitterStrategy?: string;
}
interface AslState {
  Type: string;
  Resource?: string;
  Parameters?: Record<string, unknown> & { Payload?: Record<string, unknown> };
  TimeoutSeconds?: number;
  TimeoutSecondsPath?: string;
  Retry?: Retrier[];
  Catch?: { ErrorEquals: string[]; Next: string; ResultPath?: string }[];
  Next?: string;
  Branches?: { States: Record<string, AslState> }[];
  ItemProcessor?: { States: Record<string, AslState> };
  Iterator?: { States: Record<string, AslState> };
}

const THROTTLED = "Lambda.TooManyRequestsException";
const CALLBACK = ".waitForTaskToken";
/** Step Functions' retrier defaults (the Amazon States Language). */
const DEFAULTS = { IntervalSeconds: 1, MaxAttempts: 3, BackoffRate: 2 };

/** Every state, nested ones (Parallel, Map) included, by name. */
function allStates(states: Record<string, AslState>): [string, AslState][] {
  return Object.entries(states).flatMap(([name, s]) => [
    [name, s] as [string, AslState],
    ...(s.Branches ?? []).flatMap((b) => allStates(b.States)),
    ...[s.ItemProcessor, s.Iterator].flatMap((p) => (p ? allStates(p.States) : [])),
  ]);
}

/** The longest a retrier may wait in all, before jitter (FULL jitter waits a random part of each delay). */
function retryBudgetSeconds(r: Retrier): number {
  const interval = r.IntervalSeconds ?? DEFAULTS.IntervalSeconds;
  const rate = r.BackoffRate ?? DEFAULTS.BackoffRate;
  let total = 0;
  for (let attempt = 0; attempt < (r.MaxAttempts ?? DEFAULTS.MaxAttempts); attempt++) {
    const delay = interval * rate ** attempt;
    total += r.MaxDelaySeconds === undefined ? delay : Math.min(delay, r.MaxDelaySeconds);
  }
  return total;
}

const invokesLambda = (s: AslState) =>
  s.Type === "Task" && (s.Resource ?? "").startsWith("arn:aws:states:::lambda:invoke");

describe.each(STATE_MACHINES.map((m) => ({ name: m.name, file: m.file })))("$file", ({ file }) => {
  const asl = JSON.parse(readFileSync(file, "utf8")) as { States: Record<string, AslState> };
  const states = allStates(asl.States);
  const byName = new Map(states);
  const callbacks = states.filter(([, s]) => (s.Resource ?? "").endsWith(CALLBACK));

  test("has callback states (the checks below are not vacuous)", () => {
    expect(callbacks.length).toBeGreaterThan(0);
  });

  test("every callback state has a timeout, routed ahead of its catch-all", () => {
    for (const [name, s] of callbacks) {
      expect(
        s.TimeoutSeconds !== undefined || s.TimeoutSecondsPath !== undefined,
        `${name} has TimeoutSeconds or TimeoutSecondsPath`,
      ).toBe(true);
      if (s.TimeoutSeconds !== undefined) {
        // Step Functions' own ceiling is a year, the longest an execution runs.
        expect(s.TimeoutSeconds, name).toBeGreaterThan(0);
        expect(s.TimeoutSeconds, name).toBeLessThanOrEqual(86_400);
      }
      const catchers = s.Catch ?? [];
      const timeout = catchers.findIndex((c) => c.ErrorEquals.includes("States.Timeout"));
      const all = catchers.findIndex((c) => c.ErrorEquals.includes("States.ALL"));
      expect(timeout, `${name} catches States.Timeout`).toBeGreaterThanOrEqual(0);
      expect(timeout, `${name} routes States.Timeout before States.ALL`).toBeLessThan(all);
      const next = byName.get(catchers[timeout]!.Next);
      expect(next, `${name}'s timeout route exists`).toBeDefined();
      expect(catchers[timeout]!.Next).not.toBe("RecordFailure");
    }
  });

  test("RecordFailure catches its own failure and ends in a Fail state either way", () => {
    const recorder = byName.get("RecordFailure");
    expect(recorder?.Type).toBe("Task");
    expect(byName.get(recorder!.Next!)?.Type).toBe("Fail");
    expect(recorder!.Catch).toEqual([
      { ErrorEquals: ["States.ALL"], ResultPath: "$.recordError", Next: recorder!.Next },
    ]);
  });

  test("every Lambda task retries throttling with its own retrier, for minutes, with full jitter", () => {
    const tasks = states.filter(([, s]) => invokesLambda(s));
    expect(tasks.length).toBeGreaterThan(0);
    for (const [name, s] of tasks) {
      const retriers = (s.Retry ?? []).filter((r) => r.ErrorEquals.includes(THROTTLED));
      expect(retriers, `${name} retries ${THROTTLED} once`).toHaveLength(1);
      const [throttled] = retriers;
      expect(throttled!.ErrorEquals, `${name}: throttling has a retrier of its own`).toEqual([THROTTLED]);
      expect(throttled!.JitterStrategy).toBe("FULL");
      // Capped, so that the later attempts keep coming (a minute apart) instead of hours apart.
      expect(throttled!.MaxDelaySeconds, name).toBeGreaterThan(0);
      expect(throttled!.MaxDelaySeconds, name).toBeLessThanOrEqual(60);
      expect(retryBudgetSeconds(throttled!), `${name}'s throttling budget`).toBeGreaterThanOrEqual(5 * 60);
      for (const other of s.Retry ?? []) {
        if (other !== throttled) expect(other.ErrorEquals).not.toContain("States.ALL");
      }
    }
  });
});

test("the budget counts each capped delay: 2 s doubling to a 60 s cap, 12 attempts, is 482 s", () => {
  expect(
    retryBudgetSeconds({
      ErrorEquals: [THROTTLED],
      IntervalSeconds: 2,
      BackoffRate: 2,
      MaxDelaySeconds: 60,
      MaxAttempts: 12,
    }),
  ).toBe(2 + 4 + 8 + 16 + 32 + 7 * 60);
  // What the lifecycles had before: 1 s doubling, six attempts, no cap.
  expect(retryBudgetSeconds({ ErrorEquals: [THROTTLED], IntervalSeconds: 1, MaxAttempts: 6 })).toBe(63);
});
