/**
 * Reads and follows a run's combined log (`output.jsonl`, and `output.jsonl.1` once the log cap
 * rotated it) for `cairn logs [--follow]`. Both stream: 64 KiB reads, one line at a time, so
 * memory stays bounded by the longest record whatever the log's size. Following tails the file;
 * the agent wakes followers when the run writes or ends, and a poll interval covers anything a
 * wake-up missed.
 *
 * Rotation (log-capture.ts) renames the file under a reader. A reader keeps reading the file it
 * has open to its end, then checks whether it is still the current one (same inode); if not, it
 * moves on to the next generation: `output.jsonl` when its file is now `.1`, else the newer `.1`
 * first (the reader fell a whole generation behind). Each generation's first record notes how
 * much the run logged before it, so a reader shows what was dropped: everything before its
 * first file, and any generation it missed while following.
 */
import { existsSync, promises as fs } from "node:fs";
import { LogsNotFoundError } from "./errors.ts";
import { droppedText, ROTATED_SUFFIX, type CombinedRecord, type DroppedBefore } from "./log-capture.ts";
import type { LogLine, LogPaths, LogStream } from "./types.ts";

export interface RunIdentity {
  readonly sessionId: string;
  readonly kernelIndex: number;
  readonly runIndex: number;
}

const READ_CHUNK_BYTES = 64 * 1024;
/** A "line" longer than this (a damaged file) is handed on in pieces rather than held whole. */
const MAX_RECORD_BYTES = 1024 * 1024;

/**
 * Every line the run has written so far, collected. Holds the whole log in memory (at most
 * the run's log cap on disk, as objects); prefer `streamCombinedLog` for output of any size.
 */
export async function readCombinedLog(paths: LogPaths, run: RunIdentity): Promise<LogLine[]> {
  const lines: LogLine[] = [];
  for await (const line of streamCombinedLog(paths, run)) lines.push(line);
  return lines;
}

/** Every line the run has written so far, one at a time, in bounded memory. */
export function streamCombinedLog(
  paths: LogPaths,
  run: RunIdentity,
): AsyncGenerator<LogLine, void, undefined> {
  return followCombinedLog(paths, run, { isLive: () => false, waitForActivity: () => Promise.resolve() });
}

export interface FollowHooks {
  /** True while the run may still write (prepared or running). */
  readonly isLive: () => boolean;
  /** Resolves on the run's next write or end, after the poll interval, or on abort. */
  readonly waitForActivity: (signal?: AbortSignal) => Promise<void>;
  readonly signal?: AbortSignal;
}

interface Generation {
  readonly handle: fs.FileHandle;
  readonly ino: number;
  /** Bytes read from it so far. */
  offset: number;
  /** The start of a record the last read cut (only a writer's write in progress does). */
  carry: Buffer;
  /** Bytes before it in the run's log, from its first record (0 for the first generation). */
  bytesBefore: number;
  firstRecord: boolean;
}

/** Where the lines read so far end in the run's log. */
interface Seen {
  lines: number;
  bytes: number;
}

export async function* followCombinedLog(
  paths: LogPaths,
  run: RunIdentity,
  hooks: FollowHooks,
): AsyncGenerator<LogLine, void, undefined> {
  const current = paths.combined;
  const rotated = paths.combined + ROTATED_SUFFIX;
  let generation: Generation | undefined;
  let seen: Seen | undefined;
  const buffer = Buffer.alloc(READ_CHUNK_BYTES);
  try {
    for (;;) {
      if (hooks.signal?.aborted) return;
      // Sampled before reading: once the run is over, this read sees everything it wrote.
      const live = hooks.isLive();
      if (generation === undefined) {
        generation = await openFirst(current, rotated);
        if (generation === undefined) {
          if (!live) {
            for (const line of missingLog(paths, run)) yield line;
            return;
          }
          await hooks.waitForActivity(hooks.signal);
          continue;
        }
      }
      for (;;) {
        const { bytesRead } = await generation.handle.read(buffer, 0, buffer.length, generation.offset);
        if (bytesRead === 0) break;
        generation.offset += bytesRead;
        const chunk = buffer.subarray(0, bytesRead);
        let data = generation.carry.length === 0 ? chunk : Buffer.concat([generation.carry, chunk]);
        let start = 0;
        for (let newline = data.indexOf(10); newline >= 0; newline = data.indexOf(10, start)) {
          const record = readRecord(data.toString("utf8", start, newline), run, generation, seen);
          start = newline + 1;
          if (record.kind === "line") {
            seen ??= { lines: 0, bytes: 0 };
            seen.lines++;
            yield record.line;
          } else {
            seen = { lines: record.dropped.lines, bytes: record.dropped.bytes };
            if (record.note !== undefined) yield record.note;
          }
        }
        data = data.subarray(start);
        if (data.length > MAX_RECORD_BYTES) {
          yield { ...run, stream: "stdout", text: data.toString("utf8"), atMs: 0 };
          data = Buffer.alloc(0);
        }
        // Copied: `buffer` is overwritten by the next read.
        generation.carry = Buffer.from(data);
      }
      const next = await nextGeneration(generation, current, rotated);
      if (next === "more") continue;
      if (next !== "same" && next !== "pending") {
        if (generation.carry.length > 0) {
          yield { ...run, stream: "stdout", text: generation.carry.toString("utf8"), atMs: 0 };
        }
        seen ??= { lines: 0, bytes: 0 };
        seen.bytes = generation.bytesBefore + generation.offset;
        await generation.handle.close();
        generation = next;
        continue;
      }
      if (!live) return;
      await hooks.waitForActivity(hooks.signal);
    }
  } finally {
    await generation?.handle.close();
  }
}

