/**
 * Agents and the capacity sessions hold on them (handlers own these; docs/architecture.md, "Invariants"): heartbeats,
 * the agent roster, all-or-nothing reservations and idempotent release. Transaction plans live
 * in capacity.ts; this file sends them and maps their failures.
 */
import type { Agent, SessionWithKernels } from "../../core/model.ts";
import {
  CapacityError,
  NotFoundError,
  StoreUnavailableError,
  AgentFencedError,
} from "../../core/ports/errors.ts";
import {
  type AgentRegistration,
  type AgentHeartbeat,
  type AgentRepository,
  type Allocation,
  type ReservationRequest,
} from "../../core/ports/agents.ts";
import {
  allocationsOfKernels,
  planRelease,
  planReservation,
  planReservationsTogether,
  RELEASE_BATCH,
  reservationsTogetherItems,
  type PlannedRequest,
} from "./capacity.ts";
import {
  capacityIs,
  heartbeatBefore,
  heartbeatNotAfter,
  incarnationIs,
  itemAbsent,
  itemExists,
  noIncarnation,
  notLost,
  versionIs,
} from "./conditions.ts";
import { tableKey, type DynamoRequests } from "./dynamo-requests.ts";
import { all } from "./expressions.ts";
import { transactionError } from "./failures.ts";
import { sendSessionWrite } from "./session-send.ts";
import { fitsExpressions } from "./session-write.ts";
import { agentFromItem, agentItem, allocationFromItem, fromItem } from "./item-codec.ts";
import {
  AGENT_SK,
  AGENTS_PK,
  agentAllocationsPk,
  agentPk,
  ALLOCATION_SK_PREFIX,
  SESSION_SK,
  sessionPk,
} from "./keys.ts";
import { STATUS_INDEX } from "../../topology/table-schema.ts";
import { AGENT_READABLE_ATTRIBUTES } from "../../topology/client-access.ts";
import { EXPIRY_ATTRIBUTE, retainedUntil } from "./retention.ts";
import { MAX_TRANSACTION_ITEMS, type PlannedTransaction, type StoreLayout } from "./transaction-plan.ts";
import { requireId, requireResources, requireTime } from "./validation.ts";

export class DynamoAgents implements AgentRepository {
  private readonly requests: DynamoRequests;
  private readonly layout: StoreLayout;
  private readonly maxAttempts: number;

  constructor(requests: DynamoRequests, layout: StoreLayout, maxAttempts: number) {
    this.requests = requests;
    this.layout = layout;
    this.maxAttempts = maxAttempts;
  }

  async heartbeatAgent(heartbeat: AgentHeartbeat): Promise<Agent> {
    const { agentId, capacity, nowMs } = heartbeat;
    requireId("agentId", agentId);
    requireResources("capacity", capacity);
    requireTime("nowMs", nowMs);
    const key = { pk: { S: agentPk(agentId) }, sk: { S: AGENT_SK } };
    const { incarnation, draining } = heartbeat;
    for (let attempt = 1; attempt <= this.maxAttempts; attempt++) {
      // The usual heartbeat: same capacity, one conditional update.
      const beat = await this.requests.updateItem(
        "heartbeatAgent",
        key,
        (u) => {
          u.set("lastHeartbeatAtMs", nowMs).increment("version", 1);
          // One-way for the incarnation: an earlier heartbeat handled later must not undo it.
          if (draining === true) u.set("draining", true);
        },
        all(
          itemExists,
          capacityIs(capacity),
          heartbeatNotAfter(nowMs),
          ...(incarnation !== undefined ? [incarnationIs(incarnation), notLost] : []),
        ),
      );
      if (beat.ok) return agentFromItem(beat.item);
      if (incarnation !== undefined && beat.old !== undefined) {
        const old = agentFromItem(beat.old);
        if (old.incarnation !== incarnation || old.lostAtMs !== undefined) {
          throw new AgentFencedError(agentId, incarnation, old);
        }
      }
      if (beat.old === undefined) {
        if (incarnation !== undefined) throw new NotFoundError("agent", agentId);
        const agent: Agent = { id: agentId, capacity, free: capacity, lastHeartbeatAtMs: nowMs, version: 0 };
        if (await this.requests.putItem("heartbeatAgent", { Item: agentItem(agent) }, itemAbsent))
          return agent;
        continue; // registered concurrently: heartbeat again
      }
      const old = agentFromItem(beat.old);
      if (old.lastHeartbeatAtMs > nowMs) return old; // an older heartbeat arriving late changes nothing
      // Capacity changed: free moves by the same difference (it may go negative while
      // allocations exceed the new capacity; reservations then fail until releases).
      const resized = await this.requests.updateItem(
        "heartbeatAgent",
        key,
        (u) =>
          u
            .set("capacity", capacity)
            .set("free.cpu", round(old.free.cpu + capacity.cpu - old.capacity.cpu))
            .set("free.memoryMiB", round(old.free.memoryMiB + capacity.memoryMiB - old.capacity.memoryMiB))
            .set("lastHeartbeatAtMs", nowMs)
            .set("version", old.version + 1),
        all(itemExists, versionIs(old.version)),
      );
      if (resized.ok) return agentFromItem(resized.item);
    }
    throw new StoreUnavailableError("heartbeatAgent", this.maxAttempts, `agent ${agentId} kept changing`);
  }

