/**
 * bench/aws-cost.ts: the AWS price of sessions, the quota-bound ceiling, the fixed and the idle
 * agent's monthly cost, worked out by hand from given counts and the price list.
 */
import { describe, expect, test } from "vitest";
import {
  fixedMonthly,
  fmtDollars,
  idleAgentMonthly,
  modeledInvocations,
  priceOf,
  quotaCeiling,
  sqsRequests,
  type MeasuredCounts,
} from "../bench/aws-cost.ts";
import {
  AWS_PRICES,
  DEFAULT_QUOTAS,
  LAMBDA_PLATFORM_LOG_BYTES,
  SECONDS_PER_MONTH,
} from "../bench/aws-prices.ts";
import { fixedResources } from "../bench/aws-report.ts";
import { FunctionLogCapture } from "../bench/aws-usage.ts";
import { FUNCTIONS, QUEUES, STATE_MACHINES } from "../functions/topology/index.ts";

/** 200 sessions, in round figures. */
const COUNTS: MeasuredCounts = {
  sessions: 200,
  transitions: 200 * 40,
  executionsStarted: 200,
  taskCallbacks: 200 * 8,
  lambda: [
    {
      name: "Coordinator",
      invocations: 100,
      milliseconds: 100 * 200,
      memoryMiB: 512,
      underStateMachine: false,
    },
    {
      name: "EnterStage",
      invocations: 200 * 8,
      milliseconds: 200 * 8 * 50,
      memoryMiB: 256,
      underStateMachine: true,
    },
  ],
  events: 200 * 6,
  queues: [
    { name: "CoordinatorQueue", fifo: false, messages: 200, batches: 20 },
    { name: "PlacementQueue", fifo: true, messages: 400, batches: 40 },
  ],
  agentQueueMessages: 200 * 2,
  dynamoDb: { readUnits: 200 * 10, writeUnits: 200 * 20, failedWrites: 200 },
  functionLogBytes: 1024 ** 3 / 1000,
};

describe("the AWS price of measured sessions", () => {
  test("each service's quantity and dollars, scaled from the measured 200 to 1,000 sessions", () => {
    const price = priceOf(COUNTS, 1_000);
    const byItem = new Map(price.lines.map((l) => [l.item, l]));
    const expectLine = (item: string, quantity: number, dollars: number) => {
      expect(byItem.get(item)?.quantity, item).toBeCloseTo(quantity, 6);
      expect(byItem.get(item)?.dollars, item).toBeCloseTo(dollars, 9);
    };
    expectLine("Step Functions state transitions", 40_000, 1.0);
    const invocations = 5 * (100 + 1_600);
    expectLine("Lambda requests", invocations, invocations * 0.2e-6);
    // 100 × 0.2 s × 0.5 GB + 1,600 × 0.05 s × 0.25 GB = 10 + 20 GB-s, × 5.
    expectLine("Lambda duration (Arm)", 150, 150 * 0.0000133334);
    expectLine("EventBridge events", 6_000, 0.006);
    // Standard: 200 + 2 × 20 coordinator requests, 400 agent messages × 3; FIFO: 400 + 2 × 40.
    expectLine("SQS requests, standard queues", 5 * (240 + 1_200), 5 * 1_440 * 0.4e-6);
    expectLine("SQS requests, FIFO queues", 5 * 480, 5 * 480 * 0.5e-6);
    // A refused write is billed a unit.
    expectLine("DynamoDB write request units", 5 * 4_200, 5 * 4_200 * 0.625e-6);
    expectLine("DynamoDB read request units", 10_000, 10_000 * 0.125e-6);
    const gb = 5 * (1 / 1000 + (invocations / 5) * (LAMBDA_PLATFORM_LOG_BYTES / 1024 ** 3));
    expectLine("CloudWatch Logs ingested", gb, gb * 0.5);
    // Executions, and the invocations no execution made.
    expectLine("X-Ray traces (every one sampled: the most)", 5 * 300, 5 * 300 * 5e-6);
    expect(price.dollars).toBeCloseTo(
      price.lines.reduce((s, l) => s + l.dollars, 0),
      12,
    );
    expect(price.sessions).toBe(1_000);
    // Measured as many as priced: the same lines unscaled.
    expect(priceOf(COUNTS).dollars * 5).toBeCloseTo(price.dollars, 12);
  });

  test("the Lambda duration: the functions' CPU and their calls' waits, shared by invocations", () => {
    const usage = modeledInvocations({
      functions: [
        { name: "Coordinator", invocations: 10, memoryMiB: 512, underStateMachine: false },
        { name: "EnterStage", invocations: 30, memoryMiB: 256, underStateMachine: true },
      ],
      cpuSeconds: 2,
      dynamoDbRequests: 100,
      stepFunctionsCalls: 20,
      events: 30,
      sqsSends: 10,
    });
    // 2,000 ms of CPU; 100 × 5 + 20 × 20 + 30 × 20 + 10 × 20 ms of waits: 3,700 ms in all.
    expect(usage).toEqual([
      { name: "Coordinator", invocations: 10, memoryMiB: 512, underStateMachine: false, milliseconds: 925 },
      { name: "EnterStage", invocations: 30, memoryMiB: 256, underStateMachine: true, milliseconds: 2775 },
    ]);
  });

  test("SQS requests by kind of queue", () => {
    expect(sqsRequests(COUNTS)).toEqual({ standard: 240 + 1_200, fifo: 480 });
  });

  test("dollars as the docs write them", () => {
    expect(fmtDollars(1234.567)).toBe("$1,234.57");
    expect(fmtDollars(1)).toBe("$1.00");
    expect(fmtDollars(0.0421)).toBe("$0.042");
    expect(fmtDollars(0)).toBe("$0");
  });
});

