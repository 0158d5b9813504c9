/**
 * The construct's props: impossible values and combinations fail at synth with the prop named,
 * and non-default values reach the resources they configure.
 */
import { FUNCTIONS, QUEUES, STATE_MACHINES } from "../functions/topology/index.ts";
import { App, Duration, RemovalPolicy, Stack } from "aws-cdk-lib";
import type * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import * as sfn from "aws-cdk-lib/aws-stepfunctions";
import { Template } from "aws-cdk-lib/assertions";
import { beforeAll, describe, expect, test } from "vitest";
import { Cairn } from "../lib/cairn.ts";
import { CairnStack } from "../lib/cairn-stack.ts";
import { CairnPropsError } from "../lib/errors.ts";
import { CAIRN_DEFAULTS, resolveCairnProps, type CairnProps } from "../lib/props.ts";
import { disposableLifetime } from "../lib/routing.ts";
import { loadConfig } from "../functions/config.ts";
import { resourcesOf, type CfnTemplate } from "./cdk-synth.ts";

describe("impossible props fail at synth, naming the prop", () => {
  const cases: [string, CairnProps, string][] = [
    [
      "a protected table that the stack should destroy",
      { removalPolicy: RemovalPolicy.DESTROY },
      "deletionProtection: must be false when removalPolicy is DESTROY: CloudFormation cannot delete a protected table",
    ],
    [
      "SNAPSHOT, which neither the table nor the log groups support",
      { removalPolicy: RemovalPolicy.SNAPSHOT, deletionProtection: false },
      "removalPolicy: SNAPSHOT is not supported by DynamoDB tables or log groups; use RETAIN (the table keeps point-in-time recovery) or DESTROY",
    ],
    ["no shards", { shards: 0 }, "shards: must be an integer from 1 to 100, got 0"],
    ["fractional shards", { shards: 2.5 }, "shards: must be an integer from 1 to 100, got 2.5"],
    [
      "a batch limit beyond a query page",
      { batchLimit: 1001 },
      "batchLimit: must be an integer from 1 to 1000, got 1001",
    ],
    [
      "more retries than EventBridge allows",
      { eventDelivery: { retryAttempts: 186 } },
      "eventDelivery.retryAttempts: must be an integer from 0 to 185, got 186",
    ],
    [
      "an event age under a minute",
      { eventDelivery: { maxEventAge: Duration.seconds(30) } },
      "eventDelivery.maxEventAge: must be between 1 minute and 24 hours, got 30 s",
    ],
    [
      "an event age over a day",
      { eventDelivery: { maxEventAge: Duration.hours(25) } },
      "eventDelivery.maxEventAge: must be between 1 minute and 24 hours, got 90000 s",
    ],
    [
      "a zero agent timeout",
      { agentTimeout: Duration.millis(0) },
      "agentTimeout: must be positive, got 0 ms",
    ],
    [
      "no receives before the DLQ",
      { maxReceiveCount: 0 },
      "maxReceiveCount: must be an integer from 1 to 1000, got 0",
    ],
    [
      "the account's default bus",
      { eventBusName: "default" },
      `eventBusName: cannot be "default": the account's default bus is not Cairn's to create`,
    ],
    [
      "a table name too short",
      { tableName: "ab" },
      `tableName: must be 3–255 of A-Z a-z 0-9 _ . -, got "ab"`,
    ],
    [
      "an AWS metrics namespace",
      { metricsNamespace: "AWS/Lambda" },
      `metricsNamespace: cannot start with "AWS/" (reserved for AWS services), got "AWS/Lambda"`,
    ],
    [
      "a namespace outside CloudWatch's alphabet",
      { metricsNamespace: "cairn$prod" },
      `metricsNamespace: must be 1–255 of 0-9 A-Z a-z . - _ / # : and space, got "cairn$prod"`,
    ],
    [
      "an agent queue prefix that leaves agent ids no room",
      { agentQueuePrefix: "a".repeat(41) },
      `agentQueuePrefix: must be 1–40 of letters, digits, '-' and '_' (agent ids take the other 40 of SQS's 80), got "${"a".repeat(41)}"`,
    ],
    [
      "an agent queue prefix outside SQS's alphabet",
      { agentQueuePrefix: "cairn.agent." },
      `agentQueuePrefix: must be 1–40 of letters, digits, '-' and '_' (agent ids take the other 40 of SQS's 80), got "cairn.agent."`,
    ],
    [
      "an empty agent queue prefix, which would grant every queue in the account",
      { agentQueuePrefix: "" },
      `agentQueuePrefix: must be 1–40 of letters, digits, '-' and '_' (agent ids take the other 40 of SQS's 80), got ""`,
    ],
    [
      "an unknown log level",
      { logLevel: "debug" as never },
      `logLevel: must be "info", "warn" or "error", got "debug"`,
    ],
    [
      "a retention shorter than Step Functions keeps an execution's name",
      { retention: Duration.days(30) },
      "retention: must be whole days from 90 to 3650 (a session's id names its execution, and Step Functions refuses a closed execution's name for 90 days), got 30 days",
    ],
    [
      "a retention of part of a day",
      { retention: Duration.hours(2_172) },
      "retention: must be whole days from 90 to 3650 (a session's id names its execution, and Step Functions refuses a closed execution's name for 90 days), got 90 days 12 hours",
    ],
  ];

  test.each(cases)("%s", (_, props, message) => {
    const stack = new Stack(new App(), "S");
    let thrown: unknown;
    try {
      new Cairn(stack, "Cairn", props);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(CairnPropsError);
    expect((thrown as CairnPropsError).message).toBe(message);
    expect((thrown as CairnPropsError).code).toBe("CAIRN_PROPS");
    expect(message.startsWith(`${(thrown as CairnPropsError).prop}: `)).toBe(true);
  });
});

const REQUIRED_ENV = {
  CAIRN_TABLE_NAME: "t",
  CAIRN_EVENT_BUS_NAME: "b",
  CAIRN_STATE_MACHINE_ARN: "arn:aws:states:eu-west-1:123456789012:stateMachine:m",
};

function attempt(f: () => unknown): "accepted" | "refused" {
  try {
    f();
    return "accepted";
  } catch {
    return "refused";
  }
}

describe("defaults", () => {
  test("every optional prop resolves to its documented default", () => {
    const r = resolveCairnProps({}, "Prod");
    expect(r).toMatchObject({
      deletionProtection: CAIRN_DEFAULTS.deletionProtection,
      removalPolicy: RemovalPolicy.RETAIN,
      shards: 4,
      agentTimeoutMs: 90_000,
      batchLimit: 200,
      terminationGraceMs: 5_000,
      logLevel: "info",
      logExecutionData: false,
      stateMachineLogLevel: "ERROR",
      retentionDays: 90,
      eventRetryAttempts: 185,
      maxReceiveCount: 5,
      metricsNamespace: "Cairn/Prod",
      alarmActions: [],
    });
    expect(r.maxEventAge.toSeconds()).toBe(86_400);
    expect(r.tableName).toBeUndefined();
    expect(r.eventBusName).toBeUndefined();
    expect(r.agentQueuePrefix).toMatch(/^Prod-[0-9a-f]{8}-agent-$/);
  });

  test("the default agent queue prefix: per stack and per construct, at most 40 characters, valid for SQS", () => {
    const long = "A".repeat(30);
    const prefixes = [
      resolveCairnProps({}, "Prod", "Prod/Cairn").agentQueuePrefix,
      resolveCairnProps({}, "Staging", "Staging/Cairn").agentQueuePrefix,
      resolveCairnProps({}, "Prod", "Prod/Other").agentQueuePrefix,
      resolveCairnProps({}, `${long}1`, `${long}1/Cairn`).agentQueuePrefix,
      resolveCairnProps({}, `${long}2`, `${long}2/Cairn`).agentQueuePrefix,
      resolveCairnProps({}, "A".repeat(128), "x").agentQueuePrefix,
    ];
    // Two stacks whose names differ only past the 24 characters kept still differ by the hash.
    expect(new Set(prefixes).size).toBe(prefixes.length);
    for (const prefix of prefixes) {
      expect(prefix).toMatch(/^[A-Za-z0-9_-]{1,40}$/);
      expect(prefix.endsWith("-agent-")).toBe(true);
    }
    expect(prefixes[5]).toHaveLength(40);
    // Stable: a redeploy keeps its agents' queues.
    expect(resolveCairnProps({}, "Prod", "Prod/Cairn").agentQueuePrefix).toBe(prefixes[0]);
    // The functions accept exactly what the prop accepts (functions/config.ts reads the same value).
    for (const prefix of ["a", "a".repeat(40), "a".repeat(41), "ok_-9Z", "x.y", "sp ace", "é"]) {
      const viaProps = attempt(() => resolveCairnProps({ agentQueuePrefix: prefix }, "Prod"));
      const viaConfig = attempt(() => loadConfig({ ...REQUIRED_ENV, CAIRN_AGENT_QUEUE_PREFIX: prefix }));
      expect(viaProps, prefix).toBe(viaConfig);
    }
    // Given, it is kept as given.
    expect(resolveCairnProps({ agentQueuePrefix: "prod_agents-" }, "Prod").agentQueuePrefix).toBe(
      "prod_agents-",
    );
  });

  test("the retention: the functions accept exactly the days the prop accepts, 90 when not given", () => {
    expect(loadConfig(REQUIRED_ENV).retentionDays).toBe(90);
    for (const days of [1, 89, 90, 91, 365, 3650, 3651]) {
      const viaProps = attempt(() => resolveCairnProps({ retention: Duration.days(days) }, "Prod"));
      const viaConfig = attempt(() => loadConfig({ ...REQUIRED_ENV, CAIRN_RETENTION_DAYS: String(days) }));
      expect(viaProps, String(days)).toBe(viaConfig);
      expect(viaProps, String(days)).toBe(days >= 90 && days <= 3650 ? "accepted" : "refused");
    }
    expect(resolveCairnProps({ retention: Duration.days(400) }, "Prod").retentionDays).toBe(400);
  });
});

describe("heartbeats live as long as the agent timeout, within what SQS and EventBridge accept", () => {
  test.each([
    [12_000, 60],
    [90_000, 90],
    [90_500, 91],
    [2 * 86_400_000, 86_400],
  ])("agentTimeout %i ms: %i s", (agentTimeoutMs, seconds) => {
    expect(disposableLifetime({ agentTimeoutMs }).toSeconds()).toBe(seconds);
  });
});

describe("non-default props reach the resources", () => {
  let json: CfnTemplate;
  beforeAll(() => {
    // Bundling is the topology and stack tests' business; skip it here.
    const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
    const alarmTopicArn = "arn:aws:sns:eu-west-1:123456789012:cairn-alarms";
    const stack = new CairnStack(app, "Trial", {
      env: { account: "123456789012", region: "eu-west-1" },
      cairn: {
        deletionProtection: false,
        removalPolicy: RemovalPolicy.DESTROY,
        shards: 8,
        batchLimit: 50,
        agentTimeout: Duration.seconds(12),
        logLevel: "warn",
        logExecutionData: true,
        stateMachineLogLevel: sfn.LogLevel.ALL,
        retention: Duration.days(400),
        eventDelivery: { retryAttempts: 3, maxEventAge: Duration.minutes(10) },
        maxReceiveCount: 7,
        metricsNamespace: "Cairn/trial",
        alarmActions: [{ bind: () => ({ alarmActionArn: alarmTopicArn }) } satisfies cloudwatch.IAlarmAction],
        tableName: "cairn-trial",
        eventBusName: "cairn-trial",
        agentQueuePrefix: "trial-agents-",
      },
    });
    json = Template.fromStack(stack).toJSON() as CfnTemplate;
  });

  test("an ephemeral table: deleted with the stack, not protected", () => {
    const [[, table]] = resourcesOf(json, "AWS::DynamoDB::Table") as [
      [string, CfnTemplate["Resources"][string]],
    ];
    expect(table.DeletionPolicy).toBe("Delete");
    expect(table.Properties).toMatchObject({ TableName: "cairn-trial", DeletionProtectionEnabled: false });
    const groups = resourcesOf(json, "AWS::Logs::LogGroup");
    // The functions', the state machine's and the kernels'.
    expect(groups.map(([id]) => id).some((id) => id.startsWith("CairnAgentsKernelLogs"))).toBe(true);
    for (const [id, group] of groups) expect(group.DeletionPolicy, id).toBe("Delete");
  });

  test("function settings, shards and the namespace reach every function's environment", () => {
    for (const [id, fn] of resourcesOf(json, "AWS::Lambda::Function")) {
      expect((fn.Properties?.["Environment"] as { Variables: unknown }).Variables, id).toMatchObject({
        CAIRN_SHARDS: "8",
        CAIRN_BATCH_LIMIT: "50",
        CAIRN_AGENT_TIMEOUT_MS: "12000",
        CAIRN_RETENTION_DAYS: "400",
        CAIRN_LOG_LEVEL: "warn",
        CAIRN_AGENT_QUEUE_PREFIX: "trial-agents-",
        CAIRN_EVENT_BUS_NAME: expect.anything() as unknown,
        POWERTOOLS_METRICS_NAMESPACE: "Cairn/trial",
      });
    }
    expect(json.Outputs?.["Shards"]?.Value).toBe("8");
    expect(json.Outputs?.["AgentQueuePrefix"]?.Value).toBe("trial-agents-");
  });

  test("the agent queue prefix reaches every grant on the agents' queues", () => {
    const holders = new Map<string, unknown[]>();
    for (const [id, policy] of [
      ...resourcesOf(json, "AWS::IAM::Policy"),
      ...resourcesOf(json, "AWS::IAM::ManagedPolicy"),
    ]) {
      const doc = policy.Properties?.["PolicyDocument"] as {
        Statement: { Action: unknown; Resource: unknown }[];
      };
      // The agents' queues are named by prefix; the coordinator's own queues by their Arn attribute.
      const byPrefix = doc.Statement.filter(
        (st) =>
          JSON.stringify(st.Action).includes('"sqs:') && !JSON.stringify(st.Resource).includes("Fn::GetAtt"),
      );
      if (byPrefix.length > 0)
        holders.set(
          id.replace(/[0-9A-F]{8}$/, ""),
          byPrefix.map((st) => st.Resource),
        );
    }
    expect([...holders.keys()].sort()).toEqual([
      "CairnAgentsAgentPolicy",
      "CairnFunctionsCoordinatorRoleDefaultPolicy",
      "CairnFunctionsEnterStageRoleDefaultPolicy",
    ]);
    // Without cdk.json's feature flags the partition stays a reference.
    const arn = (name: string) => ({
      "Fn::Join": ["", ["arn:", { Ref: "AWS::Partition" }, `:sqs:eu-west-1:123456789012:${name}`]],
    });
    for (const [holder, resources] of holders) {
      for (const resource of resources)
        expect(
          [arn("trial-agents-*"), arn("trial-agents-${aws:PrincipalTag/cairn-agent-id}")],
          holder,
        ).toContainEqual(resource);
    }
    // A tagged agent's own queue, by the same prefix.
    expect(holders.get("CairnAgentsAgentPolicy")).toContainEqual(
      arn("trial-agents-${aws:PrincipalTag/cairn-agent-id}"),
    );
  });

  test("the retry policy reaches every bus rule target; the redrive count reaches the work queue", () => {
    const busRules = resourcesOf(json, "AWS::Events::Rule").filter(([, r]) => r.Properties?.["EventBusName"]);
    expect(busRules.length).toBeGreaterThan(0);
    for (const [id, rule] of busRules) {
      for (const target of rule.Properties?.["Targets"] as { RetryPolicy: unknown }[]) {
        // Heartbeats live no longer than the agent timeout (12 s here: the 60 s minimum).
        const maxAge = id.startsWith("CairnRoutingAgentHeartbeats") ? 60 : 600;
        expect(target.RetryPolicy, id).toEqual({ MaximumRetryAttempts: 3, MaximumEventAgeInSeconds: maxAge });
      }
    }
    const redrives = resourcesOf(json, "AWS::SQS::Queue").flatMap(([, q]) =>
      q.Properties?.["RedrivePolicy"] ? [q.Properties["RedrivePolicy"]] : [],
    );
    // Every work queue but the heartbeats' (disposable, no DLQ); placement and deployments take
    // fewer receives (3) than the prop.
    expect(redrives).toEqual(
      QUEUES.filter((q) => q.name !== "HeartbeatQueue").map((q): unknown =>
        expect.objectContaining({ maxReceiveCount: Math.min(7, q.maxReceiveCount ?? 7) }),
      ),
    );
  });

  test("every event and execution data in the state machines' logs when asked; alarm actions on every alarm, for ALARM and OK", () => {
    const machines = resourcesOf(json, "AWS::StepFunctions::StateMachine");
    expect(machines).toHaveLength(STATE_MACHINES.length);
    for (const [id, machine] of machines) {
      expect(machine.Properties?.["LoggingConfiguration"], id).toMatchObject({
        Level: "ALL",
        IncludeExecutionData: true,
      });
    }
    const alarms = resourcesOf(json, "AWS::CloudWatch::Alarm");
    // Failed executions of each state machine, the delivery DLQ, one per work queue's DLQ, each
    // function, stuck sessions.
    expect(alarms.length).toBe(STATE_MACHINES.length + 1 + (QUEUES.length - 1) + FUNCTIONS.length + 1);
    for (const [id, alarm] of alarms) {
      expect(alarm.Properties, id).toMatchObject({
        AlarmActions: ["arn:aws:sns:eu-west-1:123456789012:cairn-alarms"],
        OKActions: ["arn:aws:sns:eu-west-1:123456789012:cairn-alarms"],
      });
    }
  });
});
