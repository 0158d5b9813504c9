/**
 * Lambda entry point of the deployments function (Backend.AI's deployments and their routes).
 * Triggered by its queue (a standard one; a lease per deployment serializes the work): SQS
 * batches of deployment requests, replicas' health reports, status changes that wake a
 * deployment, and the deployments' sweep. A message whose work failed with a retryable error is
 * reported failed (and with it, on a FIFO queue, every later one) so that only those return.
 */
import { loadConfig } from "../config.ts";
import { batchItemFailures, type BatchResponse, type SqsEvent } from "./sqs-batch.ts";
import { createTelemetry, instrumented, type Telemetry } from "./telemetry.ts";
import { wireDeployments, type DeploymentsWiring } from "./deployments-wiring.ts";

let wired: { wiring: DeploymentsWiring; telemetry: Telemetry } | undefined;

export async function handler(event: SqsEvent): Promise<BatchResponse> {
  if (!wired) {
    const config = loadConfig();
    const telemetry = await createTelemetry(config);
    wired = { wiring: wireDeployments(config, telemetry), telemetry };
  }
  const { wiring, telemetry } = wired;
  return instrumented(telemetry, "Deployments", () => handleDeploymentsEvent(wiring, event));
}

export async function handleDeploymentsEvent(w: DeploymentsWiring, event: SqsEvent): Promise<BatchResponse> {
  if (w.deployments === undefined) {
    throw new Error(
      "the deployments function needs CAIRN_DEPLOYMENT_STATE_MACHINE_ARN and CAIRN_ROUTE_STATE_MACHINE_ARN",
    );
  }
  // A body that is not JSON is still an event to reject with a reason, never a silent drop.
  const envelopes = event.Records.map((record): unknown => {
    try {
      return JSON.parse(record.body);
    } catch {
      return { id: record.messageId, "detail-type": undefined, detail: "message body is not JSON" };
    }
  });
  const report = await w.deployments.run(envelopes, { sweep: false });
  const failed = new Set(report.retry.map((i) => event.Records[i]!.messageId));
  return { batchItemFailures: batchItemFailures(event.Records, failed) };
}
