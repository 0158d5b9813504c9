/**
 * The EventBridge API operations the embedded server answers, as plain functions from the
 * decoded AWS JSON input to the output. They throw LocalEventBridgeError subclasses whose
 * `code` is the AWS error type, which the server turns into `__type`.
 */
import type { PutEventsRequestEntry } from "./envelope.ts";
import { isFailureEntry, validatePutEventsRequest, type PutEventsResultEntry } from "./envelope.ts";
import type { LocalEventBus } from "./bus.ts";
import { ResourceNotFoundError, ValidationError, type LocalEventBridgeError } from "./errors.ts";
import { isPlainObject } from "./pattern-leaf.ts";
import { compileEventPattern } from "./pattern.ts";

export const DEFAULT_BUS_NAME = "default";

/** The buses one server routes to, by name and by ARN. */
export class BusRegistry {
  readonly #byName = new Map<string, LocalEventBus>();
  readonly #byArn = new Map<string, LocalEventBus>();

  constructor(buses: readonly LocalEventBus[]) {
    for (const bus of buses) {
      if (this.#byName.has(bus.name)) throw new ValidationError(`two event buses are named "${bus.name}"`);
      this.#byName.set(bus.name, bus);
      this.#byArn.set(bus.arn, bus);
    }
  }

  /** A name or an ARN; undefined means the default bus. */
  find(nameOrArn: string | undefined): LocalEventBus | undefined {
    const key = nameOrArn ?? DEFAULT_BUS_NAME;
    return key.startsWith("arn:") ? this.#byArn.get(key) : this.#byName.get(key);
  }

  get(nameOrArn: string | undefined): LocalEventBus {
    const bus = this.find(nameOrArn);
    if (!bus) throw new ResourceNotFoundError(`Event bus ${nameOrArn ?? DEFAULT_BUS_NAME} does not exist.`);
    return bus;
  }
}

export type Operation = (registry: BusRegistry, input: Record<string, unknown>) => unknown;

export const OPERATIONS: Readonly<Record<string, Operation>> = {
  PutEvents: putEvents,
  DescribeEventBus: describeEventBus,
  ListRules: listRules,
  TestEventPattern: testEventPattern,
};

function putEvents(registry: BusRegistry, input: Record<string, unknown>): unknown {
  const raw = input.Entries;
  if (!Array.isArray(raw)) throw notNull("entries");
  const entries = (raw as unknown[]).map((entry, i) => decodeEntry(entry, i));
  validatePutEventsRequest(entries);
  const results: PutEventsResultEntry[] = entries.map((entry) => {
    const bus = registry.find(entry.EventBusName);
    if (!bus) {
      return {
        ErrorCode: "ResourceNotFoundException",
        ErrorMessage: `Event bus ${entry.EventBusName} does not exist.`,
      };
    }
    return bus.acceptEntry(entry);
  });
  return { FailedEntryCount: results.filter(isFailureEntry).length, Entries: results };
}

/** AWS JSON 1.1 sends timestamps as epoch seconds; the bus takes the SDK's `Date`. */
function decodeEntry(entry: unknown, index: number): PutEventsRequestEntry {
  if (!isPlainObject(entry)) throw new ValidationError(`Entries[${index}] must be an object`);
  const out: PutEventsRequestEntry = {};
  for (const field of ["Source", "DetailType", "Detail", "EventBusName", "TraceHeader"] as const) {
    const value = entry[field];
    if (value === undefined || value === null) continue;
    if (typeof value !== "string") throw new ValidationError(`Entries[${index}].${field} must be a string`);
    out[field] = value;
  }
  if (entry.Resources !== undefined && entry.Resources !== null) {
    if (!Array.isArray(entry.Resources) || !entry.Resources.every((r) => typeof r === "string")) {
      throw new ValidationError(`Entries[${index}].Resources must be a list of strings`);
    }
    out.Resources = entry.Resources;
  }
  if (entry.Time !== undefined && entry.Time !== null) {
    const time =
      typeof entry.Time === "number"
        ? new Date(entry.Time * 1000)
        : typeof entry.Time === "string"
          ? new Date(entry.Time)
          : undefined;
    if (!time || Number.isNaN(time.getTime())) {
      throw new ValidationError(`Entries[${index}].Time must be epoch seconds or an ISO 8601 timestamp`);
    }
    out.Time = time;
  }
  return out;
}

function describeEventBus(registry: BusRegistry, input: Record<string, unknown>): unknown {
  const bus = registry.get(optionalString(input, "Name"));
  return {
    Name: bus.name,
    Arn: bus.arn,
    CreationTime: bus.createdAtMs / 1000,
    LastModifiedTime: bus.createdAtMs / 1000,
  };
}

const LIST_RULES_MAX = 100;

function listRules(registry: BusRegistry, input: Record<string, unknown>): unknown {
  const bus = registry.get(optionalString(input, "EventBusName"));
  const limit = input.Limit ?? LIST_RULES_MAX;
  if (typeof limit !== "number" || !Number.isInteger(limit) || limit < 1 || limit > LIST_RULES_MAX) {
    throw new ValidationError(
      `1 validation error detected: Value '${JSON.stringify(limit)}' at 'limit' failed to satisfy constraint: Member must be between 1 and ${LIST_RULES_MAX}`,
    );
  }
  const token = optionalString(input, "NextToken");
  const start = token === undefined ? 0 : decodeToken(token);
  const rules = bus.listRules(optionalString(input, "NamePrefix") ?? "");
  const page = rules.slice(start, start + limit);
  const next = start + limit < rules.length ? encodeToken(start + limit) : undefined;
  return {
    Rules: page.map((r) => ({
      Name: r.name,
      Arn: r.arn,
      EventPattern: r.eventPattern,
      State: r.state,
      EventBusName: r.eventBusName,
      ...(r.description !== undefined ? { Description: r.description } : {}),
    })),
    ...(next !== undefined ? { NextToken: next } : {}),
  };
}

const MANDATORY_EVENT_FIELDS = [
  "id",
  "account",
  "source",
  "time",
  "region",
  "resources",
  "detail-type",
] as const;

function testEventPattern(_registry: BusRegistry, input: Record<string, unknown>): unknown {
  const patternText = input.EventPattern;
  const eventText = input.Event;
  if (typeof patternText !== "string") throw notNull("eventPattern");
  if (typeof eventText !== "string") throw notNull("event");
  let event: unknown;
  try {
    event = JSON.parse(eventText);
  } catch {
    throw new ValidationError("Parameter Event is not valid. Reason: Event is not valid JSON.");
  }
  const missing = isPlainObject(event)
    ? MANDATORY_EVENT_FIELDS.filter((f) => !Object.hasOwn(event, f))
    : MANDATORY_EVENT_FIELDS;
  if (missing.length > 0) {
    throw new ValidationError(
      `Parameter Event is not valid. Reason: Provided Event must have mandatory JSON fields: [${MANDATORY_EVENT_FIELDS.join(", ")}]; missing: [${missing.join(", ")}]`,
    );
  }
  return { Result: compileEventPattern(patternText).matches(event) };
}

function optionalString(input: Record<string, unknown>, field: string): string | undefined {
  const value = input[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") throw new ValidationError(`${field} must be a string`);
  return value;
}

function notNull(member: string): LocalEventBridgeError {
  return new ValidationError(
    `1 validation error detected: Value null at '${member}' failed to satisfy constraint: Member must not be null`,
  );
}

function encodeToken(offset: number): string {
  return Buffer.from(`offset:${offset}`).toString("base64");
}

function decodeToken(token: string): number {
  const match = /^offset:(\d+)$/.exec(Buffer.from(token, "base64").toString());
  if (!match) throw new ValidationError("NextToken is not valid.");
  return Number(match[1]);
}
