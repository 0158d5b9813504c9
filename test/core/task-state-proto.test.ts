/**
 * Iris's TaskState proto values (Iris's task states, table "State | Proto Value | …"): the table in code
 * against the seed's literal numbers, TASK_STATE_UNSPECIFIED with nothing mapping to it, and the
 * table in docs/jobs.md row for row.
 */
import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { jobTasks, newJob } from "../../functions/core/jobs.ts";
import { parseSessionSpec } from "../../functions/core/spec.ts";
import { TaskState } from "../../functions/core/status.ts";
import {
  TASK_STATE_PROTO,
  TASK_STATE_PROTO_TABLE,
  TASK_STATE_UNSPECIFIED,
  taskStateProto,
} from "../../functions/core/task-state-proto.ts";
import { NOW_MS } from "./fixtures.ts";

/** Copied from the seed's table, in its order; never derived from the code under test. */
const SEED: [state: string, proto: number][] = [
  ["UNSPECIFIED", 0],
  ["PENDING", 1],
  ["ASSIGNED", 9],
  ["BUILDING", 2],
  ["RUNNING", 3],
  ["SUCCEEDED", 4],
  ["FAILED", 5],
  ["KILLED", 6],
  ["WORKER_FAILED", 7],
  ["UNSCHEDULABLE", 8],
  ["PREEMPTED", 10],
];

describe("the seed's proto values, row by row", () => {
  test.each(SEED)("TASK_STATE_%s = %d", (state, proto) => {
    const row = TASK_STATE_PROTO_TABLE.find((r) => r.state === state);
    expect(row).toMatchObject({ state, protoName: `TASK_STATE_${state}`, proto });
  });

  test("the table has exactly the seed's rows, in its order, with distinct values", () => {
    expect(TASK_STATE_PROTO_TABLE.map((r) => [r.state, r.proto])).toEqual(SEED);
    expect(new Set(TASK_STATE_PROTO_TABLE.map((r) => r.proto)).size).toBe(SEED.length);
  });

  test.each(Object.values(TaskState))("taskStateProto(%s) is its row's value", (state) => {
    expect(taskStateProto(state)).toBe(SEED.find(([s]) => s === state)?.[1]);
  });
});

describe("TASK_STATE_UNSPECIFIED (0): nothing in Cairn maps to it", () => {
  test("it is in the table but not a TaskState, so no task, event or output carries it", () => {
    expect(TASK_STATE_PROTO[TASK_STATE_UNSPECIFIED].proto).toBe(0);
    expect(Object.values(TaskState)).not.toContain(TASK_STATE_UNSPECIFIED);
    expect(Object.values(TaskState).map(taskStateProto)).not.toContain(0);
  });

  test("a task whose session is not stored yet is PENDING (1), not UNSPECIFIED", () => {
    const spec = parseSessionSpec({ name: "t", command: ["true"], replicas: 2, coscheduled: false });
    const tasks = jobTasks(newJob("job-a", spec, NOW_MS), []);
    expect(tasks.map((t) => [t.state, taskStateProto(t.state)])).toEqual([
      ["PENDING", 1],
      ["PENDING", 1],
    ]);
  });

  test("every row says what puts a task in its state, or why nothing does", () => {
    for (const row of TASK_STATE_PROTO_TABLE) expect(row.cairn.length).toBeGreaterThan(10);
    expect(TASK_STATE_PROTO.UNSPECIFIED.cairn).toMatch(/^nothing: /);
  });
});

test("docs/jobs.md shows the table as the code has it, row for row", () => {
  // Prettier pads the cells; compare the cells, not the spacing.
  const rows = readFileSync("docs/jobs.md", "utf8")
    .split("\n")
    .filter((line) => line.startsWith("| "))
    .map((line) =>
      line
        .split("|")
        .slice(1, -1)
        .map((cell) => cell.trim())
        .join(" | "),
    );
  const expected = [
    "task state | proto | proto enum | what puts a task in it",
    ...TASK_STATE_PROTO_TABLE.map((r) => `${r.state} | ${r.proto} | ${r.protoName} | ${r.cairn}`),
  ];
  const start = rows.indexOf(expected[0]!);
  expect(start).toBeGreaterThanOrEqual(0);
  // The header, then (after the separator row) every row in order.
  expect([rows[start], ...rows.slice(start + 2, start + 2 + TASK_STATE_PROTO_TABLE.length)]).toEqual(
    expected,
  );
});
