/**
 * Store benchmark on DynamoDB Local: latency of one applyWrite (a stage entry) and one
 * reserveCapacity, and the writes each lifecycle step costs (requests, items, and the write
 * capacity units DynamoDB Local reports, table and indexes together).
 *
 *   npx node bench/store.ts [sessions=40] [kernels=2]
 *
 * Latencies on DynamoDB Local say little about AWS (network, service) but compare designs.
 */
import { DynamoDBClient, GetItemCommand, QueryCommand, type AttributeValue } from "@aws-sdk/client-dynamodb";
import { DynamoSessionStore } from "../functions/adapters/dynamo/dynamo-session-store.ts";
import { RequestCounter } from "../functions/adapters/dynamo/metrics.ts";
import { storeRetryConfig } from "../functions/adapters/dynamo/retry.ts";
import { createTable } from "../functions/adapters/dynamo/create-table.ts";
import { stageEntryWrite, type SessionWrite } from "../functions/core/effects.ts";
import { placeHistory } from "../functions/core/history.ts";
import type { Kernel, Session, SessionWithKernels, StageTransition } from "../functions/core/model.ts";
import { startDynamoDbLocal } from "../local/dynamodb-local.ts";

const sessions = Number(process.argv[2] ?? 40);
const replicas = Number(process.argv[3] ?? 2);
const AGENTS = 2;
const T0 = 1_800_000_000_000;

const LIFECYCLE: readonly StageTransition[] = [
  { from: "PENDING", to: "SCHEDULED", result: "SUCCESS", handler: "ScheduleNewSessions" },
  { from: "SCHEDULED", to: "PREPARING", result: "SUCCESS", handler: "PrepareSessions" },
  { from: "PREPARING", to: "PREPARED", result: "SUCCESS", handler: "PromoteToPrepared" },
  { from: "PREPARED", to: "CREATING", result: "SUCCESS", handler: "StartSessions" },
  { from: "CREATING", to: "RUNNING", result: "SUCCESS", handler: "PromoteToRunning" },
  { from: "RUNNING", to: "TERMINATING", result: "SUCCESS", handler: "DetectTermination" },
  { from: "TERMINATING", to: "TERMINATED", result: "SUCCESS", handler: "PromoteToTerminated" },
];

function newSession(id: string, createdAtMs: number): SessionWithKernels {
  const stages = {
    pending: 600,
    scheduled: 300,
    preparing: 300,
    prepared: 300,
    creating: 300,
    running: 3600,
    terminating: 120,
  };
  const session: Session = {
    id,
    spec: {
      name: "bench",
      queue: "default",
      priority: 10,
      replicas,
      resources: { cpu: 1, memoryMiB: 256 },
      command: ["sleep", "1"],
      env: {},
      timeouts: stages,
      maxTries: {
        ...stages,
        pending: 3,
        scheduled: 3,
        preparing: 3,
        prepared: 3,
        creating: 3,
        running: 0,
        terminating: 0,
      },
    },
    status: "PENDING",
    version: 0,
    createdAtMs,
    updatedAtMs: createdAtMs,
    executionName: id,
    stage: { enteredAtMs: createdAtMs, expiresAtMs: createdAtMs + 600_000 },
    tries: 0,
    runIndex: 0,
  };
  const kernels: Kernel[] = Array.from({ length: replicas }, (_, index) => ({
    sessionId: id,
    index,
    status: "PENDING",
    resources: session.spec.resources,
    statusChangedAtMs: createdAtMs,
  }));
  return { session, kernels };
}

interface StepCost {
  requests: number;
  items: number;
  wcu: number;
  samples: number;
}

