/**
 * bench/compare-figures.ts: `bench:compare`'s command line, the figures it reads from a
 * `bench:local` run (printed here by the bench's own report functions, so a changed label fails
 * here and not in the middle of a long comparison), medians, ratios and the verdict.
 */
import { describe, expect, test, vi } from "vitest";
import {
  allRequests,
  median,
  pairRatios,
  parseBenchOutput,
  parseCompareArgs,
  ratio,
  renderTable,
  runOrder,
  verdict,
  type RunFigures,
} from "../bench/compare-figures.ts";
import { BenchUsageError } from "../bench/flags.ts";
import { priceOf, type MeasuredCounts } from "../bench/aws-cost.ts";
import { printAwsPrice } from "../bench/aws-report.ts";
import { printCosts, printLatency, row, type Costs } from "../bench/local-harness.ts";

describe("the command line", () => {
  test("two revisions and the defaults: 3 pairs of 1,000 sessions, no npm test, no logs", () => {
    expect(parseCompareArgs(["main~4", "main"])).toEqual({
      revA: "main~4",
      revB: "main",
      pairs: 3,
      sessions: 1000,
      testCpu: false,
      logs: undefined,
      benchArgs: [],
    });
  });

  test("flags in either form, anywhere among the revisions; bench:local's own after a second --", () => {
    const options = parseCompareArgs([
      "--pairs=4",
      "abc123",
      "--sessions",
      "300",
      "HEAD",
      "--test-cpu",
      "--logs",
      "/tmp/runs",
      "--",
      "--agents",
      "4",
      "--warm-up",
      "100",
    ]);
    expect(options).toEqual({
      revA: "abc123",
      revB: "HEAD",
      pairs: 4,
      sessions: 300,
      testCpu: true,
      logs: "/tmp/runs",
      benchArgs: ["--agents", "4", "--warm-up", "100"],
    });
  });

  test.each([
    [["main"], /expected two revisions, REV_A and REV_B \(got "main"\)/],
    [[], /expected two revisions.*got none/],
    [["a", "b", "c"], /expected two revisions/],
    [["a", "b", "--pairs", "0"], /--pairs must be a whole number from 1 to 50 \(got "0"\)/],
    [["a", "b", "--sessions", "many"], /--sessions must be a whole number from 1/],
    [["a", "b", "--sessions"], /--sessions needs a value/],
    [["a", "b", "--pairs", "--test-cpu"], /--pairs needs a value/],
    [["a", "b", "--test-cpu=yes"], /--test-cpu takes no value/],
    [["a", "b", "--runs", "3"], /unknown option "--runs"/],
    [["a", "b", "--", "--sessions", "10"], /give --sessions before the second --/],
    [["a", "b", "--", "--scenario", "gang"], /sessions scenario only/],
  ])("%j is refused, naming the argument and the reason", (argv, message) => {
    expect(() => parseCompareArgs(argv)).toThrow(BenchUsageError);
    expect(() => parseCompareArgs(argv)).toThrow(message);
  });

  test("the runs alternate, A first: A B A B A B", () => {
    expect(runOrder(3).map((r) => `${r.side}${r.round}`)).toEqual(["A1", "B1", "A2", "B2", "A3", "B3"]);
  });
});

describe("medians and ratios", () => {
  test("the median of an odd count is the middle value, of an even count the mean of the middle two", () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([10, 1, 4, 3])).toBe(3.5);
    expect(median([5])).toBe(5);
  });

  test("a run without the figure (NaN) is left out; no runs give NaN", () => {
    expect(median([NaN, 4, 2])).toBe(3);
    expect(median([])).toBeNaN();
  });

  test("per pair, each B run against the A run just before it", () => {
    const a = [run({ throughput: 10 }), run({ throughput: 20 }), run({ throughput: 5 })];
    const b = [run({ throughput: 9 }), run({ throughput: 14 }), run({ throughput: 6 })];
    expect(pairRatios(a, b, (f) => f.throughput)).toEqual([0.9, 0.7, 1.2]);
    // A stopped comparison's last A run has no B yet.
    expect(pairRatios(a, b.slice(0, 2), (f) => f.throughput)).toEqual([0.9, 0.7]);
  });

  test("B/A, with 0 against 0 as no change and anything against 0 as infinitely more", () => {
    expect(ratio(20, 17)).toBeCloseTo(0.85, 10);
    expect(ratio(0, 0)).toBe(1);
    expect(ratio(0, 0.4)).toBe(Infinity);
  });
});

/** A run with round figures; `over` changes some. */
function run(over: Partial<RunFigures> = {}): RunFigures {
  return {
    submitted: 1000,
    ended: 1000,
    throughput: 20,
    firstRunningSeconds: 0.6,
    p50RunningSeconds: 30,
    transitions: 9,
    dynamoDbRequests: 12.3,
    sqsRequests: 13.7,
    events: 12.5,
    invocations: 9.3,
    price: 0.32,
    cpuMsPerSession: 150,
    ...over,
  };
}

