/**
 * The pieces `bench/local.ts` scenarios share: start the embedded runtime, submit sessions in
 * PutEvents batches, watch their status events, wait with progress lines, and count what the
 * control plane spent (Step Functions transitions, DynamoDB writes, events, coordinator batches).
 * Figures only; nothing here asserts a timing.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EventBridgeClient, PutEventsCommand } from "@aws-sdk/client-eventbridge";
import { storeMetrics } from "../functions/handlers/wiring.ts";
import { DetailType, toPutEventsEntry } from "../functions/core/events.ts";
import type { SessionSpecInput } from "../functions/core/spec.ts";
import { SESSION_STATUSES } from "../functions/core/status.ts";
import { startRuntime, type Runtime } from "../local/runtime.ts";
import { FUNCTIONS, QUEUES, STATE_MACHINES } from "../functions/topology/index.ts";
import { modeledInvocations, type MeasuredCounts } from "./aws-cost.ts";
import { FunctionLogCapture, StepFunctionsCalls } from "./aws-usage.ts";
import { JIT_THREADS, processCpuSeconds, threadCpuSeconds } from "./process-cpu.ts";

/** The session statuses that end a session. */
const FINAL_STATUSES: readonly string[] = ["TERMINATED", "CANCELLED"];
const PROGRESS_EVERY_MS = 5_000;
const POLL_MS = 250;

// ---------------------------------------------------------------------------------------------
// Formatting.

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export const fmtSeconds = (ms: number): string => (ms / 1000).toFixed(2) + " s";

/** One summary line: the label in a fixed column, then the figures. */
export function row(label: string, figures: string): void {
  console.log(`${label.padEnd(36)} ${figures}`);
}

/** `label  p50 … p90 … p99 … max …` over unsorted samples, in seconds. */
export function printLatency(label: string, samplesMs: readonly number[]): void {
  const sorted = [...samplesMs].sort((a, b) => a - b);
  const at = (p: number) => fmtSeconds(percentile(sorted, p));
  row(label, `p50 ${at(50)}   p90 ${at(90)}   p99 ${at(99)}   max ${fmtSeconds(sorted.at(-1) ?? NaN)}`);
}

export { BenchUsageError, intFlag } from "./flags.ts";

// ---------------------------------------------------------------------------------------------
// The runtime and submissions.

export interface BenchRuntime {
  readonly runtime: Runtime;
  readonly client: EventBridgeClient;
  /** The functions' log lines, counted (and shown only with --verbose). */
  readonly logs: FunctionLogCapture;
  readonly stepFunctionsCalls: StepFunctionsCalls;
  stop(): Promise<void>;
}