async function main(): Promise<void> {
  const dynamo = await startDynamoDbLocal();
  const client = new DynamoDBClient({
    ...storeRetryConfig(),
    endpoint: dynamo.endpoint,
    region: "local",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
  try {
    const tableName = `cairn-bench-${Date.now()}`;
    await createTable(client, tableName);
    const metrics = new RequestCounter({ capacity: true });
    const store = new DynamoSessionStore({ client, tableName, metrics });
    const agents = Array.from({ length: AGENTS }, (_, i) => `agent-${i}`);
    for (const agentId of agents) {
      await store.heartbeatAgent({ agentId, capacity: { cpu: 100_000, memoryMiB: 100_000_000 }, nowMs: T0 });
    }

    const costs = new Map<string, StepCost>();
    const applyMs: number[] = [];
    const reserveMs: number[] = [];
    let now = T0;
    const step = async <R>(name: string, run: () => Promise<R>, latencies?: number[]): Promise<R> => {
      metrics.reset();
      const started = performance.now();
      const out = await run();
      latencies?.push(performance.now() - started);
      const cost = costs.get(name) ?? { requests: 0, items: 0, wcu: 0, samples: 0 };
      cost.requests += metrics.operations;
      cost.items += metrics.items;
      cost.wcu += metrics.capacityUnits;
      cost.samples += 1;
      costs.set(name, cost);
      return out;
    };
    const read = async (id: string): Promise<SessionWithKernels> => {
      const s = await store.getSession(id);
      if (!s) throw new Error(`session ${id} vanished`);
      return s;
    };

    for (let n = 0; n < sessions; n++) {
      const id = `bench-${n}`;
      await step("create session + kernels", () => store.createSession(newSession(id, (now += 1))));
      let s = await read(id);
      await step("enter PENDING (token)", () =>
        store.applyWrite(
          stageEntryWrite({
            session: s.session,
            kernels: s.kernels,
            taskToken: `tok-${id}-0`,
            nowMs: (now += 1),
          }),
        ),
      );
      s = await read(id);
      const skip: SessionWrite = {
        sessionId: id,
        expected: { status: s.session.status, version: s.session.version },
        nowMs: (now += 1),
        pendingReason: "waiting for capacity",
        history: placeHistory(s.session.lastHistory, [
          {
            sessionId: id,
            handler: "ScheduleNewSessions",
            result: "SKIPPED",
            fromStatus: "PENDING",
            message: "waiting for capacity",
            atMs: now,
          },
        ]),
      };
      await step("skip (history + pending reason)", () => store.applyWrite(skip));
      s = await read(id);
      await step(
        `reserve (${replicas} kernels, ${Math.min(replicas, AGENTS)} agents)`,
        () =>
          store.reserveCapacity({
            sessionId: id,
            expected: { status: s.session.status, version: s.session.version },
            nowMs: (now += 1),
            placements: s.kernels.map((k) => ({
              kernelIndex: k.index,
              agentId: agents[k.index % AGENTS]!,
              resources: k.resources,
            })),
          }),
        reserveMs,
      );
      for (const [i, transition] of LIFECYCLE.entries()) {
        s = await read(id);
        await step("claim stage (outcome)", () =>
          store.applyWrite({
            sessionId: id,
            expected: { status: s.session.status, version: s.session.version },
            nowMs: (now += 1),
            claimStage: true,
          }),
        );
        s = await read(id);
        const terminal = transition.to === "TERMINATED";
        const write = stageEntryWrite({
          session: s.session,
          kernels: s.kernels,
          transition,
          ...(terminal ? {} : { taskToken: `tok-${id}-${i + 1}` }),
          nowMs: (now += 1),
        });
        await step("enter stage (status + kernels + history)", () => store.applyWrite(write), applyMs);
        if (transition.to === "PREPARING" || transition.to === "CREATING") {
          // An agent reports each kernel's progress: one kernel patch per report.
          for (const k of (await read(id)).kernels) {
            s = await read(id);
            await step("kernel report (one kernel)", () =>
              store.applyWrite({
                sessionId: id,
                expected: { status: s.session.status, version: s.session.version },
                nowMs: (now += 1),
                kernels: [{ index: k.index, status: transition.to === "PREPARING" ? "PREPARED" : "RUNNING" }],
              }),
            );
          }
        }
      }
      await step("release capacity", () => store.releaseCapacity(id));
    }

    const perSession = { requests: 0, items: 0, wcu: 0 };
    console.log(`DynamoDB Local, ${sessions} sessions x ${replicas} kernels, ${AGENTS} agents`);
    console.log("step".padEnd(46), "per occurrence: requests  items  WCU*", " occurrences/session");
    for (const [name, c] of costs) {
      const per = (x: number): string => (x / c.samples).toFixed(1);
      console.log(
        name.padEnd(46),
        per(c.requests).padStart(21),
        per(c.items).padStart(6),
        per(c.wcu).padStart(5),
        (c.samples / sessions).toFixed(1).padStart(20),
      );
      perSession.requests += c.requests / sessions;
      perSession.items += c.items / sessions;
      perSession.wcu += c.wcu / sessions;
    }
    console.log(
      `DynamoDB writes per session: ${perSession.requests.toFixed(1)} requests, ${perSession.items.toFixed(1)} items, ${perSession.wcu.toFixed(1)} WCU*`,
    );
    // Measured here: DynamoDB Local reports one item's cost for a multi-item transaction (two
    // puts: 2 WCU, not 4), so these under-count. docs/data-model.md prices the steps for AWS.
    console.log("* as DynamoDB Local reports it; it under-counts multi-item transactions");
    // Item sizes (DynamoDB's rule: attribute names + values), to price WCU on AWS: a
    // transactional write costs 2 WCU per started KB of each item.
    await store.createSession(newSession("bench-sizes", (now += 1)));
    const sized = (await read("bench-sizes")).session;
    const fresh = await client.send(
      new GetItemCommand({
        TableName: tableName,
        Key: { pk: { S: "SESSION#bench-sizes" }, sk: { S: "SESSION" } },
      }),
    );
    console.log(`item SESSION (as created, no token) ${itemSizeBytes(fresh.Item ?? {})} bytes`);
    await store.reserveCapacity({
      sessionId: "bench-sizes",
      expected: { status: sized.status, version: sized.version },
      nowMs: (now += 1),
      placements: [{ kernelIndex: 0, agentId: agents[0]!, resources: { cpu: 1, memoryMiB: 256 } }],
    });
    const entered = stageEntryWrite({
      session: sized,
      kernels: (await read("bench-sizes")).kernels,
      transition: LIFECYCLE[0]!,
      taskToken: "x".repeat(700), // Step Functions task tokens are several hundred bytes
      nowMs: (now += 1),
    });
    await store.applyWrite(entered);
    const partition = await client.send(
      new QueryCommand({
        TableName: tableName,
        KeyConditionExpression: "pk = :pk",
        ExpressionAttributeValues: { ":pk": { S: "SESSION#bench-sizes" } },
      }),
    );
    const agentItem = await client.send(
      new GetItemCommand({
        TableName: tableName,
        Key: { pk: { S: `AGENT#${agents[0]}` }, sk: { S: "AGENT" } },
      }),
    );
    for (const item of [...(partition.Items ?? []), agentItem.Item ?? {}]) {
      console.log(`item ${String(item["sk"]?.S).padEnd(22)} ${itemSizeBytes(item)} bytes`);
    }
    console.log(`applyWrite (stage entry): ${summary(applyMs)}`);
    console.log(`reserveCapacity:          ${summary(reserveMs)}`);
  } finally {
    client.destroy();
    await dynamo.stop();
  }
}

/** DynamoDB's item size: UTF-8 names plus values (numbers ~1 byte per 2 digits + 1, maps 3 + 1 per entry). */
function itemSizeBytes(item: Record<string, AttributeValue>): number {
  return Object.entries(item).reduce(
    (sum, [name, value]) => sum + Buffer.byteLength(name) + valueSize(value),
    0,
  );
}

function valueSize(value: AttributeValue): number {
  if (value.S !== undefined) return Buffer.byteLength(value.S);
  if (value.N !== undefined) return Math.ceil(value.N.replace(/[-.]/g, "").length / 2) + 1;
  if (value.BOOL !== undefined || value.NULL !== undefined) return 1;
  if (value.L !== undefined) return 3 + value.L.reduce((sum, v) => sum + 1 + valueSize(v), 0);
  if (value.M !== undefined) return 3 + Object.values(value.M).length + itemSizeBytes(value.M);
  return 0;
}

function summary(ms: number[]): string {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (q: number): string =>
    (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN).toFixed(1);
  return `median ${at(0.5)} ms, p95 ${at(0.95)} ms (n=${sorted.length})`;
}

await main();
