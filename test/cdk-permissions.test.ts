/**
 * The grants follow the code: every AWS SDK command the functions send maps to an IAM action the
 * stack grants, and every granted action is one some command needs. A new command without a
 * grant (AccessDenied in production, invisible locally) or a stale grant fails here.
 */
import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import {
  AGENT_QUEUE_OPEN_ACTIONS,
  AGENT_QUEUE_SEND_ACTIONS,
  BUS_PUT_ACTIONS,
  CALLBACK_ACTIONS,
  DESCRIBE_ACTIONS,
  START_ACTIONS,
  TABLE_ITEM_ACTIONS,
  TABLE_QUERY_ACTIONS,
} from "../lib/permissions.ts";
import {
  ECS_PASS_ROLE_ACTIONS,
  ECS_RUN_TASK_ACTIONS,
  ECS_TAG_ON_CREATE_ACTIONS,
  ECS_TASK_ACTIONS,
  ECS_TASK_DEFINITION_ACTIONS,
} from "../functions/topology/access-actions.ts";
import { ACTIONS_OF_COMMAND, commandsSentBy, taggedOnCreate, tsFiles } from "./sdk-commands.ts";

/**
 * The Fargate executor's ECS commands (functions/adapters/ecs/), granted by lib/fargate.ts to the
 * functions that send kernel commands when the stack has the `fargate` prop.
 */
const ECS_ACTIONS_OF_COMMAND: Readonly<Record<string, readonly string[]>> = {
  RunTaskCommand: ["ecs:RunTask"],
  StopTaskCommand: ["ecs:StopTask"],
  DescribeTasksCommand: ["ecs:DescribeTasks"],
  RegisterTaskDefinitionCommand: ["ecs:RegisterTaskDefinition"],
  DescribeTaskDefinitionCommand: ["ecs:DescribeTaskDefinition"],
};

/**
 * RunTask and RegisterTaskDefinition with tags are authorised as ecs:TagResource as well (tags on
 * create), and a task definition naming roles as iam:PassRole of them.
 */
function ecsImplied(): string[] {
  const text = [...tsFiles("functions/adapters/ecs")].map((f) => readFileSync(f, "utf8")).join("\n");
  return [
    ...(/\btags\s*:/.test(text) ? ECS_TAG_ON_CREATE_ACTIONS : []),
    ...(/\b(executionRoleArn|taskRoleArn)\s*:/.test(text) ? ECS_PASS_ROLE_ACTIONS : []),
  ];
}

/** Table administration: only createTable (local runs and tests) sends these, never a function. */
const LOCAL_ONLY = new Set(["CreateTableCommand", "DescribeTableCommand", "UpdateTimeToLiveCommand"]);

/** `new XCommand(` of an @aws-sdk client, per file under functions/. */
function commandsSent(): Map<string, Set<string>> {
  return commandsSentBy(tsFiles("functions"));
}

/** A transaction is authorised item by item: the kinds of item the store puts in transactions. */
function transactionItemActions(): string[] {
  const text = [...tsFiles("functions/adapters/dynamo")].map((f) => readFileSync(f, "utf8")).join("\n");
  const kinds: [RegExp, string][] = [
    [/\bPut:\s*\{/, "dynamodb:PutItem"],
    [/\bUpdate:\s*/, "dynamodb:UpdateItem"],
    [/\bDelete:\s*\{/, "dynamodb:DeleteItem"],
    [/\bConditionCheck:\s*\{/, "dynamodb:ConditionCheckItem"],
  ];
  return kinds.filter(([re]) => re.test(text)).map(([, action]) => action);
}

describe("grants follow the SDK commands the functions send", () => {
  const sent = commandsSent();

  test("table administration commands are sent only by createTable, for local runs", () => {
    for (const command of LOCAL_ONLY) {
      expect([...(sent.get(command) ?? [])], command).toEqual(["functions/adapters/dynamo/create-table.ts"]);
    }
  });

  test("every command a function sends has its IAM action granted, and every grant is used", () => {
    const needed = new Set<string>();
    const unknown: string[] = [];
    for (const [command, files] of sent) {
      if (LOCAL_ONLY.has(command)) continue;
      if (command === "TransactWriteItemsCommand") {
        for (const action of transactionItemActions()) needed.add(action);
        continue;
      }
      const actions = ACTIONS_OF_COMMAND[command] ?? ECS_ACTIONS_OF_COMMAND[command];
      if (!actions) unknown.push(`${command} (${[...files].join(", ")})`);
      else for (const action of actions) needed.add(action);
    }
    // Tags given at creation are authorised as TagQueue as well (SQS CreateQueue reference).
    if (taggedOnCreate(tsFiles("functions"))) needed.add("sqs:TagQueue");
    if ([...sent.keys()].some((c) => c in ECS_ACTIONS_OF_COMMAND))
      for (const a of ecsImplied()) needed.add(a);
    expect(
      unknown,
      "commands with no known IAM action: add them here and grant them in lib/permissions.ts",
    ).toEqual([]);
    const granted = new Set<string>([
      ...TABLE_ITEM_ACTIONS,
      ...TABLE_QUERY_ACTIONS,
      ...BUS_PUT_ACTIONS,
      ...START_ACTIONS,
      ...CALLBACK_ACTIONS,
      ...DESCRIBE_ACTIONS,
      ...AGENT_QUEUE_OPEN_ACTIONS,
      ...AGENT_QUEUE_SEND_ACTIONS,
      // With the fargate prop (lib/fargate.ts).
      ...ECS_RUN_TASK_ACTIONS,
      ...ECS_TAG_ON_CREATE_ACTIONS,
      ...ECS_TASK_ACTIONS,
      ...ECS_TASK_DEFINITION_ACTIONS,
      ...ECS_PASS_ROLE_ACTIONS,
    ]);
    expect([...granted].sort()).toEqual([...needed].sort());
  });
});
