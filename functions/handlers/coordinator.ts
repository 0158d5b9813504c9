/**
 * Lambda entry point of the coordinator. Triggered by its queues (SQS batches of EventBridge
 * events); the sweep's scheduled event arrives on the placement queue among them. Transient
 * failures are reported per message
 * (`batchItemFailures`) so only those are redelivered; rejected events are logged, not retried.
 * The sweep also takes the census of waiting sessions that the dashboard and the stuck-session
 * alarm read.
 */
import { loadConfig } from "../config.ts";
import { batchItemFailures, isScheduledEvent, type BatchResponse, type SqsEvent } from "./sqs-batch.ts";
import { wire, type Wiring } from "./wiring.ts";
import { parseBatch } from "./coordinator-envelopes.ts";
import { submissionFilter } from "./submission-filter.ts";
import type { RunReport } from "../app/coordinator.ts";
import { stageCensus } from "../app/stage-census.ts";
import { errorMessage } from "../app/lifecycle/handler.ts";
import { NO_METRICS, recordCensus, recordRun, type MetricSink } from "./metrics.ts";
import { createTelemetry, instrumented, type Telemetry } from "./telemetry.ts";

/** Every trigger is a queue, the sweep's schedule included (SWEEP.target). */
export type CoordinatorEvent = SqsEvent;

export { batchItemFailures, type BatchResponse };

let wired: { wiring: Wiring; telemetry: Telemetry } | undefined;

export async function handler(event: CoordinatorEvent): Promise<BatchResponse> {
  if (!wired) {
    const config = loadConfig();
    const telemetry = await createTelemetry(config);
    wired = { wiring: wire(config, telemetry, { submissionFilter }), telemetry };
  }
  const { wiring, telemetry } = wired;
  return instrumented(telemetry, "Coordinator", () =>
    handleCoordinatorEvent(wiring, event, telemetry.metrics),
  );
}

export async function handleCoordinatorEvent(
  w: Wiring,
  event: CoordinatorEvent,
  metrics: MetricSink = NO_METRICS,
): Promise<BatchResponse> {
  const envelopes: unknown[] = [];
  const ids: string[] = [];
  const unparseable: string[] = [];
  // The sweep arrives on the placement queue (SWEEP.target), serialized with placement.
  let sweep = false;
  for (const record of event.Records) {
    try {
      const envelope: unknown = JSON.parse(record.body);
      if (isScheduledEvent(envelope)) {
        sweep = true;
        continue;
      }
      envelopes.push(envelope);
      ids.push(record.messageId);
    } catch {
      unparseable.push(record.messageId);
    }
  }
  // A body that is not JSON is still an envelope to reject with a reason, never a silent drop.
  const report: RunReport = await w.coordinator.run(
    parseBatch(
      [
        ...envelopes,
        ...unparseable.map((id) => ({ id, "detail-type": undefined, detail: "message body is not JSON" })),
      ],
      w.fargateClusterArn,
    ),
    { sweep },
  );
  recordRun(metrics, sweep ? "sweep" : "events", report);
  if (sweep) await takeCensus(w, metrics);
  const failed = new Set(report.retry.flatMap((i) => (ids[i] ? [ids[i]] : [])));
  return { batchItemFailures: batchItemFailures(event.Records, failed) };
}

/** Metrics have one-minute resolution: a census per minute is enough, however often the sweep runs. */
const CENSUS_INTERVAL_MS = 55_000;
const censusTakenAtMs = new WeakMap<Wiring, number>();

/** A failed census leaves its metrics missing, which the stuck-session alarm treats as breaching. */
async function takeCensus(w: Wiring, metrics: MetricSink): Promise<void> {
  const nowMs = w.clock.nowMs();
  if (nowMs - (censusTakenAtMs.get(w) ?? -Infinity) < CENSUS_INTERVAL_MS) return;
  censusTakenAtMs.set(w, nowMs);
  try {
    const census = await stageCensus(w.store, nowMs);
    recordCensus(metrics, census);
    if (census.stuck > 0) w.log.warn("sessions stuck beyond their stage timeout", { ...census });
    else if (census.truncated) w.log.warn("census truncated: counts are lower bounds", { ...census });
  } catch (error) {
    w.log.error("census failed", { error: errorMessage(error) });
  }
}
