/**
 * What the application layer needs from the outside world besides storage. Adapters implement
 * these with the AWS SDK; the embedded runtime points the same adapters at local endpoints.
 */
import type {
  EventRejectedDetailInput,
  JobStateChangedDetailInput,
  KernelCommandDetailInput,
  SessionRequeuedDetailInput,
  SessionStatusChangedDetailInput,
} from "./event-types.ts";
import type { StageTransition } from "../core/model.ts";

export interface Clock {
  nowMs(): number;
}

export const systemClock: Clock = { nowMs: () => Date.now() };

export interface LifecycleExecutionsPort {
  start(sessionId: string, input: { sessionId: string; timeouts: Record<string, number> }): Promise<string>;
  complete(taskToken: string, transition: StageTransition): Promise<"completed" | "already-closed">;
}

/** Outbound events: status changes for subscribers, commands for agents. */
export interface EventsPort {
  statusChanged(details: readonly SessionStatusChangedDetailInput[]): Promise<void>;
  kernelCommands(details: readonly KernelCommandDetailInput[]): Promise<void>;
  /** Inbound events refused at the edge, so a rejection is visible to whoever sent it. */
  rejected(details: readonly EventRejectedDetailInput[]): Promise<void>;
  /** A finished run is retried. */
  requeued(details: readonly SessionRequeuedDetailInput[]): Promise<void>;
  /** A job reached its final state. */
  jobStateChanged(details: readonly JobStateChangedDetailInput[]): Promise<void>;
}
