/**
 * The Fargate executor's side of the stack: nothing of it without the `fargate` prop;
 * with it, the cluster (created or given), the task execution and task roles and their trust,
 * the rule on the default bus that brings ECS's task state changes in where kernel reports go,
 * each ECS grant on its exact resources and conditions, the functions' environment, cdk-nag
 * clean with every acknowledgement reasoned, and the props that cannot work failing at synth.
 */
import { App, Stack, Validations, type CfnElement } from "aws-cdk-lib";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import * as ecr from "aws-cdk-lib/aws-ecr";
import * as ecs from "aws-cdk-lib/aws-ecs";
import * as iam from "aws-cdk-lib/aws-iam";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ConfigError, loadConfig } from "../functions/config.ts";
import { DetailType } from "../functions/core/events.ts";
import {
  ECS_PASS_ROLE_ACTIONS,
  ECS_RUN_TASK_ACTIONS,
  ECS_TAG_ON_CREATE_ACTIONS,
  ECS_TASK_ACTIONS,
  ECS_TASK_DEFINITION_ACTIONS,
} from "../functions/topology/access-actions.ts";
import {
  bindClusterArn,
  CLUSTER_ARN_PLACEHOLDER,
  FARGATE,
  FUNCTIONS,
  RULES,
  RuleBus,
} from "../functions/topology/index.ts";
import { StackOutput, type CairnStackProps } from "../lib/cairn-stack.ts";
import { CairnPropsError } from "../lib/errors.ts";
import { LAMBDA_XRAY_ACTIONS, NAG_ACKNOWLEDGEMENTS, wildcardFindingId } from "../lib/nag-acknowledgements.ts";
import { resolveCairnProps, type CairnFargateProps } from "../lib/props.ts";
import {
  resourceNamed,
  resourcesOf,
  synthesize,
  TEST_ENV,
  type CfnResource,
  type CfnTemplate,
  type Synthesized,
  type Violation,
} from "./cdk-synth.ts";

interface Statement {
  readonly Effect: string;
  readonly Action: string | string[];
  readonly Resource?: unknown;
  readonly Principal?: unknown;
  readonly Condition?: Record<string, Record<string, unknown>>;
}

const list = <T>(x: T | T[]): T[] => (Array.isArray(x) ? x : [x]);
const props = (r: CfnResource) => r.Properties ?? {};
const ARN = (rest: string) =>
  `arn:aws:${rest.replace("<region>", TEST_ENV.region).replace("<account>", TEST_ENV.account)}`;

/** Resources another team owns, imported by id: a scratch stack holds the references. */
function imports() {
  const scratch = new Stack(new App(), "Imports", { env: TEST_ENV });
  return {
    vpc: ec2.Vpc.fromVpcAttributes(scratch, "Vpc", {
      vpcId: "vpc-0a1b2c3d",
      availabilityZones: ["eu-west-1a", "eu-west-1b"],
      privateSubnetIds: ["subnet-0aaa1111", "subnet-0bbb2222"],
      publicSubnetIds: ["subnet-0ccc3333", "subnet-0ddd4444"],
    }),
    subnets: ["subnet-0eee5555", "subnet-0fff6666"].map((id) => ec2.Subnet.fromSubnetId(scratch, id, id)),
    securityGroup: ec2.SecurityGroup.fromSecurityGroupId(scratch, "Sg", "sg-0123abcd"),
    cluster: ecs.Cluster.fromClusterArn(scratch, "Cluster", ARN("ecs:<region>:<account>:cluster/research")),
    repository: ecr.Repository.fromRepositoryArn(
      scratch,
      "Repo",
      "arn:aws:ecr:eu-west-1:210987654321:repository/kernels",
    ),
  };
}

/** Statements of every IAM policy attached to the role with that logical id prefix. */
function roleStatements(json: CfnTemplate, rolePrefix: string): Statement[] {
  const [roleId] = resourceNamed(json, "AWS::IAM::Role", rolePrefix);
  return resourcesOf(json, "AWS::IAM::Policy")
    .filter(([, p]) => JSON.stringify(props(p)["Roles"]).includes(`"${roleId}"`))
    .flatMap(([, p]) => (props(p)["PolicyDocument"] as { Statement: Statement[] }).Statement);
}

function allStatements(json: CfnTemplate): { where: string; statement: Statement }[] {
  const out: { where: string; statement: Statement }[] = [];
  for (const [id, r] of Object.entries(json.Resources)) {
    const docs: unknown[] = [];
    if (r.Type === "AWS::IAM::Policy" || r.Type === "AWS::IAM::ManagedPolicy")
      docs.push(props(r)["PolicyDocument"]);
    if (r.Type === "AWS::IAM::Role") docs.push(props(r)["AssumeRolePolicyDocument"]);
    for (const doc of docs) {
      for (const statement of (doc as { Statement: Statement[] }).Statement)
        out.push({ where: id, statement });
    }
  }
  return out;
}

const grantsOf = (statements: Statement[], action: string) =>
  statements.filter((st) => st.Effect === "Allow" && list(st.Action).includes(action));

