/**
 * `cdk deploy` after `cdk destroy`. Resources the stack retains on destroy (by
 * default the table and every log group) stay in the account; a second stack that asks for one of
 * their names fails with "already exists". So: deploy the template twice, as CloudFormation
 * would, each time with a new stack id, and no log group (nor any retained resource) may get the
 * same name twice. Nor may a state machine: a deleted one stays DELETING until each of its
 * executions makes its next transition, and its name with it.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { familyExecutions } from "../dashboard/deployments-page.ts";
import { StateMachineName } from "../functions/topology/index.ts";
import { resourcesOf, synthesize, TEST_ENV, type CfnTemplate, type Synthesized } from "./cdk-synth.ts";

/** One creation of the stack: what CloudFormation substitutes for pseudo parameters. */
interface Deployment {
  readonly stackName: string;
  readonly stackUuid: string;
}

const stackId = (d: Deployment) =>
  `arn:aws:cloudformation:${TEST_ENV.region}:${TEST_ENV.account}:stack/${d.stackName}/${d.stackUuid}`;

/**
 * A property value as CloudFormation would resolve it in one deployment. A reference to another
 * resource stands for that resource's physical id, which CloudFormation generates anew (with a
 * random suffix) on every creation; everything else resolves from the template and the deployment.
 */
function resolve(value: unknown, d: Deployment): string {
  if (typeof value === "string") return value;
  if (typeof value !== "object" || value === null) throw new Error(`cannot resolve ${JSON.stringify(value)}`);
  const [fn, arg] = Object.entries(value)[0] as [string, unknown];
  switch (fn) {
    case "Ref": {
      const pseudo: Record<string, string> = {
        "AWS::StackId": stackId(d),
        "AWS::StackName": d.stackName,
        "AWS::Region": TEST_ENV.region,
        "AWS::AccountId": TEST_ENV.account,
        "AWS::Partition": "aws",
        "AWS::URLSuffix": "amazonaws.com",
      };
      return pseudo[arg as string] ?? `${String(arg)}-generated-${d.stackUuid}`;
    }
    case "Fn::GetAtt":
      return `${(arg as string[]).join(".")}-generated-${d.stackUuid}`;
    case "Fn::Join": {
      const [sep, parts] = arg as [string, unknown[]];
      return parts.map((p) => resolve(p, d)).join(sep);
    }
    case "Fn::Split": {
      const [sep, source] = arg as [string, unknown];
      return JSON.stringify(resolve(source, d).split(sep));
    }
    case "Fn::Select": {
      const [index, list] = arg as [number | string, unknown];
      const items = JSON.parse(resolve(list, d)) as string[];
      const item = items[Number(index)];
      if (item === undefined) throw new Error(`Fn::Select ${String(index)} out of range`);
      return item;
    }
    default:
      throw new Error(`cannot resolve ${fn}`);
  }
}

/** Name properties CloudFormation generates when they are left out. */
const NAME_PROPERTIES = ["LogGroupName", "TableName", "QueueName", "TopicName", "BucketName"];

/** Every physical name the template fixes for a log group or a retained resource. */
function namedResources(json: CfnTemplate): { id: string; type: string; property: string; value: unknown }[] {
  return Object.entries(json.Resources).flatMap(([id, r]) => {
    const retained = r.DeletionPolicy === "Retain" || r.DeletionPolicy === "RetainExceptOnCreate";
    if (!retained && r.Type !== "AWS::Logs::LogGroup") return [];
    return NAME_PROPERTIES.filter((p) => r.Properties?.[p] !== undefined).map((property) => ({
      id,
      type: r.Type,
      property,
      value: r.Properties![property],
    }));
  });
}

let s: Synthesized;
beforeAll(() => {
  s = synthesize({}, { bundle: false });
}, 300_000);
afterAll(() => s.cleanup());

