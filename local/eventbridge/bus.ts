/**
 * An in-process EventBridge event bus: rules with content-filtering patterns route accepted
 * events to in-process targets (the Lambda handlers), the way AWS does for what Cairn uses:
 * - PutEvents: 1–10 entries, partial failures reported per slot, 256 KiB per request;
 * - delivery is asynchronous and at least once (optionally with simulated duplicates);
 * - a failed invocation is retried with exponential back-off and jitter until the target's
 *   retry policy (default 185 retries / 24 h) is exhausted, then the event goes to the target's
 *   dead-letter list, or is dropped with a warning when the target has none;
 * - at most `maxConcurrency` invocations run at once; the rest wait in FIFO order.
 *
 * Retry delays run on real timers (scale them with `retryBaseDelayMs` / `retryMaxDelayMs`);
 * the event's age, checked against `maximumEventAgeSeconds`, is read from the injected clock.
 */
import { randomUUID } from "node:crypto";
import {
  buildEnvelope,
  isFailureEntry,
  validatePutEventsRequest,
  type EventBridgeEvent,
  type PutEventsRequestEntry,
  type PutEventsResult,
  type PutEventsResultEntry,
} from "./envelope.ts";
import { BusClosedError, LimitExceededError, ValidationError } from "./errors.ts";
import { compileEventPattern, type CompiledEventPattern, type EventPattern } from "./pattern.ts";
import { normalizeRetryPolicy, retryDelayMs, type NormalizedRetryPolicy, type RetryPolicy } from "./retry.ts";

export interface LocalTarget {
  /** Unique within the rule (AWS target Id: 1–64 of `[.\-_A-Za-z0-9]`). */
  readonly id: string;
  /**
   * Called with a fresh copy of the event for every attempt. A rejection is a failed attempt;
   * an error with `nonRetryable: true` is not retried (AWS does the same for errors no retry
   * can fix, such as a missing target).
   */
  readonly invoke: (event: EventBridgeEvent) => Promise<void>;
  /** @default { maximumRetryAttempts: 185, maximumEventAgeSeconds: 86400 } */
  readonly retryPolicy?: RetryPolicy;
  /** Keep exhausted events in `deadLetters()`. @default false: they are dropped with a warning. */
  readonly deadLetter?: boolean;
}

export interface LocalRule {
  /** 1–64 of `[.\-_A-Za-z0-9]`; putting an existing name replaces that rule. */
  readonly name: string;
  /** An object or its JSON text; validated when the rule is put. */
  readonly eventPattern: EventPattern | string;
  /** At most 5, as on AWS. */
  readonly targets: readonly LocalTarget[];
  readonly description?: string;
}

export interface RuleDescription {
  readonly name: string;
  readonly arn: string;
  readonly eventBusName: string;
  /** The pattern as JSON text, as ListRules returns it. */
  readonly eventPattern: string;
  readonly state: "ENABLED";
  readonly description?: string;
  readonly targetIds: readonly string[];
}

export type ExhaustedRetryCondition =
  "MaximumRetryAttempts" | "MaximumEventAgeInSeconds" | "NonRetryableError";

/** What AWS puts on a DLQ message (its attributes RULE_ARN, TARGET_ARN, ERROR_CODE, …). */
export interface DeadLetter {
  readonly ruleName: string;
  readonly ruleArn: string;
  readonly targetId: string;
  readonly event: EventBridgeEvent;
  readonly errorCode: string;
  readonly errorMessage: string;
  readonly exhaustedRetryCondition: ExhaustedRetryCondition;
  /** Invocations made, the first one included. */
  readonly attempts: number;
  /** Retries made (attempts − 1), AWS's RETRY_ATTEMPTS. */
  readonly retryAttempts: number;
  readonly deadLetteredAtMs: number;
}

export interface LocalEventBusStats {
  /** Events accepted by putEvents. */
  readonly put: number;
  /** Entries rejected in their slot. */
  readonly failedEntries: number;
  /** (event, rule) matches. */
  readonly matched: number;
  /** Target invocations started, retries and duplicates included. */
  readonly invocations: number;
  /** Invocations that succeeded. */
  readonly delivered: number;
  /** Invocations that failed. */
  readonly failedAttempts: number;
  /** Retries scheduled. */
  readonly retried: number;
  readonly deadLettered: number;
  readonly dropped: number;
  /** Extra deliveries made to simulate at-least-once duplicates. */
  readonly duplicated: number;
  /** Deliveries cancelled by close(). */
  readonly abandoned: number;
  readonly inFlight: number;
  readonly queued: number;
  /** Retries waiting on their back-off timer. */
  readonly scheduled: number;
}

