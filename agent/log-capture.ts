/**
 * Captures a kernel's stdout and stderr: raw bytes appended to `stdout.log` / `stderr.log`,
 * complete lines appended to the combined `output.jsonl` and handed to live listeners.
 * Writes are synchronous per chunk so that a line is on disk before any listener hears of it
 * (followers tail the file and are only woken by listeners), and so that a fast writer is held
 * back by its pipe rather than by unbounded buffers in the agent.
 *
 * Disk use is capped per run (`capBytes` across all its files): `output.jsonl` may use half of
 * it, `stdout.log` and `stderr.log` a quarter each. A file is rotated when it reaches half its
 * share: `x` becomes `x.1` (the previous `x.1` is deleted) and a new `x` starts, so the run keeps
 * the tail of each stream, between half and all of its share. Rotation by rename costs nothing
 * per byte and never rewrites data, and a reader holding the old file open reads it to its end
 * (log-reader.ts then moves to the new one); truncating from the front would rewrite the kept
 * tail on every cut and pull it from under readers. Every new generation starts with a note of
 * how much output came before it, which is what is dropped once it is the oldest one kept: in
 * `output.jsonl` a record with a `dropped` field (a valid JSON line, shown by the readers), in
 * the raw files a `[cairn] ...` line. Listeners (`onLines`) always get every line: the cap is
 * about disk only.
 *
 * The files are the agent's alone (mode 0600): a kernel run as the kernel user (`--kernel-user`)
 * writes them through its pipes, and cannot open another run's, which may hold another session's
 * secrets.
 */
import { closeSync, fstatSync, openSync, renameSync, writeSync } from "node:fs";
import { StringDecoder } from "node:string_decoder";
import type { LogPaths, LogStream } from "./types.ts";

/** Read and written by the agent only. */
const LOG_FILE_MODE = 0o600;

/** Longer lines are split, so a program that never writes a newline cannot grow agent memory. */
export const MAX_LINE_CHARS = 16 * 1024;

export interface CapturedLine {
  readonly stream: LogStream;
  readonly text: string;
  readonly atMs: number;
}

/** One line of `output.jsonl`. */
export interface CombinedRecord {
  readonly atMs: number;
  readonly stream: LogStream;
  readonly text: string;
  /** Only on a generation's first record, the cap's note: what the run logged before this file. */
  readonly dropped?: DroppedBefore;
}

export interface DroppedBefore {
  /** Bytes of `output.jsonl` written before this file. */
  readonly bytes: number;
  /** Output lines written before this file. */
  readonly lines: number;
}

/** Per-run cap on log bytes on disk. @see LocalAgentOptions.logCapBytes */
export const DEFAULT_LOG_CAP_BYTES = 64 * 1024 * 1024;
/** Below this a generation of output.jsonl could not hold one maximal record (16 Ki chars escaped). */
export const MIN_LOG_CAP_BYTES = 1024 * 1024;
/** Suffix of the previous generation of a log file. */
export const ROTATED_SUFFIX = ".1";

