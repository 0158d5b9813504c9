/**
 * The arithmetic of `npm run bench:compare` (bench/compare.ts), apart from its processes: the
 * command line, the figures read from one `bench:local` run's output, medians and ratios, the
 * table and the verdict against the bounds a change must keep. Pure: no git, no processes, no
 * clock, so a test can check each piece.
 */
import { BenchUsageError, intFlag } from "./flags.ts";

// ---------------------------------------------------------------------------------------------
// The command line.

export interface CompareOptions {
  /** The revisions as given (any git revision: a commit, a branch, `main`, `HEAD~3`). */
  readonly revA: string;
  readonly revB: string;
  /** A B pairs: each run of A is followed by one of B. */
  readonly pairs: number;
  readonly sessions: number;
  /** Also measure `npm test`'s CPU time (user + system) once for each revision. */
  readonly testCpu: boolean;
  /** A directory that keeps every run's whole output (the profile); none by default. */
  readonly logs: string | undefined;
  /** Passed to every `bench:local` run as they are (after a second `--`). */
  readonly benchArgs: readonly string[];
}

export const USAGE = `usage: npm run bench:compare -- REV_A REV_B [--pairs 3] [--sessions 1000] [--test-cpu] [--logs DIR] [-- BENCH_LOCAL_ARGS…]
  Runs \`bench:local\` for REV_A and REV_B alternately (A B A B …) in temporary git worktrees
  and prints the median of each figure, every run's, the B/A ratios and a verdict against the bounds.
  --pairs N        A B pairs (default 3; fewer than 3 gives no verdict)
  --sessions N     sessions per run (default 1000)
  --test-cpu       also measure \`npm test\`'s CPU time (user + system, its whole process tree) for each revision
  --logs DIR       keep every run's whole output in DIR (a-1.txt, b-1.txt, …, a-npm-test.txt, b-npm-test.txt)
  after a second --: more \`bench:local\` flags, the same for every run (--agents, --warm-up …)`;

/** The fewest pairs a verdict is given for. */
export const MIN_PAIRS_FOR_VERDICT = 3;

/**
 * Parses the arguments after `npm run bench:compare --`. Throws BenchUsageError naming the
 * argument and the reason.
 */
export function parseCompareArgs(argv: readonly string[]): CompareOptions {
  const split = argv.indexOf("--");
  const own = split === -1 ? argv : argv.slice(0, split);
  const benchArgs = split === -1 ? [] : argv.slice(split + 1);
  const revisions: string[] = [];
  let pairs = 3;
  let sessions = 1000;
  let testCpu = false;
  let logs: string | undefined;
  for (let i = 0; i < own.length; i++) {
    const arg = own[i]!;
    const [flag, inline] = arg.startsWith("--") && arg.includes("=") ? arg.split(/=(.*)/s) : [arg, undefined];
    const value = (): string => {
      if (inline !== undefined) return inline;
      const next = own[i + 1];
      if (next === undefined || next.startsWith("--")) throw new BenchUsageError(`${flag} needs a value`);
      i++;
      return next;
    };
    switch (flag) {
      case "--pairs":
        pairs = intFlag("pairs", value(), 1, 50);
        break;
      case "--sessions":
        sessions = intFlag("sessions", value(), 1);
        break;
      case "--test-cpu":
        if (inline !== undefined) throw new BenchUsageError("--test-cpu takes no value");
        testCpu = true;
        break;
      case "--logs":
        logs = value();
        if (logs === "") throw new BenchUsageError("--logs needs a directory");
        break;
      case "-h":
      case "--help":
        throw new BenchUsageError("help");
      default:
        if (arg.startsWith("-")) throw new BenchUsageError(`unknown option "${arg}"`);
        revisions.push(arg);
    }
  }
  if (revisions.length !== 2) {
    throw new BenchUsageError(
      `expected two revisions, REV_A and REV_B (got ${revisions.length === 0 ? "none" : revisions.map((r) => `"${r}"`).join(", ")})`,
    );
  }
  if (benchArgs.some((a) => a === "--sessions" || a.startsWith("--sessions="))) {
    throw new BenchUsageError("give --sessions before the second --: bench:compare passes it to every run");
  }
  if (benchArgs.some((a) => a === "--scenario" || a.startsWith("--scenario="))) {
    throw new BenchUsageError(
      "bench:compare measures the sessions scenario only; --scenario cannot be passed",
    );
  }
  return { revA: revisions[0]!, revB: revisions[1]!, pairs, sessions, testCpu, logs, benchArgs };
}

/** The order of the runs: A B A B …, `pairs` of each. */
export function runOrder(pairs: number): { readonly side: Side; readonly round: number }[] {
  return Array.from({ length: pairs }, (_, i) => [
    { side: "A" as const, round: i + 1 },
    { side: "B" as const, round: i + 1 },
  ]).flat();
}

