import type { IncomingMessage } from "node:http";

/**
 * The whole request body, or undefined when it exceeds `maxBytes` (the rest is drained, not
 * buffered, so the connection stays usable for the error response).
 */
export function readBody(request: IncomingMessage, maxBytes: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxBytes) chunks.push(chunk);
    });
    request.on("end", () => resolve(size > maxBytes ? undefined : Buffer.concat(chunks)));
    request.on("error", reject);
  });
}

/** AWS JSON sends timestamps as epoch seconds; `undefined` members are left out. */
export function toWire(value: unknown): unknown {
  if (value instanceof Date) return value.getTime() / 1000;
  if (value instanceof Uint8Array) return Buffer.from(value).toString("base64");
  if (Array.isArray(value)) return value.map(toWire);
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [key, member] of Object.entries(value)) if (member !== undefined) out[key] = toWire(member);
    return out;
  }
  return value;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
