/** Paging helpers: opaque listing cursors and bounded parallel reads. */
import { InvalidStoreRequestError } from "../../core/ports/errors.ts";

/**
 * A cursor is the last index sort key a page consumed, tagged with the listing it belongs to.
 * The next page reads each shard from just after it, so a merged listing needs no per-shard state.
 */
export function encodeCursor(kind: string, after: string): string {
  return Buffer.from(JSON.stringify({ kind, after }), "utf8").toString("base64url");
}

export function decodeCursor(cursor: string, kind: string): string {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as {
      kind?: unknown;
      after?: unknown;
    };
    if (parsed.kind === kind && typeof parsed.after === "string") return parsed.after;
  } catch {
    // fall through to the error below
  }
  throw new InvalidStoreRequestError("cursor", `is not a cursor from a ${kind} listing`);
}
