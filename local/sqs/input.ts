/** Reading fields of a decoded SQS request: each fault names its field, in AWS's wording. */
import { SqsError, SqsErrorCode, invalidParameter, missingParameter } from "./errors.ts";

export type Input = Readonly<Record<string, unknown>>;

export function requiredString(input: Input, field: string): string {
  const value = input[field];
  if (value === undefined || value === null || value === "") throw missingParameter(field);
  if (typeof value !== "string") throw invalidParameter(field, value, "Must be a string.");
  return value;
}

export function optionalString(input: Input, field: string): string | undefined {
  const value = input[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") throw invalidParameter(field, value, "Must be a string.");
  return value;
}

export function optionalInt(input: Input, field: string, min: number, max: number): number | undefined {
  const value = input[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw invalidParameter(field, value, `Must be between ${min} and ${max}, if provided.`);
  }
  return value;
}

export function requiredInt(input: Input, field: string, min: number, max: number): number {
  const value = optionalInt(input, field, min, max);
  if (value === undefined) throw missingParameter(field);
  return value;
}

export function optionalStringList(input: Input, field: string): readonly string[] | undefined {
  const value = input[field];
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || !value.every((v) => typeof v === "string")) {
    throw invalidParameter(field, value, "Must be a list of strings.");
  }
  return value;
}

export function optionalStringMap(input: Input, field: string): Readonly<Record<string, string>> | undefined {
  const value = input[field];
  if (value === undefined || value === null) return undefined;
  if (
    typeof value !== "object" ||
    Array.isArray(value) ||
    !Object.values(value).every((v) => typeof v === "string")
  ) {
    throw invalidParameter(field, value, "Must be a map of strings to strings.");
  }
  return value as Record<string, string>;
}

export function requiredList(input: Input, field: string): readonly unknown[] {
  const value = input[field];
  if (value === undefined || value === null) throw missingParameter(field);
  if (!Array.isArray(value)) throw invalidParameter(field, value, "Must be a list.");
  return value;
}

export function requiredObject(value: unknown, field: string): Input {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw invalidParameter(field, value, "Must be an object.");
  }
  return value as Input;
}

/**
 * AWS's allowed message characters: #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD |
 * #x10000 to #x10FFFF. A lone surrogate (possible in a decoded JSON string) is not a character.
 */
export function firstInvalidCharacter(text: string): number | undefined {
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    const ok =
      cp === 0x9 ||
      cp === 0xa ||
      cp === 0xd ||
      (cp >= 0x20 && cp <= 0xd7ff) ||
      (cp >= 0xe000 && cp <= 0xfffd) ||
      (cp >= 0x10000 && cp <= 0x10ffff);
    if (!ok) return cp;
  }
  return undefined;
}

export function invalidContents(cp: number, where: string): SqsError {
  return new SqsError(
    SqsErrorCode.InvalidMessageContents,
    `Invalid binary character '#x${cp.toString(16).toUpperCase()}' was found in the ${where}, the set of allowed characters is #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF`,
  );
}
