/**
 * Fault injection: AWS faults the embedded runtime would otherwise never produce, switched on per
 * Task state and/or Lambda function, for a number of occurrences or with a (seeded) probability.
 * Each fault leaves the world as AWS would leave it: a lost Lambda response means the function
 * ran; a SendTaskSuccess refused with TaskTimedOut means the task did time out.
 *
 * `npm start` reads them from `CAIRN_FAULTS` (a JSON array of rules) and `CAIRN_FAULT_SEED`.
 */

export const FaultKind = {
  /** The function runs to completion, then its response is lost: the caller sees `error`. */
  LoseLambdaResponse: "lose-lambda-response",
  /** The function does not get to finish (timeout, out of memory): `Lambda.Unknown`. */
  LambdaUnknown: "lambda-unknown",
  /** The Task attempt times out (States.Timeout) once its invocation has returned. */
  TaskTimeout: "task-timeout",
  /** The callback task times out just before SendTaskSuccess arrives: the call gets `TaskTimedOut`. */
  SendTaskSuccessTimedOut: "send-task-success-timed-out",
  /**
   * Lambda refuses the invocation before the function runs (the account's or the function's
   * concurrency is used up): the caller sees `Lambda.TooManyRequestsException`.
   */
  LambdaThrottle: "lambda-throttle",
} as const;
export type FaultKind = (typeof FaultKind)[keyof typeof FaultKind];

/** What a caller sees when a Lambda response is lost (AWS's transient Lambda service errors). */
export const LOST_RESPONSE_ERRORS = [
  "Lambda.ServiceException",
  "Lambda.ClientExecutionTimeoutException",
  "Lambda.SdkClientException",
] as const;
export type LostResponseError = (typeof LOST_RESPONSE_ERRORS)[number];

export interface FaultRule {
  readonly fault: FaultKind;
  /** Only Task states of this name. @default every state */
  readonly state?: string;
  /** Only invocations of this Lambda function (by name). @default every function */
  readonly function?: string;
  /** Fires at most this many times. @default 1, or unlimited when `probability` or `windowMs` is set */
  readonly count?: number;
  /**
   * Fires on every matching call for this long from its first firing, as throttling lasts while
   * the concurrency stays used up (not with `count` or `probability`). @default none
   */
  readonly windowMs?: number;
  /** Chance of firing on each matching call, drawn from the seeded generator. @default 1 */
  readonly probability?: number;
  /** Lets this many matching calls through before the rule may fire. @default 0 */
  readonly skip?: number;
  /** `lose-lambda-response` only: the error the caller sees. @default "Lambda.ServiceException" */
  readonly error?: LostResponseError;
}

export interface FaultOptions {
  readonly rules: readonly FaultRule[];
  /** Seed of the generator `probability` draws from, so a run can be replayed. @default 1 */
  readonly seed?: number;
}

/** A switch that was flipped, for tests and logs. */
export interface FiredFault {
  readonly fault: FaultKind;
  readonly state: string;
  readonly function: string | undefined;
}

export class FaultConfigError extends Error {
  override readonly name = "FaultConfigError";
  readonly code = "FAULT_CONFIG";
  readonly field: string;
  constructor(field: string, reason: string) {
    super(`${field}: ${reason}`);
    this.field = field;
  }
}

const RULE_KEYS: ReadonlySet<string> = new Set([
  "fault",
  "state",
  "function",
  "count",
  "probability",
  "skip",
  "error",
  "windowMs",
]);
const KINDS: readonly string[] = Object.values(FaultKind);

/** Checks every field of every rule; the error names the field and the reason. */
export function parseFaultOptions(value: unknown, field = "faults"): FaultOptions {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new FaultConfigError(field, "must be an object { rules, seed? }");
  }
  const raw = value as Record<string, unknown>;
  for (const key of Object.keys(raw)) {
    if (key !== "rules" && key !== "seed")
      throw new FaultConfigError(`${field}.${key}`, "is not a known field");
  }
  const seed = raw["seed"];
  if (seed !== undefined && (typeof seed !== "number" || !Number.isSafeInteger(seed))) {
    throw new FaultConfigError(`${field}.seed`, `must be an integer, got ${JSON.stringify(seed)}`);
  }
  const rules = parseFaultRules(raw["rules"], `${field}.rules`);
  return { rules, ...(seed !== undefined ? { seed } : {}) };
}

export function parseFaultRules(value: unknown, field: string): FaultRule[] {
  if (!Array.isArray(value)) throw new FaultConfigError(field, "must be an array of rules");
  return (value as unknown[]).map((r, i) => parseRule(r, `${field}[${i}]`));
}

