/**
 * The grants follow the code: every AWS SDK command the functions send maps to an IAM action the
 * stack grants, and every granted action is one some command needs. A new command without a
 * grant (AccessDenied in production, invisible locally) or a stale grant fails here. And the
 * states: grants follow the topology's `stateMachines`: each function may start and complete the
 * executions of its own state machines only, and each family state machine may start (renew) its
 * own executions and no other's.
 */
import { readFileSync } from "node:fs";
import type { CfnElement } from "aws-cdk-lib";
import type { IConstruct } from "constructs";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  STATE_MACHINES,
  StateMachineName,
  type FunctionName,
  type StateMachineDecl,
} from "../functions/topology/index.ts";
import { startsItself } from "../lib/state-machine.ts";
import { nameHead, synthesize, type Synthesized } from "./cdk-synth.ts";
import {
  AGENT_QUEUE_OPEN_ACTIONS,
  AGENT_QUEUE_SEND_ACTIONS,
  BUS_PUT_ACTIONS,
  CALLBACK_ACTIONS,
  DESCRIBE_ACTIONS,
  FILTER_INVOKE_ACTIONS,
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

/** The submission filter's invocation, granted by lib/cairn.ts to the coordinator with the prop. */
const FILTER_ACTIONS_OF_COMMAND: Readonly<Record<string, readonly string[]>> = {
  InvokeCommand: [...FILTER_INVOKE_ACTIONS],
};

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
      const actions =
        ACTIONS_OF_COMMAND[command] ?? ECS_ACTIONS_OF_COMMAND[command] ?? FILTER_ACTIONS_OF_COMMAND[command];
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
      // With the submissionFilter prop (lib/cairn.ts).
      ...FILTER_INVOKE_ACTIONS,
    ]);
    expect([...granted].sort()).toEqual([...needed].sort());
  });
});

describe("states: grants follow the topology's stateMachines (least privilege)", () => {
  let s: Synthesized;
  beforeAll(() => {
    s = synthesize({}, { bundle: false });
  });
  afterAll(() => s.cleanup());

  interface Statement {
    readonly Effect: string;
    readonly Action: string | string[];
    readonly Resource?: unknown;
  }
  const list = <T>(x: T | T[]): T[] => (Array.isArray(x) ? x : [x]);
  const logicalId = (c: IConstruct) => s.stack.getLogicalId(c.node.defaultChild as CfnElement);
  /** The statements of the policies attached to a role. */
  const statementsOf = (role: IConstruct): Statement[] => {
    const roleId = logicalId(role);
    return Object.values(s.json.Resources)
      .filter((r) => r.Type === "AWS::IAM::Policy")
      .filter((r) => JSON.stringify(r.Properties?.["Roles"]).includes(`"${roleId}"`))
      .flatMap((r) => (r.Properties?.["PolicyDocument"] as { Statement: Statement[] }).Statement);
  };
  /** Each states: action the role holds → the resources it holds it on, resolved. */
  const statesGrants = (role: IConstruct): Record<string, unknown[]> => {
    const out: Record<string, unknown[]> = {};
    for (const st of statementsOf(role).filter((x) => x.Effect === "Allow")) {
      for (const action of list(st.Action).filter((a) => a.startsWith("states:")))
        (out[action] ??= []).push(...list(st.Resource));
    }
    return out;
  };
  const fnRole = (name: FunctionName) => s.stack.cairn.functions.get(name)!.role!;
  const machine = (name: StateMachineName) => s.stack.cairn.stateMachines.get(name)!;
  const machineRef = (name: StateMachineName) => ({ Ref: logicalId(machine(name)) });
  const family = [StateMachineName.DeploymentLifecycle, StateMachineName.RouteLifecycle] as const;

  test("Deployments may start and complete the callbacks of the deployment and route lifecycles, and of no session", () => {
    const both = family.map(machineRef);
    expect(statesGrants(fnRole("Deployments"))).toEqual({
      "states:StartExecution": both,
      "states:SendTaskSuccess": both,
      "states:SendTaskFailure": both,
    });
  });

  test("the Coordinator and EnterStage hold states: actions on the session lifecycle only", () => {
    const session = machineRef(StateMachineName.SessionLifecycle);
    const coordinator = statesGrants(fnRole("Coordinator"));
    expect(coordinator["states:StartExecution"]).toEqual([session]);
    expect(coordinator["states:SendTaskSuccess"]).toEqual([session]);
    const enterStage = JSON.stringify(statesGrants(fnRole("EnterStage")));
    for (const f of family) {
      const id = logicalId(machine(f));
      const name = nameHead(s.json.Resources[id]!.Properties?.["StateMachineName"]);
      for (const [who, grants] of [
        ["Coordinator", JSON.stringify(coordinator)],
        ["EnterStage", enterStage],
      ] as const) {
        expect(grants, `${who} on ${f}`).not.toContain(id);
        expect(grants, `${who} on ${f}`).not.toContain(name);
      }
    }
  });

  test("EnterFamilyStage holds no states: action at all", () => {
    expect(statesGrants(fnRole("EnterFamilyStage"))).toEqual({});
  });

  test.each(family)("the %s state machine may start its own executions (Renew) and no other's", (name) => {
    const role = machine(name).role;
    expect(statesGrants(role)).toEqual({
      // By its fixed name: a Ref to itself would be a dependency cycle through its role's policy.
      "states:StartExecution": [s.stack.resolve(s.stack.cairn.stateMachineArnsByName.get(name))],
    });
    const physical = nameHead(s.json.Resources[logicalId(machine(name))]!.Properties?.["StateMachineName"]);
    expect(JSON.stringify(statesGrants(role))).toContain(`:stateMachine:${physical}"`);
    // The renewal starts this very state machine, request-response, and links the new execution
    // to the one that started it.
    const states = (
      JSON.parse(readFileSync(STATE_MACHINES.find((m) => m.name === name)!.file, "utf8")) as {
        States: Record<string, { Resource?: string; Parameters?: Record<string, unknown> }>;
      }
    ).States;
    const starts = Object.values(states).filter(
      (st) => st.Resource === "arn:aws:states:::states:startExecution",
    );
    expect(starts.length).toBeGreaterThan(0);
    for (const st of starts) {
      expect(st.Parameters?.["StateMachineArn.$"]).toBe("$$.StateMachine.Id");
      expect(st.Parameters?.["Input"]).toMatchObject({
        "AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID.$": "$$.Execution.Id",
      });
    }
  });

  test("the session lifecycle's role holds no states: action", () => {
    expect(statesGrants(machine(StateMachineName.SessionLifecycle).role)).toEqual({});
  });
});

