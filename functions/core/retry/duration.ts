/**
 * Go-style durations as retry policies write them (`0s`, `250ms`, `30s`, `5m`, `1h30m`, `1.5h`),
 * parsed to whole milliseconds. The grammar is Go's `time.ParseDuration` restricted to the units
 * that make sense for retry waits (h, m, s, ms) and to non-negative values.
 */
import { SPEC_LIMITS } from "../spec.ts";

/** No wait can outlast a Step Functions execution (1 year), which is where retries are waited. */
export const MAX_DURATION_MS = SPEC_LIMITS.timeoutSeconds.max * 1000;

const UNIT_MS: Readonly<Record<string, number>> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1 };
const TERM = /(\d+(?:\.\d*)?|\.\d+)(ms|h|m|s)/y;

export const DURATION_HINT = 'must be a duration such as "30s", "5m" or "1h30m"';

export type DurationResult =
  { readonly ok: true; readonly ms: number } | { readonly ok: false; readonly reason: string };

export function parseDurationMs(text: string): DurationResult {
  if (text === "0") return { ok: true, ms: 0 };
  if (text.startsWith("-")) return { ok: false, reason: "must not be negative" };
  const body = text.startsWith("+") ? text.slice(1) : text;
  if (body === "") return { ok: false, reason: DURATION_HINT };
  let ms = 0;
  TERM.lastIndex = 0;
  while (TERM.lastIndex < body.length) {
    const start = TERM.lastIndex;
    const term = TERM.exec(body);
    if (!term) {
      const unit = /^(?:\d+\.?\d*|\.\d+)([a-zµ]+)/i.exec(body.slice(start))?.[1];
      return {
        ok: false,
        reason: unit ? `unknown unit "${unit}" (use h, m, s or ms)` : DURATION_HINT,
      };
    }
    ms += Number(term[1]) * (UNIT_MS[term[2] ?? ""] ?? Number.NaN);
  }
  // Float error: 0.1s is 100.00000000000001 ms; anything within a microsecond is whole.
  const whole = Math.round(ms);
  if (Math.abs(ms - whole) > 1e-3) return { ok: false, reason: "must be a whole number of milliseconds" };
  if (whole > MAX_DURATION_MS) return { ok: false, reason: "must be at most 8760h (1 year)" };
  return { ok: true, ms: whole };
}

/** The shortest Go-style spelling of a whole number of milliseconds: 5_400_000 → "1h30m". */
export function formatDuration(ms: number): string {
  if (!Number.isSafeInteger(ms) || ms < 0) throw new RangeError(`not a whole, non-negative duration: ${ms}`);
  if (ms === 0) return "0s";
  let rest = ms;
  let out = "";
  for (const [unit, size] of Object.entries(UNIT_MS)) {
    const count = Math.floor(rest / size);
    if (count > 0) out += `${count}${unit}`;
    rest -= count * size;
  }
  return out;
}
