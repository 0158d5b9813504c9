/**
 * The CDK app's context (lib/app-context.ts, read by bin/cdk-app.ts): `-c localstack=true` leaves
 * out what LocalStack does not offer and runs the functions on x86_64; `-c fargateSubnets=…
 * -c fargateSecurityGroups=…` gives the default app the Fargate executor, offline; a value the
 * app cannot use fails the synth naming the key. Each context is synthesized as `cdk synth`
 * does it, cdk-nag included.
 */
import { App } from "aws-cdk-lib";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { AppContextError, appSettings, DEFAULT_STACK_NAME } from "../lib/app-context.ts";
import { resourcesOf, synthesize, type CfnTemplate, type Synthesized } from "./cdk-synth.ts";

/** The app's settings for `-c key=value` pairs, as `cdk synth` passes them (strings). */
const settingsFor = (context: Record<string, string>) => appSettings(new App({ context }));

const synthFor = (context: Record<string, string>): Synthesized => {
  const { stackName, cairn } = settingsFor(context);
  return synthesize({ cairn }, { stackName, bundle: false });
};

const architectures = (json: CfnTemplate) =>
  new Set(
    resourcesOf(json, "AWS::Lambda::Function").flatMap(
      ([, r]) => (r.Properties?.["Architectures"] as string[] | undefined) ?? ["x86_64"],
    ),
  );
const functionEnvironments = (json: CfnTemplate) =>
  resourcesOf(json, "AWS::Lambda::Function").map(
    ([, r]) =>
      (r.Properties?.["Environment"] as { Variables?: Record<string, unknown> } | undefined)?.Variables ?? {},
  );

describe("the default app", () => {
  let synth: Synthesized;
  beforeAll(() => {
    synth = synthFor({});
  }, 300_000);
  afterAll(() => synth?.cleanup());

  test("is the stack Cairn with a dashboard, the schema registry, arm64 functions and no Fargate", () => {
    expect(synth.stack.stackName).toBe(DEFAULT_STACK_NAME);
    expect(resourcesOf(synth.json, "AWS::CloudWatch::Dashboard")).toHaveLength(1);
    expect(resourcesOf(synth.json, "AWS::EventSchemas::Registry")).toHaveLength(1);
    expect(synth.json.Outputs?.["DashboardName"]).toBeDefined();
    expect(architectures(synth.json)).toEqual(new Set(["arm64"]));
    expect(resourcesOf(synth.json, "AWS::ECS::Cluster")).toEqual([]);
    expect(synth.violations).toEqual([]);
  });
});

describe("-c localstack=true", () => {
  let synth: Synthesized;
  beforeAll(() => {
    synth = synthFor({ localstack: "true", ephemeral: "true" });
  }, 300_000);
  afterAll(() => synth?.cleanup());

  test("leaves out the schema registry and the dashboard, keeps the alarms, and runs the functions on x86_64", () => {
    expect(resourcesOf(synth.json, "AWS::CloudWatch::Dashboard")).toEqual([]);
    expect(synth.json.Outputs?.["DashboardName"]).toBeUndefined();
    expect(
      Object.values(synth.json.Resources).filter((r) => r.Type.startsWith("AWS::EventSchemas::")),
    ).toEqual([]);
    expect(resourcesOf(synth.json, "AWS::CloudWatch::Alarm").length).toBeGreaterThan(0);
    expect(architectures(synth.json)).toEqual(new Set(["x86_64"]));
    // The outputs the CLI and the agents read are all there.
    for (const key of ["TableName", "EventBusName", "StateMachineArn", "AgentQueuePrefix"]) {
      expect(synth.json.Outputs?.[key]).toBeDefined();
    }
  });

  test("is cdk-nag clean", () => {
    expect(synth.violations).toEqual([]);
  });
});

