/**
 * Reads and follows a run's combined log (`output.jsonl`) for `cairn logs [--follow]`.
 * Following tails the file; the agent wakes followers when the run writes or ends, and a
 * poll interval covers anything a wake-up missed.
 */
import { existsSync, promises as fs } from "node:fs";
import { LogsNotFoundError } from "./errors.ts";
import type { CombinedRecord } from "./log-capture.ts";
import type { LogLine, LogPaths, LogStream } from "./types.ts";

export interface RunIdentity {
  readonly sessionId: string;
  readonly kernelIndex: number;
  readonly runIndex: number;
}

const READ_CHUNK_BYTES = 64 * 1024;

export async function readCombinedLog(paths: LogPaths, run: RunIdentity): Promise<LogLine[]> {
  let data: Buffer;
  try {
    data = await fs.readFile(paths.combined);
  } catch (error) {
    if (isMissing(error)) return missingLog(paths, run);
    throw error;
  }
  const lines: LogLine[] = [];
  let start = 0;
  for (let newline = data.indexOf(10); newline >= 0; newline = data.indexOf(10, start)) {
    lines.push(parseRecord(data.toString("utf8", start, newline), run));
    start = newline + 1;
  }
  return lines;
}

export interface FollowHooks {
  /** True while the run may still write (prepared or running). */
  readonly isLive: () => boolean;
  /** Resolves on the run's next write or end, after the poll interval, or on abort. */
  readonly waitForActivity: (signal?: AbortSignal) => Promise<void>;
  readonly signal?: AbortSignal;
}

export async function* followCombinedLog(
  paths: LogPaths,
  run: RunIdentity,
  hooks: FollowHooks,
): AsyncGenerator<LogLine, void, undefined> {
  let handle: fs.FileHandle | undefined;
  let offset = 0;
  let partial = "";
  const buffer = Buffer.alloc(READ_CHUNK_BYTES);
  try {
    for (;;) {
      if (hooks.signal?.aborted) return;
      // Sampled before reading: once the run is over, this read sees everything it wrote.
      const live = hooks.isLive();
      if (handle === undefined) {
        try {
          handle = await fs.open(paths.combined, "r");
        } catch (error) {
          if (!isMissing(error)) throw error;
          if (!live) {
            for (const line of missingLog(paths, run)) yield line;
            return;
          }
        }
      }
      if (handle !== undefined) {
        for (;;) {
          const { bytesRead } = await handle.read(buffer, 0, buffer.length, offset);
          if (bytesRead === 0) break;
          offset += bytesRead;
          // A read can end inside a multi-byte character: keep bytes 1:1 as latin1 and
          // decode complete lines only.
          partial += buffer.toString("latin1", 0, bytesRead);
          let newline = partial.indexOf("\n");
          while (newline >= 0) {
            const record = Buffer.from(partial.slice(0, newline), "latin1").toString("utf8");
            partial = partial.slice(newline + 1);
            yield parseRecord(record, run);
            newline = partial.indexOf("\n");
          }
        }
      }
      if (!live) return;
      await hooks.waitForActivity(hooks.signal);
    }
  } finally {
    await handle?.close();
  }
}

/** The combined, line-prefixed form: `<session>/<kernel> run <run> [stderr] text`. */
export function formatLogLine(line: LogLine): string {
  return `${line.sessionId}/${line.kernelIndex} run ${line.runIndex} [${line.stream}] ${line.text}`;
}

function parseRecord(json: string, run: RunIdentity): LogLine {
  try {
    const record = JSON.parse(json) as Partial<CombinedRecord>;
    if (typeof record.text === "string" && typeof record.atMs === "number" && isStream(record.stream)) {
      return { ...run, stream: record.stream, text: record.text, atMs: record.atMs };
    }
  } catch {
    // fall through: keep the raw text rather than lose it
  }
  return { ...run, stream: "stdout", text: json, atMs: 0 };
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
