/**
 * The embedded CloudWatch Logs' data: log groups, their streams and events, in memory, with
 * AWS's rules (limits, validation, rejected events, tokens) applied here so the HTTP layer only
 * decodes and encodes. A stream's events are kept in (timestamp, arrival) order, as GetLogEvents
 * returns them. Memory is bounded: past `maxStoredBytes` the streams written longest ago are
 * dropped first (the local stand-in for a retention period).
 */
import {
  InvalidParameterError,
  ResourceAlreadyExistsError,
  ResourceNotFoundError,
  constraintError,
} from "./errors.ts";
import { compileFilterPattern } from "./filter-pattern.ts";
import { LOGS_LIMITS } from "./limits.ts";
import {
  decodeFilterToken,
  decodeStreamToken,
  encodeFilterToken,
  encodeStreamToken,
  type EventKey,
} from "./tokens.ts";

export interface StoredEvent {
  readonly timestamp: number;
  readonly message: string;
  readonly ingestionTime: number;
  /** Arrival order across the store: ties on timestamp keep it, and tokens name it. */
  readonly seq: number;
}

interface StreamData {
  readonly name: string;
  readonly creationTime: number;
  readonly events: StoredEvent[];
  bytes: number;
  lastIngestionTime?: number;
  writes: number;
}

interface GroupData {
  readonly name: string;
  readonly creationTime: number;
  readonly streams: Map<string, StreamData>;
  readonly tags: Readonly<Record<string, string>>;
}

export interface LogsStoreOptions {
  /** Ingestion times and the too-old / too-new judgement. @default Date.now */
  readonly clock?: () => number;
  /** For ARNs. @default "local" */
  readonly region?: string;
  /** For ARNs. @default "000000000000" */
  readonly accountId?: string;
  /** Stored message bytes, all groups together; past it the least recently written streams go. @default 256 MiB */
  readonly maxStoredBytes?: number;
  /**
   * How long after PutLogEvents its events become readable (GetLogEvents, FilterLogEvents).
   * CloudWatch Logs is eventually consistent and documents no bound, so the runtime's fault
   * switch sets it (faults.ts) and readers are exercised against the lag. A stream reads as
   * its events up to the first one not yet readable: a forward token never passes an event
   * a reader has not been shown. @default 0
   */
  readonly visibilityDelayMs?: number;
  /**
   * GetLogEvents read backward (the newest events first) answers one window of this many ms of
   * event time per page, from now back: a page may be empty while older events remain, its
   * backward token moving on, as CloudWatch Logs splits pages by time ("partially full or empty
   * pages don't necessarily mean that pagination is finished"). @default no windows
   */
  readonly backwardPageWindowMs?: number;
}

export interface InputEvent {
  readonly timestamp: number;
  readonly message: string;
}

export interface RejectedLogEventsInfo {
  tooOldLogEventEndIndex?: number;
  tooNewLogEventStartIndex?: number;
}

export interface OutputEvent {
  readonly timestamp: number;
  readonly message: string;
  readonly ingestionTime: number;
}

export interface FilteredEvent extends OutputEvent {
  readonly logStreamName: string;
  readonly eventId: string;
}

export interface StreamDescription {
  readonly logStreamName: string;
  readonly creationTime: number;
  readonly firstEventTimestamp?: number;
  readonly lastEventTimestamp?: number;
  readonly lastIngestionTime?: number;
  readonly uploadSequenceToken: string;
  readonly arn: string;
  readonly storedBytes: number;
}

export interface GroupDescription {
  readonly logGroupName: string;
  readonly creationTime: number;
  readonly metricFilterCount: number;
  readonly arn: string;
  readonly logGroupArn: string;
  readonly storedBytes: number;
  readonly logGroupClass: "STANDARD";
}

const START: EventKey = { timestamp: -1, seq: 0 };

