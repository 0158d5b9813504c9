/**
 * Captures a kernel's stdout and stderr: raw bytes appended to `stdout.log` / `stderr.log`,
 * complete lines appended to the combined `output.jsonl` and handed to live listeners.
 * Writes are synchronous per chunk so that a line is on disk before any listener hears of it
 * (followers tail the file and are only woken by listeners), and so that a fast writer is held
 * back by its pipe rather than by unbounded buffers in the agent.
 */
import { closeSync, openSync, writeSync } from "node:fs";
import { StringDecoder } from "node:string_decoder";
import type { LogPaths, LogStream } from "./types.ts";

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

export class RunLogWriter {
  private readonly fds: Record<LogStream | "combined", number>;
  private readonly splitters: Record<LogStream, LineSplitter> = {
    stdout: new LineSplitter(),
    stderr: new LineSplitter(),
  };
  private closed = false;
  private warnedWrite = false;
  private readonly clock: () => number;
  private readonly onLines: (lines: readonly CapturedLine[]) => void;
  private readonly warn: (message: string, error?: unknown) => void;

  /** Opens (creating or appending to) the run's three log files. */
  constructor(
    paths: LogPaths,
    clock: () => number,
    onLines: (lines: readonly CapturedLine[]) => void,
    warn: (message: string, error?: unknown) => void,
  ) {
    this.clock = clock;
    this.onLines = onLines;
    this.warn = warn;
    const stdout = openSync(paths.stdout, "a");
    let stderr: number | undefined;
    try {
      stderr = openSync(paths.stderr, "a");
      this.fds = { stdout, stderr, combined: openSync(paths.combined, "a") };
    } catch (error) {
      closeSync(stdout);
      if (stderr !== undefined) closeSync(stderr);
      throw error;
    }
  }

  write(stream: LogStream, chunk: Buffer): void {
    if (this.closed) return;
    this.writeAll(this.fds[stream], chunk);
    this.emit(stream, this.splitters[stream].push(chunk));
  }

  /** Flushes unterminated last lines and closes the files. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.emit("stdout", this.splitters.stdout.end());
    this.emit("stderr", this.splitters.stderr.end());
    this.closed = true;
    for (const fd of Object.values(this.fds)) {
      try {
        closeSync(fd);
      } catch (error) {
        this.warn("closing a kernel log file failed", error);
      }
    }
  }

  private emit(stream: LogStream, texts: readonly string[]): void {
    if (texts.length === 0) return;
    const atMs = this.clock();
    const lines = texts.map((text) => ({ stream, text, atMs }));
    const json = lines.map((line) =>
      JSON.stringify({ atMs, stream, text: line.text } satisfies CombinedRecord),
    );
    this.writeAll(this.fds.combined, Buffer.from(json.join("\n") + "\n"));
    this.onLines(lines);
  }

  private writeAll(fd: number, data: Buffer): void {
    try {
      let offset = 0;
      while (offset < data.length) offset += writeSync(fd, data, offset);
    } catch (error) {
      // A full disk must not take the agent (and every other kernel) down; say it once.
      if (!this.warnedWrite) this.warn("writing a kernel log file failed; further output may be lost", error);
      this.warnedWrite = true;
    }
  }
}
