/**
 * Maps a transaction cancelled by failed conditions to the domain error. The session's own
 * guard is judged first (moved → ConflictError, gone → NotFoundError): if the session moved,
 * nothing else about the write matters. Then parts of the write that clash with the session's
 * state (a kernel already placed), then failures of other items (an agent without room).
 */
import type { SessionWithKernels } from "../../core/model.ts";
import { ConflictError, NotFoundError } from "../../core/ports/errors.ts";
import { type SessionState } from "../../core/ports/sessions.ts";
import type { ConditionFailure } from "./dynamo-requests.ts";
import { INLINE_KERNELS, sessionFromItem, type Item } from "./item-codec.ts";
import type { SessionPlan } from "./transaction-plan.ts";

/** Why a session's write was refused, and the session as the refusal showed it, if it did. */
export interface RefusedWrite {
  readonly failures: readonly ConditionFailure[];
  /**
   * The session item as DynamoDB returned it with the refusal (ALL_OLD): the whole session as it
   * stands, strongly consistent, at no extra read.
   */
  readonly current?: SessionWithKernels;
}

export interface FailureMappers {
  /** A reason the write clashes with the session (reported with its state), or an error as is. */
  readonly clash?: (failure: ConditionFailure) => string | Error | undefined;
  /** An error for a failed item other than the session. */
  readonly other?: (failure: ConditionFailure) => Error | undefined;
  /**
   * The write checked the session item itself (its condition is part of the transaction): when
   * that condition held, the session was as expected, and a clash elsewhere reports it so.
   * Otherwise a clash reports no session state.
   */
  readonly sessionChecked?: boolean;
}

export async function transactionError(
  sessionId: string,
  expected: SessionState,
  refused: RefusedWrite,
  readSessionItem: () => Promise<Item | undefined>,
  mappers: FailureMappers,
): Promise<Error> {
  const { failures, current } = refused;
  const stateOf = async (item: Item | undefined): Promise<SessionState | undefined> => {
    const stored = item ?? (await readSessionItem());
    if (stored === undefined) return undefined;
    const { status, version } = sessionFromItem(stored);
    return { status, version };
  };
  const sessionFailure = failures.find((f) => f.role.kind === "session");
  if (sessionFailure !== undefined) {
    // ALL_OLD returns the item as it was; if it is missing from the reason, read it.
    const found = await stateOf(sessionFailure.reason.Item);
    return found === undefined
      ? new NotFoundError("session", sessionId)
      : new ConflictError(sessionId, expected, found, undefined, "session", current);
  }
  for (const failure of failures) {
    const clash = mappers.clash?.(failure);
    if (clash === undefined) continue;
    if (clash instanceof Error) return clash;
    // A write that did not check the session (kernel reports) reports the clash alone, and the
    // session only as the refusal showed it: it is not read here just to name it.
    return new ConflictError(
      sessionId,
      expected,
      mappers.sessionChecked === true ? expected : undefined,
      clash,
      "session",
      current,
    );
  }
  for (const failure of failures) {
    const error = mappers.other?.(failure);
    if (error !== undefined) return error;
  }
  const codes = failures.map((f) => `${f.role.kind}: ${f.reason.Code ?? "?"}`).join(", ");
  return new Error(`transaction for session ${sessionId} was cancelled (${codes})`);
}

/**
 * The failures of a session's write in the form the mappers know: DynamoDB says only that the
 * session item's condition failed, so the item as it was tells which part did. The session moved
 * or is gone: the session's failure, as is. Otherwise each kernel whose check failed, as that
 * kernel's failure (its stored fields as the item, none when it is missing).
 */
export function sessionFailures(
  failures: readonly ConditionFailure[],
  plan: SessionPlan,
  expected: SessionState | undefined,
): readonly ConditionFailure[] {
  const session = failures.find((f) => f.role.kind === "session");
  const item = session?.reason.Item;
  if (session === undefined || item === undefined) return failures;
  const kernels = item[INLINE_KERNELS]?.M ?? {};
  if (plan.checksSession && expected !== undefined) {
    const stored = sessionFromItem(item);
    if (stored.status !== expected.status || stored.version !== expected.version) return failures;
  }
  const out = failures.filter((f) => f.role.kind !== "session");
  for (const check of plan.kernelChecks) {
    const kernel = kernels[String(check.index)]?.M;
    const version = Number(kernel?.["version"]?.N ?? 0);
    const failed =
      kernel === undefined ||
      (check.version !== undefined && version !== check.version) ||
      (check.unplaced === true && kernel["agentId"] !== undefined);
    if (!failed) continue;
    out.push({
      role: { kind: "kernel", index: check.index },
      reason: { Code: "ConditionalCheckFailed", ...(kernel !== undefined ? { Item: kernel } : {}) },
    });
  }
  return out.length > 0 ? out : failures;
}
