/** The application's outbound events, validated against their contracts and put on the bus. */
import { DetailType, toPutEventsEntry } from "../../core/events.ts";
import type { EventsPort } from "../../app/ports.ts";
import type {
  EventRejectedDetailInput,
  JobStateChangedDetailInput,
  SessionRequeuedDetailInput,
  SessionStatusChangedDetailInput,
} from "../../app/event-types.ts";
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
