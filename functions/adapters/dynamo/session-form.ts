/**
 * The two forms a session is stored in: its item holding its kernels and first history records
 * (a session of at most INLINE_KERNELS_MAX kernels, created by this version), or its kernels as
 * items of their own (larger gangs, and sessions written before). A write is planned in the first
 * form unless the session is known to be in the second; a refusal that shows the item without
 * its kernels sends it again in the second, and remembers the session.
 */
import type { SessionState } from "../../core/ports/session-store.ts";
import type { ConditionFailure, DynamoRequests } from "./dynamo-requests.ts";
import { inlineFailures } from "./failures.ts";
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

/**
 * Sends a session's write: the inline plan when there is one and the session is not known to
 * keep its kernels as items; the old plan when it does, or when the session item turns out not to
 * hold its kernels. Returns the failures as the mappers know them.
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
  },
): Promise<readonly ConditionFailure[] | undefined> {
  if (write.inline !== undefined && !kernelItems.has(write.sessionId)) {
    const failures = await requests.transact(write.operation, write.inline);
    if (failures === undefined) return undefined;
    const mapped = inlineFailures(failures, write.inline, write.expected);
    if (mapped !== "legacy") return mapped;
    kernelItems.add(write.sessionId);
  }
  return requests.transact(write.operation, write.legacy());
}
