/**
 * What the sessions a benchmark measured would cost on AWS, and how many of them per second the
 * default quotas allow: pure arithmetic over measured counts and the price list (aws-prices.ts),
 * so that `bench:local` and docs/cost.md give the same figures from the same inputs.
 */
import {
  AWS_PRICES,
  CALL_LATENCY_MS,
  DEFAULT_QUOTAS,
  LAMBDA_PLATFORM_LOG_BYTES,
  LAMBDA_SQS_POLLERS,
  LONG_POLL_SECONDS,
  SECONDS_PER_MONTH,
} from "./aws-prices.ts";

export interface LambdaUsage {
  readonly name: string;
  readonly invocations: number;
  /** Time spent in the invocations, all together. */
  readonly milliseconds: number;
  readonly memoryMiB: number;
  /** Invoked by a state machine's Task state: its trace is the execution's, not one of its own. */
  readonly underStateMachine: boolean;
}

export interface QueueUsage {
  readonly name: string;
  readonly fifo: boolean;
  /** Messages sent to it (one SendMessage each: EventBridge's SQS target does not batch). */
  readonly messages: number;
  /** Batches its consumer took (one ReceiveMessage and one DeleteMessageBatch each). */
  readonly batches: number;
}

/** Totals measured over `sessions` sessions. */
export interface MeasuredCounts {
  readonly sessions: number;
  readonly transitions: number;
  readonly executionsStarted: number;
  /** SendTaskSuccess and SendTaskFailure calls. */
  readonly taskCallbacks: number;
  readonly lambda: readonly LambdaUsage[];
  /** Events put on the bus (entries), agents' heartbeats apart: they are the idle agent's cost. */
  readonly events: number;
  readonly queues: readonly QueueUsage[];
  /** Messages on agents' own queues: each sent, received and deleted. */
  readonly agentQueueMessages: number;
  readonly dynamoDb: {
    readonly readUnits: number;
    readonly writeUnits: number;
    /** Writes refused by their condition: DynamoDB bills each at least one write unit. */
    readonly failedWrites: number;
  };
  /** Bytes of the functions' own log lines (their JSON logs and metrics documents). */
  readonly functionLogBytes: number;
}

/** What the functions did, for the Lambda duration the price assumes (modeledInvocations). */
export interface FunctionWork {
  /** Invocations of each function, and its memory. */
  readonly functions: readonly {
    readonly name: string;
    readonly invocations: number;
    readonly memoryMiB: number;
    readonly underStateMachine: boolean;
  }[];
  /** CPU seconds of the process the functions ran in (with the embedded services: an upper bound). */
  readonly cpuSeconds: number;
  readonly dynamoDbRequests: number;
  readonly stepFunctionsCalls: number;
  /** Events put (entries; a request may carry up to ten: an upper bound on requests). */
  readonly events: number;
  readonly sqsSends: number;
}

/**
 * Each function's time in its invocations, as Lambda would bill it: the CPU the functions spent
 * and the calls they waited on at CALL_LATENCY_MS, shared among the functions by their
 * invocations.
 */
export function modeledInvocations(work: FunctionWork): LambdaUsage[] {
  const waitMs =
    work.dynamoDbRequests * CALL_LATENCY_MS.dynamoDb +
    work.stepFunctionsCalls * CALL_LATENCY_MS.stepFunctions +
    work.events * CALL_LATENCY_MS.eventBridge +
    work.sqsSends * CALL_LATENCY_MS.sqs;
  const totalMs = work.cpuSeconds * 1000 + waitMs;
  const invocations = sum(work.functions.map((f) => f.invocations));
  return work.functions.map((f) => ({
    ...f,
    milliseconds: invocations === 0 ? 0 : (totalMs * f.invocations) / invocations,
  }));
}

export interface PriceLine {
  readonly item: string;
  readonly quantity: number;
  readonly unit: string;
  readonly dollars: number;
}

export interface Price {
  readonly sessions: number;
  readonly lines: readonly PriceLine[];
  readonly dollars: number;
}

const GIB = 1024 ** 3;

