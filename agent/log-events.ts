/**
 * Kernel output on CloudWatch Logs, as the agent writes it and the CLI reads it: one log stream
 * per kernel run (`<sessionId>/<kernelIndex>/run-<runIndex>`; a Fargate kernel's task writes its
 * own, see runLogStreamName), one event per output line whose
 * message is `{"stream":"stdout"|"stderr","text":…}` at the line's own time. A line too long for
 * one event is split into parts (`"part": i, "parts": n`, from 1) that the reader joins again; a
 * marker event (`"dropped": {…}`) says where the agent had to drop lines. No AWS SDK here: the
 * CLI loads this before it knows whether it needs the SDK.
 */
import { fargateLogStreamName } from "../functions/core/fargate-logs.ts";
import type { LogStream } from "./types.ts";

/** The embedded runtime's kernel log group (a deployed stack names its own: `KernelLogGroupName`). */
export const LOCAL_KERNEL_LOG_GROUP = "/cairn/kernels";

/** PutLogEvents counts each event as its message's UTF-8 bytes plus this. */
export const EVENT_OVERHEAD_BYTES = 26;

/** What AWS allows in a stream name: 1 to 512 characters, no ':' or '*'. */
const STREAM_NAME_PATTERN = /^[^:*]{1,512}$/;

export function kernelLogStreamName(sessionId: string, kernelIndex: number, runIndex: number): string {
  const name = `${sessionId}/${kernelIndex}/run-${runIndex}`;
  if (!STREAM_NAME_PATTERN.test(name)) {
    throw new RangeError(
      `log stream name "${name}" is not valid on CloudWatch Logs (1 to 512 characters, no ':' or '*')`,
    );
  }
  return name;
}

/**
 * The stream a kernel run's output is in: a Fargate kernel's task writes it through awslogs to
 * `cairn/kernel/<task id>` (core/fargate-logs.ts), so given the run's task ARN (Kernel.taskArn,
 * RunKernelRecord.taskArn) it is that; otherwise it is the agent's stream for the run.
 */
export function runLogStreamName(
  sessionId: string,
  kernelIndex: number,
  runIndex: number,
  taskArn?: string,
): string {
  return taskArn !== undefined
    ? fargateLogStreamName(taskArn)
    : kernelLogStreamName(sessionId, kernelIndex, runIndex);
}

export interface DroppedCount {
  readonly lines: number;
  readonly bytes: number;
}

/** One event's message, decoded. */
export interface KernelLogMessage {
  readonly stream: LogStream;
  readonly text: string;
  /** Set on the parts of a split line: this part's number (from 1) and how many there are. */
  readonly part?: number;
  readonly parts?: number;
  /** Set on the agent's marker event: how much output it dropped just before this point. */
  readonly dropped?: DroppedCount;
}

export function encodeLogMessage(message: KernelLogMessage): string {
  return JSON.stringify(message);
}

/** Anything that is not one of ours is shown as it is, as stdout. */
export function decodeLogMessage(message: string): KernelLogMessage {
  try {
    const value = JSON.parse(message) as Record<string, unknown>;
    if (
      typeof value === "object" &&
      value !== null &&
      (value.stream === "stdout" || value.stream === "stderr") &&
      typeof value.text === "string"
    ) {
      const { part, parts } = value;
      const split =
        Number.isInteger(part) && Number.isInteger(parts) && 1 <= (part as number) && part! <= parts!
          ? { part: part as number, parts: parts as number }
          : {};
      return { stream: value.stream, text: value.text, ...split };
    }
  } catch {
    // not JSON: fall through
  }
  return { stream: "stdout", text: message };
}

/** The marker the agent writes where it dropped output. */
export function droppedMessage(dropped: DroppedCount, why: string): string {
  return encodeLogMessage({
    stream: "stderr",
    text:
      `[cairn agent] ${dropped.lines} line${dropped.lines === 1 ? "" : "s"} (${dropped.bytes} bytes) ` +
      `of output dropped here: ${why}`,
    dropped,
  });
}

