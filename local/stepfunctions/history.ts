/**
 * An execution's history, shaped like GetExecutionHistory's HistoryEvents (the SDK's own
 * types): ids from 1, `previousEventId` chaining, timestamps from the service clock.
 */
import type { HistoryEvent, HistoryEventType } from "@aws-sdk/client-sfn";

/** The `…EventDetails` member(s) of one event. */
export type HistoryDetails = Omit<HistoryEvent, "id" | "previousEventId" | "timestamp" | "type">;

export class HistoryLog {
  readonly #events: HistoryEvent[] = [];
  readonly #clock: () => number;

  constructor(clock: () => number) {
    this.#clock = clock;
  }

  get length(): number {
    return this.#events.length;
  }

  append(type: HistoryEventType, details: HistoryDetails): HistoryEvent {
    const id = this.#events.length + 1;
    // Events here follow one another (no Parallel/Map branches are recorded), so each one's
    // predecessor is the event before it, as in AWS's history of a sequential workflow.
    const event: HistoryEvent = {
      timestamp: new Date(this.#clock()),
      type,
      id,
      previousEventId: id - 1,
      ...details,
    };
    this.#events.push(event);
    return event;
  }

  /** A copy, oldest first. */
  all(): HistoryEvent[] {
    return [...this.#events];
  }
}

export const EMPTY_DATA_DETAILS = { truncated: false } as const;

/** `TaskStateEntered`, `ChoiceStateExited`, ... for a state type. */
export function stateEventType(stateType: string, phase: "Entered" | "Exited"): HistoryEventType {
  return `${stateType}State${phase}` as HistoryEventType;
}