/** The price of `sessions` sessions like the measured ones (default: as many as were measured). */
export function priceOf(counts: MeasuredCounts, sessions: number = counts.sessions): Price {
  const scale = sessions / counts.sessions;
  const p = AWS_PRICES;
  const invocations = sum(counts.lambda.map((l) => l.invocations));
  const gbSeconds = sum(counts.lambda.map((l) => (l.milliseconds / 1000) * (l.memoryMiB / 1024)));
  const sqs = sqsRequests(counts);
  const logBytes = counts.functionLogBytes + invocations * LAMBDA_PLATFORM_LOG_BYTES;
  const writeUnits = counts.dynamoDb.writeUnits + counts.dynamoDb.failedWrites;
  const line = (item: string, quantity: number, unit: string, each: number): PriceLine => ({
    item,
    quantity: quantity * scale,
    unit,
    dollars: quantity * scale * each,
  });
  const lines = [
    line("Step Functions state transitions", counts.transitions, "transitions", p.stepFunctionsPerTransition),
    line("Lambda requests", invocations, "invocations", p.lambdaPerRequest),
    line("Lambda duration (Arm)", gbSeconds, "GB-s", p.lambdaArmPerGbSecond),
    line("EventBridge events", counts.events, "events", p.eventBridgePerEvent),
    line("SQS requests, standard queues", sqs.standard, "requests", p.sqsStandardPerRequest),
    line("SQS requests, FIFO queues", sqs.fifo, "requests", p.sqsFifoPerRequest),
    line("DynamoDB write request units", writeUnits, "WRU", p.dynamoDbPerWriteUnit),
    line("DynamoDB read request units", counts.dynamoDb.readUnits, "RRU", p.dynamoDbPerReadUnit),
    line("CloudWatch Logs ingested", logBytes / GIB, "GB", p.logsPerGbIngested),
    line("X-Ray traces (every one sampled: the most)", traces(counts), "traces", p.xRayPerTrace),
  ];
  return { sessions, lines, dollars: sum(lines.map((l) => l.dollars)) };
}

/** SQS requests: each message sent, and a receive and a delete per batch; agents' messages three each. */
export function sqsRequests(counts: MeasuredCounts): { standard: number; fifo: number } {
  let standard = counts.agentQueueMessages * 3;
  let fifo = 0;
  for (const q of counts.queues) {
    const requests = q.messages + 2 * q.batches;
    if (q.fifo) fifo += requests;
    else standard += requests;
  }
  return { standard, fifo };
}

/** Traces: each execution, and each invocation that no execution started (a queue's trigger). */
function traces(counts: MeasuredCounts): number {
  return (
    counts.executionsStarted +
    sum(counts.lambda.filter((l) => !l.underStateMachine).map((l) => l.invocations))
  );
}

export interface QuotaLimit {
  readonly api: string;
  /** Calls (or units) one session makes of it. */
  readonly perSession: number;
  readonly quotaPerSecond: number;
  /** Sessions per second the quota allows: quotaPerSecond / perSession. */
  readonly sessionsPerSecond: number;
}

/**
 * Sessions per second each API's default quota allows, given what one session calls of it, and
 * the one that binds first. Sustained rates: token buckets' bursts aside. Lambda's is its
 * concurrency over the seconds of invocation a session takes.
 */
export function quotaCeiling(counts: MeasuredCounts): { limits: QuotaLimit[]; binding: QuotaLimit } {
  const n = counts.sessions;
  const q = DEFAULT_QUOTAS;
  const limit = (api: string, total: number, quotaPerSecond: number): QuotaLimit => ({
    api,
    perSession: total / n,
    quotaPerSecond,
    sessionsPerSecond: total === 0 ? Infinity : quotaPerSecond / (total / n),
  });
  const limits = [
    limit("Step Functions StartExecution", counts.executionsStarted, q.stepFunctionsStartExecution),
    limit("Step Functions state transitions", counts.transitions, q.stepFunctionsStateTransitions),
    limit("Step Functions SendTaskSuccess/Failure", counts.taskCallbacks, q.stepFunctionsSendTask),
    limit(
      "Lambda concurrent executions (invocation-seconds)",
      sum(counts.lambda.map((l) => l.milliseconds)) / 1000,
      q.lambdaConcurrentExecutions,
    ),
    limit("EventBridge PutEvents (entries)", counts.events, q.eventBridgePutEvents),
    limit(
      "EventBridge target invocations",
      sum(counts.queues.map((x) => x.messages)),
      q.eventBridgeInvocations,
    ),
    limit("DynamoDB read units (per table)", counts.dynamoDb.readUnits, q.dynamoDbReadUnitsPerTable),
    limit(
      "DynamoDB write units (per table)",
      counts.dynamoDb.writeUnits + counts.dynamoDb.failedWrites,
      q.dynamoDbWriteUnitsPerTable,
    ),
    ...counts.queues
      .filter((x) => x.fifo)
      .map((x) => limit(`SQS FIFO SendMessage (${x.name})`, x.messages, q.sqsFifoCallsPerAction)),
  ];
  const binding = limits.reduce((a, b) => (b.sessionsPerSecond < a.sessionsPerSecond ? b : a));
  return { limits, binding };
}

