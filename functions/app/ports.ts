/**
 * What the application layer needs from the outside world besides storage. Adapters implement
 * these with the AWS SDK; the embedded runtime points the same adapters at local endpoints.
 */
import type { AgentMessage } from "../core/agent-protocol.ts";
import type { FamilyExecution, FamilyLeaving } from "../core/deployments/model.ts";
import type {
  DeploymentStatusChangedDetailInput,
  RouteStatusChangedDetailInput,
  SessionCancelRequestedDetailInput,
  SessionSubmittedDetailInput,
  EventRejectedDetailInput,
  JobStateChangedDetailInput,
  SessionRequeuedDetailInput,
  SessionStatusChangedDetailInput,
} from "./event-types.ts";
import type { SessionWithKernels, StageTransition } from "../core/model.ts";
import type { ObservedExecution } from "../core/repair.ts";
import type { SubmissionFilterRequest } from "../core/submission-filter.ts";

export interface Clock {
  nowMs(): number;
}

export const systemClock: Clock = { nowMs: () => Date.now() };

/** A lifecycle execution as DescribeExecution reports it (AWS's statuses). */
export type ExecutionState = ObservedExecution;

/** A lifecycle execution's input (statemachines/session-lifecycle.asl.json). */
export interface ExecutionInput {
  readonly sessionId: string;
  /** The stages' timers, in seconds (each callback state's TimeoutSecondsPath). */
  readonly timeouts: Record<string, number>;
  /**
   * The session as it was created, for the first entry to start from (it reaches EnterStage as
   * StageTransition.start.known); null when unknown. The adapter leaves it out (null) when too
   * large for the input.
   */
  readonly known: SessionWithKernels | null;
}

export interface LifecycleExecutionsPort {
  start(sessionId: string, input: ExecutionInput): Promise<string>;
  complete(taskToken: string, transition: StageTransition): Promise<"completed" | "already-closed">;
  /**
   * The execution named `executionName`, undefined when there is none (the sweep's repair, issue
   * 11). Optional so fakes that never sweep need not answer it: without it nothing is repaired.
   */
  describe?(executionName: string): Promise<ExecutionState | undefined>;
}

/** Outbound events on the bus, for subscribers. */
export interface EventsPort {
  statusChanged(details: readonly SessionStatusChangedDetailInput[]): Promise<void>;
  /** Inbound events refused at the edge, so a rejection is visible to whoever sent it. */
  rejected(details: readonly EventRejectedDetailInput[]): Promise<void>;
  /** A finished run is retried. */
  requeued(details: readonly SessionRequeuedDetailInput[]): Promise<void>;
  /** A job reached its final state. */
  jobStateChanged(details: readonly JobStateChangedDetailInput[]): Promise<void>;
}

/** One message for one agent's queue. */
export interface AgentDelivery {
  readonly agentId: string;
  readonly message: AgentMessage;
}

/**
 * The agents' channel (docs/agents.md): one durable queue per agent, created when the agent
 * registers. Only the agent reads its queue.
 */
export interface AgentChannelPort {
  /** Creates the agent's queue if it does not exist yet. Idempotent. */
  open(agentId: string): Promise<void>;
  /** Delivers every message to its agent's queue; throws when any could not be delivered. */
  send(deliveries: readonly AgentDelivery[]): Promise<void>;
}

// Deployments and routes (issue 15).

/** The family state machines' executions (adapters/sfn/family-executions.ts). */
export interface FamilyExecutionsPort {
  /** Starts the execution `execution.name`; one that exists already is left as it is. */
  startDeployment(deploymentId: string, execution: FamilyExecution): Promise<void>;
  startRoute(routeId: string, execution: FamilyExecution): Promise<void>;
  /** Sends the callback; a token already used or timed out is "already-closed". */
  complete(taskToken: string, leaving: FamilyLeaving): Promise<"completed" | "already-closed">;
}

/** What the deployments function puts on the bus. */
export interface DeploymentBusPort {
  /** Replicas' sessions, submitted as a client submits a session. */
  submitSessions(details: readonly SessionSubmittedDetailInput[]): Promise<void>;
  cancelSessions(details: readonly SessionCancelRequestedDetailInput[]): Promise<void>;
  rejected(details: readonly EventRejectedDetailInput[]): Promise<void>;
}

export interface FamilyEventsPort {
  deploymentStatusChanged(details: readonly DeploymentStatusChangedDetailInput[]): Promise<void>;
  routeStatusChanged(details: readonly RouteStatusChangedDetailInput[]): Promise<void>;
}

/**
 * The administrator's submission filter (issue 16, item 5; core/submission-filter.ts): asked
 * about one submission, resolves with its raw answer (parsed by the core), rejects on an error;
 * stops waiting when `signal` aborts (the caller's timeout).
 */
export interface SubmissionFilterPort {
  ask(request: SubmissionFilterRequest, signal: AbortSignal): Promise<unknown>;
}