function environmentOf(json: CfnTemplate, name: string): Record<string, unknown> {
  const [, fn] = resourceNamed(json, "AWS::Lambda::Function", `CairnFunctions${name}`);
  return (props(fn)["Environment"] as { Variables: Record<string, unknown> }).Variables;
}

function acknowledgementsOf(stack: Stack): { path: string; id: string; reason: string }[] {
  return stack.node.findAll().flatMap((c) =>
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
}

const violationsOf = (violations: readonly Violation[]) =>
  violations.map(
    (v) => `${v.severity} ${v.ruleName}: ${v.violatingConstructs.map((c) => c.constructPath).join(", ")}`,
  );

/** A variant's synth, without bundling the functions (nothing here reads their code). */
function quickSynth(props: CairnStackProps): Pick<Synthesized, "stack" | "json" | "violations"> {
  const s = synthesize(props, { bundle: false });
  s.cleanup();
  return s;
}

describe("the topology's Fargate route", () => {
  test("ECS task state changes go where agents' kernel reports go, from the default bus, filtered to the cluster", () => {
    const kernelReports = RULES.find((r) =>
      (r.eventPattern["detail-type"] as string[]).includes(DetailType.KernelStatusChanged),
    )!;
    expect(FARGATE.rules).toHaveLength(1);
    const [rule] = FARGATE.rules;
    expect(rule!.bus).toBe(RuleBus.Default);
    expect(rule!.target).toEqual(kernelReports.target);
    expect(bindClusterArn(rule!, "arn:aws:ecs:eu-west-1:123456789012:cluster/c").eventPattern).toEqual({
      source: ["aws.ecs"],
      "detail-type": ["ECS Task State Change"],
      detail: { clusterArn: ["arn:aws:ecs:eu-west-1:123456789012:cluster/c"] },
    });
    // Binding leaves the declaration as it was, for the next stack or runtime.
    expect(JSON.stringify(rule!.eventPattern)).toContain(CLUSTER_ARN_PLACEHOLDER);
  });

  test("the functions that carry kernel commands to ECS are exactly those that send them to agents", () => {
    expect(FUNCTIONS.filter((f) => f.uses.includes("agents:send")).map((f) => f.name)).toEqual([
      ...FARGATE.commandSenders,
    ]);
  });
});

describe("without the fargate prop", () => {
  let off: ReturnType<typeof quickSynth>;
  beforeAll(() => {
    off = quickSynth({});
  });

  test("no ECS resource, ECS grant, PassRole, ECS rule, CAIRN_FARGATE_* variable or output", () => {
    expect(Object.values(off.json.Resources).filter((r) => r.Type.startsWith("AWS::ECS::"))).toEqual([]);
    const ecsOrPass = allStatements(off.json).flatMap(({ statement }) =>
      list(statement.Action ?? []).filter(
        (a) => a.startsWith("ecs:") || a.startsWith("ecr:") || a === "iam:PassRole",
      ),
    );
    expect(ecsOrPass).toEqual([]);
    const rules = resourcesOf(off.json, "AWS::Events::Rule").map(([, r]) =>
      JSON.stringify(props(r)["EventPattern"] ?? {}),
    );
    expect(rules.filter((p) => p.includes("aws.ecs"))).toEqual([]);
    for (const f of FUNCTIONS) {
      expect(
        Object.keys(environmentOf(off.json, f.name)).filter((k) => k.startsWith("CAIRN_FARGATE_")),
      ).toEqual([]);
    }
    expect(off.json.Outputs?.[StackOutput.FargateClusterArn]).toBeUndefined();
    expect(off.stack.cairn.fargate).toBeUndefined();
    expect(violationsOf(off.violations)).toEqual([]);
  });
});

describe("a cluster the stack creates, in a given VPC", () => {
  let s: Synthesized;
  let clusterId: string;
  beforeAll(() => {
    s = synthesize({ cairn: { fargate: { vpc: imports().vpc } } }, { bundle: false });
    clusterId = resourceNamed(s.json, "AWS::ECS::Cluster", "CairnFargateCluster")[0];
  });
  afterAll(() => s.cleanup());

  const clusterArn = () => ({ "Fn::GetAtt": [clusterId, "Arn"] });
  const roleArn = (prefix: string) => ({
    "Fn::GetAtt": [resourceNamed(s.json, "AWS::IAM::Role", prefix)[0], "Arn"],
  });
  const logicalId = (construct: { node: { defaultChild?: unknown } }) =>
    s.stack.getLogicalId(construct.node.defaultChild as CfnElement);

  test("cdk-nag finds nothing unacknowledged", () => {
    expect(violationsOf(s.violations)).toEqual([]);
  });

  test("the cluster: FARGATE and FARGATE_SPOT, Container Insights on, nothing else of ECS", () => {
    const [, cluster] = resourceNamed(s.json, "AWS::ECS::Cluster", "CairnFargateCluster");
    expect(props(cluster)).toEqual({
      CapacityProviders: ["FARGATE", "FARGATE_SPOT"],
      ClusterSettings: [{ Name: "containerInsights", Value: "enabled" }],
    });
    expect(Object.values(s.json.Resources).filter((r) => r.Type.startsWith("AWS::ECS::"))).toHaveLength(1);
    expect(s.json.Outputs?.[StackOutput.FargateClusterArn]?.Value).toEqual(clusterArn());
  });

  test("the rule: on the default bus, ECS task state changes of this cluster only, into the report queue with retries and the DLQ", () => {
    const rule = s.stack.cairn.rules.get("EcsTaskStateChanges")!;
    const p = props(s.json.Resources[logicalId(rule)]!);
    expect(p["EventBusName"]).toBeUndefined();
    expect(p["EventPattern"]).toEqual({
      source: ["aws.ecs"],
      "detail-type": ["ECS Task State Change"],
      detail: { clusterArn: [clusterArn()] },
    });
    const reportQueue = logicalId(s.stack.cairn.queues.get("ReportQueue")!);
    const dlq = logicalId(s.stack.cairn.deadLetterQueues.get("DeliveryDeadLetterQueue")!);
    expect(p["Targets"]).toMatchObject([
      {
        Arn: { "Fn::GetAtt": [reportQueue, "Arn"] },
        DeadLetterConfig: { Arn: { "Fn::GetAtt": [dlq, "Arn"] } },
        RetryPolicy: { MaximumRetryAttempts: 185, MaximumEventAgeInSeconds: 86_400 },
      },
    ]);
    // EventBridge may send to the report queue for this rule too.
    const [, queuePolicy] = resourcesOf(s.json, "AWS::SQS::QueuePolicy").find(([, q]) =>
      JSON.stringify(props(q)["Queues"]).includes(reportQueue),
    )!;
    expect(JSON.stringify(props(queuePolicy)["PolicyDocument"])).toContain(logicalId(rule));
  });

  test("the task execution role: trusted by ECS tasks, inline pulls and log writes, no managed policy", () => {
    const [, role] = resourceNamed(s.json, "AWS::IAM::Role", "CairnFargateTaskExecutionRole");
    expect(props(role)["ManagedPolicyArns"]).toBeUndefined();
    expect((props(role)["AssumeRolePolicyDocument"] as { Statement: Statement[] }).Statement).toEqual([
      { Action: "sts:AssumeRole", Effect: "Allow", Principal: { Service: "ecs-tasks.amazonaws.com" } },
    ]);
    const kernelLogs = resourceNamed(s.json, "AWS::Logs::LogGroup", "CairnAgentsKernelLogs")[0];
    expect(roleStatements(s.json, "CairnFargateTaskExecutionRole")).toEqual([
      { Action: "ecr:GetAuthorizationToken", Effect: "Allow", Resource: "*" },
      {
        Action: ["ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
        Effect: "Allow",
        Resource: ARN("ecr:<region>:<account>:repository/*"),
      },
      {
        Action: ["logs:CreateLogStream", "logs:PutLogEvents"],
        Effect: "Allow",
        Resource: {
          "Fn::Join": ["", [ARN("logs:<region>:<account>:log-group:"), { Ref: kernelLogs }, ":*"]],
        },
      },
    ]);
  });

  test("the task role: trusted by ECS tasks of this account and region only, allowed nothing", () => {
    const [roleId, role] = resourceNamed(s.json, "AWS::IAM::Role", "CairnFargateTaskRole");
    expect((props(role)["AssumeRolePolicyDocument"] as { Statement: Statement[] }).Statement).toEqual([
      {
        Action: "sts:AssumeRole",
        Effect: "Allow",
        Principal: { Service: "ecs-tasks.amazonaws.com" },
        Condition: {
          ArnLike: { "aws:SourceArn": ARN("ecs:<region>:<account>:*") },
          StringEquals: { "aws:SourceAccount": TEST_ENV.account },
        },
      },
    ]);
    expect(props(role)["ManagedPolicyArns"]).toBeUndefined();
    expect(props(role)["Policies"]).toBeUndefined();
    expect(
      resourcesOf(s.json, "AWS::IAM::Policy").filter(([, p]) =>
        JSON.stringify(props(p)["Roles"]).includes(roleId),
      ),
    ).toEqual([]);
  });

  test.each(FARGATE.commandSenders.map((name) => [name]))(
    "%s: RunTask only on cairn-* task definitions on this cluster, StopTask on its tasks, PassRole of the two roles to ECS tasks",
    (name) => {
      const statements = roleStatements(s.json, `CairnFunctions${name}Role`);
      const tasks = { "Fn::Join": ["", [ARN("ecs:<region>:<account>:task/"), { Ref: clusterId }, "/*"]] };
      const onCluster = { ArnEquals: { "ecs:cluster": clusterArn() } };
      expect(grantsOf(statements, "ecs:RunTask")).toEqual([
        {
          Action: "ecs:RunTask",
          Effect: "Allow",
          Resource: ARN("ecs:<region>:<account>:task-definition/cairn-*"),
          Condition: onCluster,
        },
      ]);
      // Tags only as RunTask's and RegisterTaskDefinition's on create, each on what it creates.
      expect(grantsOf(statements, "ecs:TagResource")).toEqual([
        {
          Action: "ecs:TagResource",
          Effect: "Allow",
          Resource: tasks,
          Condition: { StringEquals: { "ecs:CreateAction": "RunTask" } },
        },
        {
          Action: "ecs:TagResource",
          Effect: "Allow",
          Resource: ARN("ecs:<region>:<account>:task-definition/cairn-*"),
          Condition: { StringEquals: { "ecs:CreateAction": "RegisterTaskDefinition" } },
        },
      ]);
      expect(grantsOf(statements, "ecs:StopTask")).toEqual([
        {
          Action: "ecs:StopTask",
          Effect: "Allow",
          Resource: tasks,
          Condition: onCluster,
        },
      ]);
      // On '*' (merged with Lambda tracing's X-Ray statement, also on '*').
      expect(grantsOf(statements, "ecs:RegisterTaskDefinition")).toEqual([
        {
          Action: ["ecs:DescribeTaskDefinition", "ecs:RegisterTaskDefinition", ...LAMBDA_XRAY_ACTIONS].sort(),
          Effect: "Allow",
          Resource: "*",
        },
      ]);
      expect(grantsOf(statements, "iam:PassRole")).toEqual([
        {
          Action: "iam:PassRole",
          Effect: "Allow",
          Resource: [roleArn("CairnFargateTaskExecutionRole"), roleArn("CairnFargateTaskRole")],
          Condition: { StringEquals: { "iam:PassedToService": "ecs-tasks.amazonaws.com" } },
        },
      ]);
      // Every ECS action granted is one of the shared lists, and on '*' only the task
      // definition calls and X-Ray.
      const ecsActions = statements.flatMap((st) => list(st.Action)).filter((a) => a.startsWith("ecs:"));
      expect(new Set(ecsActions)).toEqual(
        new Set([
          ...ECS_RUN_TASK_ACTIONS,
          ...ECS_TAG_ON_CREATE_ACTIONS,
          ...ECS_TASK_ACTIONS,
          ...ECS_TASK_DEFINITION_ACTIONS,
        ]),
      );
      expect(
        statements
          .filter((st) => list(st.Resource).includes("*"))
          .flatMap((st) => list(st.Action))
          .sort(),
      ).toEqual([...LAMBDA_XRAY_ACTIONS, ...ECS_TASK_DEFINITION_ACTIONS].sort());
    },
  );

  test("no statement grants a wildcard action", () => {
    const wildcards = allStatements(s.json)
      .filter(({ statement }) => statement.Effect === "Allow")
      .flatMap(({ where, statement }) =>
        list(statement.Action)
          .filter((a) => a.includes("*"))
          .map((a) => `${where}: ${a}`),
      );
    expect(wildcards).toEqual([]);
  });

  test("no one else may run tasks or pass the roles", () => {
    const senders = new Set<string>(
      FARGATE.commandSenders.map((n) => resourceNamed(s.json, "AWS::IAM::Role", `CairnFunctions${n}Role`)[0]),
    );
    const holders = allStatements(s.json)
      .filter(({ statement }) =>
        list(statement.Action ?? []).some(
          (a) => a.startsWith("ecs:") || ECS_PASS_ROLE_ACTIONS.includes(a as "iam:PassRole"),
        ),
      )
      .map(({ where }) =>
        list(props(s.json.Resources[where]!)["Roles"] as { Ref: string }[]).map((r) => r.Ref),
      )
      .flat();
    expect(new Set(holders)).toEqual(senders);
  });

  test("every function is told the cluster, the networking, the roles, the log group and the capacity providers", () => {
    const kernelLogs = resourceNamed(s.json, "AWS::Logs::LogGroup", "CairnAgentsKernelLogs")[0];
    const [sgId, sg] = resourceNamed(s.json, "AWS::EC2::SecurityGroup", "CairnFargateTaskSecurityGroup");
    for (const f of FUNCTIONS) {
      const env = environmentOf(s.json, f.name);
      expect(
        Object.fromEntries(Object.entries(env).filter(([k]) => k.startsWith("CAIRN_FARGATE_"))),
        f.name,
      ).toEqual({
        CAIRN_FARGATE_CLUSTER_ARN: clusterArn(),
        CAIRN_FARGATE_SUBNETS: "subnet-0aaa1111,subnet-0bbb2222",
        CAIRN_FARGATE_SECURITY_GROUPS: { "Fn::GetAtt": [sgId, "GroupId"] },
        CAIRN_FARGATE_ASSIGN_PUBLIC_IP: "false",
        CAIRN_FARGATE_EXECUTION_ROLE_ARN: roleArn("CairnFargateTaskExecutionRole"),
        CAIRN_FARGATE_TASK_ROLE_ARN: roleArn("CairnFargateTaskRole"),
        CAIRN_FARGATE_LOG_GROUP_NAME: { Ref: kernelLogs },
        CAIRN_FARGATE_CAPACITY_PROVIDERS: "FARGATE,FARGATE_SPOT",
      });
    }
    // The tasks' security group: in the VPC, nothing inbound.
    expect(props(sg)).toMatchObject({ VpcId: "vpc-0a1b2c3d" });
    expect(props(sg)["SecurityGroupIngress"]).toBeUndefined();
    expect(resourcesOf(s.json, "AWS::EC2::SecurityGroupIngress")).toEqual([]);
  });

  test("each acknowledgement is one of the documented ones, and each wildcard resource carries only the actions its reason names", () => {
    const all = acknowledgementsOf(s.stack);
    // The Fargate executor's: under its construct, or naming an ECS action.
    const acknowledged = all.filter(
      (a) => a.path.startsWith("Cairn/Cairn/Fargate") || a.reason.includes("ecs:"),
    );
    for (const a of acknowledged) expect(a.reason.length, `${a.path} ${a.id}`).toBeGreaterThan(100);
    const fargate = s.stack.cairn.fargate!;
    const tasks = wildcardFindingId(s.stack, fargate.tasksArn);
    const definitions = wildcardFindingId(s.stack, fargate.taskDefinitionsArn);
    const kernelLogs = resourceNamed(s.json, "AWS::Logs::LogGroup", "CairnAgentsKernelLogs")[0];
    expect(acknowledged.map((a) => `${a.path} ${a.id}`).sort()).toEqual(
      [
        ...FARGATE.commandSenders.flatMap((n) => [
          `Cairn/Cairn/Functions/${n}Role AwsSolutions-IAM5[Resource::*]`,
          `Cairn/Cairn/Functions/${n}Role ${tasks}`,
          `Cairn/Cairn/Functions/${n}Role ${definitions}`,
        ]),
        "Cairn/Cairn/Fargate/TaskExecutionRole AwsSolutions-IAM5[Resource::*]",
        `Cairn/Cairn/Fargate/TaskExecutionRole AwsSolutions-IAM5[Resource::${ARN("ecr:<region>:<account>:repository/*")}]`,
        `Cairn/Cairn/Fargate/TaskExecutionRole AwsSolutions-IAM5[Resource::${ARN("logs:<region>:<account>:log-group:")}<${kernelLogs}>:*]`,
      ].sort(),
    );
    for (const n of FARGATE.commandSenders) {
      const star = acknowledged.find(
        (a) => a.path === `Cairn/Cairn/Functions/${n}Role` && a.id.endsWith("[Resource::*]"),
      )!;
      expect(star.reason).toBe(NAG_ACKNOWLEDGEMENTS.functionRoleXRayAndEcsTaskDefinitions.reason);
    }
    // A statement whose resource ends in a wildcard: its actions are named in the reason of the
    // acknowledgement of that resource on the same role.
    const named = (reason: string) => new Set(reason.match(/\b[a-z0-9]+:[A-Z][A-Za-z]+\b/g) ?? []);
    const byPath = (path: string, id: string) => all.find((a) => a.path === path && a.id === id)!;
    const checks: [string, string][] = [
      ...FARGATE.commandSenders.map(
        (n) => [`Cairn/Cairn/Functions/${n}Role`, `CairnFunctions${n}Role`] as [string, string],
      ),
      ["Cairn/Cairn/Fargate/TaskExecutionRole", "CairnFargateTaskExecutionRole"],
    ];
    let checked = 0;
    for (const [path, rolePrefix] of checks) {
      for (const st of roleStatements(s.json, rolePrefix)) {
        // The functions' other wildcards (agent queues, executions) are cdk-stack.test.ts's.
        const fargates = list(st.Action).some((a) => /^(ecs|ecr|iam):/.test(a)) || path.includes("/Fargate/");
        if (!fargates) continue;
        for (const resource of list(st.Resource)) {
          if (!JSON.stringify(resource).includes("*")) continue;
          const ack = byPath(path, wildcardFindingId(s.stack, resource as string));
          expect(ack, `${path}: ${JSON.stringify(resource)}`).toBeDefined();
          for (const action of list(st.Action)) {
            expect(
              named(ack.reason).has(action),
              `${path}: ${action} named in the reason for ${JSON.stringify(resource)}`,
            ).toBe(true);
          }
          checked++;
        }
      }
    }
    // Per sender: '*' (X-Ray and the task definition calls), the task definitions twice (run,
    // tag), the tasks twice (tag, stop/describe); the execution role: the token, the
    // repositories, the log streams.
    expect(checked).toBe(FARGATE.commandSenders.length * 5 + 3);
  });
});

describe("a given cluster, subnets and security groups", () => {
  let s: ReturnType<typeof quickSynth>;
  const given = imports();
  const clusterArn = ARN("ecs:<region>:<account>:cluster/research");
  beforeAll(() => {
    s = quickSynth({
      cairn: {
        fargate: {
          cluster: given.cluster,
          subnets: given.subnets,
          securityGroups: [given.securityGroup],
          assignPublicIp: true,
          capacityProviders: ["FARGATE_SPOT"],
          imageRepositories: [given.repository],
          taskRoleStatements: [
            new iam.PolicyStatement({
              actions: ["s3:GetObject"],
              resources: ["arn:aws:s3:::datasets/inputs.csv"],
            }),
          ],
        },
      },
    });
  });

  test("no cluster and no security group created; cdk-nag clean", () => {
    expect(Object.values(s.json.Resources).filter((r) => r.Type.startsWith("AWS::ECS::"))).toEqual([]);
    expect(resourcesOf(s.json, "AWS::EC2::SecurityGroup")).toEqual([]);
    expect(violationsOf(s.violations)).toEqual([]);
  });

  test("the rule, the grants and the environment name the given cluster", () => {
    const rule = s.stack.cairn.rules.get("EcsTaskStateChanges")!;
    const p = props(s.json.Resources[s.stack.getLogicalId(rule.node.defaultChild as CfnElement)]!);
    expect(p["EventPattern"]).toMatchObject({ detail: { clusterArn: [clusterArn] } });
    for (const name of FARGATE.commandSenders) {
      const statements = roleStatements(s.json, `CairnFunctions${name}Role`);
      expect(grantsOf(statements, "ecs:RunTask")[0]?.Condition).toEqual({
        ArnEquals: { "ecs:cluster": clusterArn },
      });
      expect(grantsOf(statements, "ecs:StopTask")[0]).toMatchObject({
        Resource: ARN("ecs:<region>:<account>:task/research/*"),
        Condition: { ArnEquals: { "ecs:cluster": clusterArn } },
      });
    }
    const env = environmentOf(s.json, "Coordinator");
    expect(env).toMatchObject({
      CAIRN_FARGATE_CLUSTER_ARN: clusterArn,
      CAIRN_FARGATE_SUBNETS: "subnet-0eee5555,subnet-0fff6666",
      CAIRN_FARGATE_SECURITY_GROUPS: "sg-0123abcd",
      CAIRN_FARGATE_ASSIGN_PUBLIC_IP: "true",
      CAIRN_FARGATE_CAPACITY_PROVIDERS: "FARGATE_SPOT",
    });
    // As deployed (role ARNs and the log group name resolved), the functions' config reads it.
    const resolved = Object.fromEntries(
      Object.entries(env).map(([k, v]) => [
        k,
        typeof v === "string"
          ? v
          : k === "CAIRN_FARGATE_LOG_GROUP_NAME"
            ? "Cairn-KernelLogs-1A2B3C"
            : "arn:aws:iam::123456789012:role/Cairn-Role-1A2B3C",
      ]),
    );
    expect(
      loadConfig({
        ...resolved,
        CAIRN_TABLE_NAME: "t",
        CAIRN_EVENT_BUS_NAME: "b",
        CAIRN_STATE_MACHINE_ARN: "arn:aws:states:eu-west-1:123456789012:stateMachine:m",
      }).fargate,
    ).toEqual({
      clusterArn,
      subnets: ["subnet-0eee5555", "subnet-0fff6666"],
      securityGroups: ["sg-0123abcd"],
      assignPublicIp: true,
      executionRoleArn: "arn:aws:iam::123456789012:role/Cairn-Role-1A2B3C",
      taskRoleArn: "arn:aws:iam::123456789012:role/Cairn-Role-1A2B3C",
      logGroupName: "Cairn-KernelLogs-1A2B3C",
      capacityProviders: ["FARGATE_SPOT"],
    });
  });

  test("images are pulled from the given repositories only; the task role holds the given statements", () => {
    expect(grantsOf(roleStatements(s.json, "CairnFargateTaskExecutionRole"), "ecr:BatchGetImage")).toEqual([
      expect.objectContaining({ Resource: "arn:aws:ecr:eu-west-1:210987654321:repository/kernels" }),
    ]);
    expect(roleStatements(s.json, "CairnFargateTaskRole")).toEqual([
      { Action: "s3:GetObject", Effect: "Allow", Resource: "arn:aws:s3:::datasets/inputs.csv" },
    ]);
  });
});

describe("other ways to name the cluster", () => {
  test.each([
    ["a name", "research"],
    ["an ARN", ARN("ecs:<region>:<account>:cluster/research")],
  ])("%s: the ARN everywhere, the tasks by the name", (_, cluster) => {
    const given = imports();
    const { stack, json } = quickSynth({
      cairn: { fargate: { cluster, subnets: given.subnets, securityGroups: [given.securityGroup] } },
    });
    expect(stack.cairn.fargate!.clusterArn).toBe(ARN("ecs:<region>:<account>:cluster/research"));
    const statements = roleStatements(json, "CairnFunctionsCoordinatorRole");
    expect(grantsOf(statements, "ecs:StopTask")[0]?.Resource).toBe(
      ARN("ecs:<region>:<account>:task/research/*"),
    );
  });

  test("a given role for kernels is passed, and the stack creates none", () => {
    const given = imports();
    const taskRole = iam.Role.fromRoleArn(
      new Stack(new App(), "R", { env: TEST_ENV }),
      "Kernel",
      ARN("iam::<account>:role/kernel"),
    );
    const { json } = quickSynth({
      cairn: {
        fargate: {
          cluster: "research",
          subnets: given.subnets,
          securityGroups: [given.securityGroup],
          taskRole,
        },
      },
    });
    expect(
      resourcesOf(json, "AWS::IAM::Role").filter(([id]) => id.startsWith("CairnFargateTaskRole")),
    ).toEqual([]);
    const [execution] = resourceNamed(json, "AWS::IAM::Role", "CairnFargateTaskExecutionRole");
    const passed = grantsOf(roleStatements(json, "CairnFunctionsCoordinatorRole"), "iam:PassRole")[0]
      ?.Resource;
    expect(new Set(list(passed).map((r) => JSON.stringify(r)))).toEqual(
      new Set(
        [{ "Fn::GetAtt": [execution, "Arn"] }, ARN("iam::<account>:role/kernel")].map((r) =>
          JSON.stringify(r),
        ),
      ),
    );
  });

  test("Container Insights turned off by the prop: off on the cluster, and the finding acknowledged with the reason", () => {
    const { stack, json, violations } = quickSynth({
      cairn: { fargate: { vpc: imports().vpc, containerInsights: ecs.ContainerInsights.DISABLED } },
    });
    const [, cluster] = resourceNamed(json, "AWS::ECS::Cluster", "CairnFargateCluster");
    expect(props(cluster)["ClusterSettings"]).toEqual([{ Name: "containerInsights", Value: "disabled" }]);
    expect(violationsOf(violations)).toEqual([]);
    expect(acknowledgementsOf(stack).filter((a) => a.id === "AwsSolutions-ECS4")).toEqual([
      {
        path: "Cairn/Cairn/Fargate/Cluster",
        id: "AwsSolutions-ECS4",
        reason: NAG_ACKNOWLEDGEMENTS.containerInsightsDisabled.reason,
      },
    ]);
  });
});

describe("fargate props that cannot work fail at synth, naming the prop", () => {
  const given = imports();
  const two = { subnets: given.subnets, securityGroups: [given.securityGroup] };
  const cases: [string, CairnFargateProps, string][] = [
    [
      "no subnets and no VPC",
      {},
      "fargate.subnets: required (or fargate.vpc): Fargate tasks run in awsvpc mode, in subnets of your VPC that can reach ECR and CloudWatch Logs (private subnets with a NAT gateway or VPC endpoints)",
    ],
    [
      "subnets without security groups",
      { subnets: given.subnets },
      "fargate.securityGroups: required with fargate.subnets (with fargate.vpc the stack creates one that allows no inbound traffic)",
    ],
    [
      "both subnets and a VPC",
      { ...two, vpc: given.vpc },
      "fargate.subnets: give either fargate.subnets or fargate.vpc, not both",
    ],
    [
      "a subnet selection without a VPC",
      { ...two, vpcSubnets: { subnetType: ec2.SubnetType.PUBLIC } },
      "fargate.vpcSubnets: selects subnets of fargate.vpc, which is not given",
    ],
    [
      "no subnets at all",
      { ...two, subnets: [] },
      "fargate.subnets: must be 1 to 16 subnets (RunTask's limit), got 0",
    ],
    [
      "more subnets than RunTask takes",
      { ...two, subnets: Array.from({ length: 17 }, () => given.subnets[0]!) },
      "fargate.subnets: must be 1 to 16 subnets (RunTask's limit), got 17",
    ],
    [
      "more security groups than RunTask takes",
      { ...two, securityGroups: Array.from({ length: 6 }, () => given.securityGroup) },
      "fargate.securityGroups: must be 1 to 5 security groups (RunTask's limit), got 6",
    ],
    [
      "no capacity provider",
      { ...two, capacityProviders: [] },
      "fargate.capacityProviders: must be FARGATE, FARGATE_SPOT or both, each once, got []",
    ],
    [
      "a capacity provider twice",
      { ...two, capacityProviders: ["FARGATE", "FARGATE"] },
      "fargate.capacityProviders: must be FARGATE, FARGATE_SPOT or both, each once, got [FARGATE, FARGATE]",
    ],
    [
      "a capacity provider that is not Fargate's",
      { ...two, capacityProviders: ["EC2" as "FARGATE"] },
      "fargate.capacityProviders: must be FARGATE, FARGATE_SPOT or both, each once, got [EC2]",
    ],
    [
      "Container Insights for a cluster the stack does not create",
      { ...two, cluster: "research", containerInsights: ecs.ContainerInsights.ENABLED },
      "fargate.containerInsights: applies only to the cluster the stack creates; set it on the given fargate.cluster instead",
    ],
    [
      "statements for a task role the stack does not create",
      {
        ...two,
        taskRole: iam.Role.fromRoleArn(new Stack(new App(), "R"), "R", "arn:aws:iam::123456789012:role/k"),
        taskRoleStatements: [],
      },
      "fargate.taskRoleStatements: apply only to the task role the stack creates; add them to the given fargate.taskRole instead",
    ],
    [
      "an empty repository list",
      { ...two, imageRepositories: [] },
      "fargate.imageRepositories: must name at least one repository (leave it out for every repository of the account)",
    ],
    [
      "a cluster name outside ECS's alphabet",
      { ...two, cluster: "my cluster" },
      `fargate.cluster: must be a cluster name (1–255 of letters, digits, '-' and '_') or a cluster ARN, got "my cluster"`,
    ],
    [
      "an ARN that is not a cluster's",
      { ...two, cluster: "arn:aws:ecs:eu-west-1:123456789012:service/research/web" },
      `fargate.cluster: must be an ECS cluster ARN (arn:aws:ecs:<region>:<account>:cluster/<name>) or a cluster name, got "arn:aws:ecs:eu-west-1:123456789012:service/research/web"`,
    ],
  ];

  test.each(cases)("%s", (_, fargate, message) => {
    let error: unknown;
    try {
      resolveCairnProps({ fargate }, "Cairn");
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(CairnPropsError);
    expect((error as Error).message).toBe(message);
  });

  test("the defaults: the stack's cluster with both capacity providers and Container Insights, no public IP", () => {
    expect(resolveCairnProps({ fargate: { vpc: given.vpc } }, "Cairn").fargate).toMatchObject({
      cluster: undefined,
      containerInsights: ecs.ContainerInsights.ENABLED,
      capacityProviders: ["FARGATE", "FARGATE_SPOT"],
      network: { vpc: given.vpc, vpcSubnets: { subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS } },
      securityGroups: undefined,
      assignPublicIp: false,
      taskRoleStatements: [],
    });
    expect(resolveCairnProps({}, "Cairn").fargate).toBeUndefined();
  });
});

describe("the functions' Fargate config", () => {
  const base = {
    CAIRN_TABLE_NAME: "t",
    CAIRN_EVENT_BUS_NAME: "b",
    CAIRN_STATE_MACHINE_ARN: "arn:aws:states:eu-west-1:123456789012:stateMachine:m",
  };
  const fargateEnv = {
    CAIRN_FARGATE_CLUSTER_ARN: "arn:aws:ecs:eu-west-1:123456789012:cluster/research",
    CAIRN_FARGATE_SUBNETS: "subnet-0aaa1111",
    CAIRN_FARGATE_SECURITY_GROUPS: "sg-0123abcd",
    CAIRN_FARGATE_ASSIGN_PUBLIC_IP: "false",
    CAIRN_FARGATE_EXECUTION_ROLE_ARN: "arn:aws:iam::123456789012:role/exec",
    CAIRN_FARGATE_TASK_ROLE_ARN: "arn:aws:iam::123456789012:role/task",
    CAIRN_FARGATE_LOG_GROUP_NAME: "kernels",
    CAIRN_FARGATE_CAPACITY_PROVIDERS: "FARGATE,FARGATE_SPOT",
  };

  test("absent without the cluster's ARN", () => {
    expect(loadConfig(base).fargate).toBeUndefined();
  });

  test.each(
    Object.keys(fargateEnv).filter(
      (k) => k !== "CAIRN_FARGATE_CLUSTER_ARN" && k !== "CAIRN_FARGATE_ASSIGN_PUBLIC_IP",
    ),
  )("%s is required with the cluster's ARN", (key) => {
    expect(() => loadConfig({ ...base, ...fargateEnv, [key]: undefined })).toThrow(
      new ConfigError(`environment variable ${key} is required when CAIRN_FARGATE_CLUSTER_ARN is set`),
    );
  });

  test.each([
    [
      "CAIRN_FARGATE_SUBNETS",
      "subnet-1,vpc-2",
      `environment variable CAIRN_FARGATE_SUBNETS must be 1 to 16 comma-separated subnet ids, got "subnet-1,vpc-2"`,
    ],
    [
      "CAIRN_FARGATE_CAPACITY_PROVIDERS",
      "FARGATE,FARGATE",
      `environment variable CAIRN_FARGATE_CAPACITY_PROVIDERS names a capacity provider twice: "FARGATE,FARGATE"`,
    ],
    [
      "CAIRN_FARGATE_ASSIGN_PUBLIC_IP",
      "yes",
      `environment variable CAIRN_FARGATE_ASSIGN_PUBLIC_IP must be true or false, got "yes"`,
    ],
    [
      "CAIRN_FARGATE_CLUSTER_ARN",
      "research",
      `environment variable CAIRN_FARGATE_CLUSTER_ARN must be an ECS cluster ARN, got "research"`,
    ],
  ])("%s=%s is refused", (key, value, message) => {
    expect(() => loadConfig({ ...base, ...fargateEnv, [key]: value })).toThrow(new ConfigError(message));
  });
});
