/**
 * Leases (core/ports/leases.ts) as one small item each, `LEASE#<key>` / `LEASE`: the holder,
 * until when it holds, and whether others asked it to go again. Every change is one conditional
 * write; an item left by a holder that died expires by TTL.
 */
import type { LeaseRepository } from "../../core/ports/leases.ts";
import type { DynamoRequests } from "./dynamo-requests.ts";
import { all, any, type Clause } from "./expressions.ts";
import { itemAbsent, itemExists } from "./conditions.ts";
import type { Item } from "./item-codec.ts";
import { requireId, requireTime } from "./validation.ts";

export const LEASE_SK = "LEASE";
export const leasePk = (key: string): string => `LEASE#${key}`;
const leaseKey = (key: string): Item => ({ pk: { S: leasePk(key) }, sk: { S: LEASE_SK } });
/** A lease item outlives its holder's time by this much before TTL may delete it. */
const EXPIRY_AFTER_MS = 3_600_000;

const heldBy =
  (holder: string): Clause =>
  (e) =>
    `${e.path("holder")} = ${e.value(holder)}`;
const liveAt =
  (nowMs: number): Clause =>
  (e) =>
    `${e.path("untilMs")} >= ${e.value(nowMs)}`;
const expiredAt =
  (nowMs: number): Clause =>
  (e) =>
    `${e.path("untilMs")} < ${e.value(nowMs)}`;
const notAskedAgain: Clause = (e) => `${e.path("again")} = ${e.value(false)}`;

export class LeaseItems implements LeaseRepository {
  readonly #requests: DynamoRequests;

  constructor(requests: DynamoRequests) {
    this.#requests = requests;
  }

  async acquireLease(key: string, holder: string, nowMs: number, untilMs: number): Promise<boolean> {
    requireId("lease key", key);
    requireId("holder", holder);
    requireTime("nowMs", nowMs);
    requireTime("untilMs", untilMs);
    const taken = await this.#requests.updateItem(
      "acquireLease",
      leaseKey(key),
      (u) => {
        u.set("holder", holder)
          .set("untilMs", untilMs)
          .setTo("again", (e) => `if_not_exists(${e.path("again")}, ${e.value(false)})`)
          .set("expiresAtEpochSec", Math.ceil((untilMs + EXPIRY_AFTER_MS) / 1000));
      },
      any(itemAbsent, expiredAt(nowMs)),
    );
    return taken.ok;
  }

  async requestAgain(key: string, nowMs: number): Promise<boolean> {
    requireId("lease key", key);
    requireTime("nowMs", nowMs);
    const asked = await this.#requests.updateItem(
      "requestAgain",
      leaseKey(key),
      (u) => {
        u.set("again", true);
      },
      all(itemExists, liveAt(nowMs)),
    );
    return asked.ok;
  }

  async releaseLease(
    key: string,
    holder: string,
    options: { readonly force?: boolean } = {},
  ): Promise<"released" | "again" | "lost"> {
    requireId("lease key", key);
    const released = await this.#requests.deleteItem(
      "releaseLease",
      leaseKey(key),
      options.force === true ? heldBy(holder) : all(heldBy(holder), notAskedAgain),
    );
    if (released.ok) return "released";
    if (released.old?.["holder"]?.S !== holder) return "lost";
    const cleared = await this.#requests.updateItem(
      "releaseLease",
      leaseKey(key),
      (u) => {
        u.set("again", false);
      },
      heldBy(holder),
    );
    return cleared.ok ? "again" : "lost";
  }
}
