/**
 * The local agent's failure categories (core/retry/failure-categories.ts): one
 * case per row of the table, first match wins; docs/retries.md's table as the code has it; and a retry
 * rule `onFailureCategory` matching what the table gives.
 */
import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { RETRY_CONFIG_DEFAULTS } from "../../../functions/core/retry/config.ts";
import { evaluateRetry, INITIAL_RETRY_STATE } from "../../../functions/core/retry/evaluate.ts";
import {
  classifyFailure,
  FAILURE_CATEGORY_TABLE,
  failureCategoryRow,
  type FailureCategoryRowName,
  type FailureEvidence,
} from "../../../functions/core/retry/failure-categories.ts";
import { findMatchingRule, type RunKernel } from "../../../functions/core/retry/match.ts";
import { parseRetryPolicy } from "../../../functions/core/retry/policy.ts";

const ended = (over: Omit<FailureEvidence, "status"> = {}): FailureEvidence => ({
  status: "TERMINATED",
  ...over,
});

// [row, evidence, category]: every row of the table once, in the table's order.
const ROWS: readonly (readonly [FailureCategoryRowName, FailureEvidence, string | undefined])[] = [
  ["permanent", { status: "ERROR", permanent: "executable_not_found" }, "executable_not_found"],
  ["error", { status: "ERROR" }, "start_failed"],
  ["oomKilled", ended({ exitCode: 137, signal: "SIGKILL", condition: "OOMKilled" }), "oom"],
  [
    "deadlineExceeded",
    ended({ exitCode: 143, signal: "SIGTERM", condition: "DeadlineExceeded", stopRequested: true }),
    "deadline_exceeded",
  ],
  [
    "evicted",
    ended({ exitCode: 143, signal: "SIGTERM", condition: "Evicted", stopRequested: true }),
    "evicted",
  ],
  ["preempted", ended({ exitCode: 0, condition: "Preempted", stopRequested: true }), "preempted"],
  ["stopRequested", ended({ exitCode: 137, signal: "SIGKILL", stopRequested: true }), undefined],
  ["exitZero", ended({ exitCode: 0 }), undefined],
  ["killed", ended({ exitCode: 137, signal: "SIGKILL" }), "killed"],
  ["terminated", ended({ exitCode: 143, signal: "SIGTERM" }), "terminated"],
  ["crashed", ended({ exitCode: 139, signal: "SIGSEGV" }), "crashed"],
  ["otherSignal", ended({ exitCode: 138, signal: "SIGUSR1" }), "signaled"],
  ["notExecutable", ended({ exitCode: 126 }), "command_not_executable"],
  ["notFound", ended({ exitCode: 127 }), "command_not_found"],
  ["otherExit", ended({ exitCode: 1 }), "user_error"],
];

