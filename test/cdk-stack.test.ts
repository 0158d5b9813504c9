/**
 * The synthesized stack, checked as carefully as the code: cdk-nag's AWS Solutions rules with
 * nothing unacknowledged, dead-letter queues and retry policies on every rule target, timeouts on
 * every callback state of the deployed definition, Node 24 with tracing everywhere, state machine
 * logging ALL with X-Ray, no wildcard actions and least-privilege grants, substitutions that
 * resolve, and function bundles that load.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { CfnResource as CdkCfnResource, Validations } from "aws-cdk-lib";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { TABLE_SCHEMA } from "../functions/topology/table-schema.ts";
import { loadConfig } from "../functions/config.ts";
import { MetricName, METRICS_SERVICE } from "../functions/topology/metrics.ts";
import {
  FUNCTIONS,
  QUEUES,
  STATE_MACHINES,
  StateMachineName,
  stateMachinesOf,
  type FunctionName,
} from "../functions/topology/index.ts";
import { StackOutput } from "../lib/cairn-stack.ts";
import {
  LAMBDA_XRAY_ACTIONS,
  NAG_ACKNOWLEDGEMENTS,
  NAG_WILDCARD_RESOURCES,
  STATE_MACHINE_WILDCARD_ACTIONS,
  wildcardFindingId,
} from "../lib/nag-acknowledgements.ts";
import {
  AGENT_QUEUE_OPEN_ACTIONS,
  AGENT_QUEUE_SEND_ACTIONS,
  BUS_PUT_ACTIONS,
  CALLBACK_ACTIONS,
  DESCRIBE_ACTIONS,
  EXECUTIONS_WILDCARD,
  executionsArn,
  START_ACTIONS,
  TABLE_ITEM_ACTIONS,
  TABLE_QUERY_ACTIONS,
  type Use,
} from "../lib/permissions.ts";
import { stateMachineConstructId } from "../lib/state-machine.ts";
import {
  nameHead,
  resourceNamed,
  resourcesOf,
  synthesize,
  type CfnResource,
  type Synthesized,
} from "./cdk-synth.ts";

let s: Synthesized;
beforeAll(() => {
  s = synthesize();
});
afterAll(() => s.cleanup());

interface Statement {
  readonly Effect: string;
  readonly Action: string | string[];
  readonly Resource?: unknown;
  readonly Condition?: Record<string, Record<string, unknown>>;
}

const list = <T>(x: T | T[]): T[] => (Array.isArray(x) ? x : [x]);
const props = (r: CfnResource) => r.Properties ?? {};

/** Every IAM statement in the template: managed/inline policies, roles, queue policies. */
function allStatements(): { where: string; statement: Statement }[] {
  const out: { where: string; statement: Statement }[] = [];
  for (const [id, r] of Object.entries(s.json.Resources)) {
    const docs: unknown[] = [];
    if (
      r.Type === "AWS::IAM::Policy" ||
      r.Type === "AWS::IAM::ManagedPolicy" ||
      r.Type === "AWS::SQS::QueuePolicy"
    )
      docs.push(props(r)["PolicyDocument"]);
    if (r.Type === "AWS::IAM::Role") {
      docs.push(props(r)["AssumeRolePolicyDocument"]);
      for (const p of (props(r)["Policies"] as { PolicyDocument: unknown }[] | undefined) ?? [])
        docs.push(p.PolicyDocument);
    }
    for (const doc of docs) {
      for (const statement of (doc as { Statement: Statement[] }).Statement)
        out.push({ where: id, statement });
    }
  }
  return out;
}

function functionLogicalId(name: FunctionName): string {
  return resourceNamed(s.json, "AWS::Lambda::Function", `CairnFunctions${name}`)[0];
}

function logicalIdOf(construct: { readonly node: { readonly defaultChild?: unknown } }): string {
  return s.stack.getLogicalId(construct.node.defaultChild as CdkCfnResource);
}

/** The statements of a role's policies, by the role's logical id prefix. */
function roleStatements(rolePrefix: string): Statement[] {
  const [roleId] = resourceNamed(s.json, "AWS::IAM::Role", rolePrefix);
  return resourcesOf(s.json, "AWS::IAM::Policy")
    .filter(([, p]) => JSON.stringify(props(p)["Roles"]).includes(`"${roleId}"`))
    .flatMap(([, p]) => (props(p)["PolicyDocument"] as { Statement: Statement[] }).Statement);
}

function deployedDefinition(name: StateMachineName = StateMachineName.SessionLifecycle): {
  text: string;
  substitutions: Record<string, unknown>;
} {
  const machine = s.json.Resources[logicalIdOf(s.stack.cairn.stateMachines.get(name)!)]!;
  return {
    text: props(machine)["DefinitionString"] as string,
    substitutions: props(machine)["DefinitionSubstitutions"] as Record<string, unknown>,
  };
}