export class LogsStore {
  readonly region: string;
  readonly accountId: string;
  readonly #clock: () => number;
  readonly #maxStoredBytes: number;
  readonly #visibilityDelayMs: number;
  readonly #backwardWindowMs: number | undefined;
  readonly #groups = new Map<string, GroupData>();
  #seq = 0;
  #storedBytes = 0;

  constructor(options: LogsStoreOptions = {}) {
    this.#clock = options.clock ?? Date.now;
    this.region = options.region ?? "local";
    this.accountId = options.accountId ?? "000000000000";
    this.#maxStoredBytes = options.maxStoredBytes ?? 256 * 1024 * 1024;
    this.#visibilityDelayMs = options.visibilityDelayMs ?? 0;
    this.#backwardWindowMs = options.backwardPageWindowMs;
  }

  // ---- groups -----------------------------------------------------------------------------

  createLogGroup(name: string, tags: Readonly<Record<string, string>> = {}): void {
    if (this.#groups.has(name))
      throw new ResourceAlreadyExistsError("The specified log group already exists");
    this.#groups.set(name, { name, creationTime: this.#clock(), streams: new Map(), tags });
  }

  /** Creates the group unless it exists (the embedded runtime's start). */
  ensureLogGroup(name: string): void {
    if (!this.#groups.has(name)) this.createLogGroup(name);
  }

  deleteLogGroup(name: string): void {
    const group = this.#group(name);
    for (const stream of group.streams.values()) this.#storedBytes -= stream.bytes;
    this.#groups.delete(name);
  }

  describeLogGroups(query: { prefix?: string; pattern?: string; limit: number; nextToken?: string }): {
    logGroups: GroupDescription[];
    nextToken?: string;
  } {
    const after = query.nextToken === undefined ? undefined : nameToken(query.nextToken);
    const pattern = query.pattern?.toLowerCase();
    const names = [...this.#groups.keys()]
      .filter(
        (n) =>
          (query.prefix === undefined || n.startsWith(query.prefix)) &&
          (pattern === undefined || n.toLowerCase().includes(pattern)) &&
          (after === undefined || n > after),
      )
      .sort(compareNames);
    const page = names.slice(0, query.limit);
    const last = page.at(-1);
    return {
      logGroups: page.map((n) => this.#describeGroup(this.#groups.get(n)!)),
      ...(names.length > page.length && last !== undefined ? { nextToken: toNameToken(last) } : {}),
    };
  }

  // ---- streams ----------------------------------------------------------------------------

  createLogStream(groupName: string, streamName: string): void {
    const group = this.#group(groupName);
    if (group.streams.has(streamName)) {
      throw new ResourceAlreadyExistsError("The specified log stream already exists");
    }
    group.streams.set(streamName, {
      name: streamName,
      creationTime: this.#clock(),
      events: [],
      bytes: 0,
      writes: 0,
    });
  }

  deleteLogStream(groupName: string, streamName: string): void {
    const group = this.#group(groupName);
    const stream = this.#stream(group, streamName);
    this.#storedBytes -= stream.bytes;
    group.streams.delete(streamName);
  }

  describeLogStreams(query: {
    groupName: string;
    prefix?: string;
    orderBy: "LogStreamName" | "LastEventTime";
    descending: boolean;
    limit: number;
    nextToken?: string;
  }): { logStreams: StreamDescription[]; nextToken?: string } {
    const group = this.#group(query.groupName);
    if (query.orderBy === "LastEventTime" && query.prefix !== undefined) {
      throw new InvalidParameterError("Cannot order by LastEventTime with a logStreamNamePrefix.");
    }
    let streams = [...group.streams.values()].filter(
      (s) => query.prefix === undefined || s.name.startsWith(query.prefix),
    );
    const sign = query.descending ? -1 : 1;
    if (query.orderBy === "LogStreamName") {
      streams.sort((a, b) => sign * compareNames(a.name, b.name));
      const after = query.nextToken === undefined ? undefined : nameToken(query.nextToken);
      if (after !== undefined) streams = streams.filter((s) => sign * compareNames(s.name, after) > 0);
    } else {
      streams.sort(
        (a, b) =>
          sign * ((lastEvent(a)?.timestamp ?? 0) - (lastEvent(b)?.timestamp ?? 0)) ||
          compareNames(a.name, b.name),
      );
      const offset = query.nextToken === undefined ? 0 : offsetToken(query.nextToken);
      streams = streams.slice(offset);
    }
    const page = streams.slice(0, query.limit);
    let nextToken: string | undefined;
    if (streams.length > page.length) {
      if (query.orderBy === "LogStreamName") nextToken = toNameToken(page.at(-1)!.name);
      else
        nextToken = toOffsetToken(
          (query.nextToken === undefined ? 0 : offsetToken(query.nextToken)) + page.length,
        );
    }
    return {
      logStreams: page.map((s) => this.#describeStream(group, s)),
      ...(nextToken === undefined ? {} : { nextToken }),
    };
  }

  // ---- events -----------------------------------------------------------------------------

  /**
   * Stores a batch (validated by the caller against the request limits), AWS's way: events more
   * than 14 days old or 2 hours ahead are rejected and named in `rejectedLogEventsInfo`, the rest
   * stored; a batch out of time order or (of its accepted events) spanning over 24 hours is refused.
   */
  putLogEvents(
    groupName: string,
    streamName: string,
    events: readonly InputEvent[],
  ): { nextSequenceToken: string; rejectedLogEventsInfo?: RejectedLogEventsInfo } {
    const group = this.#group(groupName);
    const stream = this.#stream(group, streamName);
    for (let i = 1; i < events.length; i++) {
      if (events[i]!.timestamp < events[i - 1]!.timestamp) {
        throw new InvalidParameterError(
          "Log events in a single PutLogEvents request must be in chronological order.",
        );
      }
    }
    const now = this.#clock();
    let firstValid = 0;
    while (firstValid < events.length && events[firstValid]!.timestamp < now - LOGS_LIMITS.maxEventAgeMs)
      firstValid++;
    let endValid = events.length;
    while (endValid > firstValid && events[endValid - 1]!.timestamp > now + LOGS_LIMITS.maxEventFutureMs)
      endValid--;
    if (
      endValid > firstValid &&
      events[endValid - 1]!.timestamp - events[firstValid]!.timestamp > LOGS_LIMITS.maxBatchSpanMs
    ) {
      throw new InvalidParameterError(
        "The batch of log events in a single PutLogEvents request cannot span more than 24 hours.",
      );
    }
    for (let i = firstValid; i < endValid; i++) {
      const input = events[i]!;
      this.#insert(stream, {
        timestamp: input.timestamp,
        message: input.message,
        ingestionTime: now,
        seq: ++this.#seq,
      });
    }
    stream.lastIngestionTime = now;
    stream.writes++;
    this.#evict(stream);
    const rejected: RejectedLogEventsInfo = {
      ...(firstValid > 0 ? { tooOldLogEventEndIndex: firstValid } : {}),
      ...(endValid < events.length ? { tooNewLogEventStartIndex: endValid } : {}),
    };
    return {
      nextSequenceToken: sequenceToken(stream),
      ...(Object.keys(rejected).length > 0 ? { rejectedLogEventsInfo: rejected } : {}),
    };
  }

  /**
   * One page of a stream, forward from a position (startFromHead, or a nextForwardToken) or
   * backward from one (the newest events, or a nextBackwardToken). A token at the end of the
   * stream comes back unchanged.
   */
  getLogEvents(query: {
    groupName: string;
    streamName: string;
    startTime?: number;
    endTime?: number;
    limit: number;
    nextToken?: string;
    startFromHead: boolean;
  }): { events: OutputEvent[]; nextForwardToken: string; nextBackwardToken: string } {
    const stream = this.#stream(this.#group(query.groupName), query.streamName);
    const token = query.nextToken === undefined ? undefined : decodeStreamToken(query.nextToken);
    if (token?.direction === "f" && !query.startFromHead) {
      throw new InvalidParameterError("startFromHead must be true when nextToken is a nextForwardToken");
    }
    const events = this.#readable(stream);
    const fromMs = query.startTime ?? Number.NEGATIVE_INFINITY;
    const toMs = query.endTime ?? Number.POSITIVE_INFINITY;
    const forward = token === undefined ? query.startFromHead : token.direction === "f";
    const endKey = events.at(-1) ?? START;
    const window = forward ? undefined : this.#backwardWindowMs;
    // Read backward in windows, the first from now: the newest events may be windows away.
    const nowKey: EventKey = { timestamp: this.#clock(), seq: Number.MAX_SAFE_INTEGER };
    const gap = token?.key ?? (forward ? START : window === undefined ? endKey : maxKey(endKey, nowKey));
    // The window holding the newest event before `gap` (a token at a window's start, seq -1,
    // names the window before it).
    const windowStartMs =
      window === undefined
        ? Number.NEGATIVE_INFINITY
        : Math.floor((gap.timestamp - (gap.seq < 0 ? 1 : 0)) / window) * window;
    const page: StoredEvent[] = [];
    let bytes = 0;
    const fits = (e: StoredEvent) => {
      const size = Buffer.byteLength(e.message) + LOGS_LIMITS.eventOverheadBytes;
      if (page.length >= query.limit || bytes + size > LOGS_LIMITS.maxResponseBytes) return false;
      bytes += size;
      return true;
    };
    if (forward) {
      for (let i = firstAfter(events, maxKey(gap, { timestamp: fromMs, seq: -1 })); i < events.length; i++) {
        const e = events[i]!;
        if (e.timestamp >= toMs || !fits(e)) break;
        page.push(e);
      }
    } else {
      for (let i = firstAfter(events, gap) - 1; i >= 0; i--) {
        const e = events[i]!;
        if (e.timestamp < fromMs || e.timestamp < windowStartMs) break;
        if (e.timestamp >= toMs) continue;
        if (!fits(e)) break;
        page.push(e);
      }
      page.reverse();
    }
    const first = page[0];
    const last = page.at(-1);
    return {
      events: page.map(output),
      nextForwardToken:
        last !== undefined
          ? encodeStreamToken("f", last)
          : token?.direction === "f" && query.nextToken !== undefined
            ? query.nextToken
            : encodeStreamToken("f", forward ? gap : minKey(gap, endKey)),
      nextBackwardToken:
        first !== undefined
          ? encodeStreamToken("b", { timestamp: first.timestamp, seq: first.seq - 1 })
          : olderThanWindow(events, gap, windowStartMs, fromMs)
            ? encodeStreamToken("b", { timestamp: windowStartMs, seq: -1 })
            : token?.direction === "b" && query.nextToken !== undefined
              ? query.nextToken
              : encodeStreamToken("b", gap),
    };
  }

  /** Events of several streams (named, by prefix, or all) merged by time; `nextToken` while more remain. */
  filterLogEvents(query: {
    groupName: string;
    streamNames?: readonly string[];
    streamPrefix?: string;
    startTime?: number;
    endTime?: number;
    filterPattern?: string;
    limit: number;
    nextToken?: string;
  }): { events: FilteredEvent[]; nextToken?: string } {
    const group = this.#group(query.groupName);
    const matches = compileFilterPattern(query.filterPattern);
    const streams =
      query.streamNames !== undefined
        ? query.streamNames.map((name) => this.#stream(group, name))
        : [...group.streams.values()].filter(
            (s) => query.streamPrefix === undefined || s.name.startsWith(query.streamPrefix),
          );
    const resume = query.nextToken === undefined ? undefined : decodeFilterToken(query.nextToken);
    const fromKey = maxKey(resume ?? START, { timestamp: query.startTime ?? -1, seq: -1 });
    const toMs = query.endTime ?? Number.POSITIVE_INFINITY;
    const cursors = streams.map((s) => {
      const events = this.#readable(s);
      return { name: s.name, events, at: firstAfter(events, fromKey) };
    });
    const out: FilteredEvent[] = [];
    let bytes = 0;
    let lastKey: EventKey | undefined;
    for (;;) {
      // The next event across the streams: smallest (timestamp, seq).
      let best: (typeof cursors)[number] | undefined;
      for (const c of cursors) {
        const e = c.events[c.at];
        if (e === undefined || e.timestamp >= toMs) continue;
        const b = best === undefined ? undefined : best.events[best.at]!;
        if (b === undefined || compareKeys(e, b) < 0) best = c;
      }
      if (best === undefined) return { events: out };
      const event = best.events[best.at]!;
      if (matches(event.message)) {
        const size = Buffer.byteLength(event.message) + LOGS_LIMITS.eventOverheadBytes;
        if (out.length >= query.limit || bytes + size > LOGS_LIMITS.maxResponseBytes) {
          return {
            events: out,
            nextToken: encodeFilterToken(lastKey ?? { timestamp: fromKey.timestamp, seq: fromKey.seq }),
          };
        }
        bytes += size;
        out.push({ ...output(event), logStreamName: best.name, eventId: eventId(event) });
      }
      lastKey = event;
      best.at++;
    }
  }

  /** A stream's events as stored (tests). */
  eventsOf(groupName: string, streamName: string): readonly StoredEvent[] {
    return this.#stream(this.#group(groupName), streamName).events;
  }

  /** Stored message bytes, all groups (tests, and the eviction bound). */
  storedBytes(): number {
    return this.#storedBytes;
  }

  // ---- internals --------------------------------------------------------------------------

  /** Resolves a name or an ARN (`arn:…:log-group:NAME` with or without `:*`). */
  #group(nameOrArn: string): GroupData {
    const name = groupNameOf(nameOrArn);
    const group = this.#groups.get(name);
    if (group === undefined) throw new ResourceNotFoundError("The specified log group does not exist.");
    return group;
  }

  #stream(group: GroupData, name: string): StreamData {
    const stream = group.streams.get(name);
    if (stream === undefined) throw new ResourceNotFoundError("The specified log stream does not exist.");
    return stream;
  }

  /** The stream's events a read may see: up to the first one still within the visibility delay. */
  #readable(stream: StreamData): readonly StoredEvent[] {
    if (this.#visibilityDelayMs <= 0) return stream.events;
    const visibleBefore = this.#clock() - this.#visibilityDelayMs;
    const hidden = stream.events.findIndex((e) => e.ingestionTime > visibleBefore);
    return hidden === -1 ? stream.events : stream.events.slice(0, hidden);
  }

  #insert(stream: StreamData, event: StoredEvent): void {
    const events = stream.events;
    // Almost always an append: output arrives in time order.
    const at =
      events.length === 0 || compareKeys(events.at(-1)!, event) <= 0
        ? events.length
        : firstAfter(events, event);
    events.splice(at, 0, event);
    const size = Buffer.byteLength(event.message);
    stream.bytes += size;
    this.#storedBytes += size;
  }

  #evict(keep: StreamData): void {
    while (this.#storedBytes > this.#maxStoredBytes) {
      let oldest: { group: GroupData; stream: StreamData } | undefined;
      for (const group of this.#groups.values()) {
        for (const stream of group.streams.values()) {
          if (stream === keep || stream.bytes === 0) continue;
          if (
            oldest === undefined ||
            (stream.lastIngestionTime ?? 0) < (oldest.stream.lastIngestionTime ?? 0)
          ) {
            oldest = { group, stream };
          }
        }
      }
      if (oldest !== undefined) {
        this.#storedBytes -= oldest.stream.bytes;
        oldest.group.streams.delete(oldest.stream.name);
        continue;
      }
      // Only the stream being written is left: its oldest events go.
      const dropped = keep.events.shift();
      if (dropped === undefined) return;
      const size = Buffer.byteLength(dropped.message);
      keep.bytes -= size;
      this.#storedBytes -= size;
    }
  }

  #describeGroup(group: GroupData): GroupDescription {
    const arn = `arn:aws:logs:${this.region}:${this.accountId}:log-group:${group.name}`;
    let storedBytes = 0;
    for (const s of group.streams.values()) storedBytes += s.bytes;
    return {
      logGroupName: group.name,
      creationTime: group.creationTime,
      metricFilterCount: 0,
      arn: `${arn}:*`,
      logGroupArn: arn,
      storedBytes,
      logGroupClass: "STANDARD",
    };
  }

