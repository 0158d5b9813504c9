/**
 * Global secondary indexes that lag the table, end to end. On AWS a GSI is updated
 * asynchronously (eventually consistent, usually within a fraction of a second, with no bound):
 * a Query on it may miss an item written a moment ago. DynamoDB Local updates its indexes at
 * once, so the fault switch (local/dynamodb-faults.ts, `index-lag`) answers the functions' GSI
 * Queries as the index stood some hundreds of milliseconds earlier. The product reads the items
 * behind index entries consistently and the sweep finds what an event's pass missed: sessions
 * still end, with the history and the capacity they have without the lag.
 */
import {
  BatchWriteItemCommand,
  DynamoDBClient,
  PutItemCommand,
  QueryCommand,
  TransactWriteItemsCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { STATUS_INDEX } from "../functions/topology/table-schema.ts";
import { startDynamoDbFaultProxy, type DynamoDbFaultProxy } from "../local/dynamodb-faults.ts";
import { freshTable, type TestTable } from "./store-fixtures.ts";
import { sessionResult } from "../functions/core/sessions.ts";
import { HISTORY_TO_RUNNING, historyLines } from "./support/histories.ts";
import { assertLifecycleInvariants, startTestRuntime, type TestRuntime } from "./support/runtime.ts";

const LAG_MS = 800;

describe("the index lag against DynamoDB Local", () => {
  let table: TestTable;
  let proxy: DynamoDbFaultProxy;
  let client: DynamoDBClient;
  let clock = 1_800_000_000_000;
  beforeAll(async () => {
    table = await freshTable("index-lag");
    const credential = { accessKeyId: "local", secretAccessKey: "local" };
    proxy = await startDynamoDbFaultProxy({
      upstream: inject("dynamoEndpoint"),
      upstreamCredential: credential,
      region: "local",
      faults: { rules: [{ fault: "index-lag", lagMs: 1_000 }] },
      // The test moves the proxy's clock on: what the lag hides stays hidden until it does.
      now: () => clock,
    });
    client = new DynamoDBClient({ endpoint: proxy.endpoint, region: "local", credentials: credential });
  }, 60_000);
  afterAll(async () => {
    client?.destroy();
    await proxy?.close();
    await table?.drop();
  });

  const item = (id: string, sk: string) => ({
    pk: { S: `ITEM#${id}` },
    sk: { S: "ITEM" },
    gsi1pk: { S: "LAGGED" },
    gsi1sk: { S: sk },
    note: { S: "first" },
  });
  const key = (id: string) => ({ pk: { S: `ITEM#${id}` }, sk: { S: "ITEM" } });
  const query = async (via: DynamoDBClient, select?: "COUNT") => {
    const out = await via.send(
      new QueryCommand({
        TableName: table.tableName,
        IndexName: STATUS_INDEX,
        KeyConditionExpression: "gsi1pk = :pk",
        ExpressionAttributeValues: { ":pk": { S: "LAGGED" } },
        ...(select !== undefined ? { Select: select } : {}),
      }),
    );
    return { ids: (out.Items ?? []).map((i) => i["pk"]?.S), count: out.Count };
  };

  test("an entry is hidden until its index keys are older than the lag; an update that keeps them keeps it visible", async () => {
    await client.send(new PutItemCommand({ TableName: table.tableName, Item: item("a", "1") }));
    await client.send(new PutItemCommand({ TableName: table.tableName, Item: item("b", "2") }));
    // DynamoDB Local has them in its index at once; through the proxy they are not there yet.
    expect((await query(table.client)).ids).toEqual(["ITEM#a", "ITEM#b"]);
    expect(await query(client)).toEqual({ ids: [], count: 0 });
    expect(await query(client, "COUNT")).toEqual({ ids: [], count: 0 });
    expect(proxy.faults.fired().filter((f) => f.fault === "index-lag").length).toBe(2);

    clock += 999;
    expect(await query(client)).toEqual({ ids: [], count: 0 });
    clock += 1;
    expect(await query(client)).toEqual({ ids: ["ITEM#a", "ITEM#b"], count: 2 });
    expect(await query(client, "COUNT")).toEqual({ ids: [], count: 2 });

    // b's entry stays where it was: only an attribute outside the index changed.
    await client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: key("b"),
        UpdateExpression: "SET note = :n",
        ExpressionAttributeValues: { ":n": { S: "second" } },
      }),
    );
    // a's entry moves within the index: at its new place it is new.
    await client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: key("a"),
        UpdateExpression: "SET gsi1sk = :sk",
        ExpressionAttributeValues: { ":sk": { S: "3" } },
      }),
    );
    // Entries written in a transaction and in a batch are as new.
    await client.send(
      new TransactWriteItemsCommand({
        TransactItems: [{ Put: { TableName: table.tableName, Item: item("c", "4") } }],
      }),
    );
    await client.send(
      new BatchWriteItemCommand({
        RequestItems: { [table.tableName]: [{ PutRequest: { Item: item("d", "5") } }] },
      }),
    );
    expect((await query(table.client)).ids).toEqual(["ITEM#b", "ITEM#a", "ITEM#c", "ITEM#d"]);
    expect(await query(client)).toEqual({ ids: ["ITEM#b"], count: 1 });

    // Without the rule, the index answers as DynamoDB Local's does.
    proxy.faults.set({ rules: [] });
    expect((await query(client)).ids).toEqual(["ITEM#b", "ITEM#a", "ITEM#c", "ITEM#d"]);
    await client.send(new PutItemCommand({ TableName: table.tableName, Item: item("e", "6") }));
    // An item written while no lag was in force, updated once it is: its entry was there before.
    proxy.faults.set({ rules: [{ fault: "index-lag", lagMs: 1_000 }] });
    await client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: key("e"),
        UpdateExpression: "SET note = :n",
        ExpressionAttributeValues: { ":n": { S: "second" } },
      }),
    );
    expect(await query(client)).toEqual({ ids: ["ITEM#b", "ITEM#e"], count: 2 });
  }, 60_000);
});

