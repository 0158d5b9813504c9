/**
 * `npm run bench:local`: submits work at once to the embedded runtime and prints throughput,
 * latency percentiles, Step Functions transitions, DynamoDB writes and events per unit of work.
 * Figures only; nothing here asserts a timing.
 *
 *   npm run bench:local -- [--scenario sessions] [--sessions 1000] [--agents 2] …
 *     N one-kernel sessions; figures per session.
 *   npm run bench:local -- --scenario gang [--jobs 100] [--tasks 8] [--agents <tasks>] …
 *     N gangs: each one session with `replicas: <tasks>`, all tasks placed all-or-nothing and
 *     started together, one task per agent (`perAgent: 1`); figures per job and per task. Needs
 *     at least <tasks> agents (the default). "RUNNING" is the session's: every task runs.
 *
 *   common: [--agent-cpu 512] [--concurrency 8] [--timeout-seconds 1200] [--verbose]
 *           [--heartbeat-seconds 2] [--sweep-seconds 5]
 *     The bench's agents heartbeat every 2 s and its sweep runs every 5 s, more often than a
 *     user's (`cairn agent` 30 s, the sweep 60 s): the figures in docs/performance.md are measured
 *     so. `--heartbeat-seconds 30 --sweep-seconds 60` measures with the defaults instead, as the
 *     AWS price at the end of the output should be read.
 *   [--warm-up 0]
 *     Runs that many of the scenario's units (sessions, gangs) to their end first, unmeasured,
 *     so the measured burst meets a runtime whose DynamoDB Local has already compiled its hot
 *     code (its JIT spends 15–18 s of CPU in the first half-minute of a run). The default, 0,
 *     measures a burst that arrives right after the start, as every figure in docs/performance.md.
 */
import { parseArgs } from "node:util";
import { SPEC_LIMITS } from "../functions/core/spec.ts";
import {
  BenchUsageError,
  benchSessionIds,
  collectCosts,
  fmtSeconds,
  intFlag,
  measuredCounts,
  printCosts,
  printLatency,
  resetCosts,
  row,
  settle,
  SessionWatch,
  startBenchRuntime,
  submitAll,
  waitForEnd,
  type PerUnit,
  type Submission,
} from "./local-harness.ts";
import { printAwsPrice } from "./aws-report.ts";

/** Kernels that exit at once: the bench measures the control plane, not the work. */
const QUICK_KERNEL = { command: ["true"], resources: { cpu: 0.25, memoryMiB: 32 } } as const;

interface Scenario {
  /** Plural noun for progress lines and the summary ("sessions", "jobs"). */
  readonly unit: string;
  /** What is submitted, for the start line ("100 gangs of 8 tasks"). */
  readonly description: string;
  readonly agents: number;
  /** `count` units of work, their session ids starting with `prefix`. */
  readonly submissions: (count: number, prefix: string) => Submission[];
  /** Units of work in the measured burst. */
  readonly count: number;
  /** The session reaches RUNNING once every kernel runs; the label says so where it matters. */
  readonly runningLabel: string;
  /** Denominators for the cost lines. */
  readonly per: readonly PerUnit[];
  /** Scenario-specific lines after the common latency lines. */
  readonly extraReport?: (watch: SessionWatch, ids: readonly string[]) => void;
}

const { values } = parseArgs({
  options: {
    scenario: { type: "string", default: "sessions" },
    sessions: { type: "string" },
    jobs: { type: "string" },
    tasks: { type: "string" },
    agents: { type: "string" },
    "agent-cpu": { type: "string", default: "512" },
    concurrency: { type: "string", default: "8" },
    "timeout-seconds": { type: "string", default: "1200" },
    verbose: { type: "boolean", default: false },
    "heartbeat-seconds": { type: "string", default: "2" },
    "sweep-seconds": { type: "string", default: "5" },
    "warm-up": { type: "string", default: "0" },
  },
});

