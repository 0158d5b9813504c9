/**
 * Agents and the capacity sessions hold on them: registration, heartbeats, loss, and
 * all-or-nothing reservations. Errors are StoreError (errors.ts), branched on by `code`.
 */
import type { Agent, ResourceRequest, SessionWithKernels } from "../model.ts";
import type { SessionState } from "./sessions.ts";

export interface AgentHeartbeat {
  readonly agentId: string;
  readonly capacity: ResourceRequest;
  readonly nowMs: number;
  /** Only while this incarnation is registered and not declared lost. */
  readonly incarnation?: string;
  /**
   * The incarnation is shutting down. One-way: a heartbeat without it (sent before the drain,
   * handled after) leaves the agent draining; only a new registration clears it.
   */
  readonly draining?: boolean;
}

/** A new agent process: its declared capacity and labels, and the key it signs with. */
export interface AgentRegistration {
  readonly agentId: string;
  readonly incarnation: string;
  readonly capacity: ResourceRequest;
  readonly labels: Readonly<Record<string, string>>;
  readonly signingKey: string;
  readonly nowMs: number;
}

/** Which incarnation of an agent to declare lost, and since when it must have been silent. */
export interface AgentLossRequest {
  readonly agentId: string;
  readonly incarnation: string | undefined;
  readonly silentSinceMs?: number;
  readonly nowMs: number;
}

/** One kernel's placement in a reservation. */
export interface Placement {
  readonly kernelIndex: number;
  readonly agentId: string;
  readonly resources: ResourceRequest;
  /**
   * The agent's incarnation as the placement read it: the reservation holds only while the agent
   * is still that incarnation, and the kernel records it (Kernel.agentIncarnation).
   */
  readonly incarnation?: string;
}

export interface ReservationRequest {
  readonly sessionId: string;
  /** Reserve only if the session is still here (status and version). */
  readonly expected: SessionState;
  readonly nowMs: number;
  /** Every kernel being placed: all of them are reserved, or none. */
  readonly placements: readonly Placement[];
  /**
   * The placement decides the stage: claim it in the same transaction (the session's token
   * moved to its claim, its version bumped, as SessionWrite.claimStage), so no one else targets
   * it while the placer completes it.
   */
  readonly claimStage?: boolean;
  /** The token the claim keeps (SessionWrite.claimedToken). */
  readonly claimedToken?: string;
}

/** Capacity a session holds on one agent (several kernels on one agent share one allocation). */
export interface Allocation {
  readonly sessionId: string;
  readonly agentId: string;
  readonly resources: ResourceRequest;
  readonly kernelIndexes: readonly number[];
  readonly allocatedAtMs: number;
}

/** Agents and the capacity sessions hold on them. */
export interface AgentRepository {
  /** Registers an agent or records its heartbeat; a changed capacity adjusts `free` by the difference. */
  heartbeatAgent(heartbeat: AgentHeartbeat): Promise<Agent>;
  getAgent(agentId: string): Promise<Agent | undefined>;
  /**
   * Registers an agent incarnation: declared capacity and labels, a fresh signing key, not lost,
   * not draining. The same incarnation again changes nothing (redelivery) and returns what is
   * stored. `previous` is the agent as it was when another incarnation held the id.
   */
  registerAgent(registration: AgentRegistration): Promise<{ agent: Agent; previous?: Agent }>;
  /**
   * Declares the incarnation lost (silent since before `silentSinceMs`, or replaced). False when
   * it heartbeated since, registered anew or was already declared lost.
   */
  markAgentLost(request: AgentLossRequest): Promise<boolean>;
  listAgents(): Promise<Agent[]>;
  /**
   * Reserves capacity for all placements or none. Throws CapacityError (an agent lacks room),
   * ConflictError (the session moved, or a kernel is already placed), NotFoundError.
   */
  reserveCapacity(request: ReservationRequest): Promise<Allocation[]>;
  /**
   * Reservations of sessions placed on the same agents, several to a write (each agent's capacity
   * taken once for them all), in order. Per request: its allocations, or `undefined` when it was
   * not reserved (its write was refused or failed, and nothing of it written; or it cannot share
   * one): `reserveCapacity` takes those alone, and says why one fails.
   */
  reserveCapacityTogether(requests: readonly ReservationRequest[]): Promise<(Allocation[] | undefined)[]>;
  /**
   * Gives back every allocation of the session; a second call gives nothing back. `known`, the
   * caller's copy of the session, lets the store give back what its kernels' placements say
   * without reading the allocations, when the stored ones match it exactly.
   */
  releaseCapacity(sessionId: string, known?: SessionWithKernels): Promise<Allocation[]>;
  allocationsOnAgent(agentId: string): Promise<Allocation[]>;
}