export interface EventBusLogger {
  warn(message: string): void;
}

export interface LocalEventBusOptions {
  /** @default "default" */
  readonly name?: string;
  /** @default "000000000000" */
  readonly account?: string;
  /** @default "local" */
  readonly region?: string;
  /** Invocations in flight at once. @default 64 */
  readonly maxConcurrency?: number;
  /** First retry waits about this long (half of it jittered). @default 1000 */
  readonly retryBaseDelayMs?: number;
  /** Back-off cap. @default 300000 (5 min) */
  readonly retryMaxDelayMs?: number;
  /** Probability that a successful delivery is made once more (at-least-once testing). @default 0 */
  readonly duplicateDeliveryRate?: number;
  /** Epoch milliseconds; used for envelope `time` and event age. @default Date.now */
  readonly clock?: () => number;
  /** In [0, 1); jitter and duplicate draws. @default Math.random */
  readonly random?: () => number;
  /** @default crypto.randomUUID */
  readonly newEventId?: () => string;
  /** @default console */
  readonly logger?: EventBusLogger;
}

export type EventListener = (event: EventBridgeEvent) => void;

const NAME_PATTERN = /^[.\-_A-Za-z0-9]{1,64}$/;
const MAX_TARGETS_PER_RULE = 5;
const MAX_PATTERN_CHARS = 4096;

interface TargetState {
  readonly id: string;
  readonly invoke: (event: EventBridgeEvent) => Promise<void>;
  readonly retryPolicy: NormalizedRetryPolicy;
  readonly deadLetter: boolean;
}

interface RuleState {
  readonly name: string;
  readonly arn: string;
  readonly pattern: CompiledEventPattern;
  readonly patternJson: string;
  readonly description: string | undefined;
  readonly targets: readonly TargetState[];
}

interface Delivery {
  readonly rule: RuleState;
  readonly target: TargetState;
  readonly eventId: string;
  /** Each attempt parses its own copy, as each Lambda invocation deserialises its own. */
  readonly eventJson: string;
  readonly acceptedAtMs: number;
  readonly duplicate: boolean;
  /** Attempts made so far. */
  attempts: number;
  lastError: unknown;
}

export class LocalEventBus {
  readonly name: string;
  readonly account: string;
  readonly region: string;
  readonly arn: string;
  readonly createdAtMs: number;

  readonly #maxConcurrency: number;
  readonly #backoff: { readonly baseDelayMs: number; readonly maxDelayMs: number };
  readonly #duplicateRate: number;
  readonly #clock: () => number;
  readonly #random: () => number;
  readonly #newEventId: () => string;
  readonly #logger: EventBusLogger;