  async registerAgent(registration: AgentRegistration): Promise<{ agent: Agent; previous?: Agent }> {
    const { agentId, incarnation, capacity, labels, signingKey, nowMs } = registration;
    requireId("agentId", agentId);
    requireResources("capacity", capacity);
    requireTime("nowMs", nowMs);
    for (let attempt = 1; attempt <= this.maxAttempts; attempt++) {
      const old = await this.getAgent(agentId);
      if (old?.incarnation === incarnation) return { agent: old };
      const agent: Agent = {
        id: agentId,
        capacity,
        // Sessions still hold what they held; free moves by the change in capacity.
        free: old
          ? {
              cpu: round(old.free.cpu + capacity.cpu - old.capacity.cpu),
              memoryMiB: round(old.free.memoryMiB + capacity.memoryMiB - old.capacity.memoryMiB),
            }
          : capacity,
        lastHeartbeatAtMs: nowMs,
        version: (old?.version ?? -1) + 1,
        labels,
        incarnation,
        signingKey,
        registeredAtMs: nowMs,
      };
      const written = await this.requests.putItem(
        "registerAgent",
        { Item: agentItem(agent) },
        old ? versionIs(old.version) : itemAbsent,
      );
      if (written) return old ? { agent, previous: old } : { agent };
    }
    throw new StoreUnavailableError("registerAgent", this.maxAttempts, `agent ${agentId} kept changing`);
  }

  async markAgentLost(request: {
    readonly agentId: string;
    readonly incarnation: string | undefined;
    readonly silentSinceMs?: number;
    readonly nowMs: number;
  }): Promise<boolean> {
    const { agentId, incarnation, silentSinceMs, nowMs } = request;
    requireId("agentId", agentId);
    requireTime("nowMs", nowMs);
    const out = await this.requests.updateItem(
      "markAgentLost",
      { pk: { S: agentPk(agentId) }, sk: { S: AGENT_SK } },
      // Retained from now: registering again writes the item anew, without the expiry.
      (u) =>
        u
          .set("lostAtMs", nowMs)
          .set(EXPIRY_ATTRIBUTE, retainedUntil(nowMs, this.layout))
          .increment("version", 1),
      all(
        itemExists,
        notLost,
        incarnation !== undefined ? incarnationIs(incarnation) : noIncarnation,
        ...(silentSinceMs !== undefined ? [heartbeatBefore(silentSinceMs)] : []),
      ),
    );
    return out.ok;
  }

  async getAgent(agentId: string): Promise<Agent | undefined> {
    requireId("agentId", agentId);
    const item = await this.requests.getItem("getAgent", {
      pk: { S: agentPk(agentId) },
      sk: { S: AGENT_SK },
    });
    return item === undefined ? undefined : agentFromItem(item);
  }

