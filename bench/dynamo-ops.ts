/**
 * What one DynamoDB Local request costs its JVM, by shape: the CPU time DynamoDB Local uses
 * (from /proc) per request, for the request shapes the store sends most (the embedded
 * runtime is CPU-bound, and DynamoDB Local takes the larger share). Prints one row per shape.
 *
 *   npx node bench/dynamo-ops.ts [requests=3000] [concurrency=8]
 */
import {
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  TransactWriteItemsCommand,
  UpdateItemCommand,
  type AttributeValue,
} from "@aws-sdk/client-dynamodb";
import { createTable } from "../functions/adapters/dynamo/create-table.ts";
import { startDynamoDbLocal } from "../local/dynamodb-local.ts";
import { processCpuSeconds } from "./process-cpu.ts";

const total = Number(process.argv[2] ?? 3000);
const concurrency = Number(process.argv[3] ?? 8);
const TABLE = "ops";

const db = await startDynamoDbLocal();
const client = new DynamoDBClient({
  endpoint: db.endpoint,
  region: "local",
  credentials: { accessKeyId: "local", secretAccessKey: "local" },
});
await createTable(client, TABLE);

const s = (v: string): AttributeValue => ({ S: v });
const n = (v: number): AttributeValue => ({ N: String(v) });
const item = (pk: string, sk: string, extra: Record<string, AttributeValue> = {}) => ({
  pk: s(pk),
  sk: s(sk),
  payload: s("x".repeat(600)),
  version: n(0),
  ...extra,
});

const SESSIONS = 200;
for (let i = 0; i < SESSIONS; i++) {
  await client.send(new PutItemCommand({ TableName: TABLE, Item: item(`S#${i}`, "SESSION") }));
  await client.send(new PutItemCommand({ TableName: TABLE, Item: item(`S#${i}`, "KERNEL#0000") }));
}

/** The session item's conditional update, as a stage entry or claim writes it. */
const sessionUpdate = (i: number) => ({
  TableName: TABLE,
  Key: { pk: s(`S#${i % SESSIONS}`), sk: s("SESSION") },
  UpdateExpression: "SET version = version + :one, payload = :p",
  ConditionExpression: "attribute_exists(pk)",
  ExpressionAttributeValues: { ":one": n(1), ":p": s("y".repeat(600)) },
});

let seq = 0;
const shapes: Record<string, (i: number) => Promise<unknown>> = {
  GetItem: (i) =>
    client.send(
      new GetItemCommand({ TableName: TABLE, Key: { pk: s(`S#${i % SESSIONS}`), sk: s("SESSION") } }),
    ),
  "Query (a session's items)": (i) =>
    client.send(
      new QueryCommand({
        TableName: TABLE,
        KeyConditionExpression: "pk = :pk",
        ExpressionAttributeValues: { ":pk": s(`S#${i % SESSIONS}`) },
      }),
    ),
  PutItem: (i) =>
    client.send(new PutItemCommand({ TableName: TABLE, Item: item(`H#${i % SESSIONS}`, `H#${seq++}`) })),
  "UpdateItem (conditional)": (i) => client.send(new UpdateItemCommand(sessionUpdate(i))),
  "TransactWrite: Update + ConditionCheck + Put": (i) =>
    client.send(
      new TransactWriteItemsCommand({
        TransactItems: [
          {
            Update: sessionUpdate(i),
          },
          {
            ConditionCheck: {
              TableName: TABLE,
              Key: { pk: s(`S#${i % SESSIONS}`), sk: s("KERNEL#0000") },
              ConditionExpression: "attribute_exists(pk)",
            },
          },
          { Put: { TableName: TABLE, Item: item(`S#${i % SESSIONS}`, `HISTORY#${seq++}`) } },
        ],
      }),
    ),
  "UpdateItem (moves its gsi1 and gsi2 keys)": (i) =>
    client.send(
      new UpdateItemCommand({
        TableName: TABLE,
        Key: { pk: s(`S#${i % SESSIONS}`), sk: s("SESSION") },
        UpdateExpression: "SET version = version + :one, gsi1pk = :g, gsi2pk = :g, gsi1sk = :k",
        ConditionExpression: "attribute_exists(pk)",
        ExpressionAttributeValues: { ":one": n(1), ":g": s(`STATUS#${i % 7}`), ":k": s(`K#${i}`) },
      }),
    ),
  "TransactWrite: one Update": (i) =>
    client.send(
      new TransactWriteItemsCommand({
        TransactItems: [
          {
            Update: {
              TableName: TABLE,
              Key: { pk: s(`S#${i % SESSIONS}`), sk: s("SESSION") },
              UpdateExpression: "SET version = version + :one",
              ConditionExpression: "attribute_exists(pk)",
              ExpressionAttributeValues: { ":one": n(1) },
            },
          },
        ],
      }),
    ),
};

console.log(`${total} requests per shape, ${concurrency} at a time, DynamoDB Local pid ${db.pid}`);
console.log("shape".padEnd(48), "JVM CPU ms/request".padStart(20), "wall ms/request".padStart(16));
for (const [name, send] of Object.entries(shapes)) {
  // Warm up the JVM's path for this shape first.
  for (let i = 0; i < 300; i++) await send(i);
  const cpu0 = processCpuSeconds(db.pid);
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) await send(next++);
    }),
  );
  const wallMs = performance.now() - t0;
  const cpuMs = (processCpuSeconds(db.pid) - cpu0) * 1000;
  console.log(
    name.padEnd(48),
    (cpuMs / total).toFixed(2).padStart(20),
    (wallMs / total).toFixed(2).padStart(16),
  );
}
await db.stop();