  #describeStream(group: GroupData, stream: StreamData): StreamDescription {
    const first = stream.events[0];
    const last = lastEvent(stream);
    return {
      logStreamName: stream.name,
      creationTime: stream.creationTime,
      ...(first === undefined ? {} : { firstEventTimestamp: first.timestamp }),
      ...(last === undefined ? {} : { lastEventTimestamp: last.timestamp }),
      ...(stream.lastIngestionTime === undefined ? {} : { lastIngestionTime: stream.lastIngestionTime }),
      uploadSequenceToken: sequenceToken(stream),
      arn: `arn:aws:logs:${this.region}:${this.accountId}:log-group:${group.name}:log-stream:${stream.name}`,
      // Deprecated on AWS, where it is always 0.
      storedBytes: 0,
    };
  }
}

export function groupNameOf(nameOrArn: string): string {
  if (!nameOrArn.startsWith("arn:")) return nameOrArn;
  const match = /^arn:[^:]+:logs:[^:]*:[^:]*:log-group:([^:]+)(?::\*)?$/.exec(nameOrArn);
  if (match === null)
    throw constraintError("logGroupIdentifier", nameOrArn, "Member must be a log group name or ARN");
  return match[1]!;
}

function output(e: StoredEvent): OutputEvent {
  return { timestamp: e.timestamp, message: e.message, ingestionTime: e.ingestionTime };
}

