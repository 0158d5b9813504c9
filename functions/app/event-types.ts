/** Outbound event detail types the application produces (inputs of their schemas). */
import type { EventDetailInput } from "../core/events.ts";

export type SessionStatusChangedDetailInput = EventDetailInput<"Session Status Changed">;
export type { KernelCommandInput as KernelCommandDetailInput } from "../core/agent-protocol.ts";
export type EventRejectedDetailInput = EventDetailInput<"Event Rejected">;
export type SessionRequeuedDetailInput = EventDetailInput<"Session Requeued">;
export type JobStateChangedDetailInput = EventDetailInput<"Job State Changed">;
export type SessionSubmittedDetailInput = EventDetailInput<"Session Submitted">;
export type SessionCancelRequestedDetailInput = EventDetailInput<"Session Cancel Requested">;
export type DeploymentStatusChangedDetailInput = EventDetailInput<"Deployment Status Changed">;
export type RouteStatusChangedDetailInput = EventDetailInput<"Route Status Changed">;
