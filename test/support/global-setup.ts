/**
 * One DynamoDB Local for the whole test run. Test files read its endpoint with
 * `inject("dynamoEndpoint")` and create their own uniquely named table.
 */
import type { TestProject } from "vitest/node";
import { startDynamoDbLocal } from "../../local/dynamodb-local.ts";

declare module "vitest" {
  export interface ProvidedContext {
    dynamoEndpoint: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const dynamo = await startDynamoDbLocal();
  project.provide("dynamoEndpoint", dynamo.endpoint);
  return () => dynamo.stop();
}