export async function startBenchRuntime(options: {
  readonly agents: number;
  readonly agentCpu: number;
  readonly verbose: boolean;
  /** @default 2000 */
  readonly heartbeatMs?: number;
  /** @default 5000 */
  readonly sweepMs?: number;
}): Promise<BenchRuntime> {
  const dataDir = mkdtempSync(join(tmpdir(), "cairn-bench-"));
  console.log(`bench: starting the embedded runtime (${options.agents} agents × ${options.agentCpu} cpu) …`);
  // For the AWS price: the units DynamoDB reports for each request, and the functions' logs at
  // the stack's default level with their metrics documents, as Lambda would ship them.
  storeMetrics.capacity = true;
  process.env["POWERTOOLS_METRICS_DISABLED"] = "false";
  const logs = new FunctionLogCapture(options.verbose);
  const runtime = await startRuntime({
    dataDir,
    agents: options.agents,
    agentCapacity: { cpu: options.agentCpu, memoryMiB: options.agentCpu * 1024 },
    heartbeatMs: options.heartbeatMs ?? 2_000,
    sweepMs: options.sweepMs ?? 5_000,
    log: (line) => process.stderr.write(line + "\n"),
    handlerLogLevel: "info",
  });
  const stepFunctionsCalls = new StepFunctionsCalls(runtime.stepFunctions);
  const client = new EventBridgeClient({
    endpoint: runtime.info.endpoints.eventBridge,
    region: runtime.info.region,
    credentials: runtime.info.credentials.client,
  });
  return {
    runtime,
    client,
    logs,
    stepFunctionsCalls,
    async stop() {
      client.destroy();
      await runtime.stop();
      logs.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface Submission {
  readonly sessionId: string;
  readonly spec: SessionSpecInput;
}

/** Session ids unique to this run, so a rerun against a kept table cannot collide. */
export function benchSessionIds(count: number, prefix = "bench"): string[] {
  const run = Date.now().toString(36);
  return Array.from({ length: count }, (_, i) => `${prefix}-${run}-${i}`);
}

/** What the bench saw of each session and kernel, from the bus's copy of every accepted event. */
export class SessionWatch {
  readonly submittedAtMs = new Map<string, number>();
  /** When each session's first status change was seen: the intake had created it. */
  readonly createdAtMs = new Map<string, number>();
  /** Each session's latest status, as its Session Status Changed events said. */
  readonly statusOf = new Map<string, string>();
  readonly runningAtMs = new Map<string, number>();
  readonly ended = new Map<string, { readonly atMs: number; readonly to: string }>();
  /** sessionId → kernelIndex → the agent's first RUNNING report time (its own clock). */
  readonly kernelRunningAtMs = new Map<string, Map<number, number>>();
  readonly eventsByType = new Map<string, number>();
  /** status → how long each session stayed in it, from its entry to the next status's. */
  readonly dwellMs = new Map<string, number[]>();
  readonly #entered = new Map<string, { readonly status: string; readonly atMs: number }>();
  readonly #unsubscribe: () => void;

  constructor(runtime: Runtime) {
    this.#unsubscribe = runtime.bus.onEvent((event) => {
      const type = event["detail-type"];
      this.eventsByType.set(type, (this.eventsByType.get(type) ?? 0) + 1);
      if (type === DetailType.SessionStatusChanged) this.#onSession(event.detail as SessionDetail);
      if (type === DetailType.KernelStatusChanged) this.#onKernel(event.detail as KernelDetail);
    });
  }

  #onSession(d: SessionDetail): void {
    if (!this.submittedAtMs.has(d.sessionId)) return;
    const nowMs = Date.now();
    if (!this.createdAtMs.has(d.sessionId)) this.createdAtMs.set(d.sessionId, nowMs);
    const before = this.#entered.get(d.sessionId);
    if (before !== undefined) {
      const dwell = this.dwellMs.get(before.status) ?? [];
      dwell.push(nowMs - before.atMs);
      this.dwellMs.set(before.status, dwell);
    }
    this.#entered.set(d.sessionId, { status: d.to, atMs: nowMs });
    this.statusOf.set(d.sessionId, d.to);
    if (d.to === "RUNNING" && !this.runningAtMs.has(d.sessionId)) this.runningAtMs.set(d.sessionId, nowMs);
    if (FINAL_STATUSES.includes(d.to) && !this.ended.has(d.sessionId)) {
      this.ended.set(d.sessionId, { atMs: nowMs, to: d.to });
    }
  }

  #onKernel(d: KernelDetail): void {
    if (d.status !== "RUNNING" || !this.submittedAtMs.has(d.sessionId)) return;
    const kernels = this.kernelRunningAtMs.get(d.sessionId) ?? new Map<number, number>();
    if (!kernels.has(d.kernelIndex)) kernels.set(d.kernelIndex, d.atMs);
    this.kernelRunningAtMs.set(d.sessionId, kernels);
  }

  /** How many sessions are in each status short of the end, in lifecycle order: where a backlog sits. */
  underWay(): string {
    const counts = new Map<string, number>();
    for (const status of this.statusOf.values()) {
      if (!FINAL_STATUSES.includes(status)) counts.set(status, (counts.get(status) ?? 0) + 1);
    }
    const order = SESSION_STATUSES as readonly string[];
    const listed = [...counts].sort((a, b) => order.indexOf(a[0]) - order.indexOf(b[0]));
    return listed.length === 0 ? "none" : listed.map(([status, n]) => `${status} ${n}`).join(", ");
  }

  /** Each status the sessions passed through, in lifecycle order, with how long they stayed in it. */
  dwellByStatus(): [string, number[]][] {
    const order = SESSION_STATUSES as readonly string[];
    return [...this.dwellMs].sort((a, b) => order.indexOf(a[0]) - order.indexOf(b[0]));
  }

  /** Milliseconds from each session's submission to `at`, for the sessions that got there. */
  sinceSubmit(ids: readonly string[], at: (id: string) => number | undefined): number[] {
    return ids.flatMap((id) => {
      const atMs = at(id);
      const submitted = this.submittedAtMs.get(id);
      return atMs === undefined || submitted === undefined ? [] : [atMs - submitted];
    });
  }

  stop(): void {
    this.#unsubscribe();
  }
}

