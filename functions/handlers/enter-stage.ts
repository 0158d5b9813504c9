/** Lambda entry point invoked by the session-lifecycle state machine as it enters each state. */
import { loadConfig } from "../config.ts";
import { wire, type Wiring } from "./wiring.ts";
import { enterStage, StageEntryError, type EnterStageInput } from "../app/enter-stage.ts";
import type { SessionStatus } from "../core/status.ts";
import { isTransient } from "../app/retryable.ts";
import { AppError } from "../app/errors.ts";
import { isExpiryJudgement, type ExpiryJudged, type ExpiryJudgement } from "../app/expiry-judge.ts";
import { recordStageEntry } from "./metrics.ts";
import { createTelemetry, instrumented, type Telemetry } from "./telemetry.ts";

let wired: { wiring: Wiring; telemetry: Telemetry } | undefined;

/**
 * An error a later attempt may not meet: the state machine retries `Cairn.Transient` (its Retry
 * lists name it), and catches every other error name into its failure recorder. The original
 * error's name and message are kept in the message (the execution's Cause).
 */
export { isTransient };

export class TransientError extends AppError {
  override readonly name = "Cairn.Transient";
  readonly code = "TRANSIENT";
  override readonly retryable = true;
}

export async function handler(event: EnterStageInput): Promise<{ status: SessionStatus }>;
export async function handler(event: ExpiryJudgement): Promise<ExpiryJudged>;
export async function handler(
  event: EnterStageInput | ExpiryJudgement,
): Promise<{ status: SessionStatus } | ExpiryJudged> {
  if (!isExpiryJudgement(event)) checkInput(event);
  if (!wired) {
    const config = loadConfig();
    const telemetry = await createTelemetry(config);
    wired = { wiring: wire(config, telemetry), telemetry };
  }
  const { wiring, telemetry } = wired;
  try {
    // The PENDING timer's judgment (JudgePendingExpiry) is the coordinator's, run here.
    if (isExpiryJudgement(event)) {
      return await instrumented(telemetry, "JudgeExpiry", () => wiring.judgeExpiry(event));
    }
    return await instrumented(telemetry, "EnterStage", async () => {
      const entered = await enterStage(event, wiring.enterStage);
      recordStageEntry(telemetry.metrics, entered.status);
      return entered;
    });
  } catch (error) {
    if (isTransient(error)) {
      const e = error as Error;
      throw new TransientError(`${e.name}: ${e.message}`, { cause: error });
    }
    throw error;
  }
}

/**
 * The fields the state machine adds (`entry`: which attempt of which state this is; `failure`:
 * what the state caught), checked at the edge with the field named.
 */
function checkInput(event: EnterStageInput): void {
  const { entry, failure } = event as { entry?: unknown; failure?: unknown };
  if (entry !== undefined) {
    if (typeof entry !== "object" || entry === null) throw new StageEntryError("entry: must be an object");
    const e = entry as Record<string, unknown>;
    if (typeof e["state"] !== "string" || e["state"] === "") {
      throw new StageEntryError("entry.state: must be the state's name ($$.State.Name)");
    }
    if (typeof e["enteredTime"] !== "string" || Number.isNaN(Date.parse(e["enteredTime"]))) {
      throw new StageEntryError(
        `entry.enteredTime: must be an ISO 8601 time ($$.State.EnteredTime), got ${JSON.stringify(e["enteredTime"])}`,
      );
    }
    const retryCount = e["retryCount"];
    if (typeof retryCount !== "number" || !Number.isSafeInteger(retryCount) || retryCount < 0) {
      throw new StageEntryError(
        `entry.retryCount: must be an integer ≥ 0 ($$.State.RetryCount), got ${JSON.stringify(retryCount)}`,
      );
    }
    if (event.taskToken === undefined) {
      throw new StageEntryError("entry: only a callback state (with a taskToken) names its entry");
    }
  }
  if (failure !== undefined) {
    const f = (typeof failure === "object" && failure !== null ? failure : {}) as Record<string, unknown>;
    if (typeof f["Error"] !== "string") {
      throw new StageEntryError("failure.Error: must be the error name a Catch passes on");
    }
    if (f["Cause"] !== undefined && typeof f["Cause"] !== "string") {
      throw new StageEntryError("failure.Cause: must be a string when present");
    }
  }
}
