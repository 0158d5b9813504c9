/**
 * Cairn's CloudWatch metric names and dimensions: a contract between the functions that emit
 * them (functions/handlers/metrics.ts) and the CDK dashboard and alarms (lib/monitoring.ts).
 */
/** The `service` dimension Powertools puts on every metric. */
export const METRICS_SERVICE = "cairn";
/** Namespace used when POWERTOOLS_METRICS_NAMESPACE is unset (the stack always sets it). */
export const DEFAULT_METRICS_NAMESPACE = "Cairn";

export const MetricName = {
  /** One per coordinator invocation; dimension Trigger (events | sweep). */
  CoordinatorRuns: "CoordinatorRuns",
  EventsApplied: "EventsApplied",
  /** Inbound events refused at the edge with a reason (never retried). */
  EventsRejected: "EventsRejected",
  /** Events whose processing failed transiently and go back to the queue. */
  EventsRetried: "EventsRetried",
  /** Stage callbacks the coordinator completed (status changes it decided). */
  StageCompletions: "StageCompletions",
  /** Decisions a handler pass produced; dimension Pass. */
  PassDecisions: "PassDecisions",
  /** Stage entries recorded by the lifecycle execution; dimension Status (the status entered). */
  Transitions: "Transitions",
  /** Sessions waiting in each stage, counted by the sweep; dimension Status. */
  SessionsInStatus: "SessionsInStatus",
  /** Sessions still in a stage well past its expiry: the stage timer did not move them on. */
  SessionsStuck: "SessionsStuckBeyondTimeout",
} as const;
export type MetricName = (typeof MetricName)[keyof typeof MetricName];

export const MetricDimension = { Trigger: "Trigger", Pass: "Pass", Status: "Status" } as const;
export type MetricDimension = (typeof MetricDimension)[keyof typeof MetricDimension];
