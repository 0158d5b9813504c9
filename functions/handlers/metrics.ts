/**
 * Cairn's CloudWatch metrics: their names and dimensions, and how a coordinator run, a stage
 * entry and a sweep census become data points. Pure data and functions over a `MetricSink`:
 * the Powertools sink lives in telemetry.ts, and the CDK dashboard and alarms (lib/monitoring.ts)
 * read the same names, so the two cannot drift.
 */
import type { RunReport } from "../app/coordinator.ts";
import type { StageCensus } from "../app/stage-census.ts";
import type { SessionStatus } from "../core/status.ts";

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

export interface MetricSink {
  /** A count under the service dimension only. */
  count(name: MetricName, value: number): void;
  /** A count under one more dimension (emitted on its own, so dimension sets never mix). */
  countBy(name: MetricName, dimension: MetricDimension, dimensionValue: string, value: number): void;
}

/** Records nothing: where no metrics pipeline listens (outside Lambda). */
export const NO_METRICS: MetricSink = { count: () => undefined, countBy: () => undefined };

export type RunTrigger = "events" | "sweep";

export function recordRun(sink: MetricSink, trigger: RunTrigger, report: RunReport): void {
  sink.countBy(MetricName.CoordinatorRuns, MetricDimension.Trigger, trigger, 1);
  sink.count(MetricName.EventsApplied, report.applied);
  sink.count(MetricName.EventsRejected, report.rejected.length);
  sink.count(MetricName.EventsRetried, report.retry.length);
  sink.count(MetricName.StageCompletions, report.completed);
  for (const pass of report.passes) {
    sink.countBy(MetricName.PassDecisions, MetricDimension.Pass, pass.name, pass.decisions);
  }
}

export function recordStageEntry(sink: MetricSink, status: SessionStatus): void {
  sink.countBy(MetricName.Transitions, MetricDimension.Status, status, 1);
}

export function recordCensus(sink: MetricSink, census: StageCensus): void {
  for (const [status, count] of Object.entries(census.byStatus)) {
    sink.countBy(MetricName.SessionsInStatus, MetricDimension.Status, status, count);
  }
  sink.count(MetricName.SessionsStuck, census.stuck);
}
