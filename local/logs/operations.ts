/**
 * The CloudWatch Logs operations the embedded endpoint answers, from the decoded AWS JSON input to
 * the output: every field checked as AWS checks it (type, length, pattern, range, combinations),
 * then the store. Errors are LocalLogsError subclasses whose `code` is AWS's error type.
 */
import { InvalidParameterError, constraintError } from "./errors.ts";
import { LOGS_LIMITS } from "./limits.ts";
import type { InputEvent, LogsStore } from "./store.ts";

type Input = Readonly<Record<string, unknown>>;
export type LogsOperation = (store: LogsStore, input: Input) => unknown;

const GROUP_NAME = /^[.\-_/#A-Za-z0-9]+$/;
const STREAM_NAME = /^[^:*]*$/;

export const LOGS_OPERATIONS: Readonly<Record<string, LogsOperation>> = {
  CreateLogGroup(store, input) {
    const name = groupName(input, "logGroupName");
    const tags = input.tags === undefined ? {} : stringMap(input.tags, "tags");
    store.createLogGroup(name, tags);
    return {};
  },
  DeleteLogGroup(store, input) {
    store.deleteLogGroup(groupName(input, "logGroupName"));
    return {};
  },
  DescribeLogGroups(store, input) {
    const prefix = optionalName(input, "logGroupNamePrefix", GROUP_NAME, "[\\.\\-_/#A-Za-z0-9]+");
    const pattern = optionalName(
      input,
      "logGroupNamePattern",
      /^[.\-_/#A-Za-z0-9]*$/,
      "[\\.\\-_/#A-Za-z0-9]*",
      0,
    );
    if (prefix !== undefined && pattern !== undefined) {
      throw new InvalidParameterError(
        "LogGroup name prefix and LogGroup name pattern are mutually exclusive parameters.",
      );
    }
    return store.describeLogGroups({
      ...(prefix === undefined ? {} : { prefix }),
      ...(pattern === undefined ? {} : { pattern }),
      limit: limit(input, LOGS_LIMITS.maxDescribePage),
      ...token(input),
    });
  },
  CreateLogStream(store, input) {
    store.createLogStream(groupName(input, "logGroupName"), streamName(input, "logStreamName"));
    return {};
  },
  DeleteLogStream(store, input) {
    store.deleteLogStream(groupName(input, "logGroupName"), streamName(input, "logStreamName"));
    return {};
  },
  DescribeLogStreams(store, input) {
    const orderBy = input.orderBy ?? "LogStreamName";
    if (orderBy !== "LogStreamName" && orderBy !== "LastEventTime") {
      throw constraintError(
        "orderBy",
        orderBy,
        "Member must satisfy enum value set: [LogStreamName, LastEventTime]",
      );
    }
    const prefix = optionalName(input, "logStreamNamePrefix", STREAM_NAME, "[^:*]*");
    return store.describeLogStreams({
      groupName: groupIdentifier(input),
      ...(prefix === undefined ? {} : { prefix }),
      orderBy,
      descending: optionalBoolean(input, "descending") ?? false,
      limit: limit(input, LOGS_LIMITS.maxDescribePage),
      ...token(input),
    });
  },
  PutLogEvents(store, input) {
    const group = groupName(input, "logGroupName");
    const stream = streamName(input, "logStreamName");
    const events = logEvents(input.logEvents);
    return store.putLogEvents(group, stream, events);
  },
  GetLogEvents(store, input) {
    const range = timeRange(input);
    return store.getLogEvents({
      groupName: groupIdentifier(input),
      streamName: streamName(input, "logStreamName"),
      ...range,
      limit: limit(input, LOGS_LIMITS.maxEventsPerPage),
      ...token(input),
      startFromHead: optionalBoolean(input, "startFromHead") ?? false,
    });
  },
  FilterLogEvents(store, input) {
    const names = input.logStreamNames;
    const prefix = optionalName(input, "logStreamNamePrefix", STREAM_NAME, "[^:*]*");
    if (names !== undefined && prefix !== undefined) {
      throw new InvalidParameterError(
        "logStreamNames and logStreamNamePrefix are mutually exclusive parameters.",
      );
    }
    let streamNames: string[] | undefined;
    if (names !== undefined) {
      if (!Array.isArray(names)) throw constraintError("logStreamNames", names, "Member must be a list");
      if (names.length < 1 || names.length > LOGS_LIMITS.maxFilterStreams) {
        throw constraintError(
          "logStreamNames",
          names,
          `Member must have length between 1 and ${LOGS_LIMITS.maxFilterStreams}`,
        );
      }
      streamNames = names.map((n, i) =>
        checkName(n, `logStreamNames.${i + 1}.member`, STREAM_NAME, "[^:*]*"),
      );
    }
    const filterPattern = input.filterPattern;
    if (filterPattern !== undefined && (typeof filterPattern !== "string" || filterPattern.length > 1024)) {
      throw constraintError(
        "filterPattern",
        filterPattern,
        "Member must have length less than or equal to 1024",
      );
    }
    return store.filterLogEvents({
      groupName: groupIdentifier(input),
      ...(streamNames === undefined ? {} : { streamNames }),
      ...(prefix === undefined ? {} : { streamPrefix: prefix }),
      ...timeRange(input),
      ...(filterPattern === undefined ? {} : { filterPattern }),
      limit: limit(input, LOGS_LIMITS.maxEventsPerPage),
      ...token(input),
    });
  },
};

// ---- fields ---------------------------------------------------------------------------------

function checkName(value: unknown, field: string, pattern: RegExp, shown: string, min = 1): string {
  if (value === undefined || value === null) throw constraintError(field, "null", "Member must not be null");
  if (typeof value !== "string") throw constraintError(field, value, "Member must be a string");
  if (value.length < min || value.length > LOGS_LIMITS.maxNameLength) {
    throw constraintError(
      field,
      value,
      `Member must have length between ${min} and ${LOGS_LIMITS.maxNameLength}`,
    );
  }
  if (!pattern.test(value)) {
    throw constraintError(field, value, `Member must satisfy regular expression pattern: ${shown}`);
  }
  return value;
}

function groupName(input: Input, field: string): string {
  return checkName(input[field], field, GROUP_NAME, "[\\.\\-_/#A-Za-z0-9]+");
}

function streamName(input: Input, field: string): string {
  return checkName(input[field], field, STREAM_NAME, "[^:*]*");
}

function optionalName(
  input: Input,
  field: string,
  pattern: RegExp,
  shown: string,
  min = 1,
): string | undefined {
  return input[field] === undefined ? undefined : checkName(input[field], field, pattern, shown, min);
}

/** Reads that take `logGroupName` or `logGroupIdentifier` (a name or an ARN), exactly one. */
function groupIdentifier(input: Input): string {
  const hasName = input.logGroupName !== undefined;
  const hasIdentifier = input.logGroupIdentifier !== undefined;
  if (hasName && hasIdentifier) {
    throw new InvalidParameterError("LogGroup name and LogGroup ARN are mutually exclusive parameters.");
  }
  if (!hasName && !hasIdentifier) {
    throw new InvalidParameterError("Should provide either name or ARN of the log group.");
  }
  if (hasName) return groupName(input, "logGroupName");
  return checkName(input.logGroupIdentifier, "logGroupIdentifier", /^[\w#+=/:,.@-]*$/, "[\\w#+=/:,.@-]*");
}

function limit(input: Input, max: number): number {
  const value = input.limit;
  if (value === undefined) return max;
  if (typeof value !== "number" || !Number.isInteger(value)) {
    throw constraintError("limit", value, "Member must be an integer");
  }
  if (value < 1) throw constraintError("limit", value, "Member must have value greater than or equal to 1");
  if (value > max)
    throw constraintError("limit", value, `Member must have value less than or equal to ${max}`);
  return value;
}

function token(input: Input): { nextToken?: string } {
  const value = input.nextToken;
  if (value === undefined) return {};
  if (typeof value !== "string" || value.length < 1) {
    throw constraintError("nextToken", value, "Member must have length greater than or equal to 1");
  }
  return { nextToken: value };
}

function optionalBoolean(input: Input, field: string): boolean | undefined {
  const value = input[field];
  if (value === undefined) return undefined;
  if (typeof value !== "boolean") throw constraintError(field, value, "Member must be a boolean");
  return value;
}

function timestamp(value: unknown, field: string): number {
  if (typeof value !== "number" || !Number.isInteger(value)) {
    throw constraintError(
      field,
      value ?? "null",
      value === undefined ? "Member must not be null" : "Member must be an integer",
    );
  }
  if (value < 0) throw constraintError(field, value, "Member must have value greater than or equal to 0");
  return value;
}

function timeRange(input: Input): { startTime?: number; endTime?: number } {
  const startTime = input.startTime === undefined ? undefined : timestamp(input.startTime, "startTime");
  const endTime = input.endTime === undefined ? undefined : timestamp(input.endTime, "endTime");
  if (startTime !== undefined && endTime !== undefined && startTime > endTime) {
    throw new InvalidParameterError("startTime must be less than or equal to endTime");
  }
  return {
    ...(startTime === undefined ? {} : { startTime }),
    ...(endTime === undefined ? {} : { endTime }),
  };
}

function stringMap(value: unknown, field: string): Record<string, string> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw constraintError(field, value, "Member must be a map");
  }
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== "string") throw constraintError(`${field}.${k}`, v, "Member must be a string");
    out[k] = v;
  }
  return out;
}