interface SessionDetail {
  readonly sessionId: string;
  readonly to: string;
}
interface KernelDetail {
  readonly sessionId: string;
  readonly kernelIndex: number;
  readonly status: string;
  readonly atMs: number;
}

/** PutEvents, 10 entries per call, `concurrency` calls in flight; records each submit time. */
export async function submitAll(
  bench: BenchRuntime,
  watch: SessionWatch,
  submissions: readonly Submission[],
  concurrency: number,
): Promise<void> {
  const batches: Submission[][] = [];
  for (let i = 0; i < submissions.length; i += 10) batches.push(submissions.slice(i, i + 10));
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < batches.length) {
        const batch = batches[next++]!;
        const entries = batch.map((s) =>
          toPutEventsEntry(bench.runtime.info.eventBusName, DetailType.SessionSubmitted, s),
        );
        // Recorded before the call: a fast session may report a status before PutEvents returns.
        const nowMs = Date.now();
        for (const s of batch) watch.submittedAtMs.set(s.sessionId, nowMs);
        const out = await bench.client.send(new PutEventsCommand({ Entries: entries }));
        if (out.FailedEntryCount) throw new Error(`PutEvents failed: ${JSON.stringify(out.Entries)}`);
      }
    }),
  );
}

/** Waits until every session ended or the deadline passed, printing progress every 5 s. */
export async function waitForEnd(
  watch: SessionWatch,
  total: number,
  options: { readonly startedAtMs: number; readonly deadlineMs: number; readonly unit: string },
): Promise<void> {
  let lastPrintMs = Date.now();
  while (watch.ended.size < total && Date.now() < options.deadlineMs) {
    await new Promise((r) => setTimeout(r, POLL_MS));
    if (Date.now() - lastPrintMs >= PROGRESS_EVERY_MS) {
      lastPrintMs = Date.now();
      console.log(
        `bench: ${watch.createdAtMs.size}/${total} created, ${watch.runningAtMs.size}/${total} reached RUNNING, ${watch.ended.size}/${total} ${options.unit} done (${fmtSeconds(Date.now() - options.startedAtMs)})`,
      );
      console.log(`bench:   where the sessions under way are: ${watch.underWay()}`);
    }
  }
}

/** Waits (at most `limitMs`) until the coordinator's queues hold nothing queued or in flight. */
export async function settle(runtime: Runtime, limitMs: number): Promise<void> {
  const idle = Promise.all([...runtime.queues.values()].map((q) => q.idle()));
  await Promise.race([idle, new Promise((r) => setTimeout(r, limitMs))]);
}

// ---------------------------------------------------------------------------------------------
// Costs.