describe("the verdict", () => {
  const a = [run({ throughput: 20 }), run({ throughput: 22 }), run({ throughput: 18 })];

  test("B within every bound passes, judged on the medians", () => {
    // Medians: A 20, B 17.2 (0.86 × A) despite one slow run of B.
    const b = [run({ throughput: 17.2 }), run({ throughput: 12 }), run({ throughput: 19 })];
    const v = verdict(a, b);
    expect(v.pass).toBe(true);
    expect(v.checks.map((c) => [c.name, c.pass])).toEqual([
      ["throughput B/A", true],
      ["first session RUNNING B/A", true],
      ["B: DynamoDB requests per session", true],
      ["B: Step Functions transitions per session", true],
    ]);
  });

  test("throughput under 0.85 × A's fails", () => {
    const v = verdict(a, [run({ throughput: 16.9 }), run({ throughput: 16.9 }), run({ throughput: 30 })]);
    expect(v.pass).toBe(false);
    expect(v.checks.find((c) => c.name === "throughput B/A")).toMatchObject({
      measured: "0.84",
      pass: false,
    });
  });

  test("15 DynamoDB requests per session pass, 15.1 fail; 9 transitions pass, 9.5 fail", () => {
    const at = (dynamoDbRequests: number, transitions: number) =>
      verdict(
        a,
        [1, 2, 3].map(() => run({ dynamoDbRequests, transitions })),
      );
    expect(at(15, 9).pass).toBe(true);
    const over = at(15.1, 9.5);
    expect(over.pass).toBe(false);
    expect(over.checks.filter((c) => !c.pass).map((c) => c.name)).toEqual([
      "B: DynamoDB requests per session",
      "B: Step Functions transitions per session",
    ]);
  });

  test("the first session RUNNING may take at most A's / 0.85", () => {
    const within = verdict(
      a,
      [1, 2, 3].map(() => run({ firstRunningSeconds: 0.7 })),
    );
    expect(within.pass).toBe(true);
    const slower = verdict(
      a,
      [1, 2, 3].map(() => run({ firstRunningSeconds: 0.75 })),
    );
    expect(slower.checks.find((c) => c.name === "first session RUNNING B/A")).toMatchObject({
      measured: "1.25",
      pass: false,
    });
  });

  test("npm test's CPU, when measured, must not be higher", () => {
    const b = [run(), run(), run()];
    expect(verdict(a, b, { a: 200, b: 200 }).pass).toBe(true);
    const more = verdict(a, b, { a: 200, b: 210 });
    expect(more.pass).toBe(false);
    expect(more.checks.at(-1)).toMatchObject({ name: "npm test CPU B/A", measured: "1.05", pass: false });
  });

  test("a run that did not end every session fails the comparison, with a note", () => {
    const v = verdict(a, [run(), run({ ended: 990 }), run()]);
    expect(v.pass).toBe(false);
    expect(v.notes).toEqual(["a run of B ended 990 of 1000 sessions"]);
  });

  test("fewer than three pairs give no verdict, the checks still shown", () => {
    const v = verdict([run()], [run()]);
    expect(v.pass).toBeUndefined();
    expect(v.checks).toHaveLength(4);
    expect(v.notes).toContain("fewer than 3 pairs: no verdict");
  });
});

describe("the table", () => {
  test("medians, B/A and each run per figure, then the checks and the verdict", () => {
    const text = renderTable({
      a: { rev: "start", commit: "8b0a9eeb722377546a999ae11b75979c03cd0065", label: "before" },
      b: { rev: "main", commit: "1234567890abcdef1234567890abcdef12345678", label: "after" },
      sessions: 1000,
      pairs: 3,
      benchArgs: [],
      runsA: [run({ throughput: 20 }), run({ throughput: 22 }), run({ throughput: 18 })],
      runsB: [run({ throughput: 19 }), run({ throughput: 21 }), run({ throughput: 17 })],
    });
    expect(text).toContain("A = start (8b0a9eeb7223): before");
    expect(text).toContain("B = main (1234567890ab): after");
    expect(text).toMatch(
      /^throughput \(sessions\/s\) +20\.0 +19\.0 +0\.95 +20\.0 22\.0 18\.0 +19\.0 21\.0 17\.0$/m,
    );
    // 12.3 + 13.7 + 12.5 + 9.3
    expect(text).toMatch(/^requests per session, all +47\.8 +47\.8 +1\.00/m);
    expect(text).toContain("pass  throughput B/A: 0.95 (bound ≥ 0.85)");
    expect(text).toContain("throughput B/A by pair: 0.95 0.95 0.94 (median 0.95)");
    expect(text).toMatch(/verdict: B keeps every bound$/);
  });
});

