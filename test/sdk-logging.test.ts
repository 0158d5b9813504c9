import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { describe, expect, test } from "vitest";
import { withoutSdkLogging } from "../functions/adapters/sdk-logging.ts";

const loggerSteps = (client: DynamoDBClient) =>
  client.middlewareStack.identify().filter((step) => step.startsWith("loggerMiddleware"));

describe("withoutSdkLogging", () => {
  test("removes the SDK's logger middleware, by the name the SDK gives it, and keeps the client", () => {
    const client = new DynamoDBClient({ region: "local" });
    // If the SDK renames it, this fails rather than the removal silently doing nothing.
    expect(loggerSteps(client)).toEqual(["loggerMiddleware - initialize"]);
    expect(withoutSdkLogging(client)).toBe(client);
    expect(loggerSteps(client)).toEqual([]);
    expect(client.middlewareStack.identify().length).toBeGreaterThan(5);
    client.destroy();
  });

  test("leaves anything that is not an SDK client as it is", () => {
    const plain = { send: () => undefined };
    expect(withoutSdkLogging(plain)).toBe(plain);
  });
});
