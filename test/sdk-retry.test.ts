/**
 * The functions' SDK clients other than DynamoDB's retry a throttled request inside the
 * invocation (functions/adapters/sdk-retry.ts), so a queue record is given back only for what
 * outlasted the SDK's retries. Shown with the real EventBridge client against an endpoint that
 * throttles: the call succeeds on its third try, and an endpoint that never stops throttling
 * fails the call after five.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { EventBridgeClient, PutEventsCommand } from "@aws-sdk/client-eventbridge";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { SERVICE_RETRY } from "../functions/adapters/sdk-retry.ts";

let server: Server;
let endpoint: string;
let throttleFirst = 0;
let requests = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      requests++;
      res.setHeader("content-type", "application/x-amz-json-1.1");
      if (requests <= throttleFirst) {
        res.statusCode = 400;
        res.end(JSON.stringify({ __type: "ThrottlingException", message: "Rate exceeded" }));
        return;
      }
      res.end(JSON.stringify({ FailedEntryCount: 0, Entries: [{ EventId: "e-1" }] }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

function client(): EventBridgeClient {
  return new EventBridgeClient({
    ...SERVICE_RETRY,
    endpoint,
    region: "local",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
}

const put = new PutEventsCommand({
  Entries: [{ Source: "cairn.control-plane", DetailType: "Test", Detail: "{}", EventBusName: "cairn" }],
});

describe("the functions' SDK retry", () => {
  test("given an endpoint that throttles twice, then the call succeeds inside the invocation, on its third try", async () => {
    requests = 0;
    throttleFirst = 2;
    const out = await client().send(put);
    expect(out.FailedEntryCount).toBe(0);
    expect(out.$metadata.attempts).toBe(3);
    expect(requests).toBe(3);
  }, 30_000);

  test("given an endpoint that keeps throttling, then the call fails after five tries", async () => {
    requests = 0;
    throttleFirst = 1_000;
    await expect(client().send(put)).rejects.toMatchObject({ name: "ThrottlingException" });
    expect(requests).toBe(SERVICE_RETRY.maxAttempts);
  }, 60_000);
});