describe("a definition's states:startExecution is granted only as a renewal of itself", () => {
  const decl: StateMachineDecl = {
    name: StateMachineName.DeploymentLifecycle,
    file: "x.asl.json",
    arnVariable: "X",
    substitutions: {},
  };
  const definition = (resource: string, parameters: Record<string, unknown>) =>
    JSON.stringify({
      StartAt: "Wrap",
      States: {
        Wrap: {
          Type: "Parallel",
          Branches: [
            {
              StartAt: "Renew",
              States: { Renew: { Type: "Task", Resource: resource, Parameters: parameters, End: true } },
            },
          ],
          End: true,
        },
      },
    });

  test("its own state machine, request-response: granted", () => {
    expect(
      startsItself(
        decl,
        definition("arn:aws:states:::states:startExecution", { "StateMachineArn.$": "$$.StateMachine.Id" }),
      ),
    ).toBe(true);
    expect(startsItself(decl, JSON.stringify({ StartAt: "A", States: { A: { Type: "Succeed" } } }))).toBe(
      false,
    );
  });

  test("another state machine, or .sync, fails at synth", () => {
    expect(() =>
      startsItself(
        decl,
        definition("arn:aws:states:::states:startExecution", {
          StateMachineArn: "arn:aws:states:eu-west-1:1:stateMachine:other",
        }),
      ),
    ).toThrow(
      'topology STATE_MACHINES DeploymentLifecycle: x.asl.json state Renew: states:startExecution may start only its own state machine ("StateMachineArn.$": "$$.StateMachine.Id")',
    );
    expect(() =>
      startsItself(
        decl,
        definition("arn:aws:states:::states:startExecution.sync:2", {
          "StateMachineArn.$": "$$.StateMachine.Id",
        }),
      ),
    ).toThrow(
      "topology STATE_MACHINES DeploymentLifecycle: x.asl.json state Renew: only request-response arn:aws:states:::states:startExecution is granted, not arn:aws:states:::states:startExecution.sync:2",
    );
  });
});