/** The text of the cap's note, as writers and readers show it. */
export function droppedText(dropped: DroppedBefore): string {
  return `[cairn] log cap: ${dropped.lines} earlier lines (${formatBytes(dropped.bytes)}) were dropped`;
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

class LineSplitter {
  private readonly decoder = new StringDecoder("utf8");
  private pending = "";

  push(chunk: Buffer): string[] {
    return this.split(this.pending + this.decoder.write(chunk));
  }

  end(): string[] {
    const rest = this.pending + this.decoder.end();
    this.pending = "";
    const lines = this.split(rest);
    if (this.pending !== "") lines.push(this.pending);
    this.pending = "";
    return lines;
  }

  private split(text: string): string[] {
    const lines: string[] = [];
    let start = 0;
    for (;;) {
      const newline = text.indexOf("\n", start);
      if (newline < 0) break;
      const end = newline > start && text.charCodeAt(newline - 1) === 13 ? newline - 1 : newline;
      pushCapped(lines, text.slice(start, end));
      start = newline + 1;
    }
    let rest = text.slice(start);
    while (rest.length > MAX_LINE_CHARS) {
      lines.push(rest.slice(0, MAX_LINE_CHARS));
      rest = rest.slice(MAX_LINE_CHARS);
    }
    this.pending = rest;
    return lines;
  }
}

function pushCapped(lines: string[], line: string): void {
  for (let at = 0; at < line.length; at += MAX_LINE_CHARS) lines.push(line.slice(at, at + MAX_LINE_CHARS));
  if (line.length === 0) lines.push("");
}

/** One capped log file and its previous generation. */
class CappedFile {
  private fd: number;
  /** Bytes in the current generation, its note included. */
  private size: number;
  private noteBytes = 0;
  /** Bytes of all earlier generations, notes included (where readers find gaps). */
  private seriesBefore = 0;
  /** Output bytes (notes not counted) of all earlier generations. */
  private outputBefore = 0;
  private readonly path: string;
  private readonly generationBytes: number;

  constructor(path: string, generationBytes: number) {
    this.path = path;
    this.generationBytes = generationBytes;
    this.fd = openSync(path, "a", LOG_FILE_MODE);
    try {
      this.size = fstatSync(this.fd).size;
    } catch (error) {
      closeSync(this.fd);
      throw error;
    }
  }

  /** Room left in the current generation. */
  room(): number {
    return this.generationBytes - this.size;
  }

  /** What came before the current generation. */
  before(): { readonly seriesBytes: number; readonly outputBytes: number } {
    return { seriesBytes: this.seriesBefore, outputBytes: this.outputBefore };
  }

  /** Appends raw bytes, split across as many generations as needed. */
  writeRaw(data: Buffer, note: () => Buffer): void {
    let rest = data;
    while (rest.length > 0) {
      if (this.room() <= 0) this.rotate(note);
      const part = rest.subarray(0, this.room());
      this.append(part);
      rest = rest.subarray(part.length);
    }
  }

  /** Appends whole records, never split: rotates first when they do not fit. */
  writeRecords(data: Buffer, note: () => Buffer): void {
    if (data.length > this.room() && this.size > this.noteBytes) this.rotate(note);
    this.append(data);
  }

  close(): void {
    closeSync(this.fd);
  }

  /** `note` is called once the counters describe the new generation's past. */
  private rotate(note: () => Buffer): void {
    closeSync(this.fd);
    this.seriesBefore += this.size;
    this.outputBefore += this.size - this.noteBytes;
    // Replaces the previous generation: the run keeps the one just closed and the new one.
    renameSync(this.path, this.path + ROTATED_SUFFIX);
    this.fd = openSync(this.path, "w", LOG_FILE_MODE);
    this.size = 0;
    const head = note();
    this.append(head);
    this.noteBytes = head.length;
  }

  private append(data: Buffer): void {
    let offset = 0;
    while (offset < data.length) offset += writeSync(this.fd, data, offset);
    this.size += data.length;
  }
}

export class RunLogWriter {
  private readonly files: Record<LogStream | "combined", CappedFile>;
  private readonly splitters: Record<LogStream, LineSplitter> = {
    stdout: new LineSplitter(),
    stderr: new LineSplitter(),
  };
  /** Output lines written to output.jsonl so far. */
  private lines = 0;
  private closed = false;
  private warnedWrite = false;
  private readonly clock: () => number;
  private readonly onLines: (lines: readonly CapturedLine[]) => void;
  private readonly warn: (message: string, error?: unknown) => void;

  /**
   * Opens (creating or appending to) the run's three log files.
   * @param capBytes bytes on disk for all of them together, previous generations included.
   */
  constructor(
    paths: LogPaths,
    clock: () => number,
    onLines: (lines: readonly CapturedLine[]) => void,
    warn: (message: string, error?: unknown) => void,
    capBytes: number = DEFAULT_LOG_CAP_BYTES,
  ) {
    this.clock = clock;
    this.onLines = onLines;
    this.warn = warn;
    // Half a share per generation: a file and its previous generation fill the share.
    const opened: CappedFile[] = [];
    try {
      const open = (path: string, share: number) => {
        const file = new CappedFile(path, Math.floor(share / 2));
        opened.push(file);
        return file;
      };
      this.files = {
        stdout: open(paths.stdout, capBytes / 4),
        stderr: open(paths.stderr, capBytes / 4),
        combined: open(paths.combined, capBytes / 2),
      };
    } catch (error) {
      for (const file of opened) file.close();
      throw error;
    }
  }

  write(stream: LogStream, chunk: Buffer): void {
    if (this.closed) return;
    this.guard(() =>
      this.files[stream].writeRaw(chunk, () => {
        const dropped = formatBytes(this.files[stream].before().outputBytes);
        return Buffer.from(`[cairn] log cap: the first ${dropped} of ${stream} were dropped\n`);
      }),
    );
    this.emit(stream, this.splitters[stream].push(chunk));
  }

  /** Flushes unterminated last lines and closes the files. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.emit("stdout", this.splitters.stdout.end());
    this.emit("stderr", this.splitters.stderr.end());
    this.closed = true;
    for (const file of Object.values(this.files)) {
      try {
        file.close();
      } catch (error) {
        this.warn("closing a kernel log file failed", error);
      }
    }
  }

  private emit(stream: LogStream, texts: readonly string[]): void {
    if (texts.length === 0) return;
    const atMs = this.clock();
    const lines = texts.map((text) => ({ stream, text, atMs }));
    const combined = this.files.combined;
    let batch: string[] = [];
    let batchBytes = 0;
    const flush = () => {
      if (batch.length === 0) return;
      const data = Buffer.from(batch.join(""));
      this.guard(() => combined.writeRecords(data, () => this.combinedNote(atMs)));
      this.lines += batch.length;
      batch = [];
      batchBytes = 0;
    };
    for (const line of lines) {
      const json = JSON.stringify({ atMs, stream, text: line.text } satisfies CombinedRecord) + "\n";
      const bytes = Buffer.byteLength(json);
      // Records are never split across generations: a batch is cut where the next would not fit.
      if (batch.length > 0 && batchBytes + bytes > combined.room()) flush();
      batch.push(json);
      batchBytes += bytes;
    }
    flush();
    this.onLines(lines);
  }

  private combinedNote(atMs: number): Buffer {
    const dropped: DroppedBefore = { bytes: this.files.combined.before().seriesBytes, lines: this.lines };
    const record: CombinedRecord = { atMs, stream: "stderr", text: droppedText(dropped), dropped };
    return Buffer.from(JSON.stringify(record) + "\n");
  }

  private guard(write: () => void): void {
    try {
      write();
    } catch (error) {
      // A full disk must not take the agent (and every other kernel) down; say it once.
      if (!this.warnedWrite) this.warn("writing a kernel log file failed; further output may be lost", error);
      this.warnedWrite = true;
    }
  }
}