/** What one heartbeat of an idle agent costs, alone in its batch. */
export interface HeartbeatUsage {
  readonly events: number;
  /** SendMessage (EventBridge's delivery), ReceiveMessage and DeleteMessageBatch of its batch. */
  readonly sqsRequests: number;
  readonly invocations: number;
  readonly gbSeconds: number;
  readonly writeUnits: number;
  readonly readUnits: number;
  readonly logBytes: number;
}

/** An idle agent per month: its heartbeats, and its own long poll of its queue. */
export function idleAgentMonthly(heartbeatSeconds: number, each: HeartbeatUsage): number {
  const p = AWS_PRICES;
  const heartbeats = SECONDS_PER_MONTH / heartbeatSeconds;
  const perHeartbeat =
    each.events * p.eventBridgePerEvent +
    each.sqsRequests * p.sqsStandardPerRequest +
    each.invocations * p.lambdaPerRequest +
    each.gbSeconds * p.lambdaArmPerGbSecond +
    each.writeUnits * p.dynamoDbPerWriteUnit +
    each.readUnits * p.dynamoDbPerReadUnit +
    (each.logBytes / GIB) * p.logsPerGbIngested +
    each.invocations * p.xRayPerTrace;
  const polls = (SECONDS_PER_MONTH / LONG_POLL_SECONDS) * p.sqsStandardPerRequest;
  return heartbeats * perHeartbeat + polls;
}

/** What the stack costs per month with no session at all. */
export interface FixedResources {
  /** Metrics read by the alarms, all alarms together (a metric-math alarm reads several). */
  readonly alarmMetrics: number;
  readonly dashboards: number;
  readonly customMetrics: number;
  /** Queues a Lambda trigger polls, by kind. */
  readonly polledQueues: { readonly standard: number; readonly fifo: number };
}

export function fixedMonthly(r: FixedResources): { lines: PriceLine[]; dollars: number } {
  const p = AWS_PRICES;
  const pollsPerQueue = (SECONDS_PER_MONTH / LONG_POLL_SECONDS) * LAMBDA_SQS_POLLERS;
  const lines: PriceLine[] = [
    {
      item: "CloudWatch alarms",
      quantity: r.alarmMetrics,
      unit: "alarm metrics",
      dollars: r.alarmMetrics * p.cloudWatchPerAlarmMetricMonth,
    },
    {
      item: "CloudWatch dashboard",
      quantity: r.dashboards,
      unit: "dashboards",
      dollars: r.dashboards * p.cloudWatchPerDashboardMonth,
    },
    {
      item: "CloudWatch custom metrics",
      quantity: r.customMetrics,
      unit: "metrics",
      dollars: r.customMetrics * p.cloudWatchPerMetricMonth,
    },
    {
      item: "Lambda triggers' long polls, standard queues",
      quantity: r.polledQueues.standard * pollsPerQueue,
      unit: "requests",
      dollars: r.polledQueues.standard * pollsPerQueue * p.sqsStandardPerRequest,
    },
    {
      item: "Lambda triggers' long polls, FIFO queues",
      quantity: r.polledQueues.fifo * pollsPerQueue,
      unit: "requests",
      dollars: r.polledQueues.fifo * pollsPerQueue * p.sqsFifoPerRequest,
    },
  ];
  return { lines, dollars: sum(lines.map((l) => l.dollars)) };
}

/** Dollars as the docs write them: cents to two places, smaller amounts to two significant digits. */
export function fmtDollars(dollars: number): string {
  if (dollars >= 0.995)
    return `$${dollars.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
  if (dollars === 0) return "$0";
  return `$${dollars.toPrecision(2)}`;
}

function sum(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0);
}
