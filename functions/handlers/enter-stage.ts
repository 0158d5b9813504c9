/** Lambda entry point invoked by the session-lifecycle state machine as it enters each state. */
import { loadConfig } from "../config.ts";
import { wire, type Wiring } from "../adapters/clients.ts";
import { enterStage, type EnterStageInput } from "../app/enter-stage.ts";
import type { SessionStatus } from "../core/status.ts";
import { recordStageEntry } from "./metrics.ts";
import { createTelemetry, instrumented, type Telemetry } from "./telemetry.ts";

let wired: { wiring: Wiring; telemetry: Telemetry } | undefined;

export async function handler(event: EnterStageInput): Promise<{ status: SessionStatus }> {
  if (!wired) {
    const config = loadConfig();
    const telemetry = createTelemetry(config);
    wired = { wiring: wire(config, telemetry), telemetry };
  }
  const { wiring, telemetry } = wired;
  return instrumented(telemetry, "EnterStage", async () => {
    const entered = await enterStage(event, wiring.enterStage);
    recordStageEntry(telemetry.metrics, entered.status);
    return entered;
  });
}
