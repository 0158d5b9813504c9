/**
 * The AWS lines of `bench:local`: what the measured sessions would cost in us-east-1 at list
 * prices, the quota-bound ceiling, the fixed monthly cost and an idle agent's. Computed by
 * aws-cost.ts from the counts the run measured and the stack's topology.
 */
import { FUNCTIONS, QUEUES, STATE_MACHINES } from "../functions/topology/index.ts";
import {
  fixedMonthly,
  fmtDollars,
  idleAgentMonthly,
  priceOf,
  quotaCeiling,
  type FixedResources,
  type HeartbeatUsage,
  type MeasuredCounts,
} from "./aws-cost.ts";
import { AWS_PRICES, LAMBDA_PLATFORM_LOG_BYTES } from "./aws-prices.ts";

const PER = 1_000;

/**
 * An idle agent's heartbeat, alone in its batch: its event; EventBridge's SendMessage to the
 * heartbeat queue, the trigger's ReceiveMessage and DeleteMessageBatch; one coordinator
 * invocation (512 MB, taken as 50 ms: one conditional UpdateItem and the liveness check's roster
 * read); the agent item's write (under 1 KB: one unit) and a read unit and a half (the roster:
 * a Query of the listings index and a consistent read of the agent); the platform's log lines and
 * a metrics document.
 */
export const IDLE_HEARTBEAT: HeartbeatUsage = {
  events: 1,
  sqsRequests: 3,
  invocations: 1,
  gbSeconds: 0.05 * (512 / 1024),
  writeUnits: 1,
  readUnits: 1.5,
  logBytes: LAMBDA_PLATFORM_LOG_BYTES + 400,
};

/** The stack's resources that cost by the month, from the topology (lib/monitoring.ts makes them). */
export function fixedResources(customMetrics: number): FixedResources {
  const workQueuesWithDlq = QUEUES.filter((q) => q.name !== "HeartbeatQueue").length;
  return {
    // Failed-or-timed-out executions per state machine (two metrics each), the delivery DLQ,
    // each work queue's DLQ, each function's errors, stuck sessions.
    alarmMetrics: 2 * STATE_MACHINES.length + 1 + workQueuesWithDlq + FUNCTIONS.length + 1,
    dashboards: 1,
    customMetrics,
    polledQueues: {
      standard: QUEUES.filter((q) => q.fifoGroup === undefined).length,
      fifo: QUEUES.filter((q) => q.fifoGroup !== undefined).length,
    },
  };
}

export function printAwsPrice(
  counts: MeasuredCounts,
  customMetrics: number,
  heartbeatSeconds: number,
  sweepSeconds: number,
): void {
  const line = (label: string, figures: string) => console.log(`${label.padEnd(44)} ${figures}`);
  console.log("");
  console.log(
    `AWS, ${AWS_PRICES.region} list prices (bench/aws-prices.ts), from the counts above` +
      ` (agents' heartbeats apart; heartbeats every ${heartbeatSeconds} s, sweep every ${sweepSeconds} s;` +
      ` Lambda duration: the runtime's CPU and each AWS call's wait, bench/aws-prices.ts):`,
  );
  const price = priceOf(counts, PER);
  for (const l of price.lines) {
    const perSession = l.quantity / PER;
    line(
      `  ${l.item}`,
      `${fmtNumber(perSession)} ${l.unit} per session   ${fmtDollars(l.dollars)} per 1,000 sessions`,
    );
  }
  line(
    "AWS price of 1,000 sessions",
    `${fmtDollars(price.dollars)} (${fmtDollars(price.dollars / PER)} per session)`,
  );
  const { limits, binding } = quotaCeiling(counts);
  line(
    "quota ceiling",
    `${binding.sessionsPerSecond.toFixed(1)} sessions/s, bound by ${binding.api} ` +
      `(${fmtNumber(binding.perSession)} per session at ${binding.quotaPerSecond}/s)`,
  );
  for (const l of [...limits].sort((a, b) => a.sessionsPerSecond - b.sessionsPerSecond)) {
    line(
      `  ${l.api}`,
      `${fmtNumber(l.perSession)} per session, ${l.quotaPerSecond}/s: ${l.sessionsPerSecond.toFixed(1)} sessions/s`,
    );
  }
  const fixed = fixedMonthly(fixedResources(customMetrics));
  line(
    "fixed cost per month",
    `${fmtDollars(fixed.dollars)} (${fixed.lines.map((l) => `${l.item} ${fmtDollars(l.dollars)}`).join(", ")})`,
  );
  line(
    "idle agent per month",
    `${fmtDollars(idleAgentMonthly(30, IDLE_HEARTBEAT))} heartbeating every 30 s (${fmtDollars(idleAgentMonthly(5, IDLE_HEARTBEAT))} every 5 s)`,
  );
}

function fmtNumber(value: number): string {
  if (value >= 100) return value.toFixed(0);
  if (value >= 1) return value.toFixed(2);
  return value.toPrecision(2);
}
