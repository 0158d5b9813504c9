/** Input checks shared by the store's operations: each failure names the field and the reason. */
import type { ResourceRequest } from "../../core/model.ts";
import { InvalidStoreRequestError } from "../../core/ports/errors.ts";

/** Ids become parts of keys: non-empty and short enough for any key they appear in. */
export function requireId(field: string, value: string): void {
  if (typeof value !== "string" || value.length === 0) {
    throw new InvalidStoreRequestError(field, "must be a non-empty string");
  }
  if (value.length > 256) {
    throw new InvalidStoreRequestError(field, `must be at most 256 characters, got ${value.length}`);
  }
}

export function requireCount(field: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new InvalidStoreRequestError(field, `must be a non-negative integer, got ${value}`);
  }
}

export function requireTime(field: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new InvalidStoreRequestError(
      field,
      `must be epoch milliseconds (a non-negative integer), got ${value}`,
    );
  }
}

export function requireLimit(field: string, value: number, max: number): void {
  if (!Number.isInteger(value) || value < 1 || value > max) {
    throw new InvalidStoreRequestError(field, `must be an integer from 1 to ${max}, got ${value}`);
  }
}

export function requireResources(field: string, value: ResourceRequest): void {
  for (const key of ["cpu", "memoryMiB"] as const) {
    const n = value[key];
    if (typeof n !== "number" || !Number.isFinite(n) || n < 0) {
      throw new InvalidStoreRequestError(`${field}.${key}`, `must be a non-negative number, got ${n}`);
    }
  }
}

export function requireNonEmpty<T>(field: string, values: readonly T[]): void {
  if (values.length === 0) throw new InvalidStoreRequestError(field, "must not be empty");
}

export function requireKnown<T extends string>(field: string, value: T, known: readonly T[]): void {
  if (!known.includes(value)) throw new InvalidStoreRequestError(field, `unknown status ${String(value)}`);
}
