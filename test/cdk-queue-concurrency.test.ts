/**
 * How much of the account's Lambda concurrency the work queues may hold: each queue's SQS event
 * source's maximum concurrency, a construct prop per queue whose defaults are the topology's (the
 * embedded runtime runs the same numbers), 12 in all, as docs/deploy.md says. An account with a
 * small quota lowers them; Lambda takes 2 to 1000.
 */
import { readFileSync } from "node:fs";
import { App, type CfnElement } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { beforeAll, describe, expect, test } from "vitest";
import { QUEUES, QueueName } from "../functions/topology/index.ts";
import { CairnStack } from "../lib/cairn-stack.ts";
import { CairnPropsError } from "../lib/errors.ts";
import { QUEUE_CONCURRENCY_PROPS, resolveCairnProps, type CairnProps } from "../lib/props.ts";
import { resourcesOf, type CfnTemplate } from "./cdk-synth.ts";

const resolved = (props: CairnProps) => resolveCairnProps(props, "Cairn").queueConcurrency;

describe("defaults", () => {
  test("each queue's default is the topology's, and they add up to the 12 docs/deploy.md states", () => {
    const defaults = resolved({});
    expect(defaults).toEqual(Object.fromEntries(QUEUES.map((q) => [q.name, q.maxConcurrency])));
    const total = Object.values(defaults).reduce((a, b) => a + b, 0);
    expect(total).toBe(12);
    const deploy = readFileSync("docs/deploy.md", "utf8");
    expect(deploy).toContain(`add up to ${total}`);
    for (const q of QUEUES) {
      expect(deploy, `docs/deploy.md names ${QUEUE_CONCURRENCY_PROPS[q.name]}`).toContain(
        `\`${QUEUE_CONCURRENCY_PROPS[q.name]}\``,
      );
    }
  });

  test("each default documented on its prop is the topology's", () => {
    const source = readFileSync("lib/props.ts", "utf8");
    const block = source.slice(
      source.indexOf("export interface CairnQueueConcurrencyProps"),
      source.indexOf("/** Each queue's prop in CairnQueueConcurrencyProps. */"),
    );
    for (const q of QUEUES) {
      const prop = QUEUE_CONCURRENCY_PROPS[q.name];
      expect(block, prop).toMatch(
        new RegExp(`@default ${q.maxConcurrency}\\n\\s*\\*/\\n\\s*readonly ${prop}\\?`),
      );
    }
  });
});

describe("bad values fail at synth, naming the queue's prop", () => {
  test.each([
    [{ reportQueue: 1 }, "queueConcurrency.reportQueue: must be an integer from 2 to 1000, got 1"],
    [
      { placementQueue: 1001 },
      "queueConcurrency.placementQueue: must be an integer from 2 to 1000, got 1001",
    ],
    [{ heartbeatQueue: 2.5 }, "queueConcurrency.heartbeatQueue: must be an integer from 2 to 1000, got 2.5"],
  ])("%j", (queueConcurrency, message) => {
    expect(() => resolved({ queueConcurrency })).toThrow(CairnPropsError);
    expect(() => resolved({ queueConcurrency })).toThrow(message);
  });

  test("a key that is no queue", () => {
    expect(() => resolved({ queueConcurrency: { sweepQueue: 2 } as never })).toThrow(
      "queueConcurrency.sweepQueue: is not a queue; the queues are coordinatorQueue, reportQueue, placementQueue, heartbeatQueue, deploymentQueue",
    );
  });
});

describe("the props reach the event sources", () => {
  let json: CfnTemplate;
  let stack: CairnStack;
  beforeAll(() => {
    const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
    stack = new CairnStack(app, "Small", {
      env: { account: "123456789012", region: "eu-west-1" },
      // Three queues down to Lambda's least: 10 in all instead of 12.
      cairn: { queueConcurrency: { reportQueue: 2, coordinatorQueue: 2, deploymentQueue: 2 } },
    });
    json = Template.fromStack(stack).toJSON() as CfnTemplate;
  }, 300_000);

  test("each queue's event source has its prop's maximum concurrency, the others the defaults", () => {
    const mappings = resourcesOf(json, "AWS::Lambda::EventSourceMapping");
    const expected: Record<QueueName, number> = {
      [QueueName.CoordinatorQueue]: 2,
      [QueueName.ReportQueue]: 2,
      [QueueName.PlacementQueue]: QUEUES.find((q) => q.name === QueueName.PlacementQueue)!.maxConcurrency,
      [QueueName.HeartbeatQueue]: QUEUES.find((q) => q.name === QueueName.HeartbeatQueue)!.maxConcurrency,
      [QueueName.DeploymentQueue]: 2,
    };
    for (const q of QUEUES) {
      const queueId = stack.getLogicalId(stack.cairn.queues.get(q.name)!.node.defaultChild as CfnElement);
      const [found] = mappings.filter(
        ([, m]) =>
          JSON.stringify(m.Properties?.["EventSourceArn"]) ===
          JSON.stringify({ "Fn::GetAtt": [queueId, "Arn"] }),
      );
      expect(found?.[1].Properties?.["ScalingConfig"], q.name).toEqual({
        MaximumConcurrency: expected[q.name],
      });
    }
    const total = mappings.reduce(
      (sum, [, m]) =>
        sum + (m.Properties?.["ScalingConfig"] as { MaximumConcurrency: number }).MaximumConcurrency,
      0,
    );
    expect(total).toBe(10);
  });
});
