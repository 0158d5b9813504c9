/**
 * Pagination tokens. GetLogEvents' tokens name a position in a stream (just after the event with
 * this timestamp and arrival number): `f/` reads forward from it, `b/` backward. FilterLogEvents'
 * name the last event a page looked at. Opaque to clients, as on AWS; a malformed one is an error.
 */
import { InvalidParameterError } from "./errors.ts";

export interface EventKey {
  readonly timestamp: number;
  readonly seq: number;
}

export function encodeStreamToken(direction: "f" | "b", key: EventKey): string {
  return `${direction}/${key.timestamp}/${key.seq}`;
}

export function decodeStreamToken(token: string): { direction: "f" | "b"; key: EventKey } {
  const match = /^([fb])\/(-1|\d{1,16})\/(-1|\d{1,16})$/.exec(token);
  if (match === null) throw new InvalidParameterError("The specified nextToken is invalid.");
  return {
    direction: match[1] as "f" | "b",
    key: { timestamp: Number(match[2]), seq: Number(match[3]) },
  };
}

export function encodeFilterToken(key: EventKey): string {
  return `e/${key.timestamp}/${key.seq}`;
}

export function decodeFilterToken(token: string): EventKey {
  const match = /^e\/(-1|\d{1,16})\/(-1|\d{1,16})$/.exec(token);
  if (match === null) throw new InvalidParameterError("The specified nextToken is invalid.");
  return { timestamp: Number(match[1]), seq: Number(match[2]) };
}
