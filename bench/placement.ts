/**
 * `npm run bench:placement`: one scheduling pass at scale, its two costs apart.
 *
 *   npm run bench:placement -- [--pending 10000] [--agents 1000] [--seed 1] [--passes 5]
 *                              [--batch-limit <CAIRN_BATCH_LIMIT, 200>] [--no-store]
 *
 * A cluster of agents of mixed sizes (some labelled, some already partly allocated) and a queue
 * of pending sessions of mixed shapes (one kernel or gangs, priorities, nodeSelectors, retries
 * avoiding an agent), all drawn from the seed.
 *
 * Part A, pure placement: what ScheduleNewSessions computes from its targets, the live agents and
 * their free capacity, with every reservation taken as granted; the whole pending queue in one
 * pass, then one page of --batch-limit targets (what one coordinator run hands the handler). CPU
 * time of the process (`process.cpuUsage`), median of --passes. No DynamoDB.
 *
 * Part B, store reads (skipped with --no-store): the same agents and sessions written to
 * DynamoDB Local through DynamoSessionStore, then the reads one scheduling pass makes: the
 * pending page (`targetsByStatus`, limit --batch-limit, targetable only, as the coordinator
 * reads it) and `listAgents`. Requests, items, wall and Node CPU time, median of --passes.
 *
 * Figures only; nothing here asserts a timing.
 */
import { parseArgs } from "node:util";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoSessionStore } from "../functions/adapters/dynamo/dynamo-session-store.ts";
import { RequestCounter } from "../functions/adapters/dynamo/metrics.ts";
import { storeRetryConfig } from "../functions/adapters/dynamo/retry.ts";
import { createTable } from "../functions/adapters/dynamo/create-table.ts";
import { loadConfig } from "../functions/config.ts";
import {
  isLiveAgent,
  type Agent,
  type Kernel,
  type ResourceRequest,
  type Session,
  type SessionWithKernels,
} from "../functions/core/model.ts";
import type { AgentFree } from "../functions/core/placement.ts";
import { PlacementPass, toAgentFree } from "../functions/core/placement-pass.ts";
import { startDynamoDbLocal } from "../local/dynamodb-local.ts";
import { BenchUsageError, intFlag, row } from "./local-harness.ts";

const T0 = 1_800_000_000_000;
const AGENT_TIMEOUT_MS = 30_000;
const WRITE_CONCURRENCY = 16;

interface Options {
  readonly pending: number;
  readonly agents: number;
  readonly seed: number;
  readonly passes: number;
  readonly batchLimit: number;
  readonly store: boolean;
}

function parseOptions(): Options {
  const { values } = parseArgs({
    options: {
      pending: { type: "string", default: "10000" },
      agents: { type: "string", default: "1000" },
      seed: { type: "string", default: "1" },
      passes: { type: "string", default: "5" },
      "batch-limit": { type: "string" },
      "no-store": { type: "boolean", default: false },
    },
  });
  const defaults = loadConfig({
    CAIRN_TABLE_NAME: "bench",
    CAIRN_EVENT_BUS_NAME: "bench",
    CAIRN_STATE_MACHINE_ARN: "bench",
    CAIRN_BATCH_LIMIT: process.env["CAIRN_BATCH_LIMIT"],
  });
  return {
    pending: intFlag("pending", values.pending, 1, 1_000_000),
    agents: intFlag("agents", values.agents, 1, 100_000),
    seed: intFlag("seed", values.seed, 0, 2 ** 32 - 1),
    passes: intFlag("passes", values.passes, 1, 1000),
    // The store reads at most 1000 targets at once.
    batchLimit: intFlag("batch-limit", values["batch-limit"] ?? String(defaults.batchLimit), 1, 1000),
    store: !values["no-store"],
  };
}

// ---------------------------------------------------------------------------------------------
// The scenario, drawn from the seed.

/** mulberry32: small, fast, and the same sequence on every machine. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const GIB = 1024;

interface AgentClass {
  readonly name: string;
  /** Share of the cluster. */
  readonly weight: number;
  readonly capacity: ResourceRequest;
  readonly labels?: Readonly<Record<string, string>>;
}

const AGENT_CLASSES: readonly AgentClass[] = [
  { name: "small", weight: 30, capacity: { cpu: 4, memoryMiB: 16 * GIB } },
  { name: "medium", weight: 35, capacity: { cpu: 16, memoryMiB: 64 * GIB } },
  { name: "large", weight: 20, capacity: { cpu: 64, memoryMiB: 256 * GIB } },
  { name: "highmem", weight: 8, capacity: { cpu: 32, memoryMiB: 512 * GIB }, labels: { memory: "high" } },
  { name: "gpu", weight: 7, capacity: { cpu: 48, memoryMiB: 384 * GIB }, labels: { gpu: "a100" } },
];
const ZONES = ["a", "b", "c"] as const;

