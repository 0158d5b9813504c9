/**
 * Capacity reservation and release as transaction plans (no I/O here).
 *
 * Reserve: one transaction that updates the session item (still at the expected status/version,
 * each kernel placed: its agentId set), takes each agent's share from its free capacity (kernels
 * on one agent summed into one update) and writes one allocation item per agent. Any failing
 * guard cancels the whole transaction, so a gang is placed entirely or not at all.
 *
 * Release: deletes allocation items (guarded by their existence) and gives their capacity back
 * in the same transaction, so capacity is returned exactly once however often release runs.
 */
import type { Kernel, ResourceRequest } from "../../core/model.ts";
import { InvalidStoreRequestError, TransactionTooLargeError } from "../../core/ports/errors.ts";
import { type Allocation, type ReservationRequest } from "../../core/ports/agents.ts";
import {
  allocationIs,
  hasFreeCapacity,
  incarnationIs,
  itemAbsent,
  itemExists,
  sessionAt,
} from "./conditions.ts";
import { all, type UpdateBuilder } from "./expressions.ts";
import { allocationItem, INLINE_KERNELS } from "./item-codec.ts";
import { bumpKernelVersion, kernelAt, kernelsChecked, sessionUpdate } from "./session-write.ts";
import { AGENT_SK, agentPk, allocationSk, SESSION_SK, sessionPk } from "./keys.ts";
import {
  guarded,
  MAX_TRANSACTION_ITEMS,
  updateRequest,
  type ItemRole,
  type PlannedTransaction,
  type SessionPlan,
  type StoreLayout,
  type UpdateRequest,
} from "./transaction-plan.ts";
import { requireCount, requireId, requireNonEmpty, requireResources, requireTime } from "./validation.ts";

export interface PlannedReservation extends PlannedTransaction {
  readonly allocations: Allocation[];
}

/** Items a reservation needs: the session's update, and two per agent. */
export function reservationItemCount(agents: number): number {
  return 1 + 2 * agents;
}

/**
 * A reservation: the kernels' placements go in the session item's update (its claim, or an
 * update that changes nothing but them), beside the agents and allocations. `current`: the
 * kernels as read, each placed kernel written whole (a wide gang, session-write.ts).
 */
export function planReservation(
  request: ReservationRequest,
  layout: StoreLayout,
  current?: readonly Kernel[],
): PlannedReservation & SessionPlan {
  validateReservation(request);
  const allocations = groupByAgent(request);
  const size = reservationItemCount(allocations.length);
  if (size > MAX_TRANSACTION_ITEMS) {
    throw new TransactionTooLargeError(request.sessionId, "reserveCapacity", size, MAX_TRANSACTION_ITEMS);
  }
  const read = current === undefined ? undefined : new Map(current.map((k) => [k.index, k]));
  // Written whole, a kernel is guarded by the version it was read at (one short check each). A
  // kernel read already placed refuses the reservation: its check says so, and one is enough.
  const placedAlready = request.placements.find((p) => read?.get(p.kernelIndex)?.agentId !== undefined);
  const checks = request.placements.map((p) => {
    const kernel = read?.get(p.kernelIndex);
    return kernel === undefined
      ? { index: p.kernelIndex, unplaced: true }
      : {
          index: p.kernelIndex,
          version: kernel.version ?? 0,
          ...(p === placedAlready ? { unplaced: true } : {}),
        };
  });
  const place = (u: UpdateBuilder) => {
    for (const placement of request.placements) {
      const kernel = read?.get(placement.kernelIndex);
      if (kernel !== undefined)
        u.set(`${INLINE_KERNELS}.${placement.kernelIndex}`, placed(kernel, placement));
      else placeKernel(u, kernelAt(placement.kernelIndex), placement);
    }
  };
  const session: UpdateRequest =
    request.claimStage === true
      ? sessionUpdate(
          {
            sessionId: request.sessionId,
            expected: request.expected,
            nowMs: request.nowMs,
            claimStage: true,
            ...(request.claimedToken !== undefined ? { claimedToken: request.claimedToken } : {}),
          },
          layout,
          { actions: place, conditions: kernelsChecked(checks) },
        )
      : updateRequest(
          layout.tableName,
          { pk: { S: sessionPk(request.sessionId) }, sk: { S: SESSION_SK } },
          place,
          all(itemExists, sessionAt(request.expected), ...kernelsChecked(checks)),
        );
  const items: PlannedTransaction["items"] = [{ Update: session }];
  const roles: ItemRole[] = [{ kind: "session" }];
  addAllocations(items, roles, allocations, request, layout);
  return { items, roles, allocations, kernelChecks: checks, checksSession: true };
}