/** Part numbers up to this many digits fit the room `lineMessages` keeps for them. */
const MAX_PART_DIGITS = 7;

/**
 * The messages for one output line: one, or the line split into parts so that no message is over
 * `maxMessageBytes` (UTF-8, as sent). Splits fall between characters, never inside one, so the
 * parts' texts concatenate to the line.
 */
export function lineMessages(stream: LogStream, text: string, maxMessageBytes: number): string[] {
  const whole = encodeLogMessage({ stream, text });
  if (Buffer.byteLength(whole) <= maxMessageBytes) return [whole];
  const widest = 10 ** MAX_PART_DIGITS - 1;
  const room =
    maxMessageBytes - Buffer.byteLength(encodeLogMessage({ stream, text: "", part: widest, parts: widest }));
  if (room < 4 * 6) {
    throw new RangeError(`maxMessageBytes ${maxMessageBytes} leaves no room for a line's text`);
  }
  const pieces: string[] = [];
  let start = 0;
  let at = 0;
  let bytes = 0;
  for (const char of text) {
    const size = escapedBytes(char);
    if (bytes + size > room) {
      pieces.push(text.slice(start, at));
      start = at;
      bytes = 0;
    }
    bytes += size;
    at += char.length;
  }
  pieces.push(text.slice(start));
  if (pieces.length > widest)
    throw new RangeError(`a line of ${text.length} characters needs too many parts`);
  return pieces.map((piece, i) =>
    encodeLogMessage({ stream, text: piece, part: i + 1, parts: pieces.length }),
  );
}

/** Bytes one code point takes inside a JSON string as JSON.stringify writes it, in UTF-8. */
function escapedBytes(char: string): number {
  const code = char.codePointAt(0) ?? 0;
  if (code === 0x22 || code === 0x5c) return 2;
  if (code < 0x20) return code === 8 || code === 9 || code === 10 || code === 12 || code === 13 ? 2 : 6;
  if (code >= 0xd800 && code <= 0xdfff) return 6; // a lone surrogate is written as \udxxx
  if (code < 0x80) return 1;
  if (code < 0x800) return 2;
  if (code < 0x10000) return 3;
  return 4;
}

/** A line put back together from its events. */
export interface JoinedLine {
  readonly stream: LogStream;
  readonly text: string;
  readonly atMs: number;
}

/**
 * Joins split lines back, per log stream (FilterLogEvents may interleave another stream's events
 * between two parts). Holds at most one unfinished line per stream.
 */
export class LinePartJoiner {
  readonly #pending = new Map<
    string,
    { stream: LogStream; atMs: number; parts: number; next: number; texts: string[] }
  >();

  /** The lines completed by this event (none while a split line is unfinished). */
  push(logStream: string, atMs: number, message: KernelLogMessage): JoinedLine[] {
    const out: JoinedLine[] = [];
    const pending = this.#pending.get(logStream);
    if (message.part !== undefined && message.parts !== undefined) {
      if (pending !== undefined && message.part === pending.next && message.parts === pending.parts) {
        pending.texts.push(message.text);
        pending.next++;
      } else {
        // A part is missing (or a new line starts): show what there is rather than lose it.
        if (pending !== undefined) out.push(this.#take(logStream)!);
        this.#pending.set(logStream, {
          stream: message.stream,
          atMs,
          parts: message.parts,
          next: message.part + 1,
          texts: [message.text],
        });
      }
      const current = this.#pending.get(logStream)!;
      if (current.next > current.parts) out.push(this.#take(logStream)!);
      return out;
    }
    if (pending !== undefined) out.push(this.#take(logStream)!);
    out.push({ stream: message.stream, text: message.text, atMs });
    return out;
  }

  /** The unfinished line of `logStream`, if any (its stream has ended). */
  end(logStream: string): JoinedLine | undefined {
    return this.#take(logStream);
  }

  #take(logStream: string): JoinedLine | undefined {
    const pending = this.#pending.get(logStream);
    if (pending === undefined) return undefined;
    this.#pending.delete(logStream);
    return { stream: pending.stream, text: pending.texts.join(""), atMs: pending.atMs };
  }
}
