/** Reading the decoded JSON of a request: shapes that are wrong are the caller's error. */
import { isPlainObject } from "../aws-json/index.ts";
import { invalidParameter } from "./errors.ts";

export type Json = Record<string, unknown>;

export function asObject(value: unknown, where: string): Json {
  if (!isPlainObject(value)) throw invalidParameter(`${where} must be an object.`);
  return value;
}

export function asArray(value: unknown, where: string): unknown[] {
  if (!Array.isArray(value)) throw invalidParameter(`${where} must be a list.`);
  return value;
}

export function optionalString(input: Json, field: string): string | undefined {
  const value = input[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") throw invalidParameter(`${field} must be a string.`);
  return value;
}

/** JSON with object keys sorted at every level: two requests with the same parameters compare equal. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}
