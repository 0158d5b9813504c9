/**
 * Which AWS SDK commands a body of code sends, and the IAM actions each needs (the Service
 * Authorization Reference), for the tests that prove grants follow the code:
 * test/cdk-permissions.test.ts (the functions) and test/cdk-agents.test.ts (agents, clients).
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize, relative, resolve } from "node:path";

/** IAM actions per SDK command. */
export const ACTIONS_OF_COMMAND: Readonly<Record<string, readonly string[]>> = {
  GetItemCommand: ["dynamodb:GetItem"],
  BatchGetItemCommand: ["dynamodb:BatchGetItem"],
  PutItemCommand: ["dynamodb:PutItem"],
  UpdateItemCommand: ["dynamodb:UpdateItem"],
  DeleteItemCommand: ["dynamodb:DeleteItem"],
  QueryCommand: ["dynamodb:Query"],
  PutEventsCommand: ["events:PutEvents"],
  StartExecutionCommand: ["states:StartExecution"],
  SendTaskSuccessCommand: ["states:SendTaskSuccess"],
  DescribeExecutionCommand: ["states:DescribeExecution"],
  SendTaskFailureCommand: ["states:SendTaskFailure"],
  SendTaskHeartbeatCommand: ["states:SendTaskHeartbeat"],
  // Tags given to CreateQueue also need sqs:TagQueue: see taggedOnCreate.
  CreateQueueCommand: ["sqs:CreateQueue"],
  GetQueueUrlCommand: ["sqs:GetQueueUrl"],
  SetQueueAttributesCommand: ["sqs:SetQueueAttributes"],
  SendMessageCommand: ["sqs:SendMessage"],
  // Batch actions are authorised as their single-message action.
  SendMessageBatchCommand: ["sqs:SendMessage"],
  ReceiveMessageCommand: ["sqs:ReceiveMessage"],
  DeleteMessageCommand: ["sqs:DeleteMessage"],
  DeleteMessageBatchCommand: ["sqs:DeleteMessage"],
  ChangeMessageVisibilityCommand: ["sqs:ChangeMessageVisibility"],
  ChangeMessageVisibilityBatchCommand: ["sqs:ChangeMessageVisibility"],
  CreateLogStreamCommand: ["logs:CreateLogStream"],
  PutLogEventsCommand: ["logs:PutLogEvents"],
  DescribeLogStreamsCommand: ["logs:DescribeLogStreams"],
  GetLogEventsCommand: ["logs:GetLogEvents"],
  FilterLogEventsCommand: ["logs:FilterLogEvents"],
  DescribeStacksCommand: ["cloudformation:DescribeStacks"],
};

export function* tsFiles(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* tsFiles(path);
    else if (path.endsWith(".ts")) yield path;
  }
}

/** `new XCommand(` of an @aws-sdk client in each file, by command, with the files that send it. */
export function commandsSentBy(files: Iterable<string>): Map<string, Set<string>> {
  const byCommand = new Map<string, Set<string>>();
  for (const file of files) {
    const text = readFileSync(file, "utf8");
    if (!/from "@aws-sdk\/client-/.test(text)) continue;
    for (const m of text.matchAll(/\bnew\s+([A-Z][A-Za-z]*Command)\s*\(/g)) {
      const sending = byCommand.get(m[1]!) ?? new Set<string>();
      sending.add(file);
      byCommand.set(m[1]!, sending);
    }
  }
  return byCommand;
}

/** Whether any CreateQueueCommand in these files passes tags (then sqs:TagQueue is needed too). */
export function taggedOnCreate(files: Iterable<string>): boolean {
  for (const file of files) {
    const text = readFileSync(file, "utf8");
    for (const m of text.matchAll(/\bnew\s+CreateQueueCommand\s*\(\s*\{/g)) {
      // The object literal up to its matching brace.
      let depth = 0;
      let end = m.index + m[0].length - 1;
      for (; end < text.length; end++) {
        if (text[end] === "{") depth++;
        else if (text[end] === "}" && --depth === 0) break;
      }
      if (/\btags\s*:/.test(text.slice(m.index, end))) return true;
    }
  }
  return false;
}

/**
 * The repository's .ts files reachable from `entries` through the imports that run
 * (`import … from "./x.ts"`, `export … from`, `import("./x.ts")`; not `import type`), relative
 * paths only: packages are not followed. Paths are relative to the repository root, like `entries`.
 */
export function reachableFiles(
  entries: readonly string[],
  exclude: ReadonlySet<string> = new Set(),
): Set<string> {
  const seen = new Set<string>();
  const pending = entries.map((e) => normalize(e));
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (seen.has(file) || exclude.has(file)) continue;
    seen.add(file);
    const text = readFileSync(file, "utf8");
    const targets = [
      // Static imports and re-exports; `import type` / `export type` are erased at run time.
      ...[...text.matchAll(/^\s*(?:import|export)\s+(type\s+)?(?:[^;"]*?\sfrom\s*)?"(\.{1,2}\/[^"]+\.ts)"/gm)]
        .filter((m) => m[1] === undefined)
        .map((m) => m[2]!),
      ...[...text.matchAll(/\bimport\s*\(\s*"(\.{1,2}\/[^"]+\.ts)"\s*\)/g)].map((m) => m[1]!),
    ];
    for (const specifier of targets) {
      const target = relative(process.cwd(), resolve(dirname(file), specifier));
      if (!existsSync(target)) throw new Error(`${file} imports ${specifier}, which does not exist`);
      pending.push(target);
    }
  }
  return seen;
}

/** The IAM actions `commands` need, and the commands no table entry knows. */
export function actionsFor(commands: Iterable<string>): { actions: Set<string>; unknown: string[] } {
  const actions = new Set<string>();
  const unknown: string[] = [];
  for (const command of commands) {
    const known = ACTIONS_OF_COMMAND[command];
    if (known === undefined) unknown.push(command);
    else for (const action of known) actions.add(action);
  }
  return { actions, unknown };
}