export type Side = "A" | "B";

// ---------------------------------------------------------------------------------------------
// One run's figures, read from `bench:local`'s output.

export interface RunFigures {
  readonly submitted: number;
  readonly ended: number;
  /** Sessions per second, first submit → last end. */
  readonly throughput: number;
  /**
   * Seconds from the end of the burst's submission to the first session's RUNNING; 0 when one ran
   * before the burst was all in.
   */
  readonly firstRunningSeconds: number;
  /** The median session's submit → RUNNING, seconds. */
  readonly p50RunningSeconds: number;
  readonly transitions: number;
  /** DynamoDB requests (reads + writes) per session. */
  readonly dynamoDbRequests: number;
  /** SQS requests (standard and FIFO queues) per session, as the AWS price counts them. */
  readonly sqsRequests: number;
  /** EventBridge events per session (agents' heartbeats apart). */
  readonly events: number;
  /** Lambda invocations per session. */
  readonly invocations: number;
  /** AWS list price of 1,000 sessions, dollars. */
  readonly price: number;
  /** CPU milliseconds per session: DynamoDB Local, the runtime's Node process and the agents. */
  readonly cpuMsPerSession: number;
}

/** Requests of every kind per session: DynamoDB, SQS, EventBridge, Lambda. */
export function allRequests(f: RunFigures): number {
  return f.dynamoDbRequests + f.sqsRequests + f.events + f.invocations;
}

const NUMBER = String.raw`([0-9][0-9.,]*(?:e[+-]?[0-9]+)?)`;

function num(text: string): number {
  return Number(text.replaceAll(",", ""));
}

/**
 * Reads one `bench:local --scenario sessions` run's figures from its standard output. Throws
 * naming the line it could not find (the bench's output changed, or the run ended early).
 */
export function parseBenchOutput(output: string): RunFigures {
  const find = (label: string, pattern: string): RegExpExecArray => {
    const match = new RegExp(`^${pattern}`, "m").exec(output);
    if (match === null) throw new Error(`bench:local's output has no "${label}" line`);
    return match;
  };
  const perSession = (label: string, pattern: string): number => num(find(label, pattern)[1]!);
  const firstRunning = find("first session RUNNING", String.raw`first session RUNNING\s+(.*)$`)[1]!.trim();
  const seconds = /^([0-9.]+) s$/.exec(firstRunning);
  const firstRunningSeconds = firstRunning.startsWith("before the burst was in")
    ? 0
    : seconds === null
      ? NaN
      : num(seconds[1]!);
  const sqs =
    perSession(
      "SQS requests, standard queues",
      String.raw` +SQS requests, standard queues\s+${NUMBER} requests`,
    ) + perSession("SQS requests, FIFO queues", String.raw` +SQS requests, FIFO queues\s+${NUMBER} requests`);
  // The price lines have two significant figures each; their sum is finer than the rounded total.
  const header = find("AWS, <region> list prices", String.raw`AWS, \S+ list prices`);
  const total = find("AWS price of 1,000 sessions", String.raw`AWS price of 1,000 sessions\s+\$${NUMBER}`);
  const items = [
    ...output
      .slice(header.index, total.index)
      .matchAll(new RegExp(String.raw`\$${NUMBER} per 1,000 sessions`, "g")),
  ].map((m) => num(m[1]!));
  return {
    submitted: perSession("sessions submitted", String.raw`sessions submitted\s+([0-9]+)`),
    ended: perSession("sessions ended", String.raw`sessions ended\s+([0-9]+)`),
    throughput: perSession("throughput", String.raw`throughput\s+${NUMBER} sessions/s`),
    firstRunningSeconds,
    p50RunningSeconds: perSession("submit → RUNNING", String.raw`submit → RUNNING\s+p50 ${NUMBER} s`),
    transitions: perSession(
      "Step Functions transitions",
      String.raw`Step Functions transitions\s+${NUMBER} per session`,
    ),
    dynamoDbRequests: perSession(
      "DynamoDB requests (reads + writes)",
      String.raw`DynamoDB requests \(reads \+ writes\)\s+${NUMBER} per session`,
    ),
    sqsRequests: sqs,
    events: perSession(
      "EventBridge events (AWS)",
      String.raw` +EventBridge events\s+${NUMBER} events per session`,
    ),
    invocations: perSession(
      "Lambda requests",
      String.raw` +Lambda requests\s+${NUMBER} invocations per session`,
    ),
    price: items.length > 0 ? items.reduce((a, b) => a + b, 0) : num(total[1]!),
    cpuMsPerSession: perSession("CPU ms of work", String.raw`CPU ms of work\s+${NUMBER}/session`),
  };
}

