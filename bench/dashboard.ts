/**
 * Dashboard benchmark: the list page's server time with N sessions in the table
 * (default 10,000), read from the dashboard's own Server-Timing header, over HTTP, against
 * DynamoDB Local. Sessions are written straight to the table (BatchWriteItem of the items the
 * store itself writes), spread over statuses and queues as a busy day would leave them.
 *
 *   npx node bench/dashboard.ts [sessions=10000] [repeats=20]
 *
 * Prints p50 / p90 / max per page; no assertion (figures, not a test).
 */
import { BatchWriteItemCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { createTable } from "../functions/adapters/dynamo/create-table.ts";
import { DynamoSessionStore } from "../functions/adapters/dynamo/dynamo-session-store.ts";
import { sessionItem } from "../functions/adapters/dynamo/item-codec.ts";
import { storeRetryConfig } from "../functions/adapters/dynamo/retry.ts";
import { DynamoSessionCensus } from "../functions/adapters/dynamo/session-census.ts";
import { newSession } from "../functions/core/sessions.ts";
import { SPEC_DEFAULTS } from "../functions/core/spec.ts";
import type { SessionStatus } from "../functions/core/status.ts";
import { startDashboard } from "../dashboard/server.ts";
import { startDynamoDbLocal } from "../local/dynamodb-local.ts";

const SESSIONS = Number(process.argv[2] ?? 10_000);
const REPEATS = Number(process.argv[3] ?? 20);
const SHARDS = 4;
const TABLE = "cairn-dashboard-bench";
const T0 = 1_800_000_000_000;

/** A busy table: most sessions have ended, some wait, some run. */
function statusOf(i: number): SessionStatus {
  const r = i % 20;
  if (r < 14) return "TERMINATED";
  if (r < 16) return "CANCELLED";
  if (r < 18) return "PENDING";
  return "RUNNING";
}

async function main(): Promise<void> {
  const dynamo = await startDynamoDbLocal();
  const client = new DynamoDBClient({
    endpoint: dynamo.endpoint,
    region: "local",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
    ...storeRetryConfig(),
  });
  try {
    await createTable(client, TABLE);
    const loadStarted = performance.now();
    const items = Array.from({ length: SESSIONS }, (_, i) => {
      const id = `bench-${String(i).padStart(6, "0")}`;
      const queue = i % 10 === 0 ? "gpu" : "default";
      const { session, kernels } = newSession(
        id,
        { ...SPEC_DEFAULTS, name: `job-${i % 97}`, queue, command: ["/bin/true"] },
        T0 + i * 1000,
      );
      const stored = {
        ...session,
        status: statusOf(i),
        ...(statusOf(i) === "PENDING" ? { pendingReason: "no agent has 4 cpu free; largest free is 2" } : {}),
      };
      return [sessionItem(stored, SHARDS, kernels)];
    }).flat();
    const batches: (typeof items)[] = [];
    for (let i = 0; i < items.length; i += 25) batches.push(items.slice(i, i + 25));
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < batches.length) {
          const batch = batches[next++]!;
          let pending = batch.map((Item) => ({ PutRequest: { Item } }));
          while (pending.length > 0) {
            const out = await client.send(new BatchWriteItemCommand({ RequestItems: { [TABLE]: pending } }));
            pending = (out.UnprocessedItems?.[TABLE] ?? []) as typeof pending;
          }
        }
      }),
    );
    console.log(
      `loaded ${SESSIONS} sessions (${items.length} items) in ${((performance.now() - loadStarted) / 1000).toFixed(1)} s`,
    );

    const store = new DynamoSessionStore({ client, tableName: TABLE, shards: SHARDS });
    for (const label of ["cold", "warm"]) {
      const t0 = performance.now();
      await store.listRecentSessions({ limit: 50 });
      console.log(`listRecentSessions(50) alone, ${label}: ${(performance.now() - t0).toFixed(1)} ms`);
    }
    const census = new DynamoSessionCensus({ client, tableName: TABLE, shards: SHARDS });
    const server = await startDashboard({
      store,
      census,
      cancel: () => Promise.reject(new Error("the bench cancels nothing")),
      executions: { kind: "none" },
      where: "bench",
    });
    const timed = async (path: string): Promise<{ serverMs: number; totalMs: number; body: string }> => {
      const started = performance.now();
      const response = await fetch(new URL(path, server.url));
      const body = await response.text();
      if (response.status !== 200) throw new Error(`GET ${path}: ${response.status} ${body.slice(0, 300)}`);
      const serverMs = Number(/render;dur=([\d.]+)/.exec(response.headers.get("server-timing") ?? "")?.[1]);
      return { serverMs, totalMs: performance.now() - started, body };
    };
    const first = await timed("/");
    console.log(
      `cold first page (no count cached; waits at most 100 ms for them): server ${first.serverMs.toFixed(1)} ms`,
    );
    const cursor = /href="\/\?cursor=([^"]+)" rel="next"/.exec(first.body)?.[1];
    const pages: readonly (readonly [string, string])[] = [
      ["first page (counts + 50 newest)", "/"],
      ["second page", `/?cursor=${cursor ?? ""}`],
      ["status PENDING", "/?status=PENDING"],
      ["status TERMINATED", "/?status=TERMINATED"],
      ["queue gpu (scanned, no index)", "/?queue=gpu"],
      ["name job-5 (scanned, no index)", "/?name=job-5"],
    ];
    for (const status of ["PENDING", "TERMINATED"] as const) {
      const census0 = performance.now();
      const { count } = await census.countSessions(status);
      console.log(
        `census of ${status} alone (${count} sessions): ${(performance.now() - census0).toFixed(1)} ms`,
      );
    }
    const pct = (xs: number[], p: number) =>
      [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))] ?? NaN;
    console.log(
      `page                              server p50    p90    max   (HTTP total p50), ${REPEATS} requests each`,
    );
    for (const [label, path] of pages) {
      const server: number[] = [];
      const total: number[] = [];
      for (let i = 0; i < REPEATS; i++) {
        const t = await timed(path);
        server.push(t.serverMs);
        total.push(t.totalMs);
      }
      console.log(
        `${label.padEnd(34)} ${pct(server, 0.5).toFixed(1).padStart(6)} ${pct(server, 0.9).toFixed(1).padStart(6)} ${Math.max(
          ...server,
        )
          .toFixed(1)
          .padStart(6)} ms   (${pct(total, 0.5).toFixed(1)} ms)`,
      );
    }
    await server.close();
  } finally {
    client.destroy();
    await dynamo.stop();
  }
}

await main();