function pick<T>(rand: () => number, items: readonly T[]): T {
  return items[Math.floor(rand() * items.length)]!;
}

function weighted<T extends { readonly weight: number }>(rand: () => number, items: readonly T[]): T {
  const total = items.reduce((sum, i) => sum + i.weight, 0);
  let at = rand() * total;
  for (const item of items) {
    at -= item.weight;
    if (at < 0) return item;
  }
  return items.at(-1)!;
}

function agentId(i: number): string {
  return `agent-${String(i).padStart(5, "0")}`;
}

/** Half the agents idle, the others with part of their capacity held by running sessions. */
function makeAgents(count: number, rand: () => number): Agent[] {
  return Array.from({ length: count }, (_, i): Agent => {
    const cls = weighted(rand, AGENT_CLASSES);
    const used = rand() < 0.5 ? 0 : Math.floor(rand() * 4) / 8; // 0, 1/8, 2/8 or 3/8 held
    const labels = { zone: pick(rand, ZONES), ...cls.labels };
    return {
      id: agentId(i),
      capacity: cls.capacity,
      free: {
        cpu: cls.capacity.cpu - Math.floor(cls.capacity.cpu * used),
        memoryMiB: cls.capacity.memoryMiB - Math.floor(cls.capacity.memoryMiB * used),
      },
      // A few are stale or draining: the pass leaves them out.
      lastHeartbeatAtMs: rand() < 0.01 ? T0 - 10 * AGENT_TIMEOUT_MS : T0 - Math.floor(rand() * 5_000),
      version: 1,
      labels,
      ...(rand() < 0.01 ? { draining: true } : {}),
    };
  });
}

const KERNEL_SHAPES: readonly (ResourceRequest & { readonly weight: number })[] = [
  { cpu: 0.5, memoryMiB: 512, weight: 15 },
  { cpu: 1, memoryMiB: 2 * GIB, weight: 25 },
  { cpu: 2, memoryMiB: 4 * GIB, weight: 25 },
  { cpu: 4, memoryMiB: 16 * GIB, weight: 20 },
  { cpu: 8, memoryMiB: 32 * GIB, weight: 10 },
  { cpu: 16, memoryMiB: 128 * GIB, weight: 4 },
  { cpu: 96, memoryMiB: 64 * GIB, weight: 1 }, // no agent is that large: "no agent matches"
];
const PRIORITIES = [0, 0, 0, 10, 10, 50, 100] as const;

function makeSessions(count: number, agents: number, rand: () => number): SessionWithKernels[] {
  const stages = {
    pending: 600,
    scheduled: 300,
    preparing: 300,
    prepared: 300,
    creating: 300,
    running: 3600,
    terminating: 120,
  };
  const sessions = Array.from({ length: count }, (_, n): SessionWithKernels => {
    const id = `pending-${String(n).padStart(6, "0")}`;
    const createdAtMs = T0 - 3_600_000 + n;
    const shape = weighted(rand, KERNEL_SHAPES);
    const resources = { cpu: shape.cpu, memoryMiB: shape.memoryMiB };
    const gang = rand() < 0.25;
    const replicas = gang ? pick(rand, [2, 2, 4, 4, 8, 16]) : 1;
    const perAgent = gang ? pick(rand, [1, 1, 2, 4]) : undefined;
    const selector = rand();
    const nodeSelector: Readonly<Record<string, string>> | undefined =
      selector < 0.05
        ? { gpu: "a100" }
        : selector < 0.1
          ? { zone: pick(rand, ZONES) }
          : selector < 0.12
            ? { memory: "high", zone: pick(rand, ZONES) }
            : selector < 0.125
              ? { gpu: "h100" } // no agent carries it
              : undefined;
    const avoid = rand() < 0.05 ? [agentId(Math.floor(rand() * agents))] : undefined;
    const session: Session = {
      id,
      spec: {
        name: "bench-placement",
        queue: "default",
        priority: pick(rand, PRIORITIES),
        replicas,
        ...(perAgent !== undefined ? { perAgent } : {}),
        ...(nodeSelector ? { nodeSelector } : {}),
        resources,
        command: ["sleep", "1"],
        env: {},
        timeouts: stages,
        maxTries: {
          pending: 3,
          scheduled: 3,
          preparing: 3,
          prepared: 3,
          creating: 3,
          running: 1,
          terminating: 1,
        },
      },
      status: "PENDING",
      version: 1,
      createdAtMs,
      updatedAtMs: createdAtMs,
      executionName: id,
      stage: { enteredAtMs: createdAtMs, expiresAtMs: createdAtMs + 600_000, taskToken: `tok-${id}` },
      tries: 0,
      runIndex: 0,
      ...(avoid ? { avoidAgentIds: avoid } : {}),
    };
    const kernels: Kernel[] = Array.from({ length: replicas }, (_, index) => ({
      sessionId: id,
      index,
      status: "PENDING",
      resources,
      statusChangedAtMs: createdAtMs,
    }));
    return { session, kernels };
  });
  // The status queue's order (targetsByStatus): highest priority first, then oldest, then id.
  return sessions.sort(
    (a, b) =>
      b.session.spec.priority - a.session.spec.priority ||
      a.session.createdAtMs - b.session.createdAtMs ||
      a.session.id.localeCompare(b.session.id),
  );
}

