/**
 * SQS message attributes: validation as AWS applies it, their share of the message size, and
 * the MD5 digest (`MD5OfMessageAttributes`) in AWS's documented encoding, so clients that
 * check it (botocore, the Java SDK) accept ours.
 */
import { createHash } from "node:crypto";
import { SqsError, SqsErrorCode, invalidParameter } from "./errors.ts";
import { firstInvalidCharacter, invalidContents, requiredObject } from "./input.ts";

export interface MessageAttributeValue {
  readonly DataType: string;
  readonly StringValue?: string;
  readonly BinaryValue?: Buffer;
}

export type MessageAttributes = ReadonlyMap<string, MessageAttributeValue>;

export const MAX_MESSAGE_ATTRIBUTES = 10;
const NAME = /^[A-Za-z0-9_.-]{1,256}$/;
const DATA_TYPE = /^(String|Number|Binary)(\.[^\s].*)?$/;
/** AWS: up to 38 digits of precision, from -10^128 to 10^126. */
const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

export function decodeMessageAttributes(raw: unknown, field: string): MessageAttributes {
  const out = new Map<string, MessageAttributeValue>();
  if (raw === undefined || raw === null) return out;
  const map = requiredObject(raw, field);
  const names = Object.keys(map);
  if (names.length > MAX_MESSAGE_ATTRIBUTES) {
    throw invalidParameter(
      field,
      `[${names.join(", ")}]`,
      `Number of message attributes [${names.length}] exceeds the allowed maximum [${MAX_MESSAGE_ATTRIBUTES}].`,
    );
  }
  for (const name of names) {
    const path = `${field}.${name}`;
    if (!NAME.test(name) || name.startsWith(".") || name.endsWith(".") || name.includes("..")) {
      throw invalidParameter(
        field,
        name,
        "Message attribute names may contain only alphanumerics, hyphens, underscores and periods (not at either end, not two in a row), at most 256 characters.",
      );
    }
    if (/^(aws\.|amazon\.)/i.test(name)) {
      throw invalidParameter(field, name, `Message attribute name '${name}' is reserved for use by AWS.`);
    }
    const value = requiredObject(map[name], path);
    const dataType = value.DataType;
    if (typeof dataType !== "string" || !DATA_TYPE.test(dataType) || dataType.length > 256) {
      throw invalidParameter(
        `${path}.DataType`,
        dataType ?? "null",
        "must be String, Number or Binary, optionally followed by .customLabel.",
      );
    }
    if (value.StringListValues !== undefined || value.BinaryListValues !== undefined) {
      throw new SqsError(
        SqsErrorCode.UnsupportedOperation,
        `${path}: StringListValues and BinaryListValues are reserved by AWS and not implemented.`,
      );
    }
    if (dataType.startsWith("Binary")) {
      const binary = value.BinaryValue;
      if (typeof binary !== "string" || binary.length === 0) {
        throw invalidParameter(
          path,
          name,
          `Message attribute '${name}' must contain a non-empty value of type 'Binary'.`,
        );
      }
      out.set(name, { DataType: dataType, BinaryValue: Buffer.from(binary, "base64") });
      continue;
    }
    const text = value.StringValue;
    if (typeof text !== "string" || text.length === 0) {
      throw invalidParameter(
        path,
        name,
        `Message attribute '${name}' must contain a non-empty value of type '${dataType.startsWith("Number") ? "Number" : "String"}'.`,
      );
    }
    if (dataType.startsWith("Number") && !validNumber(text)) {
      throw invalidParameter(
        path,
        text,
        `Message attribute '${name}' of type Number must be a number of at most 38 significant digits between -10^128 and 10^126.`,
      );
    }
    const bad = firstInvalidCharacter(text);
    if (bad !== undefined) throw invalidContents(bad, `value of message attribute '${name}'`);
    out.set(name, { DataType: dataType, StringValue: text });
  }
  return out;
}

function validNumber(text: string): boolean {
  if (!NUMBER.test(text)) return false;
  const digits = text
    .replace(/[eE].*$/, "")
    .replace(/[^0-9]/g, "")
    .replace(/^0+/, "");
  const value = Number(text);
  return digits.length <= 38 && Math.abs(value) <= 1e126 && (value >= -1e128 || value === 0);
}

/** What the attributes add to the message size: names, data types and values, in bytes. */
export function attributesSizeBytes(attributes: MessageAttributes): number {
  let size = 0;
  for (const [name, value] of attributes) {
    size += Buffer.byteLength(name) + Buffer.byteLength(value.DataType);
    size += value.BinaryValue ? value.BinaryValue.length : Buffer.byteLength(value.StringValue ?? "");
  }
  return size;
}

/** AWS's digest: per attribute, by name, length-prefixed name, type, transport byte and value. */
export function md5OfMessageAttributes(attributes: MessageAttributes): string | undefined {
  if (attributes.size === 0) return undefined;
  const hash = createHash("md5");
  const lengthPrefixed = (bytes: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(bytes.length);
    hash.update(length);
    hash.update(bytes);
  };
  for (const name of [...attributes.keys()].sort()) {
    const value = attributes.get(name)!;
    lengthPrefixed(Buffer.from(name, "utf8"));
    lengthPrefixed(Buffer.from(value.DataType, "utf8"));
    if (value.BinaryValue) {
      hash.update(Buffer.of(2));
      lengthPrefixed(value.BinaryValue);
    } else {
      hash.update(Buffer.of(1));
      lengthPrefixed(Buffer.from(value.StringValue ?? "", "utf8"));
    }
  }
  return hash.digest("hex");
}

/** `All` / `.*` select every attribute, `prefix.*` those under the prefix, else exact names. */
export function selectAttributes(attributes: MessageAttributes, names: readonly string[]): MessageAttributes {
  if (names.length === 0) return new Map();
  const selected = new Map<string, MessageAttributeValue>();
  for (const [name, value] of attributes) {
    const wanted = names.some(
      (n) => n === "All" || n === ".*" || n === name || (n.endsWith(".*") && name.startsWith(n.slice(0, -1))),
    );
    if (wanted) selected.set(name, value);
  }
  return selected;
}

export function attributesToWire(attributes: MessageAttributes): Record<string, unknown> | undefined {
  if (attributes.size === 0) return undefined;
  const out: Record<string, unknown> = {};
  for (const [name, value] of attributes) {
    out[name] = value.BinaryValue
      ? { DataType: value.DataType, BinaryValue: value.BinaryValue.toString("base64") }
      : { DataType: value.DataType, StringValue: value.StringValue };
  }
  return out;
}
