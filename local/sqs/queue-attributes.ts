/** The queue attributes the embedded SQS supports, their AWS ranges and defaults. */
import { SqsError, SqsErrorCode } from "./errors.ts";

export const SETTABLE_ATTRIBUTES = {
  DelaySeconds: { min: 0, max: 900, default: 0 },
  MaximumMessageSize: { min: 1024, max: 1_048_576, default: 1_048_576 },
  MessageRetentionPeriod: { min: 60, max: 1_209_600, default: 345_600 },
  ReceiveMessageWaitTimeSeconds: { min: 0, max: 20, default: 0 },
  VisibilityTimeout: { min: 0, max: 43_200, default: 30 },
} as const;
export type SettableAttribute = keyof typeof SETTABLE_ATTRIBUTES;
export type QueueSettings = Record<SettableAttribute, number>;

/** Real SQS attributes this local queue does not implement: refused, never silently ignored. */
const UNSUPPORTED = new Set([
  "Policy",
  "RedrivePolicy",
  "RedriveAllowPolicy",
  "KmsMasterKeyId",
  "KmsDataKeyReusePeriodSeconds",
  "SqsManagedSseEnabled",
  "FifoQueue",
  "ContentBasedDeduplication",
  "DeduplicationScope",
  "FifoThroughputLimit",
]);

export const READ_ONLY_ATTRIBUTES = [
  "ApproximateNumberOfMessages",
  "ApproximateNumberOfMessagesNotVisible",
  "ApproximateNumberOfMessagesDelayed",
  "CreatedTimestamp",
  "LastModifiedTimestamp",
  "QueueArn",
] as const;

export const DEFAULT_SETTINGS: QueueSettings = Object.fromEntries(
  Object.entries(SETTABLE_ATTRIBUTES).map(([name, range]) => [name, range.default]),
) as QueueSettings;

/** Validates `Attributes` of CreateQueue / SetQueueAttributes into numbers. */
export function parseSettings(attributes: Readonly<Record<string, string>>): Partial<QueueSettings> {
  const out: Partial<QueueSettings> = {};
  for (const [name, text] of Object.entries(attributes)) {
    if (UNSUPPORTED.has(name)) {
      throw new SqsError(
        SqsErrorCode.UnsupportedOperation,
        `Attribute ${name} is not supported by the embedded SQS.`,
      );
    }
    if (!Object.hasOwn(SETTABLE_ATTRIBUTES, name)) {
      throw new SqsError(SqsErrorCode.InvalidAttributeName, `Unknown Attribute ${name}.`);
    }
    const range = SETTABLE_ATTRIBUTES[name as SettableAttribute];
    const value = /^\d+$/.test(text) ? Number(text) : Number.NaN;
    if (!Number.isSafeInteger(value) || value < range.min || value > range.max) {
      throw new SqsError(
        SqsErrorCode.InvalidAttributeValue,
        `Invalid value for the parameter ${name}. Reason: must be an integer from ${range.min} to ${range.max}, got '${text}'.`,
      );
    }
    out[name as SettableAttribute] = value;
  }
  return out;
}

/** Names GetQueueAttributes accepts: `All`, settable, read-only and (unset) unsupported ones. */
export function isKnownAttributeName(name: string): boolean {
  return (
    name === "All" ||
    Object.hasOwn(SETTABLE_ATTRIBUTES, name) ||
    (READ_ONLY_ATTRIBUTES as readonly string[]).includes(name) ||
    UNSUPPORTED.has(name)
  );
}
