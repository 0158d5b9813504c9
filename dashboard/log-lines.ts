/**
 * Kernel log events as the agents write them (agent/log-events.ts: one JSON message per line or
 * line part) back to lines: split lines joined, anything else shown as it is. A line still
 * unfinished at the end of the events given is shown as far as it goes.
 */
import { decodeLogMessage, LinePartJoiner } from "../agent/log-events.ts";
import type { LogLine } from "./deps.ts";

export function decodeKernelLogEvents(
  events: readonly { readonly timestamp: number; readonly message: string }[],
): LogLine[] {
  const joiner = new LinePartJoiner();
  const out: LogLine[] = [];
  for (const e of events) {
    for (const line of joiner.push("", e.timestamp, decodeLogMessage(e.message))) {
      out.push({ timestamp: line.atMs, stream: line.stream, message: line.text });
    }
  }
  const rest = joiner.end("");
  if (rest !== undefined) out.push({ timestamp: rest.atMs, stream: rest.stream, message: rest.text });
  return out;
}
