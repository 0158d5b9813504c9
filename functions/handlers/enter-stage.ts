/** Lambda entry point invoked by the session-lifecycle state machine as it enters each state. */
import { loadConfig } from "../config.ts";
import { wire, type Wiring } from "../adapters/clients.ts";
import { enterStage, type EnterStageInput } from "../app/enter-stage.ts";
import type { SessionStatus } from "../core/status.ts";

let wiring: Wiring | undefined;

export async function handler(event: EnterStageInput): Promise<{ status: SessionStatus }> {
  wiring ??= wire(loadConfig());
  return enterStage(event, wiring.enterStage);
}