  /**
   * The roster partition of the listings index holds one key-only entry per agent, written at
   * registration; heartbeats and reservations never touch it. The agents themselves are then
   * read consistently, so free capacity is current. Read without their signing keys (no lister
   * needs one; only getAgent's callers check signatures), so the CLI's policy can deny those.
   */
  async listAgents(): Promise<Agent[]> {
    return (
      await this.requests.readRoster(
        "listAgents",
        AGENTS_PK,
        { pkPrefix: agentPk(""), sk: AGENT_SK },
        AGENT_READABLE_ATTRIBUTES,
      )
    ).map(agentFromItem);
  }

  async reserveCapacity(request: ReservationRequest): Promise<Allocation[]> {
    const { refused, plan } = await sendSessionWrite(this.requests, {
      operation: "reserveCapacity",
      sessionId: request.sessionId,
      plan: (current) => planReservation(request, this.layout, current),
      expected: request.expected,
    });
    if (refused === undefined) return plan?.allocations ?? [];
    throw await transactionError(
      request.sessionId,
      request.expected,
      refused,
      () =>
        this.requests.getItem("read session", {
          pk: { S: sessionPk(request.sessionId) },
          sk: { S: SESSION_SK },
        }),
      {
        sessionChecked: true,
        clash: ({ role, reason }) => {
          if (role.kind === "kernel") {
            if (reason.Item === undefined)
              return new NotFoundError("kernel", `${request.sessionId}/${role.index}`);
            return `kernel ${role.index} is already placed on agent ${String(fromItem(reason.Item)["agentId"])}`;
          }
          if (role.kind === "allocation")
            return `the session already holds an allocation on agent ${role.agentId}`;
          return undefined;
        },
        other: ({ role, reason }) => {
          if (role.kind !== "agent") return undefined;
          if (reason.Item === undefined) return new NotFoundError("agent", role.agentId);
          return new CapacityError(
            request.sessionId,
            role.agentId,
            role.requested,
            agentFromItem(reason.Item).free,
          );
        },
      },
    );
  }

  /**
   * Reservations several to a transaction (planReservationsTogether), one transaction after
   * another, in order: a placement pass's round trips per agent instead of per session. Per
   * request: its allocations, or undefined when it was not reserved here, for `reserveCapacity` to take
   * alone and say why: its transaction was refused or failed, or it cannot share one.
   */
  async reserveCapacityTogether(
    requests: readonly ReservationRequest[],
  ): Promise<(Allocation[] | undefined)[]> {
    const results: (Allocation[] | undefined)[] = [];
    for (const run of this.togetherRuns(requests)) {
      const plan =
        run !== undefined && run.length > 1 ? planReservationsTogether(run, this.layout) : undefined;
      const reserved = plan !== undefined && (await this.sentTogether(plan));
      if (reserved) results.push(...plan.allocations);
      else results.push(...Array.from({ length: run?.length ?? 1 }, () => undefined));
    }
    return results;
  }

  /** False when any guard failed or the store did not answer: each is then reserved alone. */
  private async sentTogether(plan: PlannedTransaction): Promise<boolean> {
    try {
      return (await this.requests.transact("reserveCapacity", plan)) === undefined;
    } catch {
      return false;
    }
  }

  /**
   * `requests` in order, cut into runs that fit one transaction. A request that cannot share one
   * (it does not plan, `reserveCapacity` says why; or its plan needs the session read first, a wide gang)
   * comes as `undefined`, in its place.
   */
  private *togetherRuns(requests: readonly ReservationRequest[]): Generator<PlannedRequest[] | undefined> {
    let chunk: PlannedRequest[] = [];
    for (const request of requests) {
      const plan = plannedOrNothing(request, this.layout);
      const next = plan === undefined ? undefined : [...chunk, { request, plan }];
      if (next !== undefined && reservationsTogetherItems(next) <= MAX_TRANSACTION_ITEMS) {
        chunk = next;
        continue;
      }
      if (chunk.length > 0) yield chunk;
      chunk = plan === undefined ? [] : [{ request, plan }];
      if (plan === undefined) yield undefined;
    }
    if (chunk.length > 0) yield chunk;
  }

