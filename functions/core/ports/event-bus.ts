/**
 * What the application puts on the event bus: the outbound events' details (inputs of their
 * schemas in core/events.ts) and the ports that publish them. Implemented by
 * functions/adapters/eventbridge.
 */
import type { EventDetailInput } from "../events.ts";

export type SessionStatusChangedDetailInput = EventDetailInput<"Session Status Changed">;
export type { KernelCommandInput as KernelCommandDetailInput } from "../agent-protocol.ts";
export type EventRejectedDetailInput = EventDetailInput<"Event Rejected">;
export type SessionRequeuedDetailInput = EventDetailInput<"Session Requeued">;
export type JobStateChangedDetailInput = EventDetailInput<"Job State Changed">;
export type SessionSubmittedDetailInput = EventDetailInput<"Session Submitted">;
export type SessionCancelRequestedDetailInput = EventDetailInput<"Session Cancel Requested">;
export type DeploymentStatusChangedDetailInput = EventDetailInput<"Deployment Status Changed">;
export type RouteStatusChangedDetailInput = EventDetailInput<"Route Status Changed">;

/** Outbound events on the bus, for subscribers. */
export interface EventsPort {
  statusChanged(details: readonly SessionStatusChangedDetailInput[]): Promise<void>;
  /** Inbound events refused at the edge, so a rejection is visible to whoever sent it. */
  rejected(details: readonly EventRejectedDetailInput[]): Promise<void>;
  /** A finished run is retried. */
  requeued(details: readonly SessionRequeuedDetailInput[]): Promise<void>;
  /** A job reached its final state. */
  jobStateChanged(details: readonly JobStateChangedDetailInput[]): Promise<void>;
}

/** What the deployments function puts on the bus. */
export interface DeploymentBusPort {
  /** Replicas' sessions, submitted as a client submits a session. */
  submitSessions(details: readonly SessionSubmittedDetailInput[]): Promise<void>;
  cancelSessions(details: readonly SessionCancelRequestedDetailInput[]): Promise<void>;
  rejected(details: readonly EventRejectedDetailInput[]): Promise<void>;
}

export interface FamilyEventsPort {
  deploymentStatusChanged(details: readonly DeploymentStatusChangedDetailInput[]): Promise<void>;
  routeStatusChanged(details: readonly RouteStatusChangedDetailInput[]): Promise<void>;
}