export interface Costs {
  readonly transitions: number;
  readonly readRequests: number;
  readonly readItems: number;
  readonly readsByOperation: ReadonlyMap<string, { readonly requests: number; readonly items: number }>;
  /** Requests by the store method that sent them (`read:getSession`, `write:applyWrite`). */
  readonly byPurpose: ReadonlyMap<string, { readonly requests: number; readonly items: number }>;
  readonly invocations: ReadonlyMap<string, number>;
  /**
   * CPU seconds over the run: DynamoDB Local's JVM (and, of it, its JIT compiler threads), this
   * Node process, the agent processes.
   */
  readonly cpu: {
    readonly dynamoDb: number;
    readonly dynamoDbJit: number;
    readonly node: number;
    readonly agents: number;
  };
  readonly executionsMissing: number;
  readonly writeOperations: number;
  readonly writeItems: number;
  readonly failedWrites: number;
  readonly failedByPurpose: ReadonlyMap<string, number>;
  readonly writesByOperation: ReadonlyMap<string, { readonly operations: number; readonly items: number }>;
  readonly eventsByType: ReadonlyMap<string, number>;
  /** Each coordinator queue's batches and messages. */
  readonly queues: ReadonlyMap<string, { readonly batches: number; readonly sent: number }>;
  /** Messages sent to agents' queues (commands, registration answers). */
  readonly agentMessages: number;
  /** Capacity units DynamoDB reported: reads, and successful writes. */
  readonly readUnits: number;
  readonly writeUnits: number;
  /** Bytes of the functions' log lines, as CloudWatch Logs bills them. */
  readonly functionLogBytes: number;
  /** Distinct custom metrics the functions' metrics documents named. */
  readonly customMetrics: number;
  readonly executionsStarted: number;
  readonly taskCallbacks: number;
}

/** What the counters read before the run, so the costs cover the run only. */
export interface CostBaseline {
  readonly invocations: ReadonlyMap<string, number>;
  readonly cpu: Costs["cpu"];
  readonly queues: Costs["queues"];
  readonly agentMessages: number;
}

/** Clears the process-wide DynamoDB request counter and notes the counters that cannot be cleared. */
export function resetCosts(bench: BenchRuntime): CostBaseline {
  const { runtime } = bench;
  storeMetrics.reset();
  bench.logs.reset();
  bench.stepFunctionsCalls.reset();
  return {
    invocations: new Map(runtime.invocations),
    cpu: cpuNow(runtime),
    queues: queueStats(runtime),
    agentMessages: agentMessages(runtime),
  };
}

function queueStats(runtime: Runtime): Costs["queues"] {
  return new Map([...runtime.queues].map(([name, q]) => [name, q.stats()]));
}

function agentMessages(runtime: Runtime): number {
  return runtime.sqs.queues.list().reduce((sum, q) => sum + q.sentCount, 0);
}

function cpuNow(runtime: Runtime): Costs["cpu"] {
  const usage = process.cpuUsage();
  // The bench's runtime always starts its own DynamoDB Local.
  const dynamoDbPid = runtime.dynamoDbPid!;
  return {
    dynamoDb: processCpuSeconds(dynamoDbPid),
    dynamoDbJit: threadCpuSeconds(dynamoDbPid, JIT_THREADS),
    node: (usage.user + usage.system) / 1e6,
    agents: runtime.agents.reduce((sum, a) => sum + processCpuSeconds(a.pid), 0),
  };
}