// ---------------------------------------------------------------------------------------------
// Part A: the pure part of ScheduleNewSessions (its handler, schedule-new-sessions.ts),
// step for step, with the store's reservation taken as granted.

interface PassOutcome {
  readonly placed: number;
  readonly kernelsPlaced: number;
  readonly skipped: number;
  /** Skipped because higher-priority sessions placed ahead took the capacity. */
  readonly waitingForPriority: number;
  readonly free: ReadonlyMap<string, AgentFree>;
  readonly messages: ReadonlyMap<string, string>;
}

function schedulingPass(targets: readonly SessionWithKernels[], agents: readonly Agent[]): PassOutcome {
  const pass = new PlacementPass(agents.filter((a) => isLiveAgent(a, T0, AGENT_TIMEOUT_MS)).map(toAgentFree));
  // The handler's result: a message per session (its pending reason when skipped).
  const messages = new Map<string, string>();
  let placed = 0;
  let kernelsPlaced = 0;
  let skipped = 0;
  let waitingForPriority = 0;
  for (const target of targets) {
    const planned = pass.place(target);
    messages.set(target.session.id, planned.message);
    if (planned.kind === "wait") {
      skipped += 1;
      if (planned.forPriority) waitingForPriority += 1;
      continue;
    }
    placed += 1;
    if (planned.kind === "place") {
      // Every reservation granted.
      pass.taken(target, planned.kernels);
      kernelsPlaced += planned.kernels.length;
    }
  }
  return { placed, kernelsPlaced, skipped, waitingForPriority, free: pass.free, messages };
}

