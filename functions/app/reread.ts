/**
 * The one place a conditional write is retried on conflict. Every write the application plans
 * from a copy it read is guarded by that copy's versions; when another writer got there first,
 * the store throws a ConflictError and the plan is made again from a fresh read. How many times,
 * and what counts as a conflict, is decided here and nowhere else.
 */
import { hasCode, type ConflictError } from "../core/ports/errors.ts";

/**
 * Attempts of one read-plan-write before the conflict is passed on (to the caller's caller: a
 * redelivered event, a retried state). Eight covers a gang of 8 whose kernels all report at once.
 */
export const CONFLICT_ATTEMPTS = 8;

/**
 * Whether `error` is the store's conflict (code CONFLICT): the data the write was planned from
 * changed. Read from the error's data, so a conflict from any copy of the store's module, or
 * rebuilt from its fields, counts the same.
 */
export function isConflict(error: unknown): error is ConflictError {
  return hasCode(error, "CONFLICT");
}

/**
 * Runs `attempt` (read, plan, write) until it returns, re-running it when its write conflicts,
 * at most CONFLICT_ATTEMPTS times. `attempt` must read afresh on every call after the first
 * (`n` says which call it is): a conflict means what it read is out of date. The conflict that
 * ended the call before is passed on: when it carries the session as it stands
 * (`ConflictError.current`), that is the fresh read.
 */
export async function rereadOnConflict<T>(
  attempt: (n: number, conflict: ConflictError | undefined) => Promise<T>,
): Promise<T> {
  let conflict: ConflictError | undefined;
  for (let n = 1; ; n++) {
    try {
      return await attempt(n, conflict);
    } catch (error) {
      if (!isConflict(error) || n >= CONFLICT_ATTEMPTS) throw error;
      conflict = error;
    }
  }
}

/**
 * Runs one conditional write whose conflict means "someone else moved the data on": the caller
 * has nothing more to do, so the conflict is an answer (undefined), not an error.
 */
export async function unlessConflict<T>(write: () => Promise<T>): Promise<T | undefined> {
  try {
    return await write();
  } catch (error) {
    if (isConflict(error)) return undefined;
    throw error;
  }
}