/** What a `bench:local` run prints, by the bench's own functions; `first` is its first-RUNNING figure. */
function benchOutput(first = "0.65 s"): string {
  const printed: string[] = [];
  const spy = vi.spyOn(console, "log").mockImplementation((line: unknown) => {
    printed.push(String(line));
  });
  try {
    // The lines bench/local.ts prints itself, in its words…
    row("sessions submitted", "200");
    row("sessions ended", "200 (200 TERMINATED, 0 CANCELLED)");
    row("wall time, first submit → last end", "10.00 s");
    row("throughput", "20.0 sessions/s");
    row("first session RUNNING", first);
    printLatency("submit → RUNNING", [4000, 5000, 6000]);
    // …then the harness's cost lines and the AWS price, from counts.
    printCosts(COSTS, [{ unit: "session", count: 200 }]);
    printAwsPrice(COUNTS, 20, 2, 5);
  } finally {
    spy.mockRestore();
  }
  return printed.join("\n");
}

describe("a bench:local run's figures", () => {
  test("read from the lines the bench's own report functions print", () => {
    const figures = parseBenchOutput(benchOutput());
    expect(figures).toMatchObject({
      submitted: 200,
      ended: 200,
      throughput: 20,
      firstRunningSeconds: 0.65,
      p50RunningSeconds: 5,
      transitions: 9,
      // (500 reads + 1,960 writes) / 200
      dynamoDbRequests: 12.3,
      invocations: 9.25,
      events: 6,
      cpuMsPerSession: 150,
    });
    // Standard: 200 + 2 × 20 coordinator requests and 400 agent messages × 3; FIFO: 400 + 2 × 40.
    expect(figures.sqsRequests).toBeCloseTo((240 + 1_200 + 480) / 200, 2);
    // Each price line has two significant figures: their sum is within 2 % of the exact price.
    const exact = priceOf(COUNTS, 1_000).dollars;
    expect(Math.abs(figures.price - exact) / exact).toBeLessThan(0.02);
    expect(allRequests(figures)).toBeCloseTo(12.3 + figures.sqsRequests + 6 + 9.25, 6);
  });

  test("a first session that ran before the burst was all in counts as 0 s", () => {
    const figures = parseBenchOutput(
      benchOutput("before the burst was in (1.20 s after its first submission)"),
    );
    expect(figures.firstRunningSeconds).toBe(0);
  });

  test("a missing line is named", () => {
    const output = benchOutput().replace(/^sessions ended .*$/m, "");
    expect(() => parseBenchOutput(output)).toThrow(/bench:local's output has no "sessions ended" line/);
  });
});

const COUNTS: MeasuredCounts = {
  sessions: 200,
  transitions: 200 * 9,
  executionsStarted: 200,
  taskCallbacks: 200 * 7,
  lambda: [
    {
      name: "Coordinator",
      invocations: 250,
      milliseconds: 250 * 200,
      memoryMiB: 512,
      underStateMachine: false,
    },
    {
      name: "EnterStage",
      invocations: 1_600,
      milliseconds: 1_600 * 50,
      memoryMiB: 256,
      underStateMachine: true,
    },
  ],
  events: 200 * 6,
  queues: [
    { name: "CoordinatorQueue", fifo: false, messages: 200, batches: 20 },
    { name: "PlacementQueue", fifo: true, messages: 400, batches: 40 },
  ],
  agentQueueMessages: 200 * 2,
  dynamoDb: { readUnits: 200 * 10, writeUnits: 200 * 20, failedWrites: 20 },
  functionLogBytes: 1024 ** 2,
};

const COSTS: Costs = {
  transitions: 200 * 9,
  readRequests: 500,
  readItems: 900,
  readsByOperation: new Map([["Query", { requests: 500, items: 900 }]]),
  byPurpose: new Map([["read:getSession", { requests: 500, items: 900 }]]),
  invocations: new Map([
    ["Coordinator", 250],
    ["EnterStage", 1_600],
  ]),
  cpu: { dynamoDb: 12, dynamoDbJit: 1, node: 15, agents: 3 },
  executionsMissing: 0,
  writeOperations: 1_960,
  writeItems: 2_400,
  failedWrites: 20,
  failedByPurpose: new Map([["write:applyWrite", 20]]),
  writesByOperation: new Map([["UpdateItem", { operations: 1_960, items: 2_400 }]]),
  eventsByType: new Map([
    ["Session Submitted", 200],
    ["Agent Heartbeat", 40],
  ]),
  queues: new Map([["CoordinatorQueue", { batches: 20, sent: 200 }]]),
  agentMessages: 400,
  readUnits: 2_000,
  writeUnits: 4_000,
  functionLogBytes: 1024 ** 2,
  customMetrics: 20,
  executionsStarted: 200,
  taskCallbacks: 1_400,
};
