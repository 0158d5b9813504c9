/**
 * The table holds every agent's signing key, and DynamoDB Local listens on a loopback port any
 * process on the host can reach. End to end, with a runtime that starts its own DynamoDB Local
 * (as `npm start` does) and a real kernel standing in for an attacker: the kernel finds every
 * listening port and asks each for the table with a made-up key and with the keys the runtime file
 * gives clients. DynamoDB Local refuses them all as DynamoDB refuses an unknown key, so nothing of
 * the table reaches the kernel; the runtime itself (its functions, its gate) goes on working.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { DynamoDBClient, GetItemCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { agentPk, AGENT_SK } from "../functions/adapters/dynamo/keys.ts";
import { AGENT_READABLE_ATTRIBUTES } from "../functions/topology/client-access.ts";
import { sessionResult } from "../functions/core/sessions.ts";
import { runLogPaths } from "../agent/work-dir.ts";
import { startTestRuntime, type TestRuntime } from "./support/runtime.ts";

const PROBE = fileURLToPath(new URL("fixtures/dynamodb-probe/probe.ts", import.meta.url));

interface Attempt {
  readonly port: number;
  readonly key: string;
  readonly operation: string;
  readonly outcome: string;
  readonly read?: unknown;
}

describe("DynamoDB Local's own port, reached by a kernel", () => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startTestRuntime({ agents: 1, ownDynamoDb: true });
  }, 120_000);
  afterAll(() => rt?.stop());

  test("refuses every key but the control plane's: made-up and client keys get UnrecognizedClientException, nothing is read; the gate still serves what the client may read", async () => {
    const id = `ddb-probe-${Date.now().toString(36)}`;
    await rt.submit({ sessionId: id, spec: { name: "probe", command: [process.execPath, PROBE] } });
    const ended = await rt.waitForEnd(id, 90_000);
    // The runtime works: the session ran and ended through the functions, which reach the
    // same DynamoDB Local with the control plane's key.
    expect(sessionResult(ended)).toBe("succeeded");
    const out = readFileSync(runLogPaths(join(rt.dataDir, "work"), id, 0, 0).stdout, "utf8");
    const attempts = out
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Attempt);

    // The kernel found DynamoDB Local's port, and tried it with every key it had.
    const dynamoPort = Number(new URL(rt.runtime.tableEndpoint).port);
    const onDynamo = attempts.filter((a) => a.port === dynamoPort);
    expect(new Set(onDynamo.map((a) => a.key))).toEqual(new Set(["made-up", "client", "operator"]));
    expect(onDynamo).toHaveLength(9);
    for (const a of onDynamo) {
      expect(a, `${a.key} ${a.operation}`).toMatchObject({
        outcome: "UnrecognizedClientException: The security token included in the request is invalid.",
      });
    }
    // The gate answers the client's key as its policy says (the client may not scan the table).
    const gatePort = Number(new URL(rt.runtime.info.endpoints.dynamoDb).port);
    const gateScan = attempts.find(
      (a) => a.port === gatePort && a.key === "client" && a.operation === "Scan",
    );
    expect(gateScan?.outcome).toMatch(/^AccessDeniedException: /);

    // The agent's signing key is in the table, and nowhere in what the kernel got.
    const agent = (await rt.store.getAgent(ended.kernels[0]!.agentId!))!;
    expect(agent.signingKey).toBeTruthy();
    expect(out).not.toContain(agent.signingKey);
    // Nor did this runtime's gate give a client's key more than its policy allows. (Other ports
    // on a shared machine, another run's unauthenticated test database say, are not this
    // runtime's.)
    const ours = attempts.filter((a) => a.port === dynamoPort || a.port === gatePort);
    expect(ours.filter((a) => a.operation !== "ListTables" && a.outcome === "ok")).toEqual([]);

    // What the client's policy allows still gets through the gate, which passes it on signed
    // with the one key DynamoDB Local accepts: the agent, without its signing key.
    const viaGate = new DynamoDBClient({
      endpoint: rt.runtime.info.endpoints.dynamoDb,
      region: rt.runtime.info.region,
      credentials: rt.runtime.info.credentials.client,
    });
    try {
      const read = await viaGate.send(
        new GetItemCommand({
          TableName: rt.runtime.info.tableName,
          Key: { pk: { S: agentPk(agent.id) }, sk: { S: AGENT_SK } },
          ProjectionExpression: AGENT_READABLE_ATTRIBUTES.map((_, i) => `#a${i}`).join(", "),
          ExpressionAttributeNames: Object.fromEntries(
            AGENT_READABLE_ATTRIBUTES.map((a, i) => [`#a${i}`, a]),
          ),
        }),
      );
      expect(read.Item?.["id"]?.S).toBe(agent.id);
      expect(read.Item?.["signingKey"]).toBeUndefined();
    } finally {
      viaGate.destroy();
    }
  }, 120_000);
});