describe("cdk-nag AwsSolutionsChecks", () => {
  test("the stack has no unacknowledged finding, error or warning", () => {
    expect(
      s.violations.map(
        (v) => `${v.severity} ${v.ruleName}: ${v.violatingConstructs.map((c) => c.constructPath).join(", ")}`,
      ),
    ).toEqual([]);
  });

  test("each acknowledgement is a documented one, with its specific reason", () => {
    // Recorded as { "<prefix>::<rule id>": reason } on the acknowledging construct.
    const acknowledged = s.stack.node.findAll().flatMap((c) =>
      c.node.metadata
        .filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
        .flatMap((m) =>
          Object.entries(m.data as Record<string, string>).map(([key, reason]) => ({
            path: c.node.path,
            id: key.replace(/^.*::(?=AwsSolutions-)/, ""),
            reason,
          })),
        ),
    );
    const { agentQueuePrefix } = s.stack.cairn.settings;
    const queues = `AwsSolutions-IAM5[Resource::arn:aws:sqs:eu-west-1:123456789012:${agentQueuePrefix}*]`;
    const [logGroupId] = resourceNamed(s.json, "AWS::Logs::LogGroup", "CairnAgentsKernelLogs");
    const streams = `AwsSolutions-IAM5[Resource::arn:aws:logs:eu-west-1:123456789012:log-group:<${logGroupId}>:*]`;
    const executions = wildcardFindingId(s.stack, executionsArn(s.stack.cairn.stateMachine));
    // Clients read the executions of all three state machines (docs/deploy.md's commands).
    const clientExecutions = [...s.stack.cairn.stateMachines.values()].map((m) =>
      wildcardFindingId(s.stack, executionsArn(m)),
    );
    const allowed = [
      ...Object.values(NAG_ACKNOWLEDGEMENTS),
      { id: queues, reason: NAG_WILDCARD_RESOURCES.functionAgentQueues.reason },
      { id: queues, reason: NAG_WILDCARD_RESOURCES.agentQueues.reason },
      { id: streams, reason: NAG_WILDCARD_RESOURCES.kernelLogStreams.reason },
      { id: streams, reason: NAG_WILDCARD_RESOURCES.kernelLogReads.reason },
      { id: executions, reason: EXECUTIONS_WILDCARD.reason },
      ...clientExecutions.map((id) => ({ id, reason: NAG_WILDCARD_RESOURCES.clientExecutionReads.reason })),
    ];
    for (const a of acknowledged) {
      expect(
        allowed.some((x) => x.id === a.id && x.reason === a.reason),
        `${a.path} ${a.id}`,
      ).toBe(true);
      expect(a.reason.length).toBeGreaterThan(100);
    }
    const agentQueueUsers = FUNCTIONS.filter((f) => f.uses.some((u) => u.startsWith("agents:")));
    expect(agentQueueUsers.map((f) => f.name).sort()).toEqual(["Coordinator", "EnterStage"]);
    expect(acknowledged.map((a) => `${a.path} ${a.id}`).sort()).toEqual(
      [
        ...FUNCTIONS.map((f) => `Cairn/Cairn/Functions/${f.name}Role AwsSolutions-IAM5[Resource::*]`),
        ...agentQueueUsers.map((f) => `Cairn/Cairn/Functions/${f.name}Role ${queues}`),
        `Cairn/Cairn/Agents/AgentPolicy ${queues}`,
        `Cairn/Cairn/Agents/AgentPolicy ${streams}`,
        `Cairn/Cairn/Agents/ClientPolicy ${streams}`,
        ...clientExecutions.map((id) => `Cairn/Cairn/Agents/ClientPolicy ${id}`),
        `Cairn/Cairn/Functions/CoordinatorRole ${executions}`,
        ...STATE_MACHINES.map(
          (m) => `Cairn/Cairn/${stateMachineConstructId(m)}/Role AwsSolutions-IAM5[Resource::*]`,
        ),
        // Errors only, by default: stateMachineLogLevel.
        ...STATE_MACHINES.map((m) => `Cairn/Cairn/${stateMachineConstructId(m)}/${m.name} AwsSolutions-SF1`),
        "Cairn/Cairn/Routing/DeliveryDeadLetterQueue AwsSolutions-SQS3",
        "Cairn/Cairn/Routing/HeartbeatQueue AwsSolutions-SQS3",
      ].sort(),
    );
  });

  test("a resource ending in a wildcard carries only the actions its acknowledgement names", () => {
    // Acknowledgements by the logical ids of the resources under the acknowledging construct.
    const acknowledgements = s.stack.node.findAll().flatMap((c) =>
      c.node.metadata
        .filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
        .flatMap((m) => Object.entries(m.data as Record<string, string>))
        .map(([key, reason]) => ({
          key,
          reason,
          logicalIds: new Set(
            c.node
              .findAll()
              .filter((r) => CdkCfnResource.isCfnResource(r))
              .map((r) => s.stack.getLogicalId(r)),
          ),
        })),
    );
    const actionsNamedIn = (reason: string) => new Set(reason.match(/\b[a-z]+:[A-Z][A-Za-z]+\b/g) ?? []);
    const checked: string[] = [];
    for (const { where, statement } of allStatements()) {
      // Trust policies name a principal, not a resource.
      if (statement.Effect !== "Allow" || statement.Resource === undefined) continue;
      for (const resource of list(statement.Resource)) {
        if (resource === "*" || !JSON.stringify(resource).includes("*")) continue;
        // The template's value is already resolved; the id is the one cdk-nag raises for it.
        const id = wildcardFindingId(s.stack, resource as string);
        const own = acknowledgements.filter((a) => a.key.endsWith(`::${id}`) && a.logicalIds.has(where));
        expect(own, `${where}: ${id} acknowledged on its own policy or role`).toHaveLength(1);
        const named = actionsNamedIn(own[0]!.reason);
        for (const action of list(statement.Action)) {
          expect(named.has(action), `${where}: ${action} on ${id} is named in the reason`).toBe(true);
        }
        checked.push(where.replace(/[0-9A-F]{8}$/, ""));
      }
    }
    // The agent queues (two functions and the agent policy) and the kernel log streams (agents
    // write, clients read).
    expect(checked.sort()).toEqual(
      [
        "CairnAgentsAgentPolicy",
        "CairnAgentsAgentPolicy",
        "CairnAgentsClientPolicy",
        // The executions of the three state machines, which clients may read.
        "CairnAgentsClientPolicy",
        "CairnAgentsClientPolicy",
        "CairnAgentsClientPolicy",
        "CairnFunctionsCoordinatorRoleDefaultPolicy",
        // The executions the sweep's repair reads.
        "CairnFunctionsCoordinatorRoleDefaultPolicy",
        "CairnFunctionsEnterStageRoleDefaultPolicy",
      ].sort(),
    );
  });

  test("Resource '*' carries only the X-Ray and log-delivery actions the acknowledgements name", () => {
    for (const f of FUNCTIONS) {
      const wild = roleStatements(`CairnFunctions${f.name}Role`).filter((st) =>
        list(st.Resource).includes("*"),
      );
      expect(wild.flatMap((st) => list(st.Action)).sort(), f.name).toEqual([...LAMBDA_XRAY_ACTIONS].sort());
    }
    for (const m of STATE_MACHINES) {
      const machineWild = roleStatements(`Cairn${stateMachineConstructId(m)}Role`).filter((st) =>
        list(st.Resource).includes("*"),
      );
      expect(machineWild.flatMap((st) => list(st.Action)).sort(), m.name).toEqual(
        [...STATE_MACHINE_WILDCARD_ACTIONS].sort(),
      );
    }
  });
});