// ---------------------------------------------------------------------------------------------
// Medians, ratios, the verdict.

/** The median of the values (the mean of the middle two for an even count); NaN for none. */
export function median(values: readonly number[]): number {
  const sorted = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** B / A; 1 when both are 0, Infinity when only A is. */
export function ratio(a: number, b: number): number {
  if (a === 0) return b === 0 ? 1 : Infinity;
  return b / a;
}

/** The bounds a change must keep against the revision it replaces. */
export const BOUNDS = {
  /** B's throughput at least this share of A's. */
  minThroughputRatio: 0.85,
  /** B's first session RUNNING at most A's divided by the throughput ratio. */
  maxFirstRunningRatio: 1 / 0.85,
  /** B's DynamoDB requests per session at most this. */
  maxDynamoDbRequests: 15,
  /** B's Step Functions state transitions per session at most this. */
  maxTransitions: 9,
  /** B's `npm test` CPU time at most A's. */
  maxTestCpuRatio: 1,
} as const;

export interface Check {
  readonly name: string;
  /** The figure compared, as shown. */
  readonly measured: string;
  readonly bound: string;
  readonly pass: boolean;
}

export interface Verdict {
  readonly checks: readonly Check[];
  /** Undefined when there are too few pairs to judge (the checks are still shown). */
  readonly pass: boolean | undefined;
  readonly notes: readonly string[];
}

export interface TestCpu {
  readonly a: number;
  readonly b: number;
}

export function verdict(a: readonly RunFigures[], b: readonly RunFigures[], testCpu?: TestCpu): Verdict {
  const m = (runs: readonly RunFigures[], pick: (f: RunFigures) => number) => median(runs.map(pick));
  const throughput = ratio(
    m(a, (f) => f.throughput),
    m(b, (f) => f.throughput),
  );
  const firstRunning = ratio(
    m(a, (f) => f.firstRunningSeconds),
    m(b, (f) => f.firstRunningSeconds),
  );
  const dynamo = m(b, (f) => f.dynamoDbRequests);
  const transitions = m(b, (f) => f.transitions);
  const checks: Check[] = [
    {
      name: "throughput B/A",
      measured: fmtRatio(throughput),
      bound: `≥ ${BOUNDS.minThroughputRatio}`,
      pass: throughput >= BOUNDS.minThroughputRatio,
    },
    {
      name: "first session RUNNING B/A",
      measured: fmtRatio(firstRunning),
      bound: `≤ ${BOUNDS.maxFirstRunningRatio.toFixed(2)}`,
      pass: firstRunning <= BOUNDS.maxFirstRunningRatio,
    },
    {
      name: "B: DynamoDB requests per session",
      measured: fmt(dynamo),
      bound: `≤ ${BOUNDS.maxDynamoDbRequests}`,
      pass: dynamo <= BOUNDS.maxDynamoDbRequests,
    },
    {
      name: "B: Step Functions transitions per session",
      measured: fmt(transitions),
      bound: `≤ ${BOUNDS.maxTransitions}`,
      pass: transitions <= BOUNDS.maxTransitions,
    },
  ];
  if (testCpu !== undefined) {
    const cpu = ratio(testCpu.a, testCpu.b);
    checks.push({
      name: "npm test CPU B/A",
      measured: fmtRatio(cpu),
      bound: `≤ ${BOUNDS.maxTestCpuRatio}`,
      pass: cpu <= BOUNDS.maxTestCpuRatio,
    });
  }
  const notes: string[] = [];
  const incomplete = [...a.map((f) => ["A", f] as const), ...b.map((f) => ["B", f] as const)].filter(
    ([, f]) => f.ended < f.submitted,
  );
  for (const [side, f] of incomplete)
    notes.push(`a run of ${side} ended ${f.ended} of ${f.submitted} sessions`);
  const tooFew = Math.min(a.length, b.length) < MIN_PAIRS_FOR_VERDICT;
  if (tooFew) notes.push(`fewer than ${MIN_PAIRS_FOR_VERDICT} pairs: no verdict`);
  const pass = tooFew ? undefined : incomplete.length === 0 && checks.every((c) => c.pass);
  return { checks, pass, notes };
}

/** B/A of each pair: the i-th B run against the i-th A run (the one just before it). */
export function pairRatios(
  a: readonly RunFigures[],
  b: readonly RunFigures[],
  pick: (f: RunFigures) => number,
): number[] {
  return b.slice(0, a.length).map((runB, i) => ratio(pick(a[i]!), pick(runB)));
}

// ---------------------------------------------------------------------------------------------
// The table.

interface Metric {
  readonly label: string;
  readonly pick: (f: RunFigures) => number;
  readonly digits: number;
  readonly prefix?: string;
}

export const METRICS: readonly Metric[] = [
  { label: "throughput (sessions/s)", pick: (f) => f.throughput, digits: 1 },
  { label: "first session RUNNING (s)", pick: (f) => f.firstRunningSeconds, digits: 2 },
  { label: "p50 submit → RUNNING (s)", pick: (f) => f.p50RunningSeconds, digits: 1 },
  { label: "requests per session, all", pick: allRequests, digits: 1 },
  { label: "  DynamoDB (reads + writes)", pick: (f) => f.dynamoDbRequests, digits: 1 },
  { label: "  SQS", pick: (f) => f.sqsRequests, digits: 1 },
  { label: "  EventBridge events", pick: (f) => f.events, digits: 1 },
  { label: "  Lambda invocations", pick: (f) => f.invocations, digits: 1 },
  { label: "Step Functions transitions/session", pick: (f) => f.transitions, digits: 1 },
  { label: "AWS price per 1,000 sessions ($)", pick: (f) => f.price, digits: 3 },
  { label: "CPU ms of work per session", pick: (f) => f.cpuMsPerSession, digits: 0 },
];

export interface Described {
  readonly label: string;
  /** What the revision was given as and the commit it names. */
  readonly rev: string;
  readonly commit: string;
}

/** The comparison as text: a header, one row per figure (medians, B/A, each run), the verdict. */
export function renderTable(options: {
  readonly a: Described;
  readonly b: Described;
  readonly sessions: number;
  readonly pairs: number;
  readonly benchArgs: readonly string[];
  readonly runsA: readonly RunFigures[];
  readonly runsB: readonly RunFigures[];
  readonly testCpu?: TestCpu;
}): string {
  const { runsA, runsB } = options;
  const lines: string[] = [];
  const extra = options.benchArgs.length > 0 ? ` ${options.benchArgs.join(" ")}` : "";
  lines.push(
    `A = ${options.a.rev} (${options.a.commit.slice(0, 12)})${options.a.label ? `: ${options.a.label}` : ""}`,
  );
  lines.push(
    `B = ${options.b.rev} (${options.b.commit.slice(0, 12)})${options.b.label ? `: ${options.b.label}` : ""}`,
  );
  lines.push(
    `bench:local --sessions ${options.sessions}${extra}; ${options.pairs} ${options.pairs === 1 ? "pair" : "pairs"} run A B A B …; medians of the runs`,
  );
  lines.push("");
  const header = ["", "A", "B", "B/A", "A runs", "B runs"];
  const rows: string[][] = METRICS.map((metric) => {
    const a = median(runsA.map(metric.pick));
    const b = median(runsB.map(metric.pick));
    const each = (runs: readonly RunFigures[]) =>
      runs.map((f) => metric.pick(f).toFixed(metric.digits)).join(" ");
    return [
      metric.label,
      a.toFixed(metric.digits),
      b.toFixed(metric.digits),
      fmtRatio(ratio(a, b)),
      each(runsA),
      each(runsB),
    ];
  });
  if (options.testCpu !== undefined) {
    const { a, b } = options.testCpu;
    rows.push(["npm test CPU, user + sys (s)", a.toFixed(0), b.toFixed(0), fmtRatio(ratio(a, b)), "", ""]);
  }
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const format = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (i === 0 || i >= 4 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
      .join("  ")
      .trimEnd();
  lines.push(format(header));
  for (const r of rows) lines.push(format(r));
  lines.push("");
  // Each B run against the A run just before it: the machine's load weighs on a pair alike.
  for (const [label, pick] of [
    ["throughput", (f: RunFigures) => f.throughput],
    ["first session RUNNING", (f: RunFigures) => f.firstRunningSeconds],
  ] as const) {
    const perPair = pairRatios(runsA, runsB, pick);
    lines.push(
      `${label} B/A by pair: ${perPair.map(fmtRatio).join(" ")} (median ${fmtRatio(median(perPair))})`,
    );
  }
  lines.push("");
  const v = verdict(runsA, runsB, options.testCpu);
  for (const c of v.checks) {
    lines.push(`${c.pass ? "pass" : "FAIL"}  ${c.name}: ${c.measured} (bound ${c.bound})`);
  }
  for (const note of v.notes) lines.push(`note: ${note}`);
  lines.push(
    `verdict: ${v.pass === undefined ? "none" : v.pass ? "B keeps every bound" : "B falls short of a bound"}`,
  );
  return lines.join("\n");
}

function fmt(value: number): string {
  return Number.isFinite(value) ? value.toFixed(1) : String(value);
}

function fmtRatio(value: number): string {
  return Number.isFinite(value) ? value.toFixed(2) : String(value);
}