  readonly #rules = new Map<string, RuleState>();
  readonly #listeners = new Set<EventListener>();
  readonly #deadLetters: DeadLetter[] = [];
  readonly #timers = new Map<NodeJS.Timeout, Delivery>();
  #queue: Delivery[] = [];
  #queueHead = 0;
  #inFlight = 0;
  #pumpScheduled = false;
  #closed = false;
  #idleWaiters: (() => void)[] = [];
  readonly #counts = {
    put: 0,
    failedEntries: 0,
    matched: 0,
    invocations: 0,
    delivered: 0,
    failedAttempts: 0,
    retried: 0,
    deadLettered: 0,
    dropped: 0,
    duplicated: 0,
    abandoned: 0,
  };

  constructor(options: LocalEventBusOptions = {}) {
    this.name = options.name ?? "default";
    if (!/^[/.\-_A-Za-z0-9]{1,256}$/.test(this.name)) {
      throw new ValidationError(`event bus name "${this.name}" must be 1–256 of [/.-_A-Za-z0-9]`);
    }
    this.account = options.account ?? "000000000000";
    this.region = options.region ?? "local";
    this.arn = `arn:aws:events:${this.region}:${this.account}:event-bus/${this.name}`;
    this.#maxConcurrency = positiveInteger("maxConcurrency", options.maxConcurrency ?? 64);
    this.#backoff = {
      baseDelayMs: nonNegative("retryBaseDelayMs", options.retryBaseDelayMs ?? 1000),
      maxDelayMs: nonNegative("retryMaxDelayMs", options.retryMaxDelayMs ?? 300_000),
    };
    const rate = options.duplicateDeliveryRate ?? 0;
    if (!(rate >= 0 && rate <= 1))
      throw new ValidationError(`duplicateDeliveryRate must be within [0, 1], got ${rate}`);
    this.#duplicateRate = rate;
    this.#clock = options.clock ?? Date.now;
    this.#random = options.random ?? Math.random;
    this.#newEventId = options.newEventId ?? randomUUID;
    this.#logger = options.logger ?? console;
    this.createdAtMs = this.#clock();
  }

  /** Creates or replaces a rule. Throws InvalidEventPatternError, ValidationError or LimitExceededError. */
  putRule(rule: LocalRule): RuleDescription {
    this.#assertOpen();
    if (typeof rule.name !== "string" || !NAME_PATTERN.test(rule.name)) {
      throw new ValidationError(`rule name ${JSON.stringify(rule.name)} must be 1–64 of [.-_A-Za-z0-9]`);
    }
    const pattern = compileEventPattern(rule.eventPattern);
    const patternJson =
      typeof rule.eventPattern === "string" ? rule.eventPattern : JSON.stringify(rule.eventPattern);
    if (patternJson.length > MAX_PATTERN_CHARS) {
      throw new ValidationError(
        `rule "${rule.name}": event pattern is ${patternJson.length} characters, the limit is ${MAX_PATTERN_CHARS}`,
      );
    }
    const targetList: unknown = rule.targets;
    if (!Array.isArray(targetList))
      throw new ValidationError(`rule "${rule.name}": targets must be an array`);
    if (rule.targets.length > MAX_TARGETS_PER_RULE) {
      throw new LimitExceededError(
        `rule "${rule.name}" has ${rule.targets.length} targets; a rule can have at most ${MAX_TARGETS_PER_RULE}`,
      );
    }
    const seen = new Set<string>();
    const targets = rule.targets.map((t): TargetState => {
      const where = `rule "${rule.name}" target ${JSON.stringify(t.id)}`;
      if (typeof t.id !== "string" || !NAME_PATTERN.test(t.id)) {
        throw new ValidationError(`${where}: target id must be 1–64 of [.-_A-Za-z0-9]`);
      }
      if (seen.has(t.id)) throw new ValidationError(`${where}: target ids must be unique within the rule`);
      seen.add(t.id);
      if (typeof t.invoke !== "function") throw new ValidationError(`${where}: invoke must be a function`);
      return {
        id: t.id,
        invoke: t.invoke,
        retryPolicy: normalizeRetryPolicy(t.retryPolicy, where),
        deadLetter: t.deadLetter === true,
      };
    });
    const state: RuleState = {
      name: rule.name,
      arn: this.ruleArn(rule.name),
      pattern,
      patternJson,
      description: rule.description,
      targets,
    };
    this.#rules.set(rule.name, state);
    return describeRule(state, this.name);
  }

  /** Returns whether a rule of that name existed. Deliveries already matched still complete. */
  removeRule(name: string): boolean {
    return this.#rules.delete(name);
  }

  listRules(namePrefix = ""): RuleDescription[] {
    return [...this.#rules.values()]
      .filter((r) => r.name.startsWith(namePrefix))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map((r) => describeRule(r, this.name));
  }

  ruleArn(ruleName: string): string {
    const path = this.name === "default" ? ruleName : `${this.name}/${ruleName}`;
    return `arn:aws:events:${this.region}:${this.account}:rule/${path}`;
  }

  /**
   * AWS PutEvents. Throws ValidationError for a bad request as a whole (0 or more than 10
   * entries, more than 256 KiB); a bad entry gets `{ErrorCode, ErrorMessage}` in its slot while
   * the others are accepted. Returns before any target runs.
   */
  putEvents(entries: readonly PutEventsRequestEntry[]): PutEventsResult {
    this.#assertOpen();
    validatePutEventsRequest(entries);
    const results = entries.map((entry) => this.acceptEntry(entry));
    return { FailedEntryCount: results.filter(isFailureEntry).length, Entries: results };
  }

  /**
   * Validates and routes one entry, without the request-level checks of putEvents; for the
   * HTTP server, which checks a request once and then routes each entry to its bus.
   */
  acceptEntry(entry: PutEventsRequestEntry): PutEventsResultEntry {
    return this.#accept(entry, false);
  }

  /**
   * An event an AWS service emits onto this bus (the embedded ECS's task state changes on the
   * default bus): routed exactly as a PutEvents entry, but under its `aws.*` source, which
   * PutEvents refuses to callers (NotAuthorizedForSourceException).
   */
  putServiceEvent(entry: PutEventsRequestEntry): PutEventsResultEntry {
    return this.#accept(entry, true);
  }

  #accept(entry: PutEventsRequestEntry, awsService: boolean): PutEventsResultEntry {
    this.#assertOpen();
    const busName = entry.EventBusName;
    if (busName !== undefined && busName !== null && busName !== this.name && busName !== this.arn) {
      this.#counts.failedEntries++;
      return {
        ErrorCode: "ResourceNotFoundException",
        ErrorMessage: `Event bus ${String(busName)} does not exist.`,
      };
    }
    const nowMs = this.#clock();
    const built = buildEnvelope(entry, {
      newId: this.#newEventId,
      account: this.account,
      region: this.region,
      nowMs,
      awsService,
    });
    if ("failure" in built) {
      this.#counts.failedEntries++;
      return built.failure;
    }
    const { event } = built;
    this.#counts.put++;
    const eventJson = JSON.stringify(event);
    for (const listener of this.#listeners) {
      try {
        listener(JSON.parse(eventJson) as EventBridgeEvent);
      } catch (err) {
        this.#logger.warn(`event bus ${this.name}: onEvent listener threw: ${errorMessage(err)}`);
      }
    }
    for (const rule of this.#rules.values()) {
      if (!rule.pattern.matches(event)) continue;
      this.#counts.matched++;
      for (const target of rule.targets) {
        this.#enqueue({
          rule,
          target,
          eventId: event.id,
          eventJson,
          acceptedAtMs: nowMs,
          duplicate: false,
          attempts: 0,
          lastError: undefined,
        });
      }
    }
    return { EventId: event.id };
  }

  /** Called synchronously with a copy of every accepted event. Returns an unsubscribe function. */
  onEvent(listener: EventListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Resolves once nothing is queued, in flight or waiting on a retry timer. */
  idle(): Promise<void> {
    if (this.#isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  deadLetters(): readonly DeadLetter[] {
    return [...this.#deadLetters];
  }

  stats(): LocalEventBusStats {
    return {
      ...this.#counts,
      inFlight: this.#inFlight,
      queued: this.#queue.length - this.#queueHead,
      scheduled: this.#timers.size,
    };
  }

  /**
   * Stops accepting events and cancels queued deliveries and retry timers (counted as
   * `abandoned`). Invocations already running finish; their failures are not retried.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const timer of this.#timers.keys()) clearTimeout(timer);
    this.#counts.abandoned += this.#timers.size + (this.#queue.length - this.#queueHead);
    this.#timers.clear();
    this.#queue = [];
    this.#queueHead = 0;
    this.#checkIdle();
  }

  get closed(): boolean {
    return this.#closed;
  }

  #assertOpen(): void {
    if (this.#closed) throw new BusClosedError(this.name);
  }

  #enqueue(delivery: Delivery): void {
    this.#queue.push(delivery);
    // Deferred so putEvents returns before any target runs.
    if (!this.#pumpScheduled) {
      this.#pumpScheduled = true;
      setImmediate(() => {
        this.#pumpScheduled = false;
        this.#pump();
      });
    }
  }

  #pump(): void {
    while (this.#inFlight < this.#maxConcurrency && this.#queueHead < this.#queue.length) {
      const delivery = this.#queue[this.#queueHead++]!;
      this.#inFlight++;
      void this.#attempt(delivery);
    }
    if (this.#queueHead === this.#queue.length) {
      this.#queue = [];
      this.#queueHead = 0;
    } else if (this.#queueHead > 4096 && this.#queueHead * 2 > this.#queue.length) {
      // A backlog that never drains must not keep every delivered entry reachable.
      this.#queue = this.#queue.slice(this.#queueHead);
      this.#queueHead = 0;
    }
    this.#checkIdle();
  }

  async #attempt(delivery: Delivery): Promise<void> {
    delivery.attempts++;
    this.#counts.invocations++;
    try {
      await delivery.target.invoke(JSON.parse(delivery.eventJson) as EventBridgeEvent);
      this.#counts.delivered++;
      if (
        !delivery.duplicate &&
        !this.#closed &&
        this.#duplicateRate > 0 &&
        this.#random() < this.#duplicateRate
      ) {
        this.#counts.duplicated++;
        this.#queue.push({ ...delivery, duplicate: true, attempts: 0, lastError: undefined });
      }
    } catch (err) {
      this.#counts.failedAttempts++;
      delivery.lastError = err;
      this.#afterFailure(delivery);
    } finally {
      this.#inFlight--;
      this.#pump();
    }
  }

  #afterFailure(delivery: Delivery): void {
    if (this.#closed) {
      this.#counts.abandoned++;
      return;
    }
    const policy = delivery.target.retryPolicy;
    if (isNonRetryable(delivery.lastError)) return this.#exhaust(delivery, "NonRetryableError");
    if (delivery.attempts - 1 >= policy.maximumRetryAttempts)
      return this.#exhaust(delivery, "MaximumRetryAttempts");
    if (this.#ageExceeded(delivery)) return this.#exhaust(delivery, "MaximumEventAgeInSeconds");
    const delayMs = retryDelayMs(delivery.attempts, this.#backoff, this.#random);
    this.#counts.retried++;
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      if (this.#ageExceeded(delivery)) this.#exhaust(delivery, "MaximumEventAgeInSeconds");
      else this.#queue.push(delivery);
      this.#pump();
    }, delayMs);
    this.#timers.set(timer, delivery);
  }

  #ageExceeded(delivery: Delivery): boolean {
    return this.#clock() - delivery.acceptedAtMs >= delivery.target.retryPolicy.maximumEventAgeSeconds * 1000;
  }

  #exhaust(delivery: Delivery, condition: ExhaustedRetryCondition): void {
    const err = delivery.lastError;
    const errorCode = errorCodeOf(err);
    const message = errorMessage(err);
    if (delivery.target.deadLetter) {
      this.#counts.deadLettered++;
      this.#deadLetters.push({
        ruleName: delivery.rule.name,
        ruleArn: delivery.rule.arn,
        targetId: delivery.target.id,
        event: JSON.parse(delivery.eventJson) as EventBridgeEvent,
        errorCode,
        errorMessage: message,
        exhaustedRetryCondition: condition,
        attempts: delivery.attempts,
        retryAttempts: delivery.attempts - 1,
        deadLetteredAtMs: this.#clock(),
      });
      return;
    }
    this.#counts.dropped++;
    this.#logger.warn(
      `event bus ${this.name}: dropped event ${delivery.eventId} for rule ${delivery.rule.name} target ${delivery.target.id} ` +
        `after ${delivery.attempts} attempt(s) (${condition}), no dead-letter configured; last error ${errorCode}: ${message}`,
    );
  }

  #isIdle(): boolean {
    return (
      this.#inFlight === 0 &&
      this.#queueHead === this.#queue.length &&
      this.#timers.size === 0 &&
      !this.#pumpScheduled
    );
  }

  #checkIdle(): void {
    if (this.#idleWaiters.length === 0 || !this.#isIdle()) return;
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}

function describeRule(rule: RuleState, eventBusName: string): RuleDescription {
  return {
    name: rule.name,
    arn: rule.arn,
    eventBusName,
    eventPattern: rule.patternJson,
    state: "ENABLED",
    ...(rule.description !== undefined ? { description: rule.description } : {}),
    targetIds: rule.targets.map((t) => t.id),
  };
}

function isNonRetryable(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { nonRetryable?: unknown }).nonRetryable === true;
}

function errorCodeOf(err: unknown): string {
  if (typeof err === "object" && err !== null) {
    const { code, name } = err as { code?: unknown; name?: unknown };
    if (typeof code === "string" && code) return code;
    if (typeof name === "string" && name) return name;
  }
  return "Error";
}

function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return typeof err === "string" ? err : (JSON.stringify(err) ?? String(err));
}

function positiveInteger(field: string, value: number): number {
  if (!Number.isInteger(value) || value < 1)
    throw new ValidationError(`${field} must be a positive integer, got ${value}`);
  return value;
}

function nonNegative(field: string, value: number): number {
  if (!(Number.isFinite(value) && value >= 0))
    throw new ValidationError(`${field} must be a finite number ≥ 0, got ${value}`);
  return value;
}
