/**
 * Leases that serialize work per key (a scheduling queue's placement, a deployment's handlers)
 * whatever queue or message brought the work: one holder at a time, for at most the time its
 * function may run. A run that finds the lease held does not wait: it asks the holder to go
 * again (`again`), and the holder, before it lets go, runs the work once more over everything.
 * So no work is skipped, and no run waits on another (functions/app/serialized.ts).
 */
export interface LeaseRepository {
  /**
   * Takes the lease for `holder` until `untilMs`, when no one holds it or its holder's time ran
   * out (a holder that died). True if taken. A request to go again left by others is kept.
   */
  acquireLease(key: string, holder: string, nowMs: number, untilMs: number): Promise<boolean>;
  /** Asks the live holder to go again; false when no one holds the lease (take it instead). */
  requestAgain(key: string, nowMs: number): Promise<boolean>;
  /**
   * Lets go of the lease: "released", or "again" when someone asked the holder to go again (the
   * request is cleared, the lease kept), or "lost" when the lease is no longer the holder's.
   * `force`: let go whatever was asked (the holder failed; the work is the next event's or the
   * sweep's).
   */
  releaseLease(
    key: string,
    holder: string,
    options?: { readonly force?: boolean },
  ): Promise<"released" | "again" | "lost">;
}
