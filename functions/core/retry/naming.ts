/**
 * Run names (Armada's retry-policy proposal, "Pod Naming"): the first run keeps the legacy name, the session id, so
 * nothing named before retries existed changes; retry n is `<sessionId>.<n>`.
 *
 * Decisions where Armada's proposal is open:
 * - The separator is `.`, not Armada's `-`: session ids may contain `-` (`train-1`), so
 *   `train` retry 1 would collide with the first run of a session named `train-1`. Session ids
 *   never contain `.`, so every name parses back to exactly one (session, run).
 * - Unlike Armada's proposal, names do not depend on `RetryConfig.enabled`: the budgets retry sessions even
 *   with policies off, and two runs sharing a name would make logs and history ambiguous.
 */
import { SESSION_ID_PATTERN } from "../events.ts";
import { RetryInputError } from "./errors.ts";

export const RUN_NAME_SEPARATOR = ".";

export function runName(sessionId: string, runIndex: number): string {
  if (!SESSION_ID_PATTERN.test(sessionId))
    throw new RetryInputError(`not a session id: ${JSON.stringify(sessionId)}`);
  if (!Number.isSafeInteger(runIndex) || runIndex < 0) {
    throw new RetryInputError(`runIndex must be a non-negative integer, got ${runIndex}`);
  }
  return runIndex === 0 ? sessionId : `${sessionId}${RUN_NAME_SEPARATOR}${runIndex}`;
}

/** The session and run a name stands for, or undefined when it is not a run name. */
export function parseRunName(
  name: string,
): { readonly sessionId: string; readonly runIndex: number } | undefined {
  const at = name.lastIndexOf(RUN_NAME_SEPARATOR);
  const sessionId = at < 0 ? name : name.slice(0, at);
  if (!SESSION_ID_PATTERN.test(sessionId)) return undefined;
  if (at < 0) return { sessionId, runIndex: 0 };
  const suffix = name.slice(at + 1);
  // `s.0` and `s.01` are not names runName produces.
  if (!/^[1-9]\d*$/.test(suffix)) return undefined;
  const runIndex = Number(suffix);
  return Number.isSafeInteger(runIndex) ? { sessionId, runIndex } : undefined;
}