describe("IAM: least privilege", () => {
  test("no statement anywhere grants a wildcard action", () => {
    const statements = allStatements();
    const wildcards = statements
      .filter(({ statement }) => statement.Effect === "Allow")
      .flatMap(({ where, statement }) =>
        list(statement.Action)
          .filter((a) => a.includes("*"))
          .map((a) => `${where}: ${a}`),
      );
    expect(wildcards).toEqual([]);
    // The one wildcard that remains denies: every queue refuses any request made without TLS.
    for (const { where, statement } of statements.filter(({ statement }) => statement.Effect === "Deny")) {
      expect(statement, where).toMatchObject({
        Action: "sqs:*",
        Condition: { Bool: { "aws:SecureTransport": "false" } },
      });
    }
  });

  test.each(FUNCTIONS.map((f) => [f.name, f] as const))(
    "%s holds exactly what its topology uses need",
    (name, decl) => {
      const byUse: Record<Use, readonly string[]> = {
        table: [...TABLE_ITEM_ACTIONS, ...TABLE_QUERY_ACTIONS],
        "bus:put": BUS_PUT_ACTIONS,
        "statemachine:start": START_ACTIONS,
        "statemachine:callback": CALLBACK_ACTIONS,
        "statemachine:describe": DESCRIBE_ACTIONS,
        "agents:open": AGENT_QUEUE_OPEN_ACTIONS,
        "agents:send": AGENT_QUEUE_SEND_ACTIONS,
      };
      const consumesQueue = QUEUES.some((q) => q.consumer === name);
      const expected = new Set([
        "logs:CreateLogStream",
        "logs:PutLogEvents",
        ...LAMBDA_XRAY_ACTIONS,
        ...decl.uses.flatMap((u) => byUse[u]),
        ...(consumesQueue
          ? [
              "sqs:ReceiveMessage",
              "sqs:ChangeMessageVisibility",
              "sqs:GetQueueUrl",
              "sqs:DeleteMessage",
              "sqs:GetQueueAttributes",
            ]
          : []),
      ]);
      const granted = new Set(roleStatements(`CairnFunctions${name}Role`).flatMap((st) => list(st.Action)));
      expect([...granted].sort()).toEqual([...expected].sort());
    },
  );

  test("table actions name the table and its declared indexes; events, states and sqs actions name the bus, the function's state machines and the agent queues", () => {
    const [tableId] = resourceNamed(s.json, "AWS::DynamoDB::Table", "CairnTable");
    const [busId] = resourceNamed(s.json, "AWS::Events::EventBus", "CairnBus");
    const machine = (name: StateMachineName) => s.stack.cairn.stateMachines.get(name)!;
    const tableArn = { "Fn::GetAtt": [tableId, "Arn"] };
    for (const f of FUNCTIONS) {
      for (const st of roleStatements(`CairnFunctions${f.name}Role`)) {
        const actions = list(st.Action);
        if (actions.includes("dynamodb:Query")) {
          expect(st.Resource).toEqual([
            tableArn,
            ...TABLE_SCHEMA.globalSecondaryIndexes.map((g) => ({
              "Fn::Join": ["", [tableArn, `/index/${g.indexName}`]],
            })),
          ]);
        } else if (actions.some((a) => a.startsWith("dynamodb:"))) {
          expect(st.Resource).toEqual(tableArn);
        } else if (actions.some((a) => a.startsWith("events:"))) {
          expect(st.Resource).toEqual({ "Fn::GetAtt": [busId, "Arn"] });
        } else if (actions.includes("states:DescribeExecution")) {
          // Their executions: `execution:<the state machine's name>:*`, named off its ARN.
          expect(list(st.Resource), f.name).toEqual(
            stateMachinesOf(f).map((m): unknown => s.stack.resolve(executionsArn(machine(m)))),
          );
          for (const m of stateMachinesOf(f))
            expect(JSON.stringify(st.Resource)).toContain(`{"Ref":"${logicalIdOf(machine(m))}"}`);
        } else if (actions.some((a) => a.startsWith("states:"))) {
          // The machines of its uses only. A function a definition names (EnterStage) has the
          // machine by its fixed name: a Ref would make a dependency cycle (definition → function
          // → its policy → state machine).
          expect(list(st.Resource), f.name).toEqual(
            stateMachinesOf(f).map((m): unknown =>
              Object.values(STATE_MACHINES.find((d) => d.name === m)!.substitutions).includes(f.name)
                ? s.stack.resolve(s.stack.cairn.stateMachineArnsByName.get(m))
                : { Ref: logicalIdOf(machine(m)) },
            ),
          );
        } else if (actions.some((a) => a.startsWith("sqs:"))) {
          // The functions' own queue (the coordinator's event source) by ARN, or the agents' by prefix.
          const agentQueues = `arn:aws:sqs:eu-west-1:123456789012:${s.stack.cairn.settings.agentQueuePrefix}*`;
          const resources = list(st.Resource);
          if (actions.includes("sqs:ReceiveMessage")) {
            expect(resources.every((r) => JSON.stringify(r).includes('"Fn::GetAtt"'))).toBe(true);
          } else expect(st.Resource).toEqual(agentQueues);
        }
      }
    }
  });

  test.each([
    ["SessionLifecycle", "EnterStage"],
    ["DeploymentLifecycle", "EnterFamilyStage"],
    ["RouteLifecycle", "EnterFamilyStage"],
  ] as const)("the %s state machine may invoke %s and no other function", (name, fn) => {
    const decl = STATE_MACHINES.find((m) => m.name === name)!;
    const invoke = roleStatements(`Cairn${stateMachineConstructId(decl)}Role`).filter((st) =>
      list(st.Action).some((a) => a.startsWith("lambda:")),
    );
    expect(invoke).toEqual([
      {
        Effect: "Allow",
        Action: "lambda:InvokeFunction",
        Resource: { "Fn::GetAtt": [functionLogicalId(fn), "Arn"] },
      },
    ]);
  });
});