describe("the failure category table", () => {
  test.each(ROWS)("row %s", (row, evidence, category) => {
    expect(failureCategoryRow(evidence)).toBe(row);
    expect(classifyFailure(evidence)).toBe(category);
  });

  test("the cases above cover every row, in the table's order", () => {
    expect(ROWS.map(([row]) => row)).toEqual(Object.keys(FAILURE_CATEGORY_TABLE));
  });

  test.each([
    // A shell reports its child's signal as 128 + N, with no signal of its own (`exit 137`).
    [ended({ exitCode: 137 }), "killed"],
    [ended({ exitCode: 143 }), "terminated"],
    [ended({ exitCode: 130 }), "terminated"],
    [ended({ exitCode: 129, signal: "SIGHUP" }), "terminated"],
    [ended({ exitCode: 134 }), "crashed"],
    [ended({ exitCode: 135, signal: "SIGBUS" }), "crashed"],
    [ended({ exitCode: 141 }), "signaled"], // SIGPIPE
    [ended({ exitCode: 192 }), "signaled"], // 128 + 64, the last signal
    [ended({ exitCode: 193 }), "user_error"], // past every signal: a plain exit code
    [ended({ exitCode: 255 }), "user_error"],
    [ended({ exitCode: 2 }), "user_error"],
    [ended({ exitCode: -1 }), "user_error"],
    [ended({}), undefined], // no exit code at all (a kernel stopped before it started)
    // A condition decides whatever the exit code, even 0, and whatever stop was asked.
    [ended({ exitCode: 0, condition: "OOMKilled" }), "oom"],
    [ended({ condition: "Evicted", stopRequested: true }), "evicted"],
    // Exit 0 is success even after a stop was asked (a program that exits cleanly on SIGTERM).
    [ended({ exitCode: 0, stopRequested: true }), undefined],
    [{ status: "ERROR", permanent: "arguments_too_large" } as const, "arguments_too_large"],
  ] as const)("%o → %s", (evidence, category) => {
    expect(classifyFailure(evidence)).toBe(category);
  });

  test("every category is a valid failureCategory of the report's schema", () => {
    for (const { category } of Object.values(FAILURE_CATEGORY_TABLE)) {
      if (category === undefined || category === "(as reported)") continue;
      expect(category).toMatch(/^[a-z0-9][a-z0-9_.-]{0,63}$/);
    }
  });
});

test("docs/retries.md shows the table as the code has it, row for row", () => {
  const rows = readFileSync("docs/retries.md", "utf8")
    .split("\n")
    .filter((line) => line.startsWith("| "))
    .map((line) =>
      line
        .split("|")
        .slice(1, -1)
        .map((cell) => cell.trim().replace(/^`(.*)`$/, "$1"))
        .join(" | "),
    );
  const table = Object.values(FAILURE_CATEGORY_TABLE);
  const expected = [
    "when the run ended with | failure category",
    ...table.map((r) => `${r.when} | ${r.category ?? "none"}`),
  ];
  const start = rows.indexOf(expected[0]!);
  expect(start).toBeGreaterThanOrEqual(0);
  expect([rows[start], ...rows.slice(start + 2, start + 2 + table.length)]).toEqual(expected);
});

describe("a retry rule on a category the table gives", () => {
  const policy = parseRetryPolicy({
    apiVersion: "cairn.dev/v1",
    kind: "RetryPolicy",
    metadata: { name: "host-faults" },
    spec: {
      retryLimit: 3,
      rules: [
        { action: "Retry", onFailureCategory: ["killed", "oom"] },
        { action: "Fail", onFailureCategory: ["user_error"] },
      ],
    },
  });
  const kernelOf = (evidence: FailureEvidence): RunKernel => {
    const category = classifyFailure(evidence);
    return {
      index: 0,
      outcome: "FAILED",
      ...(evidence.exitCode !== undefined ? { exitCode: evidence.exitCode } : {}),
      ...(category !== undefined ? { failureCategory: category } : {}),
      finishedAtMs: 1,
    };
  };

  test.each([
    ["a SIGKILLed kernel", 0, "retry", ended({ exitCode: 137, signal: "SIGKILL" })],
    ["an `exit 137` kernel", 0, "retry", ended({ exitCode: 137 })],
    ["an OOM-killed kernel", 0, "retry", ended({ exitCode: 137, signal: "SIGKILL", condition: "OOMKilled" })],
    ["an `exit 1` kernel", 1, "fail", ended({ exitCode: 1 })],
  ] as const)("%s is matched by rule %i and its verdict is %s", (_, index, action, evidence) => {
    const kernel = kernelOf(evidence);
    expect(findMatchingRule([policy], [kernel])?.index).toBe(index);
    expect(
      evaluateRetry({
        run: { startedRunning: true, kernels: [kernel] },
        policies: [policy],
        state: INITIAL_RETRY_STATE,
        config: RETRY_CONFIG_DEFAULTS,
      }),
    ).toMatchObject({ action, matchedRule: { policy: "host-faults", index } });
  });
});