function cpuMsSince(start: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const ms = (x: number): string => `${x.toFixed(1)} ms`;

function timePasses(
  targets: readonly SessionWithKernels[],
  agents: readonly Agent[],
  passes: number,
): { cpuMs: number; wallMs: number; outcome: PassOutcome } {
  let outcome: PassOutcome | undefined;
  const cpu: number[] = [];
  const wall: number[] = [];
  for (let i = 0; i < passes; i++) {
    const startedCpu = process.cpuUsage();
    const startedWall = performance.now();
    outcome = schedulingPass(targets, agents);
    wall.push(performance.now() - startedWall);
    cpu.push(cpuMsSince(startedCpu));
  }
  return { cpuMs: median(cpu), wallMs: median(wall), outcome: outcome! };
}

function partA(options: Options, agents: readonly Agent[], sessions: readonly SessionWithKernels[]): void {
  const live = agents.filter((a) => isLiveAgent(a, T0, AGENT_TIMEOUT_MS));
  const smallest = Math.min(...sessions.flatMap((s) => s.kernels.map((k) => k.resources.cpu)));
  console.log(`A. pure placement (no store), median of ${options.passes} passes`);
  // One pass first, untimed: compiles the hot paths as a warm Lambda would have them.
  schedulingPass(sessions.slice(0, options.batchLimit), agents);
  const whole = timePasses(sessions, agents, options.passes);
  const o = whole.outcome;
  const before = new Map(live.map((a) => [a.id, a.free.cpu]));
  const used = [...o.free.values()].filter((f) => f.free.cpu < (before.get(f.id) ?? 0)).length;
  const full = [...o.free.values()].filter((f) => f.free.cpu < smallest).length;
  row(
    `whole queue (${sessions.length} targets)`,
    `cpu ${ms(whole.cpuMs)} per pass   wall ${ms(whole.wallMs)}`,
  );
  row("  sessions placed", `${o.placed} (${o.kernelsPlaced} kernels), skipped ${o.skipped}`);
  row("  skipped for priority", `${o.waitingForPriority} (higher-priority sessions took the capacity)`);
  row("  agents filled", `${full} of ${live.length} live (free cpu < ${smallest}), ${used} given kernels`);
  const page = timePasses(sessions.slice(0, options.batchLimit), agents, options.passes);
  row(
    `one page (${Math.min(options.batchLimit, sessions.length)} targets)`,
    `cpu ${ms(page.cpuMs)} per pass   wall ${ms(page.wallMs)}   placed ${page.outcome.placed}`,
  );
}

// ---------------------------------------------------------------------------------------------
// Part B: the store reads of one pass, on DynamoDB Local.

async function inParallel<T>(
  items: readonly T[],
  limit: number,
  run: (item: T) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++]!;
      await run(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

async function partB(
  options: Options,
  agents: readonly Agent[],
  sessions: readonly SessionWithKernels[],
): Promise<void> {
  console.log("B. store reads (DynamoDB Local)");
  const dynamo = await startDynamoDbLocal();
  const client = new DynamoDBClient({
    ...storeRetryConfig(),
    endpoint: dynamo.endpoint,
    region: "local",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
  try {
    const tableName = `cairn-bench-placement-${Date.now()}`;
    await createTable(client, tableName);
    const metrics = new RequestCounter();
    const store = new DynamoSessionStore({ client, tableName, metrics });
    const writing = performance.now();
    // Registered with their labels at full capacity: free capacity does not change what is read.
    await inParallel(agents, WRITE_CONCURRENCY, (a) =>
      store.registerAgent({
        agentId: a.id,
        incarnation: `inc-${a.id}`,
        capacity: a.capacity,
        labels: a.labels ?? {},
        signingKey: "bench",
        nowMs: a.lastHeartbeatAtMs,
      }),
    );
    // Created in PENDING with a task token: targetable, as after the stage's entry.
    await inParallel(sessions, WRITE_CONCURRENCY, (s) => store.createSession(s));
    row(
      "written",
      `${agents.length} agents, ${sessions.length} sessions in ${((performance.now() - writing) / 1000).toFixed(1)} s`,
    );
    const reads: { label: string; read: () => Promise<readonly unknown[]> }[] = [
      {
        label: `targetsByStatus PENDING limit ${options.batchLimit}`,
        read: () =>
          store.targetsByStatus({ statuses: ["PENDING"], limit: options.batchLimit, targetableOnly: true }),
      },
      { label: "listAgents", read: () => store.listAgents() },
    ];
    for (const { label, read } of reads) {
      await read(); // warm: connections, code
      const wall: number[] = [];
      const cpu: number[] = [];
      let requests = 0;
      let items = 0;
      let returned = 0;
      for (let i = 0; i < options.passes; i++) {
        metrics.reset();
        const startedCpu = process.cpuUsage();
        const startedWall = performance.now();
        returned = (await read()).length;
        wall.push(performance.now() - startedWall);
        cpu.push(cpuMsSince(startedCpu));
        requests = metrics.reads.requests;
        items = metrics.reads.items;
      }
      row(
        label,
        `${requests} requests, ${items} items read, ${returned} returned   wall ${ms(median(wall))}   node cpu ${ms(median(cpu))}`,
      );
    }
  } finally {
    client.destroy();
    await dynamo.stop();
  }
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  let options: Options;
  try {
    options = parseOptions();
  } catch (error) {
    // parseArgs names the flag too ("Unknown option '--x'"): a usage error all the same.
    const parseArgsError =
      error instanceof TypeError && String((error as { code?: unknown }).code).startsWith("ERR_PARSE_ARGS");
    if (!(error instanceof BenchUsageError) && !parseArgsError) throw error;
    console.error(`bench: ${error.message}`);
    process.exit(2);
  }
  const rand = random(options.seed);
  const agents = makeAgents(options.agents, rand);
  const sessions = makeSessions(options.pending, options.agents, rand);
  const kernels = sessions.reduce((n, s) => n + s.kernels.length, 0);
  console.log(
    `bench: ${sessions.length} pending sessions (${kernels} kernels), ${agents.length} agents, seed ${options.seed}`,
  );
  partA(options, agents, sessions);
  if (options.store) await partB(options, agents, sessions);
}

await main();
