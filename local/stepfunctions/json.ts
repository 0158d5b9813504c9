/** JSON values as Step Functions passes them between states, and the byte measure its quotas use. */

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Serialises like the service does: `undefined` (a handler that returned nothing) becomes `null`. */
export function toJsonText(value: unknown): string {
  return JSON.stringify(value ?? null) ?? "null";
}

/** A deep copy through text, as data really travels: no shared references, no `undefined`, no Dates. */
export function roundTrip(value: unknown): JsonValue {
  return JSON.parse(toJsonText(value)) as JsonValue;
}

/** Step Functions quotas are in bytes of UTF-8, not characters. */
export function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, "utf8");
}
