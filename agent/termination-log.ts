/**
 * The termination message a program may leave in `$CAIRN_TERMINATION_LOG`, capped like
 * Kubernetes' terminationMessagePath (4 KiB).
 */
import { promises as fs } from "node:fs";

export const TERMINATION_MESSAGE_MAX_BYTES = 4096;

/** The trimmed message, or `undefined` when the file is missing or blank. */
export async function readTerminationMessage(path: string): Promise<string | undefined> {
  let handle;
  try {
    handle = await fs.open(path, "r");
  } catch {
    return undefined;
  }
  try {
    const buffer = Buffer.alloc(TERMINATION_MESSAGE_MAX_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    const text = capUtf8(buffer.toString("utf8", 0, bytesRead).trim(), TERMINATION_MESSAGE_MAX_BYTES);
    return text === "" ? undefined : text;
  } finally {
    await handle.close();
  }
}

/** Cuts `text` to at most `maxBytes` of UTF-8 without splitting a character. */
export function capUtf8(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text);
  if (bytes.length <= maxBytes) return text;
  let end = maxBytes;
  // Step back over continuation bytes (10xxxxxx) to the start of the cut character.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString("utf8");
}