  async releaseCapacity(sessionId: string, known?: SessionWithKernels): Promise<Allocation[]> {
    requireId("sessionId", sessionId);
    if (known !== undefined && known.session.id === sessionId) {
      // The copy's kernels say what the reservation took: given back in one request, without
      // reading the allocations, if the store holds exactly that. Otherwise (released already,
      // an agent lost meanwhile) the allocations are read as below.
      const derived = allocationsOfKernels(sessionId, known.kernels);
      if (derived.length > 0 && derived.length <= RELEASE_BATCH) {
        const failure = await this.requests.transact(
          "releaseCapacity",
          planRelease(derived, new Set(), this.layout, true),
        );
        if (failure === undefined) return derived;
      }
    }
    const released: Allocation[] = [];
    const goneAgents = new Set<string>();
    for (let attempt = 1; attempt <= this.maxAttempts; attempt++) {
      const held = await this.allocationsOf(sessionId);
      if (held.length === 0) return released;
      const batch = held.slice(0, RELEASE_BATCH);
      const failure = await this.requests.transact(
        "releaseCapacity",
        planRelease(batch, goneAgents, this.layout),
      );
      if (failure === undefined) {
        released.push(...batch);
        // Everything read is released: nothing places a session that is leaving its agents, so
        // there is no need to read again to find out.
        if (batch.length === held.length) return released;
        attempt = 0; // progress: the attempt budget is for failures in a row
        continue;
      }
      // An allocation already deleted means a concurrent release got there first; a missing
      // agent was deregistered and gets nothing back. Either way: re-read and go again.
      for (const { role, reason } of failure) {
        if (role.kind === "agent" && reason.Item === undefined) goneAgents.add(role.agentId);
      }
    }
    throw new StoreUnavailableError(
      "releaseCapacity",
      this.maxAttempts,
      `allocations of ${sessionId} kept changing`,
    );
  }

  async allocationsOf(sessionId: string): Promise<Allocation[]> {
    requireId("sessionId", sessionId);
    const items = await this.requests.queryAll("allocationsOf", {
      TableName: this.requests.tableName,
      KeyConditionExpression: "#pk = :pk AND begins_with(#sk, :prefix)",
      ExpressionAttributeNames: { "#pk": "pk", "#sk": "sk" },
      ExpressionAttributeValues: {
        ":pk": { S: sessionPk(sessionId) },
        ":prefix": { S: ALLOCATION_SK_PREFIX },
      },
      ConsistentRead: true,
    });
    return items.map(allocationFromItem);
  }

  async allocationsOnAgent(agentId: string): Promise<Allocation[]> {
    requireId("agentId", agentId);
    const keys = await this.requests.queryAll("allocationsOnAgent", {
      TableName: this.requests.tableName,
      IndexName: STATUS_INDEX,
      KeyConditionExpression: "#pk = :pk",
      ExpressionAttributeNames: { "#pk": "gsi1pk" },
      ExpressionAttributeValues: { ":pk": { S: agentAllocationsPk(agentId) } },
    });
    const items = await this.requests.batchGet(
      "allocationsOnAgent",
      keys.map((k) => tableKey(k)),
    );
    return items.filter((i) => i !== undefined).map(allocationFromItem);
  }
}

/** Capacity arithmetic in JS (a resize) must not leave binary noise in stored numbers. */
function round(value: number): number {
  return Math.round(value * 1e6) / 1e6;
}

/**
 * The request's plan, or undefined when it is not valid (`reserveCapacity` says why) or does not fit the
 * expressions without reading the session first (`reserveCapacity` does that).
 */
function plannedOrNothing(
  request: ReservationRequest,
  layout: StoreLayout,
): PlannedRequest["plan"] | undefined {
  try {
    const plan = planReservation(request, layout);
    return fitsExpressions(plan) ? plan : undefined;
  } catch {
    return undefined;
  }
}
