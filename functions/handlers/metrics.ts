/**
 * Cairn's CloudWatch metrics: their names and dimensions, and how a coordinator run, a stage
 * entry and a sweep census become data points, over a `MetricSink`; the Powertools sink lives in
 * telemetry.ts. The names are in functions/topology/metrics.ts, which the CDK dashboard and
 * alarms (lib/monitoring.ts) read too, so the two cannot drift.
 */
import type { RunReport } from "../app/coordinator.ts";
import type { StageCensus } from "../app/stage-census.ts";
import type { SessionStatus } from "../core/status.ts";
import { MetricDimension, MetricName } from "../topology/metrics.ts";

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
