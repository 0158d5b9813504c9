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
import { ACTIONS_OF_COMMAND, commandsSentBy, taggedOnCreate, tsFiles } from "./sdk-commands.ts";

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
      const actions = ACTIONS_OF_COMMAND[command];
      if (!actions) unknown.push(`${command} (${[...files].join(", ")})`);
      else for (const action of actions) needed.add(action);
    }
    // Tags given at creation are authorised as TagQueue as well (SQS CreateQueue reference).
    if (taggedOnCreate(tsFiles("functions"))) needed.add("sqs:TagQueue");
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
    ]);
    expect([...granted].sort()).toEqual([...needed].sort());
  });
});
