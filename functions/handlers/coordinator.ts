/**
 * Lambda entry point of the coordinator. Triggered by the coordinator queue (SQS batches of
 * EventBridge events) and by the sweep schedule. Transient failures are reported per message
 * (`batchItemFailures`) so only those are redelivered; rejected events are logged, not retried.
 */
import { loadConfig } from "../config.ts";
import { wire, type Wiring } from "../adapters/clients.ts";
import type { RunReport } from "../app/coordinator.ts";

interface SqsEvent {
  readonly Records: readonly { readonly messageId: string; readonly body: string }[];
}
interface ScheduledEvent {
  readonly source: "aws.events";
  readonly "detail-type": "Scheduled Event";
}
export type CoordinatorEvent = SqsEvent | ScheduledEvent;

export interface BatchResponse {
  readonly batchItemFailures: readonly { readonly itemIdentifier: string }[];
}

let wiring: Wiring | undefined;

export async function handler(event: CoordinatorEvent): Promise<BatchResponse> {
  wiring ??= wire(loadConfig());
  return handleCoordinatorEvent(wiring, event);
}

export async function handleCoordinatorEvent(w: Wiring, event: CoordinatorEvent): Promise<BatchResponse> {
  if (!("Records" in event)) {
    await w.coordinator.run([], { sweep: true });
    return { batchItemFailures: [] };
  }
  const envelopes: unknown[] = [];
  const ids: string[] = [];
  const unparseable: string[] = [];
  for (const record of event.Records) {
    try {
      envelopes.push(JSON.parse(record.body));
      ids.push(record.messageId);
    } catch {
      unparseable.push(record.messageId);
    }
  }
  // A body that is not JSON is still an envelope to reject with a reason, never a silent drop.
  const report: RunReport = await w.coordinator.run([
    ...envelopes,
    ...unparseable.map((id) => ({ id, "detail-type": undefined, detail: "message body is not JSON" })),
  ]);
  return { batchItemFailures: report.retry.flatMap((i) => (ids[i] ? [{ itemIdentifier: ids[i] }] : [])) };
}
