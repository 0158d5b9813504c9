/**
 * One DynamoDB Local for the whole test run. Test files read its endpoint with
 * `inject("dynamoEndpoint")` and create their own uniquely named table.
 *
 * Vitest runs a global setup once per project, all in its main process: the first project's
 * start is shared with the others (through `globalThis`, as each project loads this module on its
 * own), and the database stops when the last project's teardown runs. One JVM instead of one per
 * project: its start and its compiler's warm-up are several seconds of CPU.
 */
import type { TestProject } from "vitest/node";
import { startDynamoDbLocal, type RunningDynamoDb } from "../../local/dynamodb-local.ts";

declare module "vitest" {
  export interface ProvidedContext {
    dynamoEndpoint: string;
  }
}

interface Shared {
  readonly started: Promise<RunningDynamoDb>;
  users: number;
}

const KEY = Symbol.for("cairn.test.dynamoDb");
const holder = globalThis as { [KEY]?: Shared };

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const shared = (holder[KEY] ??= { started: startDynamoDbLocal(), users: 0 });
  shared.users++;
  const dynamo = await shared.started;
  project.provide("dynamoEndpoint", dynamo.endpoint);
  return async () => {
    if (--shared.users > 0) return;
    delete holder[KEY];
    await dynamo.stop();
  };
}