describe("EventBridge rules and queues", () => {
  test("every rule target has a retry policy, and a dead-letter queue unless it carries heartbeats", () => {
    const rules = resourcesOf(s.json, "AWS::Events::Rule");
    expect(rules.length).toBeGreaterThan(0);
    const heartbeatQueue = logicalIdOf(s.stack.cairn.queues.get("HeartbeatQueue")!);
    for (const [id, rule] of rules) {
      for (const target of props(rule)["Targets"] as Record<string, unknown>[]) {
        expect(target, id).toMatchObject({
          RetryPolicy: {
            MaximumRetryAttempts: expect.any(Number) as unknown,
            MaximumEventAgeInSeconds: expect.any(Number) as unknown,
          },
        });
        if (JSON.stringify(target["Arn"]).includes(`"${heartbeatQueue}"`)) {
          // A heartbeat EventBridge cannot deliver within the agent timeout is dropped, not
          // dead-lettered: a newer one follows, and a dead letter would raise the DLQ alarm.
          expect(target["DeadLetterConfig"], id).toBeUndefined();
          expect((target["RetryPolicy"] as Record<string, unknown>)["MaximumEventAgeInSeconds"], id).toBe(90);
        } else {
          expect(target, id).toMatchObject({ DeadLetterConfig: { Arn: expect.anything() as unknown } });
        }
      }
    }
  });

  test("every queue is encrypted, refuses requests without TLS; the work queue keeps a week and has a redrive DLQ; heartbeats have none", () => {
    const queues = resourcesOf(s.json, "AWS::SQS::Queue");
    const policies = resourcesOf(s.json, "AWS::SQS::QueuePolicy");
    for (const [id, q] of queues) {
      expect(props(q)["SqsManagedSseEnabled"], id).toBe(true);
      const policy = policies.find(([, p]) => JSON.stringify(props(p)["Queues"]).includes(`"${id}"`));
      expect(policy, `${id} has a queue policy`).toBeDefined();
      expect((props(policy![1])["PolicyDocument"] as { Statement: Statement[] }).Statement).toContainEqual(
        expect.objectContaining({ Effect: "Deny", Condition: { Bool: { "aws:SecureTransport": "false" } } }),
      );
    }
    const [, work] = resourceNamed(s.json, "AWS::SQS::Queue", "CairnRoutingCoordinatorQueue1");
    expect(props(work)["RedrivePolicy"]).toMatchObject({ maxReceiveCount: 5 });
    // A week of consumer outage before SQS deletes a message (expiry never dead-letters), and
    // shorter than the DLQ's 14 days: a standard queue's message keeps its enqueue time there.
    expect(props(work)["MessageRetentionPeriod"]).toBe(7 * 86_400);
    const [, workDlq] = resourceNamed(
      s.json,
      "AWS::SQS::Queue",
      "CairnRoutingCoordinatorQueueDeadLetterQueue",
    );
    expect(props(workDlq)["MessageRetentionPeriod"]).toBe(14 * 86_400);
    // Heartbeats and registrations are disposable: no DLQ, kept only as long as they mean something.
    const [, heartbeats] = resourceNamed(s.json, "AWS::SQS::Queue", "CairnRoutingHeartbeatQueue");
    expect(props(heartbeats)["RedrivePolicy"]).toBeUndefined();
    expect(props(heartbeats)["MessageRetentionPeriod"]).toBe(90);
    expect(queues.map(([id]) => id.replace(/[0-9A-F]{8}$/, "")).sort()).toEqual(
      [
        "CairnRoutingCoordinatorQueue",
        "CairnRoutingCoordinatorQueueDeadLetterQueue",
        "CairnRoutingReportQueue",
        "CairnRoutingReportQueueDeadLetterQueue",
        "CairnRoutingPlacementQueue",
        "CairnRoutingPlacementQueueDeadLetterQueue",
        "CairnRoutingDeploymentQueue",
        "CairnRoutingDeploymentQueueDeadLetterQueue",
        "CairnRoutingDeliveryDeadLetterQueue",
        "CairnRoutingHeartbeatQueue",
      ].sort(),
    );
    expect(props(work)["VisibilityTimeout"]).toBe(
      FUNCTIONS.find((f) => f.name === "Coordinator")!.timeoutSeconds + 30,
    );
  });

  test("a failed message is back soon: every queue's visibility timeout is its consumer's timeout and 30 s (not six times it); placement and deployments give up on a poison message after 3 receives", () => {
    for (const q of QUEUES) {
      const queue = props(s.json.Resources[logicalIdOf(s.stack.cairn.queues.get(q.name)!)]!);
      const timeout = FUNCTIONS.find((f) => f.name === q.consumer)!.timeoutSeconds;
      // SQS event sources need at least the function's timeout; more only delays a failed message.
      expect(queue["VisibilityTimeout"], q.name).toBe(timeout + 30);
      expect(queue["FifoQueue"], `${q.name} is a standard queue`).toBeUndefined();
    }
    const redrive = (name: string) =>
      props(s.json.Resources[logicalIdOf(s.stack.cairn.queues.get(name)!)]!)["RedrivePolicy"];
    expect(redrive("PlacementQueue")).toMatchObject({ maxReceiveCount: 3 });
    expect(redrive("DeploymentQueue")).toMatchObject({ maxReceiveCount: 3 });
    expect(redrive("ReportQueue")).toMatchObject({ maxReceiveCount: 5 });
  });

  test("the coordinator reads its queue in batches and reports partial failures", () => {
    s.template.hasResourceProperties("AWS::Lambda::EventSourceMapping", {
      FunctionName: { Ref: functionLogicalId("Coordinator") },
      FunctionResponseTypes: ["ReportBatchItemFailures"],
    });
  });
});

