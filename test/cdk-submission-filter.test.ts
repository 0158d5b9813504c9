/**
 * The `submissionFilter` prop: the coordinator, and only it, may invoke
 * exactly the filter's function and is told its ARN, timeout and failure mode; without the prop
 * no function may invoke any Lambda function; impossible values fail at synth naming the prop;
 * cdk-nag finds nothing with the prop set.
 */
import { App, Duration, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Cairn } from "../lib/cairn.ts";
import { CairnStack } from "../lib/cairn-stack.ts";
import { CairnPropsError } from "../lib/errors.ts";
import type { CairnProps } from "../lib/props.ts";
import { loadConfig } from "../functions/config.ts";
import { resourcesOf, synthesize, TEST_ENV, type CfnTemplate, type Synthesized } from "./cdk-synth.ts";

const FILTER_ARN = "arn:aws:lambda:eu-west-1:123456789012:function:cairn-filter";

interface Statement {
  readonly Effect: string;
  readonly Action: string | string[];
  readonly Resource?: unknown;
}
const list = <T>(x: T | T[]): T[] => (Array.isArray(x) ? x : [x]);

/**
 * Every statement granting a lambda: action to a role of the functions, with the roles its policy
 * is on (the state machines' roles invoke the stage functions, which is their business).
 */
function invokeGrants(stack: CairnStack, json: CfnTemplate): { roles: unknown; statement: Statement }[] {
  const functionRoles = [...stack.cairn.functions.values()].map((fn) =>
    JSON.stringify({ Ref: stack.getLogicalId(fn.role!.node.defaultChild as never) }),
  );
  const onFunctionRoles = ([, policy]: [string, CfnTemplate["Resources"][string]]) =>
    list(policy.Properties?.["Roles"] as unknown[]).some((r) => functionRoles.includes(JSON.stringify(r)));
  return resourcesOf(json, "AWS::IAM::Policy")
    .filter(onFunctionRoles)
    .flatMap(([, policy]) =>
      (policy.Properties?.["PolicyDocument"] as { Statement: Statement[] }).Statement.filter((st) =>
        list(st.Action).some((a) => a.startsWith("lambda:")),
      ).map((statement) => ({ roles: policy.Properties?.["Roles"], statement })),
    );
}

describe("with a submission filter", () => {
  let s: Synthesized;
  beforeAll(() => {
    s = synthesize(
      {
        cairn: {
          submissionFilter: { functionArn: FILTER_ARN, timeout: Duration.seconds(2), onFailure: "accept" },
        },
      },
      { stackName: "Filtered", bundle: false },
    );
  }, 300_000);
  afterAll(() => s?.cleanup());

  test("cdk-nag finds nothing", () => {
    expect(
      s.violations.map(
        (v) => `${v.ruleName}: ${v.violatingConstructs.map((c) => c.constructPath).join(", ")}`,
      ),
    ).toEqual([]);
  });

  test("the coordinator alone may invoke the filter, and nothing else", () => {
    const coordinatorRole = s.stack.getLogicalId(
      s.stack.cairn.functions.get("Coordinator")!.role!.node.defaultChild as never,
    );
    expect(invokeGrants(s.stack, s.json)).toEqual([
      {
        roles: [{ Ref: coordinatorRole }],
        statement: { Effect: "Allow", Action: "lambda:InvokeFunction", Resource: FILTER_ARN },
      },
    ]);
  });

  test("the coordinator is told the filter's ARN, timeout and failure mode; no other function is", () => {
    const coordinator = s.stack.getLogicalId(
      s.stack.cairn.functions.get("Coordinator")!.node.defaultChild as never,
    );
    for (const [id, fn] of resourcesOf(s.json, "AWS::Lambda::Function")) {
      const vars = (fn.Properties?.["Environment"] as { Variables: Record<string, unknown> }).Variables;
      const filter = Object.fromEntries(
        Object.entries(vars).filter(([k]) => k.startsWith("CAIRN_SUBMISSION_FILTER")),
      );
      if (id === coordinator) {
        expect(filter).toEqual({
          CAIRN_SUBMISSION_FILTER_ARN: FILTER_ARN,
          CAIRN_SUBMISSION_FILTER_TIMEOUT_MS: "2000",
          CAIRN_SUBMISSION_FILTER_ON_FAILURE: "accept",
        });
      } else expect(filter, id).toEqual({});
    }
  });
});

