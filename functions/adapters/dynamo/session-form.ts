/**
 * The two forms a session is stored in: its item holding its kernels and first history records
 * (a session of at most INLINE_KERNELS_MAX kernels, created by this version), or its kernels as
 * items of their own (larger gangs, and sessions written before). A write is planned in the first
 * form unless the session is known to be in the second; a refusal that shows the item without
 * its kernels sends it again in the second, and remembers the session.
 */
import type { SessionWithKernels } from "../../core/model.ts";
import type { SessionState } from "../../core/ports/sessions.ts";
import type { DynamoRequests } from "./dynamo-requests.ts";
import { inlineFailures, type RefusedWrite } from "./failures.ts";
import { inlineKernelsFromItem, sessionFromItem, type Item } from "./item-codec.ts";
import type { InlinePlan, PlannedTransaction } from "./transaction-plan.ts";

/**
 * Sessions whose kernels are items, as this store has seen them (reads and refused writes), so
 * that their writes skip the one-item try. Bounded, oldest forgotten first: a session forgotten
 * costs one refused request at its next write.
 */
export class KernelItemSessions {
  readonly #ids = new Set<string>();
  readonly #limit: number;

  constructor(limit = 10_000) {
    this.#limit = limit;
  }

  has(sessionId: string): boolean {
    return this.#ids.has(sessionId);
  }

  add(sessionId: string): void {
    if (this.#ids.has(sessionId)) return;
    if (this.#ids.size >= this.#limit) {
      const oldest = this.#ids.values().next();
      if (oldest.done !== true) this.#ids.delete(oldest.value);
    }
    this.#ids.add(sessionId);
  }
}

/** A session's write: refused (why, and the session if the refusal showed it), or written. */
export type SessionWriteOutcome =
  | { readonly refused: RefusedWrite }
  /** `written`: the session as written, when the write was asked to return it and could. */
  | { readonly refused?: undefined; readonly written?: SessionWithKernels };

/**
 * Sends a session's write: the inline plan when there is one and the session is not known to
 * keep its kernels as items; the old plan when it does, or when the session item turns out not to
 * hold its kernels. Refused, the failures come back as the mappers know them. `returnSession`: a
 * one-item write returns the session as written (the old form's transaction cannot).
 */
export async function transactSession(
  requests: DynamoRequests,
  kernelItems: KernelItemSessions,
  write: {
    readonly operation: string;
    readonly sessionId: string;
    readonly inline: InlinePlan | undefined;
    readonly expected: SessionState | undefined;
    readonly legacy: () => PlannedTransaction;
    readonly returnSession?: boolean;
  },
): Promise<SessionWriteOutcome> {
  if (write.inline !== undefined && !kernelItems.has(write.sessionId)) {
    const sent =
      write.returnSession === true
        ? await requests.updateReturningItem(write.operation, write.inline)
        : { failures: await requests.transact(write.operation, write.inline) };
    if ("item" in sent) return { written: sessionOf(sent.item) };
    const { failures } = sent;
    if (failures === undefined) return {};
    const mapped = inlineFailures(failures, write.inline, write.expected);
    if (mapped !== "legacy") {
      const item = failures.find((f) => f.role.kind === "session")?.reason.Item;
      const current = item === undefined ? undefined : sessionOf(item);
      return { refused: { failures: mapped, ...(current ? { current } : {}) } };
    }
    kernelItems.add(write.sessionId);
  }
  const failures = await requests.transact(write.operation, write.legacy());
  return failures === undefined ? {} : { refused: { failures } };
}

/** The session an item holds whole (the one-item form: its kernels in it), else undefined. */
function sessionOf(item: Item): SessionWithKernels | undefined {
  const kernels = inlineKernelsFromItem(item);
  return kernels === undefined ? undefined : { session: sessionFromItem(item), kernels };
}