describe("the state machines", () => {
  test.each(STATE_MACHINES.map((m) => [m.name, m] as const))(
    "%s: Standard, logging errors to its own CloudWatch log group, X-Ray tracing on",
    (_, decl) => {
      const id = stateMachineConstructId(decl);
      const machine = s.json.Resources[logicalIdOf(s.stack.cairn.stateMachines.get(decl.name)!)]!;
      expect(props(machine)).toMatchObject({
        StateMachineType: "STANDARD",
        LoggingConfiguration: {
          Level: "ERROR",
          Destinations: [
            {
              CloudWatchLogsLogGroup: {
                LogGroupArn: {
                  "Fn::GetAtt": [resourceNamed(s.json, "AWS::Logs::LogGroup", `Cairn${id}Logs`)[0], "Arn"],
                },
              },
            },
          ],
        },
        TracingConfiguration: { Enabled: true },
      });
      // Ends with the stack's unique id (test/cdk-redeploy.test.ts), so a Join.
      const [, logGroup] = resourceNamed(s.json, "AWS::Logs::LogGroup", `Cairn${id}Logs`);
      expect(props(logGroup)["LogGroupName"]).toMatchObject({
        "Fn::Join": ["", expect.arrayContaining([expect.stringMatching(/^\/aws\/vendedlogs\/states\//)])],
      });
    },
  );

  test("every callback state of the session lifecycle has a timeout (the families' wait without timers: the seed gives them no expiry)", () => {
    const states = (
      JSON.parse(deployedDefinition().text) as { States: Record<string, Record<string, unknown>> }
    ).States;
    const callbacks = Object.entries(states).filter(([, st]) =>
      String(st["Resource"]).endsWith(".waitForTaskToken"),
    );
    expect(callbacks.length).toBeGreaterThan(0);
    for (const [name, st] of callbacks) {
      expect(
        st["TimeoutSeconds"] !== undefined || st["TimeoutSecondsPath"] !== undefined,
        `${name} has a timeout`,
      ).toBe(true);
    }
  });

  test.each(STATE_MACHINES.map((m) => [m.name] as const))(
    "%s: every ${…} placeholder resolves to a function's ARN, and the substituted definition passes asl-validator",
    (name) => {
      const { text, substitutions } = deployedDefinition(name);
      const used = new Set([...text.matchAll(/\$\{([A-Za-z0-9_]+)\}/g)].map((m) => m[1]!));
      expect(used.size).toBeGreaterThan(0);
      expect(new Set(Object.keys(substitutions))).toEqual(used);
      const functionIds = new Set(resourcesOf(s.json, "AWS::Lambda::Function").map(([id]) => id));
      const fakeArns: Record<string, string> = {};
      for (const [key, value] of Object.entries(substitutions)) {
        const [id, attribute] = (value as { "Fn::GetAtt": [string, string] })["Fn::GetAtt"];
        expect(functionIds.has(id) && attribute === "Arn", `${key} → ${JSON.stringify(value)}`).toBe(true);
        fakeArns[key] = `arn:aws:lambda:eu-west-1:123456789012:function:${id}`;
      }
      const substituted = text.replace(/\$\{([A-Za-z0-9_]+)\}/g, (_, key: string) => fakeArns[key]!);
      const out = execFileSync(
        join("node_modules", ".bin", "asl-validator"),
        ["--json-definition", substituted],
        {
          encoding: "utf8",
        },
      );
      expect(out).toContain("is valid");
    },
  );
});

describe("functions", () => {
  test("every function runs nodejs24.x on arm64 with active tracing and its own log group", () => {
    const fns = resourcesOf(s.json, "AWS::Lambda::Function");
    expect(fns).toHaveLength(FUNCTIONS.length);
    for (const [id, fn] of fns) {
      expect(props(fn), id).toMatchObject({
        Runtime: "nodejs24.x",
        Architectures: ["arm64"],
        TracingConfig: { Mode: "Active" },
        LoggingConfig: { LogGroup: { Ref: expect.stringMatching(/Logs/) as unknown } },
      });
    }
  });

  test("each function's environment satisfies loadConfig, and CAIRN_SHARDS matches the Shards output", () => {
    for (const f of FUNCTIONS) {
      const [, fn] = resourceNamed(s.json, "AWS::Lambda::Function", `CairnFunctions${f.name}`);
      const vars = (props(fn)["Environment"] as { Variables: Record<string, unknown> }).Variables;
      const env = Object.fromEntries(
        Object.entries(vars).map(([k, v]) => [k, typeof v === "string" ? v : `resolved-at-deploy-${k}`]),
      );
      const config = loadConfig(env);
      expect(config.shards).toBe(Number(s.json.Outputs?.[StackOutput.Shards]?.Value));
      // Ended sessions, runs, jobs and lost agents are kept 90 days by default.
      expect(vars["CAIRN_RETENTION_DAYS"]).toBe("90");
      expect(vars["POWERTOOLS_METRICS_NAMESPACE"]).toBe("Cairn/Cairn");
    }
  });

  test("functions learn the ARNs of their state machines, by each one's arnVariable, without referencing them (no dependency cycle)", () => {
    const machineIds = STATE_MACHINES.map((m) => logicalIdOf(s.stack.cairn.stateMachines.get(m.name)!));
    for (const f of FUNCTIONS) {
      const [, fn] = resourceNamed(s.json, "AWS::Lambda::Function", `CairnFunctions${f.name}`);
      const vars = (props(fn)["Environment"] as { Variables: Record<string, unknown> }).Variables;
      // The machines of its statemachine:* uses, and the session lifecycle's always (loadConfig
      // requires CAIRN_STATE_MACHINE_ARN); no other machine's.
      const told = new Set<string>([StateMachineName.SessionLifecycle, ...stateMachinesOf(f)]);
      for (const m of STATE_MACHINES) {
        const arn = vars[m.arnVariable];
        if (!told.has(m.name)) {
          expect(arn, `${f.name} ${m.arnVariable}`).toBeUndefined();
          continue;
        }
        for (const id of machineIds) expect(JSON.stringify(arn)).not.toContain(id);
        const machine = s.json.Resources[logicalIdOf(s.stack.cairn.stateMachines.get(m.name)!)]!;
        expect(JSON.stringify(arn), `${f.name} ${m.arnVariable}`).toContain(
          `:stateMachine:${nameHead(props(machine)["StateMachineName"])}`,
        );
      }
    }
    // As the topology says: the Deployments function is told both family machines (loadConfig
    // reads them together), the session functions only the session lifecycle.
    const variablesOf = (name: FunctionName) => {
      const [, fn] = resourceNamed(s.json, "AWS::Lambda::Function", `CairnFunctions${name}`);
      const vars = (props(fn)["Environment"] as { Variables: Record<string, unknown> }).Variables;
      return Object.keys(vars)
        .filter((k) => k.endsWith("STATE_MACHINE_ARN"))
        .sort();
    };
    expect(variablesOf("Deployments")).toEqual([
      "CAIRN_DEPLOYMENT_STATE_MACHINE_ARN",
      "CAIRN_ROUTE_STATE_MACHINE_ARN",
      "CAIRN_STATE_MACHINE_ARN",
    ]);
    for (const name of ["Coordinator", "EnterStage", "EnterFamilyStage"] as const)
      expect(variablesOf(name), name).toEqual(["CAIRN_STATE_MACHINE_ARN"]);
  });

  test("each function's bundle was built from its declared entry and loads, exporting its handler", () => {
    for (const f of FUNCTIONS) {
      const [, fn] = resourceNamed(s.json, "AWS::Lambda::Function", `CairnFunctions${f.name}`);
      const key = String((props(fn)["Code"] as { S3Key: string }).S3Key).replace(/\.zip$/, "");
      const bundle = join(s.outdir, `asset.${key}`, "index.js");
      expect(existsSync(bundle), bundle).toBe(true);
      // The bundle's source map names the module it was built from (functions/topology's entry).
      const map = JSON.parse(readFileSync(`${bundle}.map`, "utf8")) as { sources: string[] };
      expect(
        map.sources.some((src) => src.endsWith(f.entry)),
        `${f.name} bundled from ${f.entry}`,
      ).toBe(true);
      const type = execFileSync(
        process.execPath,
        ["-e", "process.stdout.write(typeof require(process.argv[1]).handler)", bundle],
        {
          encoding: "utf8",
          env: { PATH: process.env["PATH"] ?? "" },
        },
      );
      expect(type, f.entry).toBe("function");
    }
  });
});

describe("table, monitoring and outputs", () => {
  test("the table: on-demand, point-in-time recovery, TTL, the schema's KEYS_ONLY GSIs, protected and retained", () => {
    s.template.hasResource("AWS::DynamoDB::Table", {
      DeletionPolicy: "Retain",
      Properties: {
        BillingMode: "PAY_PER_REQUEST",
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        TimeToLiveSpecification: { AttributeName: TABLE_SCHEMA.timeToLiveAttribute, Enabled: true },
        DeletionProtectionEnabled: true,
        GlobalSecondaryIndexes: TABLE_SCHEMA.globalSecondaryIndexes.map((g) => ({
          IndexName: g.indexName,
          KeySchema: [
            { AttributeName: g.partitionKey.name, KeyType: "HASH" },
            { AttributeName: g.sortKey.name, KeyType: "RANGE" },
          ],
          Projection: { ProjectionType: "KEYS_ONLY" },
        })),
      },
    });
  });

  test("alarms: each state machine's failed executions, each DLQ (none for heartbeats), each function's errors, stuck sessions", () => {
    const alarms = resourcesOf(s.json, "AWS::CloudWatch::Alarm").map(([id, a]) => ({ id, p: props(a) }));
    expect(alarms.map((a) => a.id.replace(/[0-9A-F]{8}$/, "")).sort()).toEqual(
      [
        "CairnMonitoringExecutionsFailedAlarm",
        "CairnMonitoringDeploymentLifecycleExecutionsFailedAlarm",
        "CairnMonitoringRouteLifecycleExecutionsFailedAlarm",
        "CairnMonitoringDeliveryDeadLetterQueueMessagesAlarm",
        "CairnMonitoringCoordinatorQueueDeadLetterQueueMessagesAlarm",
        "CairnMonitoringReportQueueDeadLetterQueueMessagesAlarm",
        "CairnMonitoringPlacementQueueDeadLetterQueueMessagesAlarm",
        "CairnMonitoringDeploymentQueueDeadLetterQueueMessagesAlarm",
        ...FUNCTIONS.map((f) => `CairnMonitoring${f.name}ErrorsAlarm`),
        "CairnMonitoringStuckSessionsAlarm",
      ].sort(),
    );
    const stuck = alarms.find((a) => a.id.startsWith("CairnMonitoringStuckSessionsAlarm"))!.p;
    expect(stuck).toMatchObject({
      Namespace: "Cairn/Cairn",
      MetricName: MetricName.SessionsStuck,
      Dimensions: [{ Name: "service", Value: METRICS_SERVICE }],
      TreatMissingData: "breaching",
    });
    for (const a of alarms) expect(String(a.p["AlarmDescription"]).length, a.id).toBeGreaterThan(40);
  });

  test("docs/deploy.md counts what the template holds", () => {
    const doc = readFileSync("docs/deploy.md", "utf8");
    const count = (what: string): number => {
      const row = new RegExp(`^\\| (\\d+) ${what.replace(/[()]/g, "\\$&")} +\\|`, "m").exec(doc);
      if (!row) throw new Error(`docs/deploy.md has no "| N ${what} |" row`);
      return Number(row[1]);
    };
    const queues = resourcesOf(s.json, "AWS::SQS::Queue").length;
    const workQueues = s.stack.cairn.queues.size;
    expect({
      rules: count("rules on the bus"),
      workQueues: count("work queues (SQS)"),
      deadLetterQueues: count("dead-letter queues"),
      functions: count("Lambda functions"),
      roles: count("IAM roles"),
      managedPolicies: count("IAM managed policies"),
      logGroups: count("log groups"),
      alarms: count("alarms"),
    }).toEqual({
      rules: resourcesOf(s.json, "AWS::Events::Rule").filter(([, r]) => props(r)["EventBusName"]).length,
      workQueues,
      deadLetterQueues: queues - workQueues,
      functions: resourcesOf(s.json, "AWS::Lambda::Function").length,
      roles: resourcesOf(s.json, "AWS::IAM::Role").length,
      managedPolicies: resourcesOf(s.json, "AWS::IAM::ManagedPolicy").length,
      logGroups: resourcesOf(s.json, "AWS::Logs::LogGroup").length,
      alarms: resourcesOf(s.json, "AWS::CloudWatch::Alarm").length,
    });
    const words = [
      ...["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"],
      ...["eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen"],
    ];
    expect(doc).toContain(`the ${words[count("alarms")]} alarms' states`);
  });

  test("the dashboard shows sessions per status, transitions, coordinator work, handler errors, DLQ depth, executions", () => {
    const body = JSON.stringify(resourcesOf(s.json, "AWS::CloudWatch::Dashboard")[0]![1]);
    for (const metric of [
      MetricName.SessionsInStatus,
      MetricName.Transitions,
      MetricName.CoordinatorRuns,
      MetricName.EventsRejected,
      MetricName.StageCompletions,
      MetricName.PassDecisions,
      MetricName.SessionsStuck,
      "Errors",
      "ApproximateNumberOfMessagesVisible",
      "ExecutionsFailed",
      "ExecutionsTimedOut",
    ]) {
      expect(body, metric).toContain(metric);
    }
  });

  test("outputs the CLI reads: TableName, EventBusName, StateMachineArn (the agents' in cdk-agents.test.ts)", () => {
    const [tableId] = resourceNamed(s.json, "AWS::DynamoDB::Table", "CairnTable");
    const [busId] = resourceNamed(s.json, "AWS::Events::EventBus", "CairnBus");
    const [machineId] = resourceNamed(s.json, "AWS::StepFunctions::StateMachine", "CairnLifecycle");
    expect(s.json.Outputs?.["TableName"]?.Value).toEqual({ Ref: tableId });
    expect(s.json.Outputs?.["EventBusName"]?.Value).toEqual({ Ref: busId });
    expect(s.json.Outputs?.["StateMachineArn"]?.Value).toEqual({ Ref: machineId });
  });
});