/** PutLogEvents' batch: count, per-event and whole-batch size, each event's fields. */
function logEvents(value: unknown): InputEvent[] {
  if (value === undefined || value === null)
    throw constraintError("logEvents", "null", "Member must not be null");
  if (!Array.isArray(value)) throw constraintError("logEvents", value, "Member must be a list");
  if (value.length < 1) {
    throw constraintError("logEvents", "[]", "Member must have length greater than or equal to 1");
  }
  if (value.length > LOGS_LIMITS.maxBatchEvents) {
    throw constraintError(
      "logEvents",
      `[${value.length} events]`,
      `Member must have length less than or equal to ${LOGS_LIMITS.maxBatchEvents}`,
    );
  }
  let total = 0;
  return value.map((raw: unknown, i) => {
    const field = `logEvents.${i + 1}.member`;
    if (typeof raw !== "object" || raw === null)
      throw constraintError(field, raw, "Member must be a structure");
    const event = raw as Record<string, unknown>;
    const ts = timestamp(event.timestamp, `${field}.timestamp`);
    const message = event.message;
    if (typeof message !== "string" || message.length < 1) {
      throw constraintError(
        `${field}.message`,
        message ?? "null",
        "Member must have length greater than or equal to 1",
      );
    }
    const size = Buffer.byteLength(message) + LOGS_LIMITS.eventOverheadBytes;
    if (size > LOGS_LIMITS.maxEventBytes) {
      throw new InvalidParameterError(
        `Log event too large: ${size} bytes exceeds limit of ${LOGS_LIMITS.maxEventBytes}`,
      );
    }
    total += size;
    if (total > LOGS_LIMITS.maxBatchBytes) {
      throw new InvalidParameterError(
        `Upload too large: ${sizeOfAll(value)} bytes exceeds limit of ${LOGS_LIMITS.maxBatchBytes}`,
      );
    }
    return { timestamp: ts, message };
  });
}

function sizeOfAll(events: readonly unknown[]): number {
  let total = 0;
  for (const e of events) {
    const message = (e as { message?: unknown } | null)?.message;
    total += (typeof message === "string" ? Buffer.byteLength(message) : 0) + LOGS_LIMITS.eventOverheadBytes;
  }
  return total;
}