export async function collectCosts(
  bench: BenchRuntime,
  watch: SessionWatch,
  ids: readonly string[],
  baseline: CostBaseline,
): Promise<Costs> {
  const { runtime } = bench;
  const cpu = cpuNow(runtime);
  let transitions = 0;
  let executionsMissing = 0;
  const executionPrefix = runtime.info.stateMachineArn.replace(":stateMachine:", ":execution:") + ":";
  for (const id of ids) {
    try {
      const execution = await runtime.stepFunctions.describeExecution({ executionArn: executionPrefix + id });
      transitions += execution.stateTransitions;
    } catch {
      executionsMissing++;
    }
  }
  const w = storeMetrics;
  const clone = (m: ReadonlyMap<string, { requests: number; items: number }>) =>
    new Map([...m].map(([k, c]) => [k, { ...c }]));
  return {
    transitions,
    readRequests: w.reads.requests,
    readItems: w.reads.items,
    readsByOperation: clone(w.readsByOperation),
    byPurpose: clone(w.byPurpose),
    invocations: new Map(
      [...runtime.invocations].map(([name, n]) => [name, n - (baseline.invocations.get(name) ?? 0)]),
    ),
    cpu: {
      dynamoDb: cpu.dynamoDb - baseline.cpu.dynamoDb,
      dynamoDbJit: cpu.dynamoDbJit - baseline.cpu.dynamoDbJit,
      node: cpu.node - baseline.cpu.node,
      agents: cpu.agents - baseline.cpu.agents,
    },
    executionsMissing,
    writeOperations: w.operations,
    writeItems: w.items,
    failedWrites: w.failedOperations,
    failedByPurpose: new Map(w.failedByPurpose),
    writesByOperation: new Map([...w.byOperation].map(([op, c]) => [op, { ...c }])),
    eventsByType: new Map(watch.eventsByType),
    queues: new Map(
      [...queueStats(runtime)].map(([name, q]) => {
        const before = baseline.queues.get(name);
        return [name, { batches: q.batches - (before?.batches ?? 0), sent: q.sent - (before?.sent ?? 0) }];
      }),
    ),
    agentMessages: agentMessages(runtime) - baseline.agentMessages,
    readUnits: w.readCapacityUnits,
    // AWS bills a transaction's items twice what DynamoDB Local reports for them.
    writeUnits: w.capacityUnits + w.transactionCapacityUnits,
    functionLogBytes: bench.logs.bytes,
    customMetrics: bench.logs.metrics.size,
    executionsStarted: bench.stepFunctionsCalls.executionsStarted,
    taskCallbacks: bench.stepFunctionsCalls.taskCallbacks,
  };
}

/** The counts the AWS price and the quota ceiling are computed from (aws-cost.ts). */
export function measuredCounts(costs: Costs, sessions: number): MeasuredCounts {
  const fromStateMachines = new Set<string>(STATE_MACHINES.flatMap((m) => Object.values(m.substitutions)));
  const heartbeats = costs.eventsByType.get(DetailType.AgentHeartbeat) ?? 0;
  const events = [...costs.eventsByType.values()].reduce((a, b) => a + b, 0) - heartbeats;
  return {
    sessions,
    transitions: costs.transitions,
    executionsStarted: costs.executionsStarted,
    taskCallbacks: costs.taskCallbacks,
    lambda: modeledInvocations({
      functions: FUNCTIONS.map((f) => ({
        name: f.name,
        invocations: costs.invocations.get(f.name) ?? 0,
        memoryMiB: f.memoryMiB,
        underStateMachine: fromStateMachines.has(f.name),
      })),
      cpuSeconds: costs.cpu.node,
      dynamoDbRequests: costs.readRequests + costs.writeOperations,
      stepFunctionsCalls: costs.executionsStarted + costs.taskCallbacks,
      events,
      sqsSends: costs.agentMessages,
    }),
    events,
    // The heartbeats' queue is the idle agents' cost, apart like their events.
    queues: QUEUES.filter((q) => q.name !== "HeartbeatQueue").map((q) => ({
      name: q.name,
      fifo: q.fifoGroup !== undefined,
      messages: costs.queues.get(q.name)?.sent ?? 0,
      batches: costs.queues.get(q.name)?.batches ?? 0,
    })),
    agentQueueMessages: costs.agentMessages,
    dynamoDb: { readUnits: costs.readUnits, writeUnits: costs.writeUnits, failedWrites: costs.failedWrites },
    functionLogBytes: costs.functionLogBytes,
  };
}