let scenario: Scenario;
let agentCpu: number;
let putConcurrency: number;
let timeoutMs: number;
let heartbeatMs: number;
let sweepMs: number;
let warmUp: number;
try {
  scenario = chooseScenario();
  agentCpu = intFlag("agent-cpu", values["agent-cpu"], 1, SPEC_LIMITS.cpu.max);
  putConcurrency = intFlag("concurrency", values.concurrency, 1, 64);
  timeoutMs = intFlag("timeout-seconds", values["timeout-seconds"], 1) * 1000;
  heartbeatMs = intFlag("heartbeat-seconds", values["heartbeat-seconds"], 1, 60) * 1000;
  sweepMs = intFlag("sweep-seconds", values["sweep-seconds"], 1, 3600) * 1000;
  warmUp = intFlag("warm-up", values["warm-up"], 0);
} catch (error) {
  if (!(error instanceof BenchUsageError)) throw error;
  console.error(`bench: ${error.message}`);
  process.exit(2);
}

function chooseScenario(): Scenario {
  const notFor = (flag: string, name: string) =>
    new BenchUsageError(`--${flag} does not apply to --scenario ${name}`);
  switch (values.scenario) {
    case "sessions": {
      if (values.jobs !== undefined) throw notFor("jobs", "sessions");
      if (values.tasks !== undefined) throw notFor("tasks", "sessions");
      const count = intFlag("sessions", values.sessions ?? "1000", 1);
      return {
        unit: "sessions",
        description: `${count} one-kernel sessions`,
        runningLabel: "submit → RUNNING",
        agents: intFlag("agents", values.agents ?? "2", 1),
        count,
        submissions: (units, prefix) =>
          benchSessionIds(units, prefix).map((sessionId) => ({
            sessionId,
            spec: { name: "bench", ...QUICK_KERNEL },
          })),
        per: [{ unit: "session", count }],
      };
    }
    case "gang": {
      if (values.sessions !== undefined) throw notFor("sessions", "gang (use --jobs)");
      const jobs = intFlag("jobs", values.jobs ?? "100", 1);
      const tasks = intFlag("tasks", values.tasks ?? "8", 1, SPEC_LIMITS.replicas.max);
      const agents = intFlag("agents", values.agents ?? String(tasks), 1);
      if (agents < tasks) {
        throw new BenchUsageError(
          `--agents must be at least --tasks (${tasks}): each task of a gang goes to its own agent`,
        );
      }
      return {
        unit: "jobs",
        description: `${jobs} gangs of ${tasks} tasks`,
        runningLabel: "submit → RUNNING (all tasks)",
        agents,
        count: jobs,
        submissions: (units, prefix) =>
          benchSessionIds(units, `${prefix}-gang`).map((sessionId) => ({
            sessionId,
            spec: { name: "bench-gang", replicas: tasks, perAgent: 1, ...QUICK_KERNEL },
          })),
        per: [
          { unit: "job", count: jobs },
          { unit: "task", count: jobs * tasks },
        ],
        extraReport: (watch, ids) => reportGangStarts(watch, ids, tasks),
      };
    }
    default:
      throw new BenchUsageError(`--scenario must be "sessions" or "gang" (got "${values.scenario}")`);
  }
}

/** How many tasks the agents reported RUNNING, and how far apart a gang's tasks started. */
function reportGangStarts(watch: SessionWatch, ids: readonly string[], tasks: number): void {
  let reported = 0;
  const spreadsMs: number[] = [];
  for (const id of ids) {
    const starts = [...(watch.kernelRunningAtMs.get(id)?.values() ?? [])];
    reported += starts.length;
    if (starts.length === tasks) spreadsMs.push(Math.max(...starts) - Math.min(...starts));
  }
  row("tasks reported RUNNING by agents", `${reported}/${ids.length * tasks}`);
  printLatency("first → last task RUNNING in a job", spreadsMs);
}

const submissions = scenario.submissions(scenario.count, "bench");
const n = submissions.length;
const ids = submissions.map((s) => s.sessionId);
const bench = await startBenchRuntime({
  agents: scenario.agents,
  agentCpu,
  verbose: values.verbose,
  heartbeatMs,
  sweepMs,
});
if (warmUp > 0) await runWarmUp(warmUp);
const watch = new SessionWatch(bench.runtime);
const baseline = resetCosts(bench);

