/**
 * `npm run bench:local`: submits N one-kernel sessions at once to the embedded runtime and
 * prints throughput, latency percentiles, Step Functions transitions and DynamoDB writes per
 * session. Figures only; nothing here asserts a timing.
 *
 *   npm run bench:local -- [--sessions 1000] [--agents 2] [--agent-cpu 512] [--concurrency 8]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { EventBridgeClient, PutEventsCommand } from "@aws-sdk/client-eventbridge";
import { storeWriteMetrics } from "../functions/adapters/clients.ts";
import { DetailType, toPutEventsEntry } from "../functions/core/events.ts";
import { startRuntime } from "../local/runtime.ts";

const { values } = parseArgs({
  options: {
    sessions: { type: "string", default: "1000" },
    agents: { type: "string", default: "2" },
    "agent-cpu": { type: "string", default: "512" },
    concurrency: { type: "string", default: "8" },
    "timeout-seconds": { type: "string", default: "1200" },
    verbose: { type: "boolean", default: false },
  },
});
const N = Number(values.sessions);
const AGENTS = Number(values.agents);
const AGENT_CPU = Number(values["agent-cpu"]);
const PUT_CONCURRENCY = Number(values.concurrency);
const TIMEOUT_MS = Number(values["timeout-seconds"]) * 1000;

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}
const fmt = (ms: number) => (ms / 1000).toFixed(2) + " s";

const dataDir = mkdtempSync(join(tmpdir(), "cairn-bench-"));
console.log(`bench: starting the embedded runtime (${AGENTS} agents × ${AGENT_CPU} cpu) …`);
const runtime = await startRuntime({
  dataDir,
  agents: AGENTS,
  agentCapacity: { cpu: AGENT_CPU, memoryMiB: AGENT_CPU * 1024 },
  heartbeatMs: 2_000,
  sweepMs: 5_000,
  log: (line) => process.stderr.write(line + "\n"),
  handlerLogLevel: values.verbose ? "info" : "warn",
});
const { info } = runtime;

const submittedAt = new Map<string, number>();
const runningAt = new Map<string, number>();
const endedAt = new Map<string, { atMs: number; to: string }>();
runtime.bus.onEvent((event) => {
  if (event["detail-type"] !== DetailType.SessionStatusChanged) return;
  const d = event.detail as { sessionId: string; to: string };
  if (!submittedAt.has(d.sessionId)) return;
  const now = Date.now();
  if (d.to === "RUNNING" && !runningAt.has(d.sessionId)) runningAt.set(d.sessionId, now);
  if ((d.to === "TERMINATED" || d.to === "CANCELLED") && !endedAt.has(d.sessionId)) {
    endedAt.set(d.sessionId, { atMs: now, to: d.to });
  }
});

storeWriteMetrics.reset();
const client = new EventBridgeClient({
  endpoint: info.endpoints.eventBridge,
  region: info.region,
  credentials: { accessKeyId: "bench", secretAccessKey: "bench" },
});
const run = Date.now().toString(36);
const ids = Array.from({ length: N }, (_, i) => `bench-${run}-${i}`);
const batches: string[][] = [];
for (let i = 0; i < ids.length; i += 10) batches.push(ids.slice(i, i + 10));

console.log(
  `bench: submitting ${N} one-kernel sessions (PutEvents, 10 per call, ${PUT_CONCURRENCY} calls in flight) …`,
);
const t0 = Date.now();
let next = 0;
await Promise.all(
  Array.from({ length: PUT_CONCURRENCY }, async () => {
    while (next < batches.length) {
      const batch = batches[next++]!;
      const entries = batch.map((sessionId) =>
        toPutEventsEntry(info.eventBusName, DetailType.SessionSubmitted, {
          sessionId,
          spec: { name: "bench", command: ["true"], resources: { cpu: 0.25, memoryMiB: 32 } },
        }),
      );
      const now = Date.now();
      const out = await client.send(new PutEventsCommand({ Entries: entries }));
      if (out.FailedEntryCount) throw new Error(`PutEvents failed: ${JSON.stringify(out.Entries)}`);
      for (const id of batch) submittedAt.set(id, now);
    }
  }),
);
const submitSeconds = (Date.now() - t0) / 1000;
console.log(
  `bench: submitted in ${submitSeconds.toFixed(2)} s (${(N / submitSeconds).toFixed(0)} submissions/s)`,
);

const deadline = t0 + TIMEOUT_MS;
let lastPrint = 0;
while (endedAt.size < N && Date.now() < deadline) {
  await new Promise((r) => setTimeout(r, 250));
  if (Date.now() - lastPrint > 5_000) {
    lastPrint = Date.now();
    console.log(
      `bench: ${runningAt.size}/${N} reached RUNNING, ${endedAt.size}/${N} ended (${fmt(Date.now() - t0)})`,
    );
  }
}
const wallMs = Math.max(...[...endedAt.values()].map((e) => e.atMs)) - t0;

const toRunning = ids.flatMap((id) => (runningAt.has(id) ? [runningAt.get(id)! - submittedAt.get(id)!] : []));
const toEnd = ids.flatMap((id) => (endedAt.has(id) ? [endedAt.get(id)!.atMs - submittedAt.get(id)!] : []));
toRunning.sort((a, b) => a - b);
toEnd.sort((a, b) => a - b);

let transitions = 0;
for (const id of ids) {
  const arn = info.stateMachineArn.replace(":stateMachine:", ":execution:") + ":" + id;
  try {
    transitions += (await runtime.stepFunctions.describeExecution({ executionArn: arn })).stateTransitions;
  } catch {
    // An execution that never started counts zero transitions; the missing count shows below.
  }
}
const writes = storeWriteMetrics;
const ended = [...endedAt.values()];
const bus = runtime.bus.stats();
const queue = [...runtime.queues.values()][0]?.stats();

console.log("");
console.log(`sessions submitted               ${N}`);
console.log(
  `sessions ended                   ${ended.length} (${ended.filter((e) => e.to === "TERMINATED").length} TERMINATED, ${ended.filter((e) => e.to === "CANCELLED").length} CANCELLED)`,
);
console.log(`wall time, first submit → last end ${fmt(wallMs)}`);
console.log(`throughput                       ${((ended.length / wallMs) * 1000).toFixed(1)} sessions/s`);
console.log(
  `submit → RUNNING     p50 ${fmt(percentile(toRunning, 50))}   p99 ${fmt(percentile(toRunning, 99))}   max ${fmt(toRunning.at(-1) ?? NaN)}`,
);
console.log(
  `submit → TERMINATED  p50 ${fmt(percentile(toEnd, 50))}   p99 ${fmt(percentile(toEnd, 99))}   max ${fmt(toEnd.at(-1) ?? NaN)}`,
);
console.log(`Step Functions transitions       ${(transitions / N).toFixed(1)} per session`);
console.log(
  `DynamoDB write requests          ${(writes.operations / N).toFixed(1)} per session (${(writes.items / N).toFixed(1)} items, ${writes.failedOperations} conditional failures in all)`,
);
for (const [op, c] of writes.byOperation)
  console.log(
    `  ${op.padEnd(20)} ${(c.operations / N).toFixed(2)} requests, ${(c.items / N).toFixed(2)} items per session`,
  );
console.log(`EventBridge events               ${(bus.put / N).toFixed(1)} per session`);
if (queue)
  console.log(
    `coordinator batches              ${queue.batches} (${(queue.sent / Math.max(1, queue.batches)).toFixed(1)} messages per batch)`,
  );

client.destroy();
await runtime.stop();
rmSync(dataDir, { recursive: true, force: true });
process.exit(ended.length === N ? 0 : 1);
