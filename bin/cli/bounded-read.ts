/**
 * Reads a file or a descriptor, but never more than a limit: `-f /dev/zero` (or a multi-GB file
 * given by mistake) must fail at once, not grow the process until it dies.
 */
import { closeSync, openSync, readSync } from "node:fs";

/** Thrown when the source holds more than `maxBytes`; `code` is EFBIG, as the kernel names it. */
export class TooLargeError extends Error {
  override readonly name = "TooLargeError";
  readonly code = "EFBIG";
  readonly maxBytes: number;
  constructor(maxBytes: number) {
    super(`it is larger than ${maxBytes} bytes`);
    this.maxBytes = maxBytes;
  }
}

/** Reads `path` (or descriptor 0 for "-") as UTF-8, reading at most `maxBytes + 1` bytes. */
export function readAtMost(source: string | 0, maxBytes: number): string {
  const fd = source === 0 ? 0 : openSync(source, "r");
  try {
    // One byte more than allowed tells "exactly the limit" from "over it".
    const buffer = Buffer.alloc(maxBytes + 1);
    let length = 0;
    while (length < buffer.length) {
      let n: number;
      try {
        n = readSync(fd, buffer, length, buffer.length - length, null);
      } catch (error) {
        // A non-blocking stdin with nothing yet: wait briefly instead of spinning.
        if ((error as { code?: unknown }).code === "EAGAIN") {
          Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
          continue;
        }
        throw error;
      }
      if (n === 0) break;
      length += n;
    }
    if (length > maxBytes) throw new TooLargeError(maxBytes);
    return buffer.toString("utf8", 0, length);
  } finally {
    if (fd !== 0) closeSync(fd);
  }
}
