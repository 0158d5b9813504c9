/**
 * The grants follow the code: every AWS SDK command the functions send maps to an IAM action the
 * stack grants, and every granted action is one some command needs. A new command without a
 * grant (AccessDenied in production, invisible locally) or a stale grant fails here.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import {
  BUS_PUT_ACTIONS,
  CALLBACK_ACTIONS,
  START_ACTIONS,
  TABLE_ITEM_ACTIONS,
  TABLE_QUERY_ACTIONS,
} from "../lib/permissions.ts";

/** Table administration: only createTable (local runs and tests) sends these, never a function. */
const LOCAL_ONLY = new Set(["CreateTableCommand", "DescribeTableCommand", "UpdateTimeToLiveCommand"]);

/** IAM actions per SDK command (service authorization reference). */
const ACTIONS_OF_COMMAND: Readonly<Record<string, readonly string[]>> = {
  GetItemCommand: ["dynamodb:GetItem"],
  BatchGetItemCommand: ["dynamodb:BatchGetItem"],
  PutItemCommand: ["dynamodb:PutItem"],
  UpdateItemCommand: ["dynamodb:UpdateItem"],
  DeleteItemCommand: ["dynamodb:DeleteItem"],
  QueryCommand: ["dynamodb:Query"],
  PutEventsCommand: ["events:PutEvents"],
  StartExecutionCommand: ["states:StartExecution"],
  SendTaskSuccessCommand: ["states:SendTaskSuccess"],
  SendTaskFailureCommand: ["states:SendTaskFailure"],
  SendTaskHeartbeatCommand: ["states:SendTaskHeartbeat"],
};

function* tsFiles(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* tsFiles(path);
    else if (path.endsWith(".ts")) yield path;
  }
}

/** `new XCommand(` of an @aws-sdk client, per file under functions/. */
function commandsSent(): Map<string, Set<string>> {
  const byCommand = new Map<string, Set<string>>();
  for (const file of tsFiles("functions")) {
    const text = readFileSync(file, "utf8");
    if (!/from "@aws-sdk\/client-/.test(text)) continue;
    for (const m of text.matchAll(/\bnew\s+([A-Z][A-Za-z]*Command)\s*\(/g)) {
      const files = byCommand.get(m[1]!) ?? new Set<string>();
      files.add(file);
      byCommand.set(m[1]!, files);
    }
  }
  return byCommand;
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
      expect([...(sent.get(command) ?? [])], command).toEqual(["functions/adapters/dynamo/table-schema.ts"]);
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
    ]);
    expect([...granted].sort()).toEqual([...needed].sort());
  });
});
