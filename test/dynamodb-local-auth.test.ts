/**
 * DynamoDB Local started with a credential (as the embedded runtime starts its own) serves only
 * requests signed with it: the launcher refuses everything else as DynamoDB refuses an unknown
 * key or a bad signature, before DynamoDB Local sees the request. Its loopback port is open to
 * every process on the host, so this is what keeps a kernel from the table.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import {
  CreateTableCommand,
  DynamoDBClient,
  GetItemCommand,
  ListTablesCommand,
  PutItemCommand,
} from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { signRequest } from "../local/aws-json/sigv4.ts";
import { startDynamoDbLocal, type RunningDynamoDb } from "../local/dynamodb-local.ts";

const credential = {
  accessKeyId: `ALOCTEST${randomBytes(8).toString("hex").toUpperCase()}`,
  secretAccessKey: randomBytes(30).toString("base64url"),
};
const TABLE = "signed-only";

let db: RunningDynamoDb;
beforeAll(async () => {
  db = await startDynamoDbLocal({ credential });
  await client(credential).send(
    new CreateTableCommand({
      TableName: TABLE,
      AttributeDefinitions: [{ AttributeName: "pk", AttributeType: "S" }],
      KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }],
      BillingMode: "PAY_PER_REQUEST",
    }),
  );
  await client(credential).send(
    new PutItemCommand({ TableName: TABLE, Item: { pk: { S: "secret" }, key: { S: "signing-key" } } }),
  );
}, 60_000);
afterAll(() => db?.stop());

function client(c: { accessKeyId: string; secretAccessKey: string }): DynamoDBClient {
  return new DynamoDBClient({ endpoint: db.endpoint, region: "local", credentials: c, maxAttempts: 1 });
}

/** The error's name and HTTP status, or "ok" when the request was served. */
async function outcome(c: DynamoDBClient, send: (c: DynamoDBClient) => Promise<unknown>): Promise<string> {
  try {
    await send(c);
    return "ok";
  } catch (error) {
    const e = error as { name: string; message: string; $metadata?: { httpStatusCode?: number } };
    return `${e.$metadata?.httpStatusCode} ${e.name}: ${e.message}`;
  }
}

/** A raw POST, as a process without an SDK (or with a forged signature) would send it. */
async function post(
  headers: Record<string, string>,
  body: string,
): Promise<{ status: number; text: string }> {
  const response = await fetch(db.endpoint, { method: "POST", headers, body });
  return { status: response.status, text: await response.text() };
}

const getSecret = (c: DynamoDBClient) =>
  c.send(new GetItemCommand({ TableName: TABLE, Key: { pk: { S: "secret" } } }));

describe("DynamoDB Local with a credential", () => {
  test("requests signed with it are served", async () => {
    const c = client(credential);
    expect((await c.send(new ListTablesCommand({}))).TableNames).toContain(TABLE);
    expect((await getSecret(c)).Item?.["key"]?.S).toBe("signing-key");
  });

  test("a made-up key is refused as DynamoDB refuses it: HTTP 400, UnrecognizedClientException", async () => {
    const made = client({ accessKeyId: "AKIAMADEUP", secretAccessKey: "whatever" });
    const refused = "400 UnrecognizedClientException: The security token included in the request is invalid.";
    expect(await outcome(made, (c) => c.send(new ListTablesCommand({})))).toBe(refused);
    expect(await outcome(made, getSecret)).toBe(refused);
    // "local", what DynamoDB Local's own documentation tells every client to use.
    expect(await outcome(client({ accessKeyId: "local", secretAccessKey: "local" }), getSecret)).toBe(
      refused,
    );
  });

  test("the right key id with a wrong secret is refused: InvalidSignatureException", async () => {
    const wrong = client({ accessKeyId: credential.accessKeyId, secretAccessKey: "not-the-secret" });
    expect(await outcome(wrong, getSecret)).toMatch(
      /^400 InvalidSignatureException: The request signature we calculated does not match/,
    );
  });

  test("no signature, a signed request whose body was changed, or a stale one: refused, nothing read", async () => {
    const target = {
      "content-type": "application/x-amz-json-1.0",
      "x-amz-target": "DynamoDB_20120810.GetItem",
    };
    const body = JSON.stringify({ TableName: TABLE, Key: { pk: { S: "secret" } } });
    const unsigned = await post(target, body);
    expect(unsigned.status).toBe(400);
    expect(JSON.parse(unsigned.text)).toEqual({
      __type: "com.amazon.coral.service#MissingAuthenticationTokenException",
      message: "Request is missing Authentication Token",
    });

    const url = new URL(db.endpoint);
    const signedFor = async (signedBody: string, at?: Date) =>
      signRequest(
        { url, method: "POST", headers: { ...target }, body: Buffer.from(signedBody) },
        credential,
        "local",
        "dynamodb",
        at,
      );
    // The signature is good for its own body: the same headers with that body are served.
    const good = await post(await signedFor(body), body);
    expect(good.status).toBe(200);
    expect(good.text).toContain("signing-key");
    const swapped = await post(
      await signedFor(JSON.stringify({ TableName: TABLE, Key: { pk: { S: "x" } } })),
      body,
    );
    expect(swapped.status).toBe(400);
    expect(swapped.text).toContain("InvalidSignatureException");
    expect(swapped.text).not.toContain("signing-key");

    // Signed 20 minutes ago: DynamoDB allows 15 minutes of skew.
    const stale = await post(await signedFor(body, new Date(Date.now() - 20 * 60_000)), body);
    expect(stale.status).toBe(400);
    expect(stale.text).toContain("InvalidSignatureException");
    expect(stale.text).not.toContain("signing-key");
    // …while one signed 5 minutes ago is within it.
    expect((await post(await signedFor(body, new Date(Date.now() - 5 * 60_000)), body)).status).toBe(200);
  });

  test("the credential is in neither the JVM's command line nor its environment", () => {
    const cmdline = readFileSync(`/proc/${db.pid}/cmdline`, "utf8");
    const environ = readFileSync(`/proc/${db.pid}/environ`, "utf8");
    for (const text of [cmdline, environ]) {
      expect(text).not.toContain(credential.secretAccessKey);
      expect(text).not.toContain(credential.accessKeyId);
    }
  });
});
