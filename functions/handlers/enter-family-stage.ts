/**
 * Lambda entry point invoked by the deployment and route lifecycles' state machines as they
 * enter each state. A transient failure is rethrown as `Cairn.Transient`, which the
 * states retry; any other error is caught by the state machine into its failure recorder.
 */
import { loadConfig } from "../config.ts";
import { enterFamilyStage } from "../app/enter-family-stage.ts";
import { isTransient } from "../app/retryable.ts";
import { TransientError } from "./enter-stage.ts";
import { createTelemetry, instrumented, type Telemetry } from "./telemetry.ts";
import { wireDeployments, type DeploymentsWiring } from "./deployments-wiring.ts";

let wired: { wiring: DeploymentsWiring; telemetry: Telemetry } | undefined;

export async function handler(event: unknown): Promise<{ status: string }> {
  if (!wired) {
    const config = loadConfig();
    const telemetry = await createTelemetry(config);
    wired = { wiring: wireDeployments(config, telemetry), telemetry };
  }
  const { wiring, telemetry } = wired;
  try {
    return await instrumented(telemetry, "EnterFamilyStage", () =>
      enterFamilyStage(event, wiring.enterFamilyStage),
    );
  } catch (error) {
    if (isTransient(error)) {
      const e = error as Error;
      throw new TransientError(`${e.name}: ${e.message}`, { cause: error });
    }
    throw error;
  }
}
