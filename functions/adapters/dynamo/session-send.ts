/**
 * Sends a session's write: the session item holds the session, its kernels and its first history
 * records (docs/data-model.md, "One item per session"), so every write of a session is planned
 * against that one item. A plan is built field by field, which needs no read; when that does not
 * fit DynamoDB's 4 KB expressions (a wide gang's requeue or placement), the session is read and
 * the plan built again with the changed kernels written whole (session-write.ts).
 */
import type { Kernel, SessionWithKernels } from "../../core/model.ts";
import { ExpressionTooLargeError } from "../../core/ports/errors.ts";
import type { SessionState } from "../../core/ports/sessions.ts";
import type { DynamoRequests } from "./dynamo-requests.ts";
import { sessionFailures, type RefusedWrite } from "./failures.ts";
import { inlineKernelsFromItem, sessionFromItem, type Item } from "./item-codec.ts";
import { SESSION_SK, sessionPk } from "./keys.ts";
import { fitsExpressions } from "./session-write.ts";
import type { SessionPlan } from "./transaction-plan.ts";

/** A session's write: refused (why, and the session if the refusal showed it), or written. */
export type SessionWriteOutcome =
  | { readonly refused: RefusedWrite }
  /** `written`: the session as written, when the write was asked to return it and could. */
  | { readonly refused?: undefined; readonly written?: SessionWithKernels };

export interface SessionWriteRequest<P extends SessionPlan> {
  readonly operation: string;
  readonly sessionId: string;
  /** The plan, field by field without `current`, or with the changed kernels whole. */
  readonly plan: (current?: readonly Kernel[]) => P;
  readonly expected: SessionState | undefined;
  /** A plan of one UpdateItem returns the session as written (ALL_NEW). */
  readonly returnSession?: boolean;
}

/**
 * The plan a write is sent with: field by field when it fits the expressions, else whole
 * kernels from the session as read now. Undefined when the session is not there (the write's
 * guard would have said so; the caller reports it the same way).
 */
export async function planFitting<P extends SessionPlan>(
  requests: DynamoRequests,
  write: Pick<SessionWriteRequest<P>, "operation" | "sessionId" | "plan">,
): Promise<P | undefined> {
  const plan = write.plan();
  if (fitsExpressions(plan)) return plan;
  const item = await requests.getItem(write.operation, {
    pk: { S: sessionPk(write.sessionId) },
    sk: { S: SESSION_SK },
  });
  if (item === undefined) return undefined;
  const whole = write.plan(inlineKernelsFromItem(item));
  if (!fitsExpressions(whole)) throw new ExpressionTooLargeError(write.sessionId, write.operation);
  return whole;
}

export async function sendSessionWrite<P extends SessionPlan>(
  requests: DynamoRequests,
  write: SessionWriteRequest<P>,
): Promise<SessionWriteOutcome & { readonly plan?: P }> {
  const plan = await planFitting(requests, write);
  if (plan === undefined) {
    return {
      refused: { failures: [{ role: { kind: "session" }, reason: { Code: "ConditionalCheckFailed" } }] },
    };
  }
  const oneItem = plan.items.length === 1;
  const sent =
    write.returnSession === true && oneItem
      ? await requests.updateReturningItem(write.operation, plan)
      : { failures: await requests.transact(write.operation, plan) };
  if ("item" in sent) return { plan, written: sessionOf(sent.item) };
  const { failures } = sent;
  if (failures === undefined) return { plan };
  const mapped = sessionFailures(failures, plan, write.expected);
  const item = failures.find((f) => f.role.kind === "session")?.reason.Item;
  return { plan, refused: { failures: mapped, ...(item !== undefined ? { current: sessionOf(item) } : {}) } };
}

/** The session an item holds, with its kernels. */
export function sessionOf(item: Item): SessionWithKernels {
  return { session: sessionFromItem(item), kernels: inlineKernelsFromItem(item) };
}