function placeKernel(
  u: UpdateBuilder,
  at: string,
  placement: ReservationRequest["placements"][number],
): void {
  u.set(`${at}agentId`, placement.agentId);
  bumpKernelVersion(u, at);
  if (placement.incarnation !== undefined) u.set(`${at}agentIncarnation`, placement.incarnation);
}

/** The kernel as placeKernel leaves it, written whole. */
function placed(kernel: Kernel, placement: ReservationRequest["placements"][number]): Kernel {
  return {
    ...kernel,
    agentId: placement.agentId,
    ...(placement.incarnation !== undefined ? { agentIncarnation: placement.incarnation } : {}),
    version: (kernel.version ?? 0) + 1,
  };
}

/** Each agent's share taken from its free capacity, and the allocation that records it. */
function addAllocations(
  items: PlannedTransaction["items"],
  roles: ItemRole[],
  allocations: readonly Allocation[],
  request: ReservationRequest,
  layout: StoreLayout,
): void {
  for (const allocation of allocations) {
    items.push({
      Update: agentTake(
        allocation.agentId,
        allocation.resources,
        incarnationOn(request, allocation.agentId),
        layout,
      ),
    });
    roles.push({ kind: "agent", agentId: allocation.agentId, requested: allocation.resources });
    items.push(allocationPut(allocation, layout));
    roles.push({ kind: "allocation", agentId: allocation.agentId });
  }
}

/** The incarnation of `agentId` the request places on: the one the pass read. */
function incarnationOn(request: ReservationRequest, agentId: string): string | undefined {
  return request.placements.find((p) => p.agentId === agentId)?.incarnation;
}

/**
 * `resources` taken from the agent's free capacity, if it has them; placed on `incarnation`, the
 * one the pass read, when given: a restarted agent's new one is placed afresh.
 */
function agentTake(
  agentId: string,
  resources: ResourceRequest,
  incarnation: string | undefined,
  layout: StoreLayout,
): UpdateRequest {
  return updateRequest(
    layout.tableName,
    { pk: { S: agentPk(agentId) }, sk: { S: AGENT_SK } },
    (u) =>
      u
        .increment("free.cpu", -resources.cpu)
        .increment("free.memoryMiB", -resources.memoryMiB)
        .increment("version", 1),
    incarnation === undefined
      ? all(itemExists, hasFreeCapacity(resources))
      : all(itemExists, hasFreeCapacity(resources), incarnationIs(incarnation)),
  );
}

function allocationPut(allocation: Allocation, layout: StoreLayout): PlannedTransaction["items"][number] {
  return { Put: { TableName: layout.tableName, Item: allocationItem(allocation), ...guarded(itemAbsent) } };
}

/** A reservation and its plan (planReservation). */
export interface PlannedRequest {
  readonly request: ReservationRequest;
  readonly plan: PlannedReservation & SessionPlan;
}

/**
 * Several sessions' reservations as one transaction, all or none: each session's item updated as
 * its own reservation updates it (kernels placed, stage claimed), one allocation per session and
 * agent, and each agent's free capacity taken once, by the sum. Undefined when they cannot share
 * one: two incarnations of one agent, or more items than a transaction holds
 * (reservationsTogetherItems).
 */
export function planReservationsTogether(
  reservations: readonly PlannedRequest[],
  layout: StoreLayout,
): (PlannedTransaction & { readonly allocations: readonly Allocation[][] }) | undefined {
  if (reservationsTogetherItems(reservations) > MAX_TRANSACTION_ITEMS) return undefined;
  const items: PlannedTransaction["items"] = [];
  const roles: ItemRole[] = [];
  const agents = new Map<string, { resources: ResourceRequest; incarnation: string | undefined }>();
  for (const { request, plan } of reservations) {
    items.push(plan.items[0]!);
    roles.push(plan.roles[0]!);
    for (const allocation of plan.allocations) {
      const incarnation = incarnationOn(request, allocation.agentId);
      const agent = agents.get(allocation.agentId);
      if (agent !== undefined && agent.incarnation !== incarnation) return undefined;
      agents.set(allocation.agentId, {
        resources:
          agent === undefined ? allocation.resources : sumResources(agent.resources, allocation.resources),
        incarnation,
      });
      items.push(allocationPut(allocation, layout));
      roles.push({ kind: "allocation", agentId: allocation.agentId });
    }
  }
  for (const [agentId, { resources, incarnation }] of agents) {
    items.push({ Update: agentTake(agentId, resources, incarnation, layout) });
    roles.push({ kind: "agent", agentId, requested: resources });
  }
  return { items, roles, allocations: reservations.map(({ plan }) => plan.allocations) };
}

/** Items of planReservationsTogether: one per session and per allocation, and one per agent. */
export function reservationsTogetherItems(reservations: readonly PlannedRequest[]): number {
  const agents = new Set(reservations.flatMap(({ plan }) => plan.allocations.map((a) => a.agentId)));
  return reservations.reduce((n, { plan }) => n + 1 + plan.allocations.length, agents.size);
}

