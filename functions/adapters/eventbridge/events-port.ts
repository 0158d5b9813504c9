/** The application's outbound events, validated against their contracts and put on the bus. */
import { DetailType, toPutEventsEntry } from "../../core/events.ts";
import type { DeploymentBusPort, EventsPort, FamilyEventsPort } from "../../core/ports/event-bus.ts";
import type {
  DeploymentStatusChangedDetailInput,
  RouteStatusChangedDetailInput,
  SessionCancelRequestedDetailInput,
  SessionSubmittedDetailInput,
  EventRejectedDetailInput,
  JobStateChangedDetailInput,
  SessionRequeuedDetailInput,
  SessionStatusChangedDetailInput,
} from "../../core/ports/event-bus.ts";
import type { EventPublisher } from "./publisher.ts";

export function eventBridgeEvents(publisher: EventPublisher, busName: string): EventsPort {
  return {
    statusChanged: (details: readonly SessionStatusChangedDetailInput[]) =>
      publisher.publish(details.map((d) => toPutEventsEntry(busName, DetailType.SessionStatusChanged, d))),
    rejected: (details: readonly EventRejectedDetailInput[]) =>
      publisher.publish(details.map((d) => toPutEventsEntry(busName, DetailType.EventRejected, d))),
    requeued: (details: readonly SessionRequeuedDetailInput[]) =>
      publisher.publish(details.map((d) => toPutEventsEntry(busName, DetailType.SessionRequeued, d))),
    jobStateChanged: (details: readonly JobStateChangedDetailInput[]) =>
      publisher.publish(details.map((d) => toPutEventsEntry(busName, DetailType.JobStateChanged, d))),
  };
}

/** What the deployments function puts on the bus: replicas' sessions, as any client submits them. */
export function eventBridgeDeploymentBus(publisher: EventPublisher, busName: string): DeploymentBusPort {
  return {
    submitSessions: (details: readonly SessionSubmittedDetailInput[]) =>
      publisher.publish(details.map((d) => toPutEventsEntry(busName, DetailType.SessionSubmitted, d))),
    cancelSessions: (details: readonly SessionCancelRequestedDetailInput[]) =>
      publisher.publish(details.map((d) => toPutEventsEntry(busName, DetailType.SessionCancelRequested, d))),
    rejected: (details: readonly EventRejectedDetailInput[]) =>
      publisher.publish(details.map((d) => toPutEventsEntry(busName, DetailType.EventRejected, d))),
  };
}

/** Deployments' and routes' status changes, published by their stage entries. */
export function eventBridgeFamilyEvents(publisher: EventPublisher, busName: string): FamilyEventsPort {
  return {
    deploymentStatusChanged: (details: readonly DeploymentStatusChangedDetailInput[]) =>
      publisher.publish(details.map((d) => toPutEventsEntry(busName, DetailType.DeploymentStatusChanged, d))),
    routeStatusChanged: (details: readonly RouteStatusChangedDetailInput[]) =>
      publisher.publish(details.map((d) => toPutEventsEntry(busName, DetailType.RouteStatusChanged, d))),
  };
}