describe("the quota-bound ceiling", () => {
  test("sessions per second each default quota allows; the least binds", () => {
    const { limits, binding } = quotaCeiling(COUNTS);
    const at = (api: string) => limits.find((l) => l.api === api)!;
    expect(at("Step Functions StartExecution").sessionsPerSecond).toBe(300);
    expect(at("Step Functions state transitions").sessionsPerSecond).toBe(1_500 / 40);
    expect(at("Step Functions SendTaskSuccess/Failure").sessionsPerSecond).toBe(500 / 8);
    // (20 s + 80 s) of invocations over 200 sessions: 0.5 s each, 1,000 at once.
    expect(at("Lambda concurrent executions (invocation-seconds)").sessionsPerSecond).toBe(2_000);
    expect(at("EventBridge PutEvents (entries)").sessionsPerSecond).toBe(10_000 / 6);
    expect(at("EventBridge target invocations").sessionsPerSecond).toBe(18_750 / 3);
    expect(at("DynamoDB read units (per table)").sessionsPerSecond).toBe(4_000);
    expect(at("DynamoDB write units (per table)").sessionsPerSecond).toBe(40_000 / 21);
    expect(at("SQS FIFO SendMessage (PlacementQueue)").sessionsPerSecond).toBe(150);
    expect(limits.some((l) => l.api.includes("CoordinatorQueue"))).toBe(false);
    expect(binding.api).toBe("Step Functions state transitions");
    expect(binding.sessionsPerSecond).toBe(37.5);
  });

  test("an API a session does not call never binds", () => {
    const { limits } = quotaCeiling({ ...COUNTS, taskCallbacks: 0 });
    expect(limits.find((l) => l.api === "Step Functions SendTaskSuccess/Failure")?.sessionsPerSecond).toBe(
      Infinity,
    );
  });
});

describe("monthly costs that do not depend on sessions", () => {
  test("an idle agent: its heartbeats and its long polls", () => {
    const each = {
      events: 1,
      sqsRequests: 3,
      invocations: 1,
      gbSeconds: 0.025,
      writeUnits: 1,
      readUnits: 1.5,
      logBytes: 0,
    };
    const perHeartbeat = 1e-6 + 3 * 0.4e-6 + 0.2e-6 + 0.025 * 0.0000133334 + 0.625e-6 + 1.5 * 0.125e-6 + 5e-6;
    const polls = (SECONDS_PER_MONTH / 20) * 0.4e-6;
    expect(idleAgentMonthly(30, each)).toBeCloseTo((SECONDS_PER_MONTH / 30) * perHeartbeat + polls, 9);
    // Six times the heartbeats at 5 s.
    expect(idleAgentMonthly(5, each) - polls).toBeCloseTo(6 * (idleAgentMonthly(30, each) - polls), 9);
  });

  test("the fixed cost: alarms by metric, the dashboard, custom metrics, the triggers' long polls", () => {
    const resources = fixedResources(25);
    expect(resources.alarmMetrics).toBe(
      2 * STATE_MACHINES.length + 1 + (QUEUES.length - 1) + FUNCTIONS.length + 1,
    );
    expect(resources.polledQueues.standard + resources.polledQueues.fifo).toBe(QUEUES.length);
    const fixed = fixedMonthly({
      alarmMetrics: 20,
      dashboards: 1,
      customMetrics: 25,
      polledQueues: { standard: 3, fifo: 2 },
    });
    const polls = (SECONDS_PER_MONTH / 20) * 5;
    expect(fixed.dollars).toBeCloseTo(20 * 0.1 + 3 + 25 * 0.3 + 3 * polls * 0.4e-6 + 2 * polls * 0.5e-6, 9);
  });

  test("the price list is the one the docs cite", () => {
    expect(AWS_PRICES.region).toBe("us-east-1");
    expect(AWS_PRICES.stepFunctionsPerTransition * 1_000).toBeCloseTo(0.025, 12);
    expect(DEFAULT_QUOTAS.stepFunctionsStartExecution).toBe(300);
  });
});

describe("what the bench counts of the functions' logs", () => {
  test("JSON lines are counted and kept off the output, with the custom metrics their documents name; other lines pass", () => {
    const written: string[] = [];
    const original = process.stdout.write.bind(process.stdout);
    process.stdout.write = (chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    };
    try {
      const capture = new FunctionLogCapture(false);
      process.stdout.write("bench: a progress line\n");
      const log = JSON.stringify({ level: "INFO", message: "job finished" });
      const emf = JSON.stringify({
        _aws: {
          CloudWatchMetrics: [
            { Namespace: "Cairn/x", Dimensions: [["service", "status"]], Metrics: [{ Name: "Transitions" }] },
          ],
        },
        service: "cairn",
        status: "RUNNING",
        Transitions: 2,
      });
      process.stdout.write(`${log}\n`);
      process.stdout.write(`${emf}\n`);
      process.stdout.write(`${emf}\n`);
      capture.stop();
      expect(written).toEqual(["bench: a progress line\n"]);
      expect(capture.lines).toBe(3);
      expect(capture.bytes).toBe(log.length + 2 * emf.length + 3 * 26);
      expect([...capture.metrics]).toEqual(["Cairn/x|Transitions|service=cairn,status=RUNNING"]);
    } finally {
      process.stdout.write = original;
    }
  });
});
