/**
 * The embedded CloudWatch Logs' fault switch: how long events stay unreadable after
 * PutLogEvents accepted them, and pages split by time when a stream is read backward. CloudWatch Logs is eventually consistent (GetLogEvents and
 * FilterLogEvents "can return empty results while there are more log events available", and a
 * stream's lastIngestionTime "updates on an eventual consistency basis"), with no documented
 * bound; locally a put event is readable at once, which is kinder than AWS, so tests switch the
 * lag on to exercise every reader against it end to end. Given as `RuntimeOptions.logsFaults` or
 * as JSON in `CAIRN_LOGS_FAULTS`:
 *
 *   CAIRN_LOGS_FAULTS='{"visibilityDelayMs":1500}'
 */
export interface LogsFaults {
  /** Events become readable this long after they are put. */
  readonly visibilityDelayMs?: number;
  /**
   * GetLogEvents read backward answers one window of this many ms of event time per page, from
   * now back, so a page may be empty while older events remain (CloudWatch Logs splits pages by
   * time; the API reference: empty pages do not mean the end while the token moves).
   */
  readonly backwardPageWindowMs?: number;
}

export class LogsFaultConfigError extends Error {
  override readonly name = "LogsFaultConfigError";
  constructor(field: string, reason: string) {
    super(`${field}: ${reason}`);
  }
}

/** The longest lag accepted: beyond a minute a switch is a mistake, not a test. */
const MAX_VISIBILITY_DELAY_MS = 60_000;

export function logsFaultsFromEnv(env: Readonly<Record<string, string | undefined>>): LogsFaults | undefined {
  const text = env["CAIRN_LOGS_FAULTS"];
  if (text === undefined || text.trim() === "") return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new LogsFaultConfigError("CAIRN_LOGS_FAULTS", `is not JSON: ${(error as Error).message}`);
  }
  return parseLogsFaults(value, "CAIRN_LOGS_FAULTS");
}

/** Checks every field, naming the one that is wrong. */
export function parseLogsFaults(value: unknown, field: string): LogsFaults {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new LogsFaultConfigError(field, 'must be an object such as {"visibilityDelayMs":1500}');
  }
  const { visibilityDelayMs, backwardPageWindowMs, ...rest } = value as Record<string, unknown>;
  const unknownKey = Object.keys(rest)[0];
  if (unknownKey !== undefined) {
    throw new LogsFaultConfigError(
      `${field}.${unknownKey}`,
      "is not a fault field (visibilityDelayMs, backwardPageWindowMs)",
    );
  }
  if (
    backwardPageWindowMs !== undefined &&
    (!Number.isInteger(backwardPageWindowMs) || (backwardPageWindowMs as number) < 1)
  ) {
    throw new LogsFaultConfigError(
      `${field}.backwardPageWindowMs`,
      `must be an integer of at least 1 (ms), got ${JSON.stringify(backwardPageWindowMs)}`,
    );
  }
  if (
    visibilityDelayMs !== undefined &&
    (!Number.isInteger(visibilityDelayMs) ||
      (visibilityDelayMs as number) < 0 ||
      (visibilityDelayMs as number) > MAX_VISIBILITY_DELAY_MS)
  ) {
    throw new LogsFaultConfigError(
      `${field}.visibilityDelayMs`,
      `must be an integer from 0 to ${MAX_VISIBILITY_DELAY_MS} (ms), got ${JSON.stringify(visibilityDelayMs)}`,
    );
  }
  return {
    ...(visibilityDelayMs === undefined ? {} : { visibilityDelayMs: visibilityDelayMs as number }),
    ...(backwardPageWindowMs === undefined ? {} : { backwardPageWindowMs: backwardPageWindowMs as number }),
  };
}