describe("GSI Queries that lag the table (end to end)", () => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startTestRuntime({
      agents: 1,
      dynamoDbFaults: { rules: [{ fault: "index-lag", lagMs: LAG_MS }] },
      // What an index entry not yet visible hid from an event's pass, the sweep finds.
      sweepMs: 1_000,
    });
    // An agent registered less than the lag ago is not in the roster's index yet, as on AWS: a
    // session submitted then would wait a sweep ("no live agents are registered") and its
    // history would not be the one to compare with.
    await new Promise((resolve) => setTimeout(resolve, LAG_MS + 200));
  }, 120_000);
  afterAll(async () => {
    await rt?.stop();
  });

  test("sessions submitted together, one retried once: each runs to its end with the history and capacity of an index without lag", async () => {
    const run = Date.now().toString(36);
    const ok = [0, 1, 2].map((i) => `ddb-lag-ok-${run}-${i}`);
    const retried = `ddb-lag-retried-${run}`;
    await Promise.all([
      ...ok.map((sessionId) =>
        rt.submit({ sessionId, spec: { name: "ok", command: ["/bin/sh", "-c", "echo ran"] } }),
      ),
      rt.submit({
        sessionId: retried,
        spec: { name: "retried", command: ["/bin/sh", "-c", "exit 3"], retry: { maxRetriesFailure: 1 } },
      }),
    ]);
    const ended = await Promise.all([...ok, retried].map((id) => rt.waitForEnd(id, 120_000)));
    for (const s of ended.slice(0, ok.length)) {
      expect(s.session.status, s.session.id).toBe("TERMINATED");
      expect(sessionResult(s), s.session.id).toBe("succeeded");
      expect(historyLines(await rt.store.listHistory(s.session.id)), s.session.id).toEqual([
        ...HISTORY_TO_RUNNING,
        "DetectTermination SUCCESS RUNNING->TERMINATING",
        "PromoteToTerminated SUCCESS TERMINATING->TERMINATED",
      ]);
      expect((await rt.store.listRuns(s.session.id)).map((r) => [r.runIndex, r.decision])).toEqual([
        [0, "finished"],
      ]);
    }
    expect(sessionResult(ended[ok.length]!)).toBe("failed");
    expect((await rt.store.listRuns(retried)).map((r) => [r.runIndex, r.decision])).toEqual([
      [0, "retry"],
      [1, "finished"],
    ]);
    // The lag did hide entries from the functions' GSI Queries.
    expect(rt.runtime.dynamoDbFaults!.fired().filter((f) => f.fault === "index-lag").length).toBeGreaterThan(
      0,
    );
    // Every agent's capacity is back, once.
    for (const agent of await rt.store.listAgents()) expect(agent.free, agent.id).toEqual(agent.capacity);
    await assertLifecycleInvariants(rt);
  }, 180_000);
});