/**
 * The oldest generation kept; retried if a rotation moved the files between the two opens
 * (the current file just opened would then be the rotated one's successor).
 */
async function openFirst(current: string, rotated: string): Promise<Generation | undefined> {
  for (;;) {
    const older = await openGeneration(rotated);
    if (older !== undefined) return older;
    const latest = await openGeneration(current);
    if (latest === undefined) return undefined;
    const rotatedIno = await inode(rotated);
    if (rotatedIno === undefined || rotatedIno === latest.ino) return latest;
    await latest.handle.close();
  }
}

async function openGeneration(path: string): Promise<Generation | undefined> {
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(path, "r");
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw error;
  }
  try {
    const { ino } = await handle.stat();
    return { handle, ino, offset: 0, carry: Buffer.alloc(0), bytesBefore: 0, firstRecord: true };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/**
 * After reading `generation` to its end: "same" while it is still the current file; "more" if
 * it was rotated away with bytes written after the last read (read them first); else the
 * generation that follows it, opened, or "pending" while that one is not created yet.
 */
async function nextGeneration(
  generation: Generation,
  current: string,
  rotated: string,
): Promise<Generation | "same" | "more" | "pending"> {
  if ((await inode(current)) === generation.ino) return "same";
  // The writer writes to a file only before renaming it, so its size is now final.
  if ((await generation.handle.stat()).size > generation.offset) return "more";
  const rotatedIno = await inode(rotated);
  // Our file is now `.1`: the current one follows. Our file is gone: the newer `.1` follows.
  const path = rotatedIno === undefined || rotatedIno === generation.ino ? current : rotated;
  return (await openGeneration(path)) ?? "pending";
}

async function inode(path: string): Promise<number | undefined> {
  try {
    return (await fs.stat(path)).ino;
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw error;
  }
}

type ReadRecord =
  | { readonly kind: "line"; readonly line: LogLine }
  | { readonly kind: "dropped"; readonly dropped: DroppedBefore; readonly note?: LogLine };

/**
 * One record. A generation's note becomes a line only when something was dropped from the
 * reader's view: before its first file, or between two files it read (it fell behind).
 */
function readRecord(
  json: string,
  run: RunIdentity,
  generation: Generation,
  seen: Seen | undefined,
): ReadRecord {
  const first = generation.firstRecord;
  generation.firstRecord = false;
  let record: Partial<CombinedRecord>;
  try {
    record = JSON.parse(json) as Partial<CombinedRecord>;
  } catch {
    // Keep the raw text rather than lose it.
    return { kind: "line", line: { ...run, stream: "stdout", text: json, atMs: 0 } };
  }
  const atMs = typeof record.atMs === "number" ? record.atMs : 0;
  if (first && isDropped(record.dropped)) {
    const { dropped } = record;
    generation.bytesBefore = dropped.bytes;
    const missed =
      seen === undefined ? dropped : { lines: dropped.lines - seen.lines, bytes: dropped.bytes - seen.bytes };
    if (missed.lines <= 0 && missed.bytes <= 0) return { kind: "dropped", dropped };
    return { kind: "dropped", dropped, note: { ...run, stream: "stderr", text: droppedText(missed), atMs } };
  }
  if (typeof record.text === "string" && isStream(record.stream)) {
    return { kind: "line", line: { ...run, stream: record.stream, text: record.text, atMs } };
  }
  return { kind: "line", line: { ...run, stream: "stdout", text: json, atMs: 0 } };
}

/** The combined, line-prefixed form: `<session>/<kernel> run <run> [stderr] text`. */
export function formatLogLine(line: LogLine): string {
  return `${line.sessionId}/${line.kernelIndex} run ${line.runIndex} [${line.stream}] ${line.text}`;
}

function isDropped(value: unknown): value is DroppedBefore {
  const dropped = value as Partial<DroppedBefore> | undefined;
  return typeof dropped?.bytes === "number" && typeof dropped.lines === "number";
}

function isStream(value: unknown): value is LogStream {
  return value === "stdout" || value === "stderr";
}

/** A run whose directory exists but never wrote output has no lines; an unknown run is an error. */
function missingLog(paths: LogPaths, run: RunIdentity): LogLine[] {
  if (existsSync(paths.workDir)) return [];
  throw new LogsNotFoundError(
    `session ${run.sessionId} kernel ${run.kernelIndex} run ${run.runIndex}`,
    paths.workDir,
  );
}

function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | undefined)?.code === "ENOENT";
}