/** A denominator for per-unit figures: "per job" (count jobs), "per task" (count tasks). */
export interface PerUnit {
  readonly unit: string;
  readonly count: number;
}

export function printCosts(costs: Costs, per: readonly PerUnit[]): void {
  const each = (total: number) => per.map((p) => `${(total / p.count).toFixed(1)} per ${p.unit}`).join(", ");
  const compact = (total: number) => per.map((p) => `${(total / p.count).toFixed(2)}/${p.unit}`).join(" ");
  const missing = costs.executionsMissing ? ` (${costs.executionsMissing} executions never started)` : "";
  row("Step Functions transitions", `${each(costs.transitions)}${missing}`);
  const requests = costs.readRequests + costs.writeOperations;
  row("DynamoDB requests (reads + writes)", each(requests));
  row("DynamoDB read requests", each(costs.readRequests));
  row("DynamoDB items read", each(costs.readItems));
  for (const [op, c] of costs.readsByOperation) {
    row(`  ${op}`, `requests ${compact(c.requests)}   items ${compact(c.items)}`);
  }
  row(
    "DynamoDB write requests",
    `${each(costs.writeOperations)} (${costs.failedWrites} conditional failures in all)`,
  );
  if (costs.failedByPurpose.size > 0) {
    const failed = [...costs.failedByPurpose].sort((a, b) => b[1] - a[1]);
    row("  failed, by store method", failed.map(([purpose, n]) => `${purpose} ${n}`).join(", "));
  }
  row("DynamoDB items written", each(costs.writeItems));
  for (const [op, c] of costs.writesByOperation) {
    row(`  ${op}`, `requests ${compact(c.operations)}   items ${compact(c.items)}`);
  }
  const events = [...costs.eventsByType.values()].reduce((a, b) => a + b, 0);
  const heartbeats = costs.eventsByType.get(DetailType.AgentHeartbeat) ?? 0;
  // Heartbeats scale with agents × wall time, not with the work: shown apart.
  row("DynamoDB requests by store method", "(requests, items)");
  for (const [purpose, c] of [...costs.byPurpose].sort((a, b) => b[1].requests - a[1].requests)) {
    row(`  ${purpose}`, `requests ${compact(c.requests)}   items ${compact(c.items)}`);
  }
  row("handler invocations", each([...costs.invocations.values()].reduce((a, b) => a + b, 0)));
  for (const [name, count] of costs.invocations) row(`  ${name}`, compact(count));
  row(
    "CPU seconds",
    `DynamoDB Local ${costs.cpu.dynamoDb.toFixed(1)} (JIT compiler ${costs.cpu.dynamoDbJit.toFixed(1)})   Node (runtime) ${costs.cpu.node.toFixed(1)}   agents ${costs.cpu.agents.toFixed(1)}`,
  );
  // Steadier from run to run than throughput, which also moves with what else the machine does.
  const { dynamoDb, dynamoDbJit, node, agents } = costs.cpu;
  const ms = (seconds: number) =>
    per.map((p) => `${((seconds * 1000) / p.count).toFixed(1)}/${p.unit}`).join(" ");
  row(
    "CPU ms of work",
    `${ms(dynamoDb + node + agents)}   (DynamoDB Local ${ms(dynamoDb)} of which JIT ${ms(dynamoDbJit)}, Node ${ms(node)}, agents ${ms(agents)})`,
  );
  row("EventBridge events", `${each(events - heartbeats)} (+ ${heartbeats} agent heartbeats in all)`);
  for (const [type, count] of costs.eventsByType) {
    if (type !== DetailType.AgentHeartbeat) row(`  ${type}`, compact(count));
  }
  // Commands (and registration answers) on the agents' own queues, not on the bus.
  row("agent queue messages", each(costs.agentMessages));
  for (const [name, q] of costs.queues) {
    row(
      `coordinator batches, ${name}`,
      `${q.batches} (${(q.sent / Math.max(1, q.batches)).toFixed(1)} messages per batch)`,
    );
  }
}
