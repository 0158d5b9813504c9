/**
 * What the stack gives the world outside it: the agent and client managed policies (exact
 * statements, and exactly what the agent's and the CLI's code send: no more, no fewer), the
 * kernel log group, the outputs the CLI and the operators read, and the functions' side of the
 * agent protocol (the queue prefix in their environment, the heartbeat rule).
 */
import { request as httpRequest, createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { readFileSync } from "node:fs";
import type { CfnElement } from "aws-cdk-lib";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { TABLE_SCHEMA } from "../functions/topology/table-schema.ts";
import { AGENT_READABLE_ATTRIBUTES } from "../functions/topology/client-access.ts";
import { executionsArn } from "../lib/permissions.ts";
import { loadConfig } from "../functions/config.ts";
import { RETRY_CONFIG_DEFAULTS } from "../functions/core/retry/config.ts";
import { parseRetryPolicy, type RetryPolicy } from "../functions/core/retry/policy.ts";
import { FUNCTIONS } from "../functions/topology/index.ts";
import { openCairnApi } from "../bin/cli/cairn-api.ts";
import { KERNEL_LOG_GROUP_OUTPUT } from "../bin/cli/log-access.ts";
import { AGENT_OUTPUT_KEYS, STACK_OUTPUT_KEYS } from "../bin/cli/target.ts";
import { resourceNamed, resourcesOf, synthesize, type Synthesized } from "./cdk-synth.ts";
import { CLIENT_EXECUTION_ACTIONS } from "../functions/topology/client-access.ts";
import { parseJobTemplate } from "../functions/core/templates.ts";
import {
  compilePolicy,
  type AuthorizeHook,
  type IamConditionBlock,
  type PolicyStatement,
} from "../local/aws-json/index.ts";
import { checksOf, type TableLayout } from "../local/dynamodb-gate/requests.ts";
import { actionsFor, commandsSentBy, reachableFiles, taggedOnCreate, tsFiles } from "./sdk-commands.ts";
import { freshTable, newSession, T0, type TestTable } from "./store-fixtures.ts";

let s: Synthesized;
beforeAll(() => {
  s = synthesize({}, { bundle: false });
});
afterAll(() => s.cleanup());

interface Statement {
  readonly Sid?: string;
  readonly Effect: string;
  readonly Action: string | string[];
  readonly Resource: unknown;
  readonly Condition?: Record<string, Record<string, unknown>>;
}

const list = <T>(x: T | T[]): T[] => (Array.isArray(x) ? x : [x]);

function policyStatements(prefix: string): Statement[] {
  const [, policy] = resourceNamed(s.json, "AWS::IAM::ManagedPolicy", prefix);
  return (policy.Properties?.["PolicyDocument"] as { Statement: Statement[] }).Statement.map((st) => ({
    ...st,
    Action: list(st.Action).sort(),
  }));
}

const logicalId = (construct: { node: { defaultChild?: unknown } }): string =>
  s.stack.getLogicalId(construct.node.defaultChild as CfnElement);

const granted = (prefix: string) => new Set(policyStatements(prefix).flatMap((st) => list(st.Action)));

const ids = () => ({
  table: resourceNamed(s.json, "AWS::DynamoDB::Table", "CairnTable")[0],
  bus: resourceNamed(s.json, "AWS::Events::EventBus", "CairnBus")[0],
  kernelLogs: resourceNamed(s.json, "AWS::Logs::LogGroup", "CairnAgentsKernelLogs")[0],
  agentPolicy: resourceNamed(s.json, "AWS::IAM::ManagedPolicy", "CairnAgentsAgentPolicy")[0],
  clientPolicy: resourceNamed(s.json, "AWS::IAM::ManagedPolicy", "CairnAgentsClientPolicy")[0],
  operatorPolicy: resourceNamed(s.json, "AWS::IAM::ManagedPolicy", "CairnAgentsOperatorPolicy")[0],
});

/** Resources compared as a set: their order in the template is CDK's. */
const inAnyOrder = (resources: readonly unknown[]): string[] =>
  resources.map((r) => JSON.stringify(r)).sort();

/** `execution:<name>:*` of each of the stack's state machines, as the template writes it. */
function executionArns(): unknown[] {
  return [...s.stack.cairn.stateMachines.values()].map((m): unknown => s.stack.resolve(executionsArn(m)));
}

describe("the managed policies, statement by statement", () => {
  test("AgentPolicy: consume its queue (its own only when tagged with its agent id), put cairn.agent events, write kernel log streams, read the stack's outputs", () => {
    const { bus, kernelLogs } = ids();
    const prefix = s.stack.cairn.settings.agentQueuePrefix;
    expect(policyStatements("CairnAgentsAgentPolicy")).toEqual([
      {
        Sid: "ConsumeOwnAgentQueue",
        Effect: "Allow",
        Action: ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"],
        Resource: `arn:aws:sqs:eu-west-1:123456789012:${prefix}\${aws:PrincipalTag/cairn-agent-id}`,
      },
      {
        Sid: "ConsumeAgentQueuesUntagged",
        Effect: "Allow",
        Action: ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"],
        Resource: `arn:aws:sqs:eu-west-1:123456789012:${prefix}*`,
        Condition: { Null: { "aws:PrincipalTag/cairn-agent-id": "true" } },
      },
      {
        Effect: "Allow",
        Action: ["events:PutEvents"],
        Resource: { "Fn::GetAtt": [bus, "Arn"] },
        Condition: {
          "ForAllValues:StringEquals": { "events:source": ["cairn.agent"] },
          Null: { "events:source": "false" },
        },
      },
      {
        Effect: "Allow",
        Action: ["logs:CreateLogStream", "logs:PutLogEvents"],
        Resource: {
          "Fn::Join": ["", ["arn:aws:logs:eu-west-1:123456789012:log-group:", { Ref: kernelLogs }, ":*"]],
        },
      },
      { Effect: "Allow", Action: ["cloudformation:DescribeStacks"], Resource: { Ref: "AWS::StackId" } },
    ]);
  });

  test("ClientPolicy: reads of what the CLI shows (agents without their keys), cairn.client events, kernel logs, the executions and the stack's outputs", () => {
    const { table, bus, kernelLogs } = ids();
    const tableArn = { "Fn::GetAtt": [table, "Arn"] };
    const statements = policyStatements("CairnAgentsClientPolicy").map((st) =>
      list(st.Action).includes("states:GetExecutionHistory")
        ? { ...st, Resource: inAnyOrder(st.Resource as unknown[]) }
        : st,
    );
    expect(statements).toEqual([
      {
        Sid: "ReadWhatTheCliShows",
        Effect: "Allow",
        Action: ["dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:Query"],
        Resource: tableArn,
        Condition: {
          "ForAllValues:StringLike": {
            "dynamodb:LeadingKeys": [
              "SESSION#*",
              "JOB#*",
              "REJECTION#*",
              "QUEUE#*",
              "RETRY_POLICY#*",
              "CONFIG#*",
              "TEMPLATE#*",
              "FAILURE_CATEGORY#*",
              "DEPLOYMENT#*",
              "DEPLOYMENT_HISTORY#*",
            ],
          },
          Null: { "dynamodb:LeadingKeys": "false" },
        },
      },
      {
        Sid: "ReadAgentsWithoutTheirKeys",
        Effect: "Allow",
        Action: ["dynamodb:BatchGetItem", "dynamodb:GetItem"],
        Resource: tableArn,
        Condition: {
          "ForAllValues:StringLike": { "dynamodb:LeadingKeys": ["AGENT#*"] },
          "ForAllValues:StringEquals": { "dynamodb:Attributes": [...AGENT_READABLE_ATTRIBUTES] },
          StringEqualsIfExists: { "dynamodb:Select": "SPECIFIC_ATTRIBUTES" },
          Null: { "dynamodb:LeadingKeys": "false", "dynamodb:Attributes": "false" },
        },
      },
      {
        Sid: "QueryTheKeysOnlyIndexes",
        Effect: "Allow",
        Action: ["dynamodb:Query"],
        Resource: TABLE_SCHEMA.globalSecondaryIndexes.map((g) => ({
          "Fn::Join": ["", [tableArn, `/index/${g.indexName}`]],
        })),
      },
      {
        Effect: "Allow",
        Action: ["events:PutEvents"],
        Resource: { "Fn::GetAtt": [bus, "Arn"] },
        Condition: {
          "ForAllValues:StringEquals": { "events:source": ["cairn.client"] },
          Null: { "events:source": "false" },
        },
      },
      {
        Effect: "Allow",
        Action: ["logs:DescribeLogStreams", "logs:FilterLogEvents", "logs:GetLogEvents"],
        Resource: {
          "Fn::Join": ["", ["arn:aws:logs:eu-west-1:123456789012:log-group:", { Ref: kernelLogs }, ":*"]],
        },
      },
      {
        Effect: "Allow",
        Action: ["states:DescribeExecution", "states:GetExecutionHistory"],
        Resource: inAnyOrder(executionArns()),
      },
      { Effect: "Allow", Action: ["cloudformation:DescribeStacks"], Resource: { Ref: "AWS::StackId" } },
    ]);
    // The signing key is the one attribute of an agent item a client may not name.
    expect(AGENT_READABLE_ATTRIBUTES).not.toContain("signingKey");
    // Every index projects keys only, which is why querying them needs no condition.
    for (const g of TABLE_SCHEMA.globalSecondaryIndexes) expect(g.projection, g.indexName).toBe("KEYS_ONLY");
  });

  test("OperatorPolicy: writes to templates, retry policies, failure categories, queues and the retry configuration only", () => {
    const { table } = ids();
    expect(policyStatements("CairnAgentsOperatorPolicy")).toEqual([
      {
        Sid: "WriteWhatOperatorsOwn",
        Effect: "Allow",
        Action: ["dynamodb:DeleteItem", "dynamodb:PutItem", "dynamodb:UpdateItem"],
        Resource: { "Fn::GetAtt": [table, "Arn"] },
        Condition: {
          "ForAllValues:StringLike": {
            "dynamodb:LeadingKeys": [
              "TEMPLATE#*",
              "RETRY_POLICY#*",
              "FAILURE_CATEGORY#*",
              "QUEUE#*",
              "CONFIG#*",
            ],
          },
          // No key of the status or target index: an operator's item must not pass for a session.
          "ForAllValues:StringEquals": {
            "dynamodb:Attributes": [
              "pk",
              "sk",
              "type",
              "name",
              "document",
              "version",
              "createdAtMs",
              "updatedAtMs",
              "priority",
              "retryPolicies",
              "fargate",
              "usedBy",
              "gsi3pk",
              "gsi3sk",
            ],
          },
          Null: { "dynamodb:LeadingKeys": "false" },
        },
      },
    ]);
  });

  test("the executions clients may read are those of the stack's three state machines, each under its own name", () => {
    const resources = executionArns().map((arn) => JSON.stringify(arn));
    expect(resources).toHaveLength(3);
    for (const m of s.stack.cairn.stateMachines.values()) {
      const { Ref } = s.stack.resolve(m.stateMachineArn) as { Ref: string };
      expect(
        resources.filter((r) => r.includes(`"${Ref}"`)),
        Ref,
      ).toHaveLength(1);
    }
    for (const r of resources) expect(r).toMatch(/:execution:.*:\*"\]\]\}$/);
    const [statement] = policyStatements("CairnAgentsClientPolicy").filter((st) =>
      list(st.Action).includes("states:GetExecutionHistory"),
    );
    expect(
      list(statement!.Resource as unknown[])
        .map((r) => JSON.stringify(r))
        .sort(),
    ).toEqual([...resources].sort());
  });

  test("neither may put the other's events, nor any events without a source condition", () => {
    for (const [policy, source] of [
      ["CairnAgentsAgentPolicy", "cairn.agent"],
      ["CairnAgentsClientPolicy", "cairn.client"],
    ] as const) {
      const puts = policyStatements(policy).filter((st) => list(st.Action).includes("events:PutEvents"));
      expect(puts, policy).toHaveLength(1);
      // Every entry of a PutEvents call must carry this source, and a source must be there.
      expect(puts[0]!.Condition, policy).toEqual({
        "ForAllValues:StringEquals": { "events:source": [source] },
        Null: { "events:source": "false" },
      });
    }
    // Only IAM decides: the bus has no resource policy that could let anyone else in.
    expect(resourcesOf(s.json, "AWS::Events::EventBusPolicy")).toEqual([]);
    expect(
      resourceNamed(s.json, "AWS::Events::EventBus", "CairnBus")[1].Properties?.["Policy"],
    ).toBeUndefined();
  });
});

describe("the agent policy follows the agent's code", () => {
  test("every action the agent process needs is granted, and nothing else", () => {
    const agentFiles = reachableFiles([
      "bin/cli/commands/agent.ts",
      ...[...tsFiles("agent")].filter((f) => !f.slice("agent/".length).includes("/")),
    ]);
    const sent = commandsSentBy(agentFiles);
    // `cairn agent --stack NAME` resolves the stack's outputs before it starts the agent, like
    // every command: the stack lookup's commands are the agent's too.
    const main = readFileSync("bin/cli/main.ts", "utf8");
    expect(main.indexOf("resolveConnection(")).toBeGreaterThan(0);
    expect(main.indexOf("resolveConnection(")).toBeLessThan(main.indexOf("runAgent("));
    for (const command of stackLookupCommands()) sent.set(command, new Set(["bin/cli/cairn-api.ts"]));

    const { actions: needed, unknown } = actionsFor(sent.keys());
    expect(unknown, "commands with no known IAM action: add them to test/sdk-commands.ts").toEqual([]);
    if (taggedOnCreate(agentFiles)) needed.add("sqs:TagQueue");
    expect([...granted("CairnAgentsAgentPolicy")].sort()).toEqual([...needed].sort());
  });
});

describe("the client policy follows the CLI's code", () => {
  const STORE_DIR = "functions/adapters/dynamo/";
  let t: TestTable;
  let proxy: RecordingProxy;
  let recorded: Promise<StoreCalls> | undefined;
  /** The CLI's store calls, recorded once for the tests below. */
  const cliStoreCalls = (): Promise<StoreCalls> => (recorded ??= storeCallsOfTheCli(t, proxy));
  beforeAll(async () => {
    t = await freshTable("cdk-agents");
    proxy = await recordingProxy(inject("dynamoEndpoint"));
  });
  afterAll(async () => {
    await proxy.close();
    await t.drop();
  });

  /** Every file the CLI can run, but the agent command (its own policy). */
  function cliFiles(): Set<string> {
    const agent = "bin/cli/commands/agent.ts";
    return reachableFiles(
      ["bin/cairn.js", ...[...tsFiles("bin/cli")].filter((f) => f !== agent)],
      new Set([agent]),
    );
  }

  test("the CLI reaches the table only through the session store, built in cairn-api.ts", () => {
    const files = cliFiles();
    expect(files.has("bin/cli/cairn-api.ts")).toBe(true);
    const dynamoUsers = [...files].filter(
      (f) => !f.startsWith(STORE_DIR) && /from "@aws-sdk\/client-dynamodb"/.test(readFileSync(f, "utf8")),
    );
    expect(dynamoUsers).toEqual(["bin/cli/cairn-api.ts"]);
    const builders = [...files].filter((f) => /new DynamoSessionStore\(/.test(readFileSync(f, "utf8")));
    expect(builders).toEqual(["bin/cli/cairn-api.ts"]);
  });

  test("every action the CLI's commands need is granted, and nothing else", async () => {
    const files = cliFiles();
    // Everything but the store, from the code: the store's commands depend on which of its
    // methods the CLI calls, so those are recorded below, calling every one of them.
    const sent = commandsSentBy([...files].filter((f) => !f.startsWith(STORE_DIR)));
    const { actions: needed, unknown } = actionsFor(sent.keys());
    expect(unknown, "commands with no known IAM action: add them to test/sdk-commands.ts").toEqual([]);
    for (const action of (await cliStoreCalls()).actions) needed.add(action);
    // The execution reads are for the docs' own `aws stepfunctions` commands, not the CLI's code.
    const grantedToCli = new Set([
      ...granted("CairnAgentsClientPolicy"),
      ...granted("CairnAgentsOperatorPolicy"),
    ]);
    for (const action of CLIENT_EXECUTION_ACTIONS) expect(grantedToCli.delete(action), action).toBe(true);
    expect([...grantedToCli].sort()).toEqual([...needed].sort());
  });

  test("each table request the CLI sends is allowed by the policies, checked as IAM checks it: reads by ClientPolicy, writes by OperatorPolicy only", async () => {
    const { byMethod } = await cliStoreCalls();
    const client = templatePolicy(["CairnAgentsClientPolicy"]);
    const operator = templatePolicy(["CairnAgentsClientPolicy", "CairnAgentsOperatorPolicy"]);
    const WRITES = /^(create|update|delete|put)/;
    let checks = 0;
    for (const { method, calls } of byMethod) {
      for (const { operation, input } of calls) {
        for (const c of checksOf(operation, input, GATE_LAYOUT)) {
          checks++;
          const request = {
            operation,
            action: c.action,
            resources: [c.resource],
            conditionValues: c.conditionValues,
            input,
          };
          expect(operator("p", request), `${method}: ${operation}`).toBeUndefined();
          const asClient = client("p", request);
          if (WRITES.test(method) && /Put|Update|Delete/.test(c.action)) {
            expect(asClient, `${method}: ${c.action} needs OperatorPolicy`).toBeDefined();
          } else {
            expect(asClient, `${method}: ${operation}`).toBeUndefined();
          }
        }
      }
    }
    expect(checks).toBeGreaterThan(40);
    // Listing agents reads them through a projection without the signing key.
    const listed = byMethod.find((m) => m.method === "listAgents")!.calls;
    expect(listed.map((c) => c.operation)).toEqual(["Query", "BatchGetItem"]);
  });
});

describe("the kernel log group", () => {
  test("its name is CloudFormation's (a redeploy after destroy cannot collide), retained, a month's retention", () => {
    const [, group] = resourceNamed(s.json, "AWS::Logs::LogGroup", "CairnAgentsKernelLogs");
    expect(group.Properties?.["LogGroupName"]).toBeUndefined();
    expect(group.Properties?.["RetentionInDays"]).toBe(30);
    expect(group.DeletionPolicy).toBe("Retain");
    expect(group.UpdateReplacePolicy).toBe("Retain");
  });
});

describe("outputs", () => {
  test("the agents' and clients' outputs, and one URL per queue", () => {
    const { kernelLogs, agentPolicy, clientPolicy } = ids();
    const outputs = s.json.Outputs ?? {};
    const queueId = (name: string) => {
      const queue = s.stack.cairn.queues.get(name) ?? s.stack.cairn.deadLetterQueues.get(name);
      if (!queue) throw new Error(`no queue ${name}`);
      return logicalId(queue);
    };
    expect(outputs["AgentPolicyArn"]?.Value).toEqual({ Ref: agentPolicy });
    expect(outputs["ClientPolicyArn"]?.Value).toEqual({ Ref: clientPolicy });
    expect(outputs["AgentQueuePrefix"]?.Value).toBe(s.stack.cairn.settings.agentQueuePrefix);
    expect(outputs["AgentQueuePrefix"]?.Value).toMatch(/^Cairn-[0-9a-f]{8}-agent-$/);
    expect(outputs["KernelLogGroupName"]?.Value).toEqual({ Ref: kernelLogs });
    expect(outputs["CoordinatorQueueUrl"]?.Value).toEqual({ Ref: queueId("CoordinatorQueue") });
    expect(outputs["HeartbeatQueueUrl"]?.Value).toEqual({ Ref: queueId("HeartbeatQueue") });
    for (const name of s.stack.cairn.deadLetterQueues.keys()) {
      expect(outputs[`${name}Url`]?.Value, name).toEqual({ Ref: queueId(name) });
    }
    // Five queues, five dead-letter queues (heartbeats have none): each URL its own output.
    expect(
      Object.keys(outputs)
        .filter((k) => k.endsWith("QueueUrl"))
        .sort(),
    ).toEqual([
      "CoordinatorQueueDeadLetterQueueUrl",
      "CoordinatorQueueUrl",
      "DeliveryDeadLetterQueueUrl",
      "DeploymentQueueDeadLetterQueueUrl",
      "DeploymentQueueUrl",
      "HeartbeatQueueUrl",
      "PlacementQueueDeadLetterQueueUrl",
      "PlacementQueueUrl",
      "ReportQueueDeadLetterQueueUrl",
      "ReportQueueUrl",
    ]);
    // No output joins several values into one string.
    for (const [key, output] of Object.entries(outputs)) {
      expect(JSON.stringify(output.Value), key).not.toContain('"Fn::Join":[","');
    }
    expect(outputs["DeadLetterQueueUrls"]).toBeUndefined();
  });

  test("every output the CLI reads exists", () => {
    const keys = [
      ...Object.values(STACK_OUTPUT_KEYS),
      ...Object.values(AGENT_OUTPUT_KEYS),
      KERNEL_LOG_GROUP_OUTPUT,
    ];
    for (const key of keys) expect(s.json.Outputs?.[key], key).toBeDefined();
  });
});

describe("the functions' side of the agent protocol", () => {
  test("every function's environment carries the agent queue prefix and the 90 s liveness window", () => {
    const prefix = s.json.Outputs?.["AgentQueuePrefix"]?.Value;
    for (const f of FUNCTIONS) {
      const [, fn] = resourceNamed(s.json, "AWS::Lambda::Function", `CairnFunctions${f.name}`);
      const vars = (fn.Properties?.["Environment"] as { Variables: Record<string, unknown> }).Variables;
      expect(vars["CAIRN_AGENT_QUEUE_PREFIX"], f.name).toBe(prefix);
      expect(vars["CAIRN_AGENT_TIMEOUT_MS"], f.name).toBe("90000");
      const env = Object.fromEntries(
        Object.entries(vars).map(([k, v]) => [k, typeof v === "string" ? v : `resolved-at-deploy-${k}`]),
      );
      expect(loadConfig(env).agentQueuePrefix).toBe(prefix);
    }
  });

  test("registrations and heartbeats from agents reach the heartbeat queue", () => {
    const heartbeatQueue = logicalId(s.stack.cairn.queues.get("HeartbeatQueue")!);
    const [, rule] = resourceNamed(s.json, "AWS::Events::Rule", "CairnRoutingAgentHeartbeats");
    expect(rule.Properties?.["EventPattern"]).toEqual({
      source: ["cairn.agent"],
      "detail-type": ["Agent Heartbeat", "Agent Registration Requested"],
    });
    expect((rule.Properties?.["Targets"] as { Arn: unknown }[]).map((t) => t.Arn)).toEqual([
      { "Fn::GetAtt": [heartbeatQueue, "Arn"] },
    ]);
  });
});

// ------------------------------------------------------------------------------------ helpers

/** The commands `describeStackOutputs` (the stack lookup of `--stack`) sends. */
function stackLookupCommands(): string[] {
  const text = readFileSync("bin/cli/cairn-api.ts", "utf8");
  const start = text.indexOf("export async function describeStackOutputs");
  expect(start).toBeGreaterThan(0);
  const body = text.slice(start, text.indexOf("\n}\n", start));
  return [...body.matchAll(/\bnew\s+([A-Z][A-Za-z]*Command)\s*\(/g)].map((m) => m[1]!);
}

interface RecordingProxy {
  readonly endpoint: string;
  /** Each request: its operation (X-Amz-Target) and its JSON input. */
  readonly calls: { operation: string; input: Record<string, unknown> }[];
  close(): Promise<void>;
}

/** A pass-through HTTP proxy in front of DynamoDB Local that records what the client sent. */
async function recordingProxy(target: string): Promise<RecordingProxy> {
  const upstream = new URL(target);
  const calls: RecordingProxy["calls"] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const operation = String(req.headers["x-amz-target"] ?? "").replace(/^DynamoDB_\d+\./, "");
      calls.push({ operation, input: JSON.parse(body.toString("utf8") || "{}") as Record<string, unknown> });
      const headers: IncomingHttpHeaders = { ...req.headers, host: upstream.host };
      const forward = httpRequest(
        { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      forward.on("error", (error) => {
        res.writeHead(502);
        res.end(String(error));
      });
      forward.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The store methods the CLI's API exposes (bin/cli/cairn-api.ts's SessionReader, RetryAdmin and AgentReader). */
function storeMethodsOfTheCli(): string[] {
  const text = readFileSync("bin/cli/cairn-api.ts", "utf8");
  const names: string[] = [];
  for (const type of ["SessionReader", "RetryAdmin", "AgentReader"]) {
    const pick = new RegExp(`export type ${type} = Pick<\\s*[\\w\\s&]+,([^>]*)>`).exec(text);
    expect(pick, type).not.toBeNull();
    names.push(...[...pick![1]!.matchAll(/"(\w+)"/g)].map((m) => m[1]!));
  }
  expect(text).toMatch(/readonly store: SessionReader;/);
  expect(text).toMatch(/readonly admin: RetryAdmin;/);
  expect(text).toMatch(/readonly agents: AgentReader;/);
  return names;
}

function retryPolicy(name: string, retryLimit: number): RetryPolicy {
  return parseRetryPolicy({
    apiVersion: "cairn.dev/v1",
    kind: "RetryPolicy",
    metadata: { name },
    spec: { retryLimit, rules: [{ action: "Retry", onConditions: ["Preempted"] }] },
  });
}

/**
 * Calls every store method the CLI's API exposes, through openCairnApi itself, against DynamoDB
 * Local behind the recording proxy, with data to find (so reads go past their index queries), and
 * returns the IAM actions of what was sent. Transactions are authorised item by item.
 */
interface StoreCalls {
  /** The IAM actions of every request (a transaction's items each as its own action). */
  readonly actions: Set<string>;
  /** The requests of each store method the CLI calls, in the order called. */
  readonly byMethod: { method: string; calls: RecordingProxy["calls"] }[];
}

async function storeCallsOfTheCli(t: TestTable, proxy: RecordingProxy): Promise<StoreCalls> {
  const seed = t.store();
  const { session } = newSession("cli-session");
  await seed.createSession(newSession("cli-session"));
  await seed.registerAgent({
    agentId: "agent-1",
    incarnation: "i-1",
    capacity: { cpu: 2, memoryMiB: 2048 },
    labels: {},
    signingKey: "k".repeat(43),
    nowMs: T0,
  });
  proxy.calls.length = 0;

  const api = openCairnApi({
    where: "the test's DynamoDB Local",
    hint: "",
    region: "local",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
    endpoints: { dynamoDb: proxy.endpoint },
    tableName: t.tableName,
    eventBusName: "unused",
    logs: { readable: false, why: "not read here" },
  });
  const called = new Set<string>();
  const byMethod: StoreCalls["byMethod"] = [];
  const spy = <T extends object>(target: T, record = true): T =>
    new Proxy(target, {
      get(o, key, receiver) {
        const value: unknown = Reflect.get(o, key, receiver);
        if (typeof value !== "function") return value;
        if (record) called.add(String(key));
        return async (...args: unknown[]) => {
          const from = proxy.calls.length;
          try {
            return await (value as (...args: unknown[]) => Promise<unknown>).apply(o, args);
          } finally {
            byMethod.push({ method: String(key), calls: proxy.calls.slice(from) });
          }
        };
      },
    });
  const store = spy(api.store);
  const admin = spy(api.admin);
  const agents = spy(api.agents);
  try {
    expect(await store.getSession(session.id)).toBeDefined();
    expect(await store.getSessions([session.id])).toHaveLength(1);
    await store.getJob("cli-job");
    await store.listHistory(session.id);
    await store.listRuns(session.id);
    expect((await store.listSessionsByStatus(session.status)).items).toHaveLength(1);
    expect((await store.listRecentSessions()).items).toHaveLength(1);

    await admin.createRetryPolicy(retryPolicy("infra", 2), T0);
    await admin.createRetryPolicy(retryPolicy("spare", 1), T0);
    await admin.updateRetryPolicy(retryPolicy("infra", 3), T0 + 1);
    expect(await admin.getRetryPolicy("infra")).toBeDefined();
    expect(await admin.listRetryPolicies()).toHaveLength(2);
    await admin.createQueue({ name: "gpu", priority: 5, retryPolicies: ["infra"] }, T0);
    await admin.updateQueue({ name: "gpu", priority: 6, retryPolicies: ["spare"] }, T0 + 1);
    expect(await admin.getQueue("gpu")).toBeDefined();
    expect(await admin.listQueues()).toHaveLength(1);
    await admin.deleteQueue("gpu");
    await admin.deleteRetryPolicy("infra");
    await admin.putRetryConfig(RETRY_CONFIG_DEFAULTS, T0);
    expect(await admin.getRetryConfig()).toBeDefined();
    // `cairn dashboard`'s reads: agents and their allocations, and the status census.
    const [listed, ...more] = await agents.listAgents();
    expect(more).toEqual([]);
    expect(listed).toMatchObject({ id: "agent-1", incarnation: "i-1" });
    expect(listed).not.toHaveProperty("signingKey");
    expect(await agents.allocationsOnAgent("agent-1")).toEqual([]);
    expect(await api.census.countSessions(session.status)).toEqual({ count: 1, exact: true });
    // Templates, drafts, rejections and deployments, which the CLI reads (and an operator writes).
    const templates = spy(api.templates!, false);
    const parsed = parseJobTemplate({ name: "gpu", defaults: {}, constraints: {} });
    if (!parsed.success) throw new Error(JSON.stringify(parsed.issues));
    const template = parsed.data;
    await templates.createTemplate(template, T0);
    await templates.updateTemplate(template, T0 + 1);
    expect(await templates.getTemplate("gpu")).toBeDefined();
    expect((await templates.listTemplates()).length).toBeGreaterThan(0);
    await templates.deleteTemplate("gpu");
    const reads = spy(api.store, false);
    await reads.getDraft!("cli-job");
    await reads.listRejections!("cli-job");
    const deployments = spy(api.deployments!, false);
    await deployments.getDeployment("web");
    await deployments.listDeployments();
    await deployments.deploymentHistory("web");
  } finally {
    api.close();
  }
  expect([...called].sort()).toEqual(storeMethodsOfTheCli().sort());

  const actions = new Set<string>();
  const itemActions: Record<string, string> = {
    Put: "dynamodb:PutItem",
    Update: "dynamodb:UpdateItem",
    Delete: "dynamodb:DeleteItem",
    ConditionCheck: "dynamodb:ConditionCheckItem",
  };
  for (const { operation, input } of proxy.calls) {
    if (operation !== "TransactWriteItems") {
      actions.add(`dynamodb:${operation}`);
      continue;
    }
    for (const item of input["TransactItems"] as Record<string, unknown>[]) {
      for (const kind of Object.keys(item))
        actions.add(itemActions[kind] ?? `unknown transaction item ${kind}`);
    }
  }
  return { actions, byMethod };
}

/** The table as the gate sees it, under the ARNs templatePolicy gives the template's table. */
const LOCAL_TABLE_ARN = "arn:aws:dynamodb:local:000000000000:table/cli-table";
const GATE_LAYOUT: TableLayout = {
  tableArn: () => LOCAL_TABLE_ARN,
  partitionKeyOf: (_table, index) =>
    index === undefined
      ? TABLE_SCHEMA.partitionKey.name
      : TABLE_SCHEMA.globalSecondaryIndexes.find((g) => g.indexName === index)?.partitionKey.name,
};

/**
 * The DynamoDB statements of the synthesized managed policies, as the embedded runtime's policy
 * engine evaluates them (principal "p"): the template's conditions as they are, its table and
 * index ARNs as LOCAL_TABLE_ARN's.
 */
function templatePolicy(policies: readonly string[]): AuthorizeHook {
  const { table } = ids();
  const tableArn = JSON.stringify({ "Fn::GetAtt": [table, "Arn"] });
  const arnOf = (resource: unknown): string => {
    const text = JSON.stringify(resource);
    if (text === tableArn) return LOCAL_TABLE_ARN;
    const index = /^\{"Fn::Join":\["",\[(.*),"\/index\/(\w+)"\]\]\}$/.exec(text);
    if (index?.[1] === tableArn) return `${LOCAL_TABLE_ARN}/index/${index[2]}`;
    return "arn:aws:other";
  };
  const statements: PolicyStatement[] = policies.flatMap((policy) =>
    policyStatements(policy)
      .filter((st) => list(st.Action).some((a) => a.startsWith("dynamodb:")))
      .map((st) => ({
        principals: ["p"],
        actions: list(st.Action),
        resources: list(st.Resource).map(arnOf),
        ...(st.Condition === undefined ? {} : { condition: st.Condition as IamConditionBlock }),
      })),
  );
  return compilePolicy(statements);
}
