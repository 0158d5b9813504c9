/**
 * One topology: the synthesized stack carries exactly what functions/topology/index.ts declares
 * (functions, queues and their event sources, rules with their patterns and targets, each state
 * machine's file and substitutions, the sweeps), and the embedded runtime declares none of it
 * itself, so the two cannot drift.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import type { CfnElement } from "aws-cdk-lib";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { EventSource } from "../functions/core/events.ts";
import {
  FUNCTIONS,
  QUEUES,
  RULES,
  STATE_MACHINES,
  SWEEPS,
  type FunctionName,
} from "../functions/topology/index.ts";
import { resourcesOf, synthesize, type Synthesized } from "./cdk-synth.ts";

let s: Synthesized;
beforeAll(() => {
  s = synthesize({}, { bundle: false });
});
afterAll(() => s.cleanup());

const logicalId = (construct: { node: { defaultChild?: unknown } }): string =>
  s.stack.getLogicalId(construct.node.defaultChild as CfnElement);
const fnId = (name: FunctionName) => logicalId(s.stack.cairn.functions.get(name)!);
const resource = (id: string) => {
  const r = s.json.Resources[id];
  if (!r) throw new Error(`no resource ${id}`);
  return r.Properties ?? {};
};

describe("the stack equals the topology", () => {
  // That each bundle is built from its declaration's entry is checked on cdk-stack's synth, which
  // bundles the functions; this one does not (about 11 s of CPU less).
  test("functions: one per declaration, with its description, memory and timeout", () => {
    expect(resourcesOf(s.json, "AWS::Lambda::Function")).toHaveLength(FUNCTIONS.length);
    for (const f of FUNCTIONS) {
      const p = resource(fnId(f.name));
      expect(p, f.name).toMatchObject({
        Description: f.description,
        MemorySize: f.memoryMiB,
        Timeout: f.timeoutSeconds,
        Handler: "index.handler",
      });
    }
  });

  test("queues: each feeds its consumer with the declared batch size, window and concurrency", () => {
    const mappings = resourcesOf(s.json, "AWS::Lambda::EventSourceMapping");
    expect(mappings).toHaveLength(QUEUES.length);
    for (const q of QUEUES) {
      const queueId = logicalId(s.stack.cairn.queues.get(q.name)!);
      const found = mappings.filter(
        ([, m]) =>
          JSON.stringify(m.Properties?.["EventSourceArn"]) ===
          JSON.stringify({ "Fn::GetAtt": [queueId, "Arn"] }),
      );
      expect(found, q.name).toHaveLength(1);
      const p = found[0]![1].Properties ?? {};
      expect(p["FunctionName"]).toEqual({ Ref: fnId(q.consumer) });
      expect(p["BatchSize"]).toBe(q.batchSize);
      expect(p["MaximumBatchingWindowInSeconds"] ?? 0).toBe(q.maxBatchingWindowSeconds);
      expect(p["ScalingConfig"]).toEqual({ MaximumConcurrency: q.maxConcurrency });
      expect(p["FunctionResponseTypes"]).toEqual(["ReportBatchItemFailures"]);
      // A queue of one FIFO group: FIFO with content-based deduplication (EventBridge requires
      // it), a FIFO dead-letter queue, and every rule targeting it names the group.
      const queue = resource(queueId);
      if (q.fifoGroup === undefined) {
        expect(queue["FifoQueue"], q.name).toBeUndefined();
        continue;
      }
      expect(queue["FifoQueue"], q.name).toBe(true);
      expect(queue["ContentBasedDeduplication"], q.name).toBe(true);
      const dlq = (queue["RedrivePolicy"] as { deadLetterTargetArn: { "Fn::GetAtt": [string, string] } })
        .deadLetterTargetArn["Fn::GetAtt"][0];
      expect(resource(dlq)["FifoQueue"], `${q.name} dead-letter queue`).toBe(true);
      const rules = [
        ...RULES.filter((r) => r.target.queue === q.name).map((r) => s.stack.cairn.rules.get(r.name)!),
        ...SWEEPS.filter((w) => w.target.queue === q.name).map((w) => s.stack.cairn.sweeps.get(w.name)!),
      ];
      expect(rules.length, q.name).toBeGreaterThan(0);
      for (const rule of rules) {
        const targets = resource(logicalId(rule))["Targets"] as {
          SqsParameters?: { MessageGroupId?: string };
        }[];
        expect(
          targets.map((t) => t.SqsParameters?.MessageGroupId),
          rule.node.id,
        ).toEqual([q.fifoGroup]);
      }
    }
  });

  test("rules: each on Cairn's bus with the declared pattern, description and target queue", () => {
    const busId = logicalId(s.stack.cairn.bus);
    const onBus = resourcesOf(s.json, "AWS::Events::Rule").filter(
      ([, r]) => JSON.stringify(r.Properties?.["EventBusName"]) === JSON.stringify({ Ref: busId }),
    );
    expect(onBus).toHaveLength(RULES.length);
    for (const rule of RULES) {
      const p = resource(logicalId(s.stack.cairn.rules.get(rule.name)!));
      expect(p["EventBusName"]).toEqual({ Ref: busId });
      expect(p["Description"]).toBe(rule.description);
      expect(p["EventPattern"], rule.name).toEqual(rule.eventPattern);
      const queueId = logicalId(s.stack.cairn.queues.get(rule.target.queue)!);
      expect((p["Targets"] as { Arn: unknown }[]).map((t) => t.Arn)).toEqual([
        { "Fn::GetAtt": [queueId, "Arn"] },
      ]);
    }
  });

  test("state machines: one per declaration, the declared file, verbatim, with each substitution bound to the declared function", () => {
    expect(resourcesOf(s.json, "AWS::StepFunctions::StateMachine")).toHaveLength(STATE_MACHINES.length);
    expect([...s.stack.cairn.stateMachines.keys()]).toEqual(STATE_MACHINES.map((m) => m.name));
    for (const machine of STATE_MACHINES) {
      const p = resource(logicalId(s.stack.cairn.stateMachines.get(machine.name)!));
      expect(p["DefinitionString"], machine.name).toBe(readFileSync(machine.file, "utf8"));
      expect(p["DefinitionSubstitutions"]).toEqual(
        Object.fromEntries(
          Object.entries(machine.substitutions).map(([key, fn]) => [
            key,
            { "Fn::GetAtt": [fnId(fn), "Arn"] },
          ]),
        ),
      );
      // <prefix>-<declared name>-<the stack's UUID>: new each time the stack is created.
      expect(p["StateMachineName"]).toEqual({
        "Fn::Join": [
          "",
          [
            expect.stringMatching(new RegExp(`^[A-Za-z0-9-]+-${machine.name}-$`)),
            { "Fn::Select": [2, { "Fn::Split": ["/", { Ref: "AWS::StackId" }] }] },
          ],
        ],
      });
    }
  });

  test("sweeps: each a schedule at the declared rate on the default bus, onto the declared queue (a FIFO queue's message group)", () => {
    expect([...s.stack.cairn.sweeps.keys()]).toEqual(SWEEPS.map((w) => w.name));
    const scheduled = resourcesOf(s.json, "AWS::Events::Rule").filter(
      ([, r]) => r.Properties?.["ScheduleExpression"],
    );
    expect(scheduled).toHaveLength(SWEEPS.length);
    for (const sweep of SWEEPS) {
      const p = resource(logicalId(s.stack.cairn.sweeps.get(sweep.name)!));
      const minutes = sweep.rateSeconds / 60;
      expect(p["ScheduleExpression"], sweep.name).toBe(`rate(${minutes} minute${minutes === 1 ? "" : "s"})`);
      expect(p["EventBusName"], sweep.name).toBeUndefined();
      const queue = s.stack.cairn.queues.get(sweep.target.queue)!;
      const group = QUEUES.find((q) => q.name === sweep.target.queue)?.fifoGroup;
      const targets = p["Targets"] as Record<string, unknown>[];
      expect(targets, sweep.name).toEqual([
        expect.objectContaining({ Arn: { "Fn::GetAtt": [logicalId(queue), "Arn"] } }),
      ]);
      // A FIFO queue's target names its group; a standard queue's none.
      expect(targets[0]!["SqsParameters"], sweep.name).toEqual(
        group !== undefined ? { MessageGroupId: group } : undefined,
      );
    }
  });
});

describe("the embedded runtime declares nothing itself", () => {
  function* tsFiles(dir: string): Generator<string> {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) yield* tsFiles(path);
      else if (path.endsWith(".ts")) yield path;
    }
  }

  test("local/runtime.ts builds functions, queues, rules, state machines and every sweep from the topology", () => {
    const text = readFileSync("local/runtime.ts", "utf8");
    const imported =
      /import\s*\{([^}]*)\}\s*from\s*"\.\.\/functions\/topology\/index\.ts"/.exec(text)?.[1] ?? "";
    for (const name of ["FUNCTIONS", "QUEUES", "RULES", "STATE_MACHINES", "SWEEPS"]) {
      expect(imported, `runtime imports ${name}`).toMatch(new RegExp(`\\b${name}\\b`));
      const uses = text.match(new RegExp(`\\b${name}\\b`, "g"))?.length ?? 0;
      expect(uses, `runtime uses ${name} beyond importing it`).toBeGreaterThan(1);
    }
  });

  test("no file under local/ repeats a topology value as a literal", () => {
    const literals = [
      ...RULES.map((r) => r.name),
      ...Object.values(EventSource),
      ...RULES.flatMap((r) => (r.eventPattern["detail-type"] as string[] | undefined) ?? []),
      ...FUNCTIONS.map((f) => f.entry),
      ...STATE_MACHINES.map((m) => m.file),
      ...STATE_MACHINES.flatMap((m) => Object.keys(m.substitutions)),
    ];
    const repeats: string[] = [];
    for (const file of tsFiles("local")) {
      const text = readFileSync(file, "utf8");
      for (const literal of literals) {
        if (
          text.includes(`"${literal}"`) ||
          text.includes(`'${literal}'`) ||
          text.includes(`\`${literal}\``)
        ) {
          repeats.push(`${file}: "${literal}"`);
        }
      }
    }
    expect(repeats).toEqual([]);
  });
});