describe("the coordinator reads the filter from its environment (functions/config.ts)", () => {
  const REQUIRED = {
    CAIRN_TABLE_NAME: "t",
    CAIRN_EVENT_BUS_NAME: "b",
    CAIRN_STATE_MACHINE_ARN: "arn:aws:states:eu-west-1:123456789012:stateMachine:m",
  };
  test("a Lambda function, with the defaults: 5000 ms, fail-closed", () => {
    expect(loadConfig({ ...REQUIRED, CAIRN_SUBMISSION_FILTER_ARN: FILTER_ARN }).submissionFilter).toEqual({
      target: { kind: "lambda", functionArn: FILTER_ARN },
      timeoutMs: 5000,
      onFailure: "reject",
    });
  });
  test("a local module, fail-open", () => {
    expect(
      loadConfig({
        ...REQUIRED,
        CAIRN_SUBMISSION_FILTER_MODULE: "/abs/filter.mjs",
        CAIRN_SUBMISSION_FILTER_TIMEOUT_MS: "250",
        CAIRN_SUBMISSION_FILTER_ON_FAILURE: "accept",
      }).submissionFilter,
    ).toEqual({ target: { kind: "module", path: "/abs/filter.mjs" }, timeoutMs: 250, onFailure: "accept" });
  });
  test("none set (or set empty): no filter", () => {
    expect(loadConfig({ ...REQUIRED, CAIRN_SUBMISSION_FILTER_MODULE: "" }).submissionFilter).toBeUndefined();
  });
  test.each([
    [
      { CAIRN_SUBMISSION_FILTER_ARN: FILTER_ARN, CAIRN_SUBMISSION_FILTER_MODULE: "/f.mjs" },
      "environment variables CAIRN_SUBMISSION_FILTER_ARN and CAIRN_SUBMISSION_FILTER_MODULE are exclusive: set one",
    ],
    [
      { CAIRN_SUBMISSION_FILTER_ARN: "cairn-filter" },
      'environment variable CAIRN_SUBMISSION_FILTER_ARN must be a Lambda function ARN, got "cairn-filter"',
    ],
    [
      { CAIRN_SUBMISSION_FILTER_ARN: FILTER_ARN, CAIRN_SUBMISSION_FILTER_ON_FAILURE: "open" },
      'environment variable CAIRN_SUBMISSION_FILTER_ON_FAILURE must be accept or reject, got "open"',
    ],
  ])("%j is refused", (env, message) => {
    expect(() => loadConfig({ ...REQUIRED, ...env })).toThrow(message);
  });
});

test("without the prop no function may invoke a Lambda function", () => {
  const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
  const stack = new CairnStack(app, "Plain", { env: TEST_ENV });
  expect(invokeGrants(stack, Template.fromStack(stack).toJSON() as CfnTemplate)).toEqual([]);
});

describe("impossible filter props fail at synth, naming the prop", () => {
  const cases: [string, CairnProps["submissionFilter"], string][] = [
    [
      "an ARN that is not a function's",
      { functionArn: "arn:aws:sqs:eu-west-1:123456789012:q" },
      'submissionFilter.functionArn: must be a Lambda function ARN (arn:aws:lambda:<region>:<account>:function:<name>[:<qualifier>]), got "arn:aws:sqs:eu-west-1:123456789012:q"',
    ],
    [
      "a timeout longer than the coordinator can wait",
      { functionArn: FILTER_ARN, timeout: Duration.minutes(1) },
      "submissionFilter.timeout: must be from 100 ms to 30 s (the coordinator waits for it within its own 60 s), got 60000 ms",
    ],
    [
      "an unknown failure mode",
      { functionArn: FILTER_ARN, onFailure: "maybe" as never },
      'submissionFilter.onFailure: must be "accept" or "reject", got "maybe"',
    ],
  ];
  test.each(cases)("%s", (_, submissionFilter, message) => {
    let thrown: unknown;
    try {
      new Cairn(new Stack(new App(), "S"), "Cairn", { ...(submissionFilter ? { submissionFilter } : {}) });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(CairnPropsError);
    expect((thrown as Error).message).toBe(message);
  });
});