function parseRule(value: unknown, field: string): FaultRule {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new FaultConfigError(field, "must be an object");
  }
  const r = value as Record<string, unknown>;
  for (const key of Object.keys(r)) {
    if (!RULE_KEYS.has(key)) throw new FaultConfigError(`${field}.${key}`, "is not a known field");
  }
  const fault = r["fault"];
  if (typeof fault !== "string" || !KINDS.includes(fault)) {
    throw new FaultConfigError(
      `${field}.fault`,
      `must be one of ${KINDS.join(", ")}, got ${JSON.stringify(fault)}`,
    );
  }
  for (const key of ["state", "function"] as const) {
    const v = r[key];
    if (v !== undefined && (typeof v !== "string" || v.length === 0)) {
      throw new FaultConfigError(`${field}.${key}`, "must be a non-empty string");
    }
  }
  for (const key of ["count", "skip"] as const) {
    const v = r[key];
    const min = key === "count" ? 1 : 0;
    if (v !== undefined && (typeof v !== "number" || !Number.isSafeInteger(v) || v < min)) {
      throw new FaultConfigError(`${field}.${key}`, `must be an integer ≥ ${min}, got ${JSON.stringify(v)}`);
    }
  }
  const p = r["probability"];
  if (p !== undefined && (typeof p !== "number" || !(p > 0 && p <= 1))) {
    throw new FaultConfigError(
      `${field}.probability`,
      `must be a number in (0, 1], got ${JSON.stringify(p)}`,
    );
  }
  const windowMs = r["windowMs"];
  if (windowMs !== undefined) {
    if (typeof windowMs !== "number" || !Number.isSafeInteger(windowMs) || windowMs < 1) {
      throw new FaultConfigError(
        `${field}.windowMs`,
        `must be an integer ≥ 1, got ${JSON.stringify(windowMs)}`,
      );
    }
    for (const other of ["count", "probability"] as const) {
      if (r[other] !== undefined) {
        throw new FaultConfigError(`${field}.windowMs`, `give ${other} or windowMs, not both`);
      }
    }
  }
  const error = r["error"];
  if (error !== undefined) {
    if (fault !== FaultKind.LoseLambdaResponse) {
      throw new FaultConfigError(`${field}.error`, `applies to ${FaultKind.LoseLambdaResponse} only`);
    }
    if (!(LOST_RESPONSE_ERRORS as readonly unknown[]).includes(error)) {
      throw new FaultConfigError(`${field}.error`, `must be one of ${LOST_RESPONSE_ERRORS.join(", ")}`);
    }
  }
  return r as unknown as FaultRule;
}

/** `CAIRN_FAULTS` (JSON array of rules) and `CAIRN_FAULT_SEED`; undefined when no fault is set. */
export function faultOptionsFromEnv(
  env: Readonly<Record<string, string | undefined>>,
): FaultOptions | undefined {
  const text = env["CAIRN_FAULTS"];
  if (text === undefined || text.trim() === "") return undefined;
  let rules: unknown;
  try {
    rules = JSON.parse(text);
  } catch (error) {
    throw new FaultConfigError("CAIRN_FAULTS", `is not JSON: ${(error as Error).message}`);
  }
  const seedText = env["CAIRN_FAULT_SEED"];
  const seed = seedText === undefined ? undefined : Number(seedText);
  if (seedText !== undefined && !Number.isSafeInteger(seed)) {
    throw new FaultConfigError("CAIRN_FAULT_SEED", `must be an integer, got ${JSON.stringify(seedText)}`);
  }
  return { rules: parseFaultRules(rules, "CAIRN_FAULTS"), ...(seed !== undefined ? { seed } : {}) };
}

/** Decides, call by call, whether a fault fires. One per service; rules keep their own counts. */
export class FaultInjector {
  #rules: { readonly rule: FaultRule; seen: number; fired: number; firstFiredAtMs?: number }[] = [];
  #random: () => number = mulberry32(1);
  /** The faults fired since the switches were last set. */
  readonly fired: FiredFault[] = [];

  constructor(options: FaultOptions = { rules: [] }) {
    this.set(options);
  }

  /** Replaces the switches (checked first), restarting counts, the generator and `fired`. */
  set(options: FaultOptions): void {
    const checked = parseFaultOptions(options);
    this.#rules = checked.rules.map((rule) => ({ rule, seen: 0, fired: 0 }));
    this.#random = mulberry32(checked.seed ?? 1);
    this.fired.length = 0;
  }

  /** The first rule of one of `kinds` that fires for this call, if any. */
  take(
    kinds: readonly FaultKind[],
    at: { state: string; function: string | undefined },
  ): FaultRule | undefined {
    for (const entry of this.#rules) {
      const { rule } = entry;
      if (!kinds.includes(rule.fault)) continue;
      if (rule.state !== undefined && rule.state !== at.state) continue;
      if (rule.function !== undefined && rule.function !== at.function) continue;
      if (entry.seen++ < (rule.skip ?? 0)) continue;
      if (rule.windowMs !== undefined) {
        const nowMs = Date.now();
        entry.firstFiredAtMs ??= nowMs;
        if (nowMs - entry.firstFiredAtMs >= rule.windowMs) continue;
      }
      const limit =
        rule.count ?? (rule.probability !== undefined || rule.windowMs !== undefined ? Infinity : 1);
      if (entry.fired >= limit) continue;
      if (rule.probability !== undefined && this.#random() >= rule.probability) continue;
      entry.fired++;
      this.fired.push({ fault: rule.fault, state: at.state, function: at.function });
      return rule;
    }
    return undefined;
  }
}

/** A small seeded generator (mulberry32): the same seed gives the same faults. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
