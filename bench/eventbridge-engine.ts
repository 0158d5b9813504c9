/**
 * Throughput of the embedded EventBridge: pattern matching (ops/s), in-process PutEvents and
 * PutEvents through the real SDK client into a no-op target (entries/s, delivery included).
 *
 *   npx node bench/eventbridge-engine.ts [--seconds 2]
 */
import { EventBridgeClient, PutEventsCommand, type PutEventsRequestEntry } from "@aws-sdk/client-eventbridge";
import {
  compileEventPattern,
  LocalEventBus,
  matchesEventPattern,
  startEventBridgeServer,
  type EventPattern,
} from "../local/eventbridge/index.ts";

const secondsArg = process.argv.indexOf("--seconds");
const SECONDS = secondsArg > 0 ? Number(process.argv[secondsArg + 1]) : 2;

const EVENT = {
  version: "0",
  id: "6a7e8feb-b491-4cf7-a9f1-bf3703467718",
  "detail-type": "Kernel Status Changed",
  source: "cairn.kernels",
  account: "000000000000",
  time: "2026-11-03T09:30:15Z",
  region: "local",
  resources: ["arn:aws:states:local:000000000000:execution:lifecycle:s-1"],
  detail: {
    sessionId: "s-1",
    kernelId: "k-1",
    status: "RUNNING",
    attempt: 2,
    agent: { id: "agent-7", ip: "10.0.3.17" },
    tags: ["gpu", "batch"],
  },
};

const PATTERNS: Record<string, EventPattern> = {
  exact: { source: ["cairn.kernels"], "detail-type": ["Kernel Status Changed"] },
  "exact (no match)": { source: ["cairn.sessions"] },
  prefix: { source: [{ prefix: "cairn." }] },
  "anything-but list": { detail: { status: [{ "anything-but": ["PENDING", "TERMINATED"] }] } },
  numeric: { detail: { attempt: [{ numeric: [">", 0, "<=", 5] }] } },
  wildcard: { resources: [{ wildcard: "arn:aws:states:*:execution:lifecycle:*" }] },
  cidr: { detail: { agent: { ip: [{ cidr: "10.0.0.0/16" }] } } },
  $or: { $or: [{ detail: { status: ["FAILED"] } }, { detail: { tags: ["gpu"] } }] },
  complex: {
    source: ["cairn.kernels"],
    detail: {
      status: [{ "anything-but": "PENDING" }],
      attempt: [{ numeric: [">=", 1] }],
      kernelId: [{ exists: true }],
      agent: { id: [{ prefix: "agent-" }] },
    },
  },
};

function measure(fn: () => void, seconds: number): number {
  // Warm up, then count calls in batches so the clock read is not what we measure.
  for (let i = 0; i < 10_000; i++) fn();
  const endMs = performance.now() + seconds * 1000;
  let calls = 0;
  const startMs = performance.now();
  while (performance.now() < endMs) {
    for (let i = 0; i < 1000; i++) fn();
    calls += 1000;
  }
  return calls / ((performance.now() - startMs) / 1000);
}

const fmt = (n: number) => Math.round(n).toLocaleString("en-US");

console.log(`node ${process.version}, ${SECONDS}s per figure\n`);
console.log("pattern matching (compiled once, matched per event)");
for (const [name, pattern] of Object.entries(PATTERNS)) {
  const compiled = compileEventPattern(pattern);
  let sink = 0;
  const opsPerSec = measure(() => {
    if (compiled.matches(EVENT)) sink++;
  }, SECONDS / 4);
  console.log(`  ${name.padEnd(20)} ${fmt(opsPerSec).padStart(12)} ops/s   (matches: ${sink > 0})`);
}
const complexObject = PATTERNS.complex!;
const complexText = JSON.stringify(complexObject);
console.log(
  `  one-shot, object     ${fmt(measure(() => matchesEventPattern(complexObject, EVENT), SECONDS / 4)).padStart(12)} ops/s   (compiles every call)`,
);
console.log(
  `  one-shot, JSON text  ${fmt(measure(() => matchesEventPattern(complexText, EVENT), SECONDS / 4)).padStart(12)} ops/s   (compiled pattern cached)`,
);

function entries(n: number, busName?: string): PutEventsRequestEntry[] {
  return Array.from({ length: n }, (_, i) => ({
    Source: "cairn.kernels",
    DetailType: "Kernel Status Changed",
    Detail: JSON.stringify({ ...EVENT.detail, seq: i }),
    ...(busName ? { EventBusName: busName } : {}),
  }));
}

function newBus(): { bus: LocalEventBus; delivered: () => number } {
  const bus = new LocalEventBus({ name: "cairn" });
  let delivered = 0;
  for (let r = 0; r < 5; r++) {
    // Five rules, one of which matches: routing cost is part of the figure.
    bus.putRule({
      name: `rule-${r}`,
      eventPattern: r === 0 ? PATTERNS.complex! : { source: [`cairn.other-${r}`] },
      targets: [{ id: "noop", invoke: () => Promise.resolve(void delivered++) }],
    });
  }
  return { bus, delivered: () => delivered };
}

{
  const { bus, delivered } = newBus();
  const batch = entries(10);
  const startMs = performance.now();
  const endMs = startMs + SECONDS * 1000;
  let put = 0;
  while (performance.now() < endMs) {
    for (let i = 0; i < 100; i++) put += 10 - bus.putEvents(batch).FailedEntryCount;
    await bus.idle();
  }
  const elapsedSec = (performance.now() - startMs) / 1000;
  console.log(`\nin-process putEvents (10 per call), delivered to a no-op target`);
  console.log(`  ${fmt(put / elapsedSec)} entries/s   (${fmt(delivered())} delivered)`);
  bus.close();
}

{
  const { bus, delivered } = newBus();
  const server = await startEventBridgeServer(bus);
  const client = new EventBridgeClient({
    endpoint: server.endpoint,
    region: "local",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
  const batch = entries(10, "cairn");
  const CONCURRENT_REQUESTS = 8;
  let put = 0;
  let failed = 0;
  const startMs = performance.now();
  const endMs = startMs + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: CONCURRENT_REQUESTS }, async () => {
      while (performance.now() < endMs) {
        const out = await client.send(new PutEventsCommand({ Entries: batch }));
        put += 10 - (out.FailedEntryCount ?? 0);
        failed += out.FailedEntryCount ?? 0;
      }
    }),
  );
  await bus.idle();
  const elapsedSec = (performance.now() - startMs) / 1000;
  console.log(
    `\nSDK PutEventsCommand (10 entries, ${CONCURRENT_REQUESTS} requests in flight) -> HTTP -> no-op target`,
  );
  console.log(
    `  ${fmt(put / elapsedSec)} entries/s   (${fmt(put / 10 / elapsedSec)} requests/s, ${fmt(delivered())} delivered, ${failed} failed)`,
  );
  client.destroy();
  await server.close();
  bus.close();
}
