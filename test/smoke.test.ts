import { DynamoDBClient, ListTablesCommand } from "@aws-sdk/client-dynamodb";
import { expect, inject, test } from "vitest";

test("DynamoDB Local from the global setup answers", async () => {
  const client = new DynamoDBClient({
    endpoint: inject("dynamoEndpoint"),
    region: "local",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
  const out = await client.send(new ListTablesCommand({}));
  expect(out.TableNames).toBeDefined();
});