/**
 * Releases `allocations`; agents in `goneAgents` are no longer registered, so their allocation
 * is only deleted. One allocation and its agent update per pair; pairs are independent, so a
 * caller may release more than fit in one transaction in several.
 */
export function planRelease(
  allocations: readonly Allocation[],
  goneAgents: ReadonlySet<string>,
  layout: StoreLayout,
  /**
   * The allocations were not read but derived from a copy of the session's kernels
   * (allocationsOfKernels): each is released only if the stored one holds exactly what the copy
   * says, so capacity never goes back in any other amount than was taken.
   */
  derived = false,
): PlannedTransaction {
  const items: PlannedTransaction["items"] = [];
  const roles: ItemRole[] = [];
  for (const allocation of allocations) {
    items.push({
      Delete: {
        TableName: layout.tableName,
        Key: { pk: { S: sessionPk(allocation.sessionId) }, sk: { S: allocationSk(allocation.agentId) } },
        ...guarded(
          derived
            ? all(itemExists, allocationIs(allocation.resources, allocation.kernelIndexes))
            : itemExists,
        ),
      },
    });
    roles.push({ kind: "allocation", agentId: allocation.agentId });
    if (goneAgents.has(allocation.agentId)) continue;
    items.push({
      Update: updateRequest(
        layout.tableName,
        { pk: { S: agentPk(allocation.agentId) }, sk: { S: AGENT_SK } },
        (u) =>
          u
            .increment("free.cpu", allocation.resources.cpu)
            .increment("free.memoryMiB", allocation.resources.memoryMiB)
            .increment("version", 1),
        itemExists,
      ),
    });
    roles.push({ kind: "agent", agentId: allocation.agentId, requested: allocation.resources });
  }
  return { items, roles };
}

/** At most this many allocations per release transaction (two items each). */
export const RELEASE_BATCH = MAX_TRANSACTION_ITEMS / 2;

function validateReservation(request: ReservationRequest): void {
  requireId("sessionId", request.sessionId);
  requireCount("expected.version", request.expected.version);
  requireTime("nowMs", request.nowMs);
  requireNonEmpty("placements", request.placements);
  const seen = new Set<number>();
  request.placements.forEach((p, i) => {
    requireCount(`placements[${i}].kernelIndex`, p.kernelIndex);
    if (seen.has(p.kernelIndex)) {
      throw new InvalidStoreRequestError(
        `placements[${i}].kernelIndex`,
        `kernel ${p.kernelIndex} is placed twice`,
      );
    }
    seen.add(p.kernelIndex);
    requireId(`placements[${i}].agentId`, p.agentId);
    requireResources(`placements[${i}].resources`, p.resources);
  });
}

/**
 * The allocations a session holds by its kernels' placements, as its reservation wrote them (one
 * per agent, the kernels' resources summed the same way), from a copy of the session: what a
 * release may give back without reading the allocations, each guarded to match the stored one.
 */
export function allocationsOfKernels(
  sessionId: string,
  kernels: readonly {
    readonly index: number;
    readonly agentId?: string;
    readonly resources: ResourceRequest;
  }[],
): Allocation[] {
  return groupByAgent({
    sessionId,
    nowMs: 0,
    placements: kernels.flatMap((k) =>
      k.agentId === undefined ? [] : [{ kernelIndex: k.index, agentId: k.agentId, resources: k.resources }],
    ),
  });
}

function groupByAgent(request: Pick<ReservationRequest, "sessionId" | "nowMs" | "placements">): Allocation[] {
  const byAgent = new Map<string, { resources: ResourceRequest; kernelIndexes: number[] }>();
  for (const p of request.placements) {
    const entry = byAgent.get(p.agentId) ?? { resources: { cpu: 0, memoryMiB: 0 }, kernelIndexes: [] };
    entry.resources = sumResources(entry.resources, p.resources);
    entry.kernelIndexes.push(p.kernelIndex);
    byAgent.set(p.agentId, entry);
  }
  return [...byAgent].map(([agentId, entry]) => ({
    sessionId: request.sessionId,
    agentId,
    resources: entry.resources,
    kernelIndexes: entry.kernelIndexes.sort((a, b) => a - b),
    allocatedAtMs: request.nowMs,
  }));
}

function sumResources(a: ResourceRequest, b: ResourceRequest): ResourceRequest {
  return { cpu: roundResource(a.cpu + b.cpu), memoryMiB: roundResource(a.memoryMiB + b.memoryMiB) };
}

/** Sums of fractional cpu (0.1 + 0.2) must not leave binary noise in stored capacity. */
function roundResource(value: number): number {
  return Math.round(value * 1e6) / 1e6;
}