describe("-c fargateSubnets=… -c fargateSecurityGroups=…", () => {
  let synth: Synthesized;
  beforeAll(() => {
    synth = synthFor({ fargateSubnets: "subnet-1234,subnet-5678", fargateSecurityGroups: "sg-1234" });
  }, 300_000);
  afterAll(() => synth?.cleanup());

  test("gives the default app the Fargate executor in those subnets with that security group", () => {
    expect(resourcesOf(synth.json, "AWS::ECS::Cluster")).toHaveLength(1);
    // The stack makes no security group of its own: the given one is used as it is.
    expect(resourcesOf(synth.json, "AWS::EC2::SecurityGroup")).toEqual([]);
    const fargate = functionEnvironments(synth.json).filter((v) => v["CAIRN_FARGATE_SUBNETS"] !== undefined);
    expect(fargate.length).toBeGreaterThan(0);
    for (const variables of fargate) {
      expect(variables).toMatchObject({
        CAIRN_FARGATE_SUBNETS: "subnet-1234,subnet-5678",
        CAIRN_FARGATE_SECURITY_GROUPS: "sg-1234",
        CAIRN_FARGATE_ASSIGN_PUBLIC_IP: "false",
      });
    }
  });

  test("is cdk-nag clean", () => {
    expect(synth.violations).toEqual([]);
  });
});

describe("a context value the app cannot use fails naming the key", () => {
  test.each([
    [
      { fargateSubnets: "subnet-1234" },
      "context fargateSecurityGroups: is required with fargateSubnets: the security groups of Fargate kernels (sg-…[,sg-…])",
    ],
    [
      { fargateSecurityGroups: "sg-1234" },
      "context fargateSubnets: is required with fargateSecurityGroups: the subnets Fargate kernels run in (subnet-…,subnet-…)",
    ],
    [
      { fargateSubnets: "subnet-1234,subnet_5678", fargateSecurityGroups: "sg-1234" },
      'context fargateSubnets: "subnet_5678" is not an id of the form subnet- and up to 17 hexadecimal digits (subnet-0123456789abcdef0)',
    ],
    [
      { fargateSubnets: "subnet-1234", fargateSecurityGroups: "sg-12G4,vpc-1234" },
      'context fargateSecurityGroups: "sg-12G4", "vpc-1234" are not ids of the form sg- and up to 17 hexadecimal digits (sg-0123456789abcdef0)',
    ],
    [
      { fargateSubnets: "subnet-1234,", fargateSecurityGroups: "sg-1234" },
      'context fargateSubnets: "" is not an id of the form subnet- and up to 17 hexadecimal digits (subnet-0123456789abcdef0)',
    ],
    [
      { fargateSubnets: "subnet-1234,subnet-1234", fargateSecurityGroups: "sg-1234" },
      "context fargateSubnets: names subnet-1234 twice",
    ],
    [
      {
        fargateSubnets: "subnet-1234",
        fargateSecurityGroups: ["sg-1", "sg-2", "sg-3", "sg-4", "sg-5", "sg-6"].join(","),
      },
      "context fargateSecurityGroups: names 6 ids; RunTask takes at most 5",
    ],
    [{ localstack: "yes" }, 'context localstack: must be "true" or "false", got "yes"'],
    [
      { stackName: "1cairn" },
      'context stackName: must be a CloudFormation stack name (a letter, then up to 127 letters, digits, hyphens), got "1cairn"',
    ],
  ])("%j", (context, message) => {
    expect(() => settingsFor(context)).toThrow(AppContextError);
    expect(() => settingsFor(context)).toThrow(message);
  });

  test("17 subnets are more than RunTask takes", () => {
    const subnets = Array.from({ length: 17 }, (_, i) => `subnet-${(i + 10).toString(16)}`).join(",");
    expect(() => settingsFor({ fargateSubnets: subnets, fargateSecurityGroups: "sg-1" })).toThrow(
      "context fargateSubnets: names 17 ids; RunTask takes at most 16",
    );
  });
});