function lastEvent(stream: StreamData): StoredEvent | undefined {
  return stream.events.at(-1);
}

function compareKeys(a: EventKey, b: EventKey): number {
  return a.timestamp - b.timestamp || a.seq - b.seq;
}

function maxKey(a: EventKey, b: EventKey): EventKey {
  return compareKeys(a, b) >= 0 ? a : b;
}

function minKey(a: EventKey, b: EventKey): EventKey {
  return compareKeys(a, b) <= 0 ? a : b;
}

/** Whether a backward read whose window held nothing has older events still to read. */
function olderThanWindow(
  events: readonly StoredEvent[],
  gap: EventKey,
  windowStartMs: number,
  fromMs: number,
): boolean {
  if (windowStartMs === Number.NEGATIVE_INFINITY) return false;
  const i = firstAfter(events, gap) - 1;
  return i >= 0 && events[i]!.timestamp >= fromMs;
}

/** Index of the first event with a key greater than `key`. */
function firstAfter(events: readonly StoredEvent[], key: EventKey): number {
  let lo = 0;
  let hi = events.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareKeys(events[mid]!, key) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Byte order, as AWS sorts names. */
function compareNames(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

function eventId(e: StoredEvent): string {
  return `${String(e.timestamp).padStart(16, "0")}${String(e.seq).padStart(16, "0")}`;
}

function sequenceToken(stream: StreamData): string {
  return String(stream.writes + 1).padStart(56, "0");
}

function toNameToken(name: string): string {
  return `n/${Buffer.from(name).toString("base64url")}`;
}

function nameToken(token: string): string {
  if (!token.startsWith("n/")) throw new InvalidParameterError("The specified nextToken is invalid.");
  return Buffer.from(token.slice(2), "base64url").toString();
}

function toOffsetToken(offset: number): string {
  return `o/${offset}`;
}

function offsetToken(token: string): number {
  const match = /^o\/(\d+)$/.exec(token);
  if (match === null) throw new InvalidParameterError("The specified nextToken is invalid.");
  return Number(match[1]);
}