describe("deploying again after a destroy", () => {
  const first = { stackName: "Cairn", stackUuid: "8b1e2c40-0a57-11f1-9d5e-0a1b2c3d4e5f" };
  const second = { stackName: "Cairn", stackUuid: "f3c9a610-0a58-11f1-8c41-06f7e8d9c0b1" };

  test("every log group is retained by default, so its name is what could collide", () => {
    const groups = resourcesOf(s.json, "AWS::Logs::LogGroup");
    // One per function, the state machine's, the kernel log group.
    expect(groups.length).toBeGreaterThanOrEqual(4);
    for (const [id, g] of groups) expect(g.DeletionPolicy, id).toBe("Retain");
  });

  test("no log group or retained resource gets the same name in a second deployment of the stack", () => {
    const named = namedResources(s.json);
    // The state machine's vended-logs group is the one with a name (the others are CloudFormation's).
    expect(named.map((n) => n.property)).toContain("LogGroupName");
    for (const n of named) {
      const before = resolve(n.value, first);
      const after = resolve(n.value, second);
      expect(after, `${n.type} ${n.id} ${n.property} (${before}) is fixed: a redeploy collides`).not.toBe(
        before,
      );
      // Still a valid log group name: at most 512 of [.-_/#A-Za-z0-9].
      if (n.property === "LogGroupName") {
        expect(after).toMatch(/^\/aws\/vendedlogs\/states\/[.\-_/#A-Za-z0-9]+$/);
        expect(after.length).toBeLessThanOrEqual(512);
      }
    }
  });

  test("the state machine's group keeps the vended-logs prefix and ends with the stack's unique id", () => {
    const [[, group]] = resourcesOf(s.json, "AWS::Logs::LogGroup").filter(
      ([, g]) => g.Properties?.["LogGroupName"] !== undefined,
    ) as [[string, CfnTemplate["Resources"][string]]];
    const name = resolve(group.Properties!["LogGroupName"], first);
    expect(name.startsWith("/aws/vendedlogs/states/")).toBe(true);
    expect(name.endsWith(`-SessionLifecycle-${first.stackUuid}`)).toBe(true);
  });

  test("every state machine gets a new name in a second deployment: at most 80 characters, one prefix for all", () => {
    const machines = resourcesOf(s.json, "AWS::StepFunctions::StateMachine");
    expect(machines.map(([, m]) => m.Properties?.["StateMachineName"] !== undefined)).toEqual(
      Object.values(StateMachineName).map(() => true),
    );
    const names = new Map<string, string>();
    for (const [id, m] of machines) {
      const before = resolve(m.Properties!["StateMachineName"], first);
      const after = resolve(m.Properties!["StateMachineName"], second);
      expect(after, `${id}: a redeploy would wait for the deleted machine's name`).not.toBe(before);
      expect(after.endsWith(`-${second.stackUuid}`), after).toBe(true);
      // Step Functions' rule: 1–80 characters, no whitespace, brackets, wildcards or punctuation.
      expect(after).toMatch(/^[A-Za-z0-9_-]{1,80}$/);
      const declared = Object.values(StateMachineName).find((n) => before.includes(`-${n}-`));
      expect(declared, before).toBeDefined();
      names.set(declared!, before);
    }
    const prefixes = [...names].map(([declared, name]) => name.slice(0, name.indexOf(`-${declared}-`)));
    expect(new Set(prefixes).size).toBe(1);
    // The dashboard finds the families' executions from the session lifecycle's ARN (the CLI's
    // StateMachineArn output).
    const arn = (name: string) =>
      `arn:aws:states:${TEST_ENV.region}:${TEST_ENV.account}:stateMachine:${name}`;
    const session = {
      kind: "console" as const,
      stateMachineArn: arn(names.get(StateMachineName.SessionLifecycle)!),
    };
    for (const family of [StateMachineName.DeploymentLifecycle, StateMachineName.RouteLifecycle] as const) {
      expect(familyExecutions(session, family)).toEqual({
        kind: "console",
        stateMachineArn: arn(names.get(family)!),
      });
    }
  });
});
