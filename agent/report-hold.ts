/**
 * Reports that wait a moment for their successor. A kernel's PULLING is followed, usually within
 * milliseconds, by its PREPARED (or ERROR); sent apart, the two reach the control plane's report
 * queue as two messages, often in two batches handled at once, where they contend for the same
 * kernel: two reads, two writes, and often a conflict that writes a third time. Held until the
 * successor comes, the PULLING goes with it as a status passed through (`merge`): one event, one
 * read, one write. The event outbox merges the same way, but only while the earlier report is
 * still queued behind a request in flight; a hold also covers the moment between requests.
 *
 * A held report is sent on its own when the hold runs out (a long pull), when a report comes that
 * cannot carry it, or when `releaseAll` is called (a drain): none is left behind.
 */
export class ReportHold<D> {
  readonly #holdMs: number;
  readonly #merge: (earlier: D, later: D) => D | undefined;
  readonly #held = new Map<string, Held<D>>();

  /**
   * @param holdMs how long a held report waits for its successor; 0 holds nothing.
   * @param merge the one report that says both, or undefined when `later` cannot carry `earlier`.
   */
  constructor(holdMs: number, merge: (earlier: D, later: D) => D | undefined) {
    this.#holdMs = holdMs;
    this.#merge = merge;
  }

  /** Reports held now. */
  get size(): number {
    return this.#held.size;
  }

  /**
   * Reports `detail` for `key` (one kernel's run): sent now through `send`, or, with `hold`, held
   * for its successor. A report held for the same key goes with this one when it can, and is sent
   * first when it cannot. Resolves once the report is sent, or carried by its successor.
   */
  report(key: string, detail: D, send: (detail: D) => Promise<void>, hold: boolean): Promise<void> {
    const held = this.#held.get(key);
    if (held !== undefined) {
      this.#held.delete(key);
      clearTimeout(held.timer);
      const merged = this.#merge(held.detail, detail);
      if (merged !== undefined) {
        held.carried();
        return send(merged);
      }
      held.release();
    }
    if (!hold || this.#holdMs <= 0) return send(detail);
    return new Promise<void>((resolve, reject) => {
      const release = () => {
        this.#held.delete(key);
        send(detail).then(resolve, reject);
      };
      this.#held.set(key, { detail, timer: setTimeout(release, this.#holdMs), release, carried: resolve });
    });
  }

  /** Sends every held report now. */
  releaseAll(): void {
    for (const held of [...this.#held.values()]) {
      clearTimeout(held.timer);
      held.release();
    }
  }
}

interface Held<D> {
  readonly detail: D;
  readonly timer: NodeJS.Timeout;
  /** Sends it now; its report resolves once sent. */
  readonly release: () => void;
  /** Its successor carries it: its report resolves without a send of its own. */
  readonly carried: () => void;
}