console.log(
  `bench: submitting ${scenario.description} (PutEvents, 10 per call, ${putConcurrency} calls in flight) …`,
);
const t0 = Date.now();
await submitAll(bench, watch, submissions, putConcurrency);
const submittedAtMs = Date.now();
const submitSeconds = (submittedAtMs - t0) / 1000;
console.log(
  `bench: submitted in ${submitSeconds.toFixed(2)} s (${(n / submitSeconds).toFixed(0)} submissions/s)`,
);

await waitForEnd(watch, n, { startedAtMs: t0, deadlineMs: t0 + timeoutMs, unit: scenario.unit });
const ended = [...watch.ended.values()];
const wallMs = (ended.length === n ? Math.max(...ended.map((e) => e.atMs)) : Date.now()) - t0;
// The last sessions' own status changes (capacity released, jobs settled) are part of the cost.
await settle(bench.runtime, 30_000);
const costs = await collectCosts(bench, watch, ids, baseline);
const firstRunningMs = Math.min(...ids.map((id) => watch.runningAtMs.get(id) ?? Infinity));

console.log("");
row(`${scenario.unit} submitted`, String(n));
row(
  `${scenario.unit} ended`,
  `${ended.length} (${ended.filter((e) => e.to === "TERMINATED").length} TERMINATED, ${ended.filter((e) => e.to === "CANCELLED").length} CANCELLED)`,
);
row("wall time, first submit → last end", fmtSeconds(wallMs));
row(
  "throughput",
  scenario.per
    .map((p) => `${((ended.length * p.count) / n / (wallMs / 1000)).toFixed(1)} ${p.unit}s/s`)
    .join(", "),
);
// From the end of the burst's submission: how soon work starts when a lot of it arrives at once.
// A large burst's first session may run before the last submission is in: said so, not rounded to 0.
row(
  "first session RUNNING",
  !Number.isFinite(firstRunningMs)
    ? "none"
    : firstRunningMs >= submittedAtMs
      ? fmtSeconds(firstRunningMs - submittedAtMs)
      : `before the burst was in (${fmtSeconds(firstRunningMs - t0)} after its first submission)`,
);
printLatency(
  scenario.runningLabel,
  watch.sinceSubmit(ids, (id) => watch.runningAtMs.get(id)),
);
printLatency(
  "submit → TERMINATED",
  watch.sinceSubmit(ids, (id) => watch.ended.get(id)?.atMs),
);
// The intake (job and session written, execution started, first status announced): a session
// cannot run before it, so it bounds how soon the burst's median session can.
printLatency(
  "submit → created",
  watch.sinceSubmit(ids, (id) => watch.createdAtMs.get(id)),
);
// Where a session's time goes: from entering each status to entering the next.
for (const [status, dwell] of watch.dwellByStatus()) printLatency(`  in ${status}`, dwell);
scenario.extraReport?.(watch, ids);
printCosts(costs, scenario.per);
printAwsPrice(measuredCounts(costs, n), costs.customMetrics, heartbeatMs / 1000, sweepMs / 1000);

watch.stop();
await bench.stop();
process.exit(ended.length === n ? 0 : 1);

/** Runs `count` units to their end and waits for the queues to drain; nothing of it is counted. */
async function runWarmUp(count: number): Promise<void> {
  console.log(`bench: warming up: ${count} ${scenario.unit} run to their end first, not measured …`);
  const warm = new SessionWatch(bench.runtime);
  const startedAtMs = Date.now();
  await submitAll(bench, warm, scenario.submissions(count, "warm-up"), putConcurrency);
  await waitForEnd(warm, count, { startedAtMs, deadlineMs: startedAtMs + timeoutMs, unit: scenario.unit });
  warm.stop();
  if (warm.ended.size < count) {
    console.error(
      `bench: the warm-up did not end within --timeout-seconds (${warm.ended.size}/${count} ended)`,
    );
    await bench.stop();
    process.exit(1);
  }
  await settle(bench.runtime, 30_000);
  console.log(`bench: warmed up in ${fmtSeconds(Date.now() - startedAtMs)}`);
}
