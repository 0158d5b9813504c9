/**
 * AWS list prices in us-east-1 and the default quotas a session meets, in one place: the
 * benchmark prices what it measured with these (aws-cost.ts), and docs/cost.md is computed from
 * the same figures. On-demand prices without free tiers or discounts, as the pricing pages give
 * them (checked 2026-11); quotas as the service quotas pages give their defaults. An account's
 * own quotas may differ (new accounts get lower ones): Service Quotas shows them.
 */

/** Dollars per unit. */
export const AWS_PRICES = {
  region: "us-east-1",
  /** aws.amazon.com/step-functions/pricing: Standard workflows, $0.025 per 1,000 state transitions. */
  stepFunctionsPerTransition: 0.025 / 1_000,
  /** aws.amazon.com/lambda/pricing: $0.20 per 1M requests. */
  lambdaPerRequest: 0.2 / 1_000_000,
  /** aws.amazon.com/lambda/pricing: Arm (the functions' architecture), $0.0000133334 per GB-second (first 7.5 billion). */
  lambdaArmPerGbSecond: 0.0000133334,
  /** aws.amazon.com/eventbridge/pricing: custom events, $1.00 per million (each 64 KB chunk of an entry). */
  eventBridgePerEvent: 1 / 1_000_000,
  /** aws.amazon.com/sqs/pricing: standard queues, $0.40 per million requests (each 64 KB chunk). */
  sqsStandardPerRequest: 0.4 / 1_000_000,
  /** aws.amazon.com/sqs/pricing: FIFO queues, $0.50 per million requests. */
  sqsFifoPerRequest: 0.5 / 1_000_000,
  /** aws.amazon.com/dynamodb/pricing/on-demand: $0.625 per million write request units (1 KB each). */
  dynamoDbPerWriteUnit: 0.625 / 1_000_000,
  /** aws.amazon.com/dynamodb/pricing/on-demand: $0.125 per million read request units (4 KB strongly consistent). */
  dynamoDbPerReadUnit: 0.125 / 1_000_000,
  /** aws.amazon.com/dynamodb/pricing/on-demand: table storage, $0.25 per GB-month (beyond the first 25 GB). */
  dynamoDbStoragePerGbMonth: 0.25,
  /** aws.amazon.com/dynamodb/pricing/on-demand: continuous backups (point-in-time recovery), $0.20 per GB-month. */
  dynamoDbPitrPerGbMonth: 0.2,
  /** aws.amazon.com/cloudwatch/pricing: logs ingested (standard class, and vended logs' first tier), $0.50 per GB. */
  logsPerGbIngested: 0.5,
  /** aws.amazon.com/xray/pricing: $5.00 per million traces recorded. */
  xRayPerTrace: 5 / 1_000_000,
  /** aws.amazon.com/cloudwatch/pricing: custom metrics, $0.30 per metric per month (first 10,000). */
  cloudWatchPerMetricMonth: 0.3,
  /** aws.amazon.com/cloudwatch/pricing: standard-resolution alarms, $0.10 per metric an alarm reads, per month. */
  cloudWatchPerAlarmMetricMonth: 0.1,
  /** aws.amazon.com/cloudwatch/pricing: $3.00 per dashboard per month (beyond the account's first three). */
  cloudWatchPerDashboardMonth: 3,
} as const;

/**
 * What CloudWatch Logs stores for one Lambda invocation besides the function's own lines: the
 * platform's START, END and REPORT lines (text format, as the functions log; REPORT with its
 * X-Ray trace id), about 90 + 50 + 260 bytes, plus 26 bytes of billed overhead per log event.
 */
export const LAMBDA_PLATFORM_LOG_BYTES = 90 + 50 + 260 + 3 * 26;

/** CloudWatch Logs bills each log event's message and 26 bytes more. */
export const LOG_EVENT_OVERHEAD_BYTES = 26;

/** Requests per second, account and region wide unless said. */
export const DEFAULT_QUOTAS = {
  /** docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html: StartExecution refill, us-east-1. */
  stepFunctionsStartExecution: 300,
  /** The same page: StateTransition refill (Standard), us-east-1; new accounts start lower. */
  stepFunctionsStateTransitions: 1_500,
  /** The same page: SendTaskSuccess / SendTaskFailure refill, us-east-1. */
  stepFunctionsSendTask: 500,
  /** docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html: 1,000 concurrent executions (new accounts: fewer). */
  lambdaConcurrentExecutions: 1_000,
  /** docs.aws.amazon.com/eventbridge/latest/userguide/eb-quota.html: PutEvents, 10,000 per second in us-east-1. */
  eventBridgePutEvents: 10_000,
  /** The same page: target invocations, 18,750 per second in us-east-1. */
  eventBridgeInvocations: 18_750,
  /** docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html: on-demand, per table. */
  dynamoDbReadUnitsPerTable: 40_000,
  dynamoDbWriteUnitsPerTable: 40_000,
  /**
   * docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html: a
   * FIFO queue without high throughput, 300 calls per second per action (SendMessage from
   * EventBridge carries one message each). Standard queues have no such quota.
   */
  sqsFifoCallsPerAction: 300,
} as const;

/**
 * Seconds in the month the monthly figures are for (365.25 / 12 days). Lambda's SQS triggers
 * long-poll each queue with five pollers, each a ReceiveMessage of up to 20 s, whether or not
 * messages come (docs.aws.amazon.com/lambda/latest/dg/with-sqs.html, scaling); an agent polls its
 * own queue with one.
 */
export const SECONDS_PER_MONTH = (365.25 / 12) * 86_400;
export const LAMBDA_SQS_POLLERS = 5;
export const LONG_POLL_SECONDS = 20;

/**
 * How long a function waits on each AWS call, for the Lambda duration the benchmark models (its
 * in-process wall time mostly measures the one event loop all functions share here, not a call's
 * wait): DynamoDB's documented single-digit milliseconds taken as 5, the other services' calls as
 * 20 ms. An assumption, stated, not a measurement.
 */
export const CALL_LATENCY_MS = {
  dynamoDb: 5,
  stepFunctions: 20,
  eventBridge: 20,
  sqs: 20,
} as const;
