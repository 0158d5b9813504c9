/**
 * Cairn's topology, declared once: the functions, the event rules that feed them, the state
 * machine and its substitutions, and the sweep schedule. The CDK stack (lib/) and the embedded
 * runtime (local/) are both built from this, so they cannot drift; a test compares them.
 * Pure data: no CDK, no SDK.
 */
import { EventSource, DetailType } from "../core/events.ts";
import { PLACEMENT_STATUSES } from "../core/status.ts";
import { FUNCTION_TIMEOUT_SECONDS } from "./function-timeouts.ts";
export const FunctionName = {
  /** Applies inbound events, then runs the handler passes they make possible. */
  Coordinator: "Coordinator",
  /** Invoked by the lifecycle execution as it enters each state. */
  EnterStage: "EnterStage",
  /**
   * Runs the deployment and route handlers of Backend.AI's BEP-1030: applies deployment requests
   * and replicas' health reports, and completes the family executions' callbacks.
   */
  Deployments: "Deployments",
  /** Invoked by a deployment's or a route's lifecycle execution as it enters each state. */
  EnterFamilyStage: "EnterFamilyStage",
} as const;
export type FunctionName = (typeof FunctionName)[keyof typeof FunctionName];

export interface FunctionDecl {
  readonly name: FunctionName;
  /** Module under functions/handlers/ exporting `handler`. */
  readonly entry: string;
  readonly description: string;
  readonly timeoutSeconds: number;
  readonly memoryMiB: number;
  /** What the function touches, for least-privilege grants. */
  readonly uses: readonly (
    | "table"
    | "bus:put"
    | "statemachine:start"
    | "statemachine:callback"
    /** Reads executions' status (the sweep's repair, functions/app/repair.ts). */
    | "statemachine:describe"
    /** Creates agents' queues (on registration) — functions/adapters/sqs/agent-channel.ts. */
    | "agents:open"
    /** Sends to agents' queues. */
    | "agents:send"
  )[];
  /**
   * The state machines its statemachine:* uses apply to (least privilege: the session
   * coordinator never starts a deployment's execution). Absent: the session lifecycle only.
   */
  readonly stateMachines?: readonly StateMachineName[];
}

export const FUNCTIONS: readonly FunctionDecl[] = [
  {
    name: FunctionName.Coordinator,
    entry: "functions/handlers/coordinator.ts",
    description: "Applies inbound events and runs the lifecycle handlers and promotions in batches",
    timeoutSeconds: FUNCTION_TIMEOUT_SECONDS.Coordinator,
    memoryMiB: 512,
    uses: [
      "table",
      "bus:put",
      "statemachine:start",
      "statemachine:callback",
      "statemachine:describe",
      "agents:open",
      "agents:send",
    ],
  },
  {
    name: FunctionName.EnterStage,
    entry: "functions/handlers/enter-stage.ts",
    description:
      "Records a session's status, task token and entry time as its execution enters a state, then takes the session's next step; judges an expired PENDING stage",
    timeoutSeconds: FUNCTION_TIMEOUT_SECONDS.EnterStage,
    memoryMiB: 256,
    // Stops what a session leaves running when it leaves its agents; takes the session's next
    // step itself (Coordinator.advance): commands to its agents, the stage's callback.
    uses: ["table", "bus:put", "agents:send", "statemachine:callback"],
  },
  {
    name: FunctionName.Deployments,
    entry: "functions/handlers/deployments.ts",
    description:
      "Applies deployment requests and replicas' health reports, and runs the deployment and route handlers",
    timeoutSeconds: FUNCTION_TIMEOUT_SECONDS.Deployments,
    memoryMiB: 256,
    // Starts deployments' and routes' executions and completes their callbacks; submits and
    // cancels replicas' sessions as a client would (events on the bus), reads them in the table.
    uses: ["table", "bus:put", "statemachine:start", "statemachine:callback"],
    stateMachines: ["DeploymentLifecycle", "RouteLifecycle"],
  },
  {
    name: FunctionName.EnterFamilyStage,
    entry: "functions/handlers/enter-family-stage.ts",
    description:
      "Records a deployment's or a route's status and task token as its execution enters a state, and publishes the change",
    timeoutSeconds: FUNCTION_TIMEOUT_SECONDS.EnterFamilyStage,
    memoryMiB: 256,
    uses: ["table", "bus:put"],
  },
];

/**
 * Events reach the coordinator through queues so that bursts coalesce into batches (an SQS
 * event source with a batching window on AWS; the same batching in the embedded runtime). Each
 * kind of work has its own queue, so that none waits behind another's backlog: client requests
 * (a burst of submissions), kernel reports (sessions under way), placement (sessions entering
 * PENDING, capacity coming free) and heartbeats. A session's other stages are taken on entry
 * (EnterStage), in parallel.
 */
export const QueueName = {
  CoordinatorQueue: "CoordinatorQueue",
  ReportQueue: "ReportQueue",
  PlacementQueue: "PlacementQueue",
  HeartbeatQueue: "HeartbeatQueue",
  DeploymentQueue: "DeploymentQueue",
} as const;
export type QueueName = (typeof QueueName)[keyof typeof QueueName];

export interface QueueDecl {
  readonly name: QueueName;
  readonly consumer: FunctionName;
  readonly batchSize: number;
  readonly maxBatchingWindowSeconds: number;
  /** How many batches may run at once. */
  readonly maxConcurrency: number;
  /**
   * A FIFO queue whose rule-delivered messages all carry this message group (an EventBridge
   * rule's SQS target takes one fixed group): SQS hands the consumer one batch of a group at a
   * time, in order, and while any message of the group is in flight (a failed one until its
   * visibility timeout) the whole group waits. FIFO queues have content-based deduplication (an
   * EventBridge target requires it) and no batching window. Absent: a standard queue. No queue
   * is FIFO: work that must not run twice at once is serialized by a lease per key instead
   * (functions/app/serialized.ts), so one failed message never holds back another.
   */
  readonly fifoGroup?: string;
  /**
   * Receives before a message goes to the dead-letter queue, when fewer than the stack's
   * `maxReceiveCount`: work whose delay holds up sessions (placement) gives up on a poison
   * message sooner. @default the stack's maxReceiveCount
   */
  readonly maxReceiveCount?: number;
  /**
   * Messages that mean something only for the agent timeout (heartbeats, registration requests,
   * which agents repeat): kept that long (`queueRetentionSeconds`), then dropped, never
   * dead-lettered; EventBridge gives up delivering them after as long. @default false
   */
  readonly disposable?: boolean;
}

/**
 * How long a received message stays invisible beyond its consumer's timeout. A failed message
 * (reported failed, or its invocation failed) is redelivered only once this has passed since
 * its receive, so it is kept close to the timeout, not AWS's general advice of six times it:
 * every consumer is idempotent and nothing relies on a message staying invisible for
 * serialization (leases do that), so a batch that runs past it and is delivered again costs a
 * repeated pass, while a long timeout costs every failed message minutes of delay.
 */
export const VISIBILITY_MARGIN_SECONDS = 30;

/** The queue's visibility timeout: its consumer's timeout and a margin (SQS requires at least the timeout). */
export function visibilityTimeoutSeconds(queue: QueueDecl): number {
  const consumer = FUNCTIONS.find((f) => f.name === queue.consumer);
  if (!consumer) throw new Error(`QUEUES ${queue.name}.consumer: no function ${queue.consumer}`);
  return consumer.timeoutSeconds + VISIBILITY_MARGIN_SECONDS;
}

/** SQS's shortest retention and EventBridge's shortest maximum event age. */
const MIN_LIFETIME_SECONDS = 60;
/** EventBridge's longest maximum event age. */
const MAX_LIFETIME_SECONDS = 86_400;
/**
 * Work kept by a queue whose consumer is down. SQS deletes an expired message without
 * dead-lettering it, so this is how long an outage of the coordinator may last before submissions
 * and reports are lost: a week, past a long weekend (lib/routing.ts says why not longer).
 */
export const WORK_RETENTION_SECONDS = 7 * 86_400;

/** How long a disposable message means something: the agent timeout, within what SQS and EventBridge accept. */
export function disposableLifetimeSeconds(agentTimeoutMs: number): number {
  const seconds = Math.ceil(agentTimeoutMs / 1000);
  return Math.min(MAX_LIFETIME_SECONDS, Math.max(MIN_LIFETIME_SECONDS, seconds));
}

/** The queue's retention (SQS MessageRetentionPeriod), given the agent timeout. */
export function queueRetentionSeconds(queue: QueueDecl, agentTimeoutMs: number): number {
  return queue.disposable === true ? disposableLifetimeSeconds(agentTimeoutMs) : WORK_RETENTION_SECONDS;
}

/** The stack's default `maxReceiveCount` (lib/props.ts), and the embedded runtime's. */
export const DEFAULT_MAX_RECEIVE_COUNT = 5;

/** Receives before a message of `queue` is dead-lettered, given the stack's maxReceiveCount. */
export function maxReceiveCountOf(queue: QueueDecl, stackMaxReceiveCount: number): number {
  return Math.min(stackMaxReceiveCount, queue.maxReceiveCount ?? stackMaxReceiveCount);
}

export const QUEUES: readonly QueueDecl[] = [
  {
    // Client requests. A burst of submissions is taken in two batches at a time (each batch's
    // new jobs written together), so that sessions already under way (reports, stage entries,
    // placement) keep most of the store while the intake runs.
    name: QueueName.CoordinatorQueue,
    consumer: FunctionName.Coordinator,
    batchSize: 10,
    maxBatchingWindowSeconds: 0,
    maxConcurrency: 2,
  },
  {
    // Kernel reports: per-session work, batches side by side; two touching the same session are
    // kept apart by the session's version (a conflict re-reads). Four at once: reports wait in
    // the queue while the four run, so a batch holds more of them (one read of its sessions, a
    // session's reports in one write). Against eight, measured alternately (docs/performance.md,
    // "Settings chosen by measurement"): 1,000 sessions 12.3 requests each instead of 12.8 – 12.9, half the
    // conflicts, no less throughput; 100 sessions 13.1 – 13.4 instead of 13.8 – 14.2. Three
    // and two held reports back: at 1,000, 7 – 9 s and 15 – 17 s in PREPARING at p50.
    name: QueueName.ReportQueue,
    consumer: FunctionName.Coordinator,
    batchSize: 10,
    maxBatchingWindowSeconds: 0,
    maxConcurrency: 4,
  },
  {
    // Placement: sessions entering PENDING, capacity coming free, and the sweep. Serialized per
    // scheduling queue, as Sokovan serializes scheduling per scaling group, by a lease per queue
    // (Coordinator, placementLeaseKey): two passes never place one queue at once, queues are
    // placed side by side, and a failed message holds back only itself. A poison message is
    // dead-lettered after three receives.
    name: QueueName.PlacementQueue,
    consumer: FunctionName.Coordinator,
    batchSize: 10,
    maxBatchingWindowSeconds: 0,
    maxConcurrency: 2,
    maxReceiveCount: 3,
  },
  {
    // Heartbeats have their own queue so that a burst of work in the coordinator queue cannot
    // delay them past the agent timeout and make live agents look lost.
    name: QueueName.HeartbeatQueue,
    consumer: FunctionName.Coordinator,
    batchSize: 10,
    maxBatchingWindowSeconds: 0,
    maxConcurrency: 2,
    disposable: true,
  },
  {
    // Deployments: requests, replicas' health and status changes, and the family executions'
    // own status changes (each one wakes the deployment's handlers). Serialized per deployment
    // by a lease (Deployments, deploymentLeaseKey): a deployment's handlers never race each
    // other over its routes, and deployments go side by side.
    name: QueueName.DeploymentQueue,
    consumer: FunctionName.Deployments,
    batchSize: 10,
    maxBatchingWindowSeconds: 0,
    maxConcurrency: 2,
    maxReceiveCount: 3,
  },
];

/**
 * The bus a rule listens on: Cairn's own (what clients and agents put), or the account's default
 * bus, where AWS services put their events (ECS task state changes).
 */
export const RuleBus = {
  Cairn: "cairn",
  Default: "default",
} as const;
export type RuleBus = (typeof RuleBus)[keyof typeof RuleBus];

export interface RuleDecl {
  readonly name: string;
  readonly description: string;
  readonly eventPattern: Readonly<Record<string, unknown>>;
  readonly target: { readonly queue: QueueName };
  /** Absent: Cairn's own bus. */
  readonly bus?: RuleBus;
}

export const RULES: readonly RuleDecl[] = [
  {
    name: "ClientRequests",
    description: "Session submissions, cancel requests and drafts' changes",
    eventPattern: {
      source: [EventSource.Client],
      "detail-type": [
        DetailType.SessionSubmitted,
        DetailType.SessionCancelRequested,
        DetailType.JobDraftSaved,
        DetailType.JobDraftSubmitted,
        DetailType.JobDraftDeleted,
      ],
    },
    target: { queue: QueueName.CoordinatorQueue },
  },
  {
    name: "KernelReports",
    description: "Kernel status changes reported by agents",
    eventPattern: {
      source: [EventSource.Agent],
      "detail-type": [DetailType.KernelStatusChanged],
    },
    target: { queue: QueueName.ReportQueue },
  },
  {
    name: "AgentHeartbeats",
    description: "Agent registrations and heartbeats (their own queue: liveness must not wait behind work)",
    eventPattern: {
      source: [EventSource.Agent],
      "detail-type": [DetailType.AgentHeartbeat, DetailType.AgentRegistrationRequested],
    },
    target: { queue: QueueName.HeartbeatQueue },
  },
  {
    name: "StatusChanges",
    description:
      "A session entered PENDING (to be placed) or ended (capacity came free, its job may settle); other stages are taken on entry",
    eventPattern: {
      source: [EventSource.ControlPlane],
      "detail-type": [DetailType.SessionStatusChanged],
      detail: { to: [...PLACEMENT_STATUSES] },
    },
    target: { queue: QueueName.PlacementQueue },
  },
  {
    name: "DeploymentRequests",
    description: "Deployment creations, scale and destroy requests",
    eventPattern: {
      source: [EventSource.Client],
      "detail-type": [
        DetailType.DeploymentCreated,
        DetailType.DeploymentScaled,
        DetailType.DeploymentDestroyRequested,
      ],
    },
    target: { queue: QueueName.DeploymentQueue },
  },
  {
    name: "RouteHealth",
    description: "Replicas' health probes reported by the agents that host them",
    eventPattern: {
      source: [EventSource.Agent],
      "detail-type": [DetailType.RouteHealthReported],
    },
    target: { queue: QueueName.DeploymentQueue },
  },
  {
    name: "ReplicaStatusChanges",
    description: "Status changes of sessions backing a deployment's routes (they wake the deployment)",
    eventPattern: {
      source: [EventSource.ControlPlane],
      "detail-type": [DetailType.SessionStatusChanged],
      detail: { deploymentId: [{ exists: true }] },
    },
    target: { queue: QueueName.DeploymentQueue },
  },
  {
    name: "FamilyStatusChanges",
    description: "A deployment or a route entered a status: its deployment's handlers take the next step",
    eventPattern: {
      source: [EventSource.ControlPlane],
      "detail-type": [DetailType.DeploymentStatusChanged, DetailType.RouteStatusChanged],
    },
    target: { queue: QueueName.DeploymentQueue },
  },
];

/** ECS's own events about a task: the Fargate executor's kernel reports, as no agent sends them. */
export const EcsEvent = {
  Source: "aws.ecs",
  TaskStateChange: "ECS Task State Change",
} as const;

/**
 * Stands for the Fargate cluster's ARN in FARGATE.rules' patterns until the stack (or the
 * embedded runtime) knows it: bindClusterArn.
 */
export const CLUSTER_ARN_PLACEHOLDER = "${ClusterArn}";

/**
 * What exists only when kernels may run as ECS tasks on Fargate. The functions that send kernel
 * commands (they hold agents:send) are the ones that carry them to tasks as ECS calls; the
 * stack grants them the ECS actions on its cluster only. ECS reports a task's changes on the
 * account's default bus, filtered to the cluster, and they go where agents' kernel reports go.
 */
export interface FargateDecl {
  readonly commandSenders: readonly FunctionName[];
  readonly rules: readonly RuleDecl[];
}

export const FARGATE: FargateDecl = {
  commandSenders: [FunctionName.Coordinator, FunctionName.EnterStage],
  rules: [
    {
      name: "EcsTaskStateChanges",
      description:
        "ECS task state changes of Cairn's Fargate cluster (kernel reports of the Fargate executor)",
      bus: RuleBus.Default,
      eventPattern: {
        source: [EcsEvent.Source],
        "detail-type": [EcsEvent.TaskStateChange],
        detail: { clusterArn: [CLUSTER_ARN_PLACEHOLDER] },
      },
      target: { queue: QueueName.ReportQueue },
    },
  ],
};

/** A rule's pattern with the cluster's ARN in place of CLUSTER_ARN_PLACEHOLDER. */
export function bindClusterArn(rule: RuleDecl, clusterArn: string): RuleDecl {
  const bind = (value: unknown): unknown => {
    if (value === CLUSTER_ARN_PLACEHOLDER) return clusterArn;
    if (Array.isArray(value)) return value.map(bind);
    if (typeof value === "object" && value !== null) {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, bind(v)]));
    }
    return value;
  };
  return { ...rule, eventPattern: bind(rule.eventPattern) as Record<string, unknown> };
}

export const StateMachineName = {
  SessionLifecycle: "SessionLifecycle",
  DeploymentLifecycle: "DeploymentLifecycle",
  RouteLifecycle: "RouteLifecycle",
} as const;
export type StateMachineName = (typeof StateMachineName)[keyof typeof StateMachineName];

export interface StateMachineDecl {
  readonly name: StateMachineName;
  readonly file: string;
  /** The environment variable that gives the functions its ARN. */
  readonly arnVariable: string;
  /** `${Key}` placeholders in the ASL → the function whose ARN replaces them. */
  readonly substitutions: Readonly<Record<string, FunctionName>>;
}

export const STATE_MACHINES: readonly StateMachineDecl[] = [
  {
    name: StateMachineName.SessionLifecycle,
    file: "statemachines/session-lifecycle.asl.json",
    arnVariable: "CAIRN_STATE_MACHINE_ARN",
    substitutions: { EnterStageFunctionArn: FunctionName.EnterStage },
  },
  {
    name: StateMachineName.DeploymentLifecycle,
    file: "statemachines/deployment-lifecycle.asl.json",
    arnVariable: "CAIRN_DEPLOYMENT_STATE_MACHINE_ARN",
    substitutions: { EnterDeploymentStageFunctionArn: FunctionName.EnterFamilyStage },
  },
  {
    name: StateMachineName.RouteLifecycle,
    file: "statemachines/route-lifecycle.asl.json",
    arnVariable: "CAIRN_ROUTE_STATE_MACHINE_ARN",
    substitutions: { EnterRouteStageFunctionArn: FunctionName.EnterFamilyStage },
  },
];

/** The state machines a function's statemachine:* uses apply to. */
export function stateMachinesOf(fn: FunctionDecl): readonly StateMachineName[] {
  return fn.stateMachines ?? [StateMachineName.SessionLifecycle];
}

/**
 * The safety sweep: runs every pass for anything an event missed. It is a scheduled event put on
 * the placement queue, not a direct invocation, so that it is retried and dead-lettered like
 * other placement work; its scheduling pass takes each queue's lease like every other.
 */
export const SWEEP = {
  name: "Sweep",
  rateSeconds: 60,
  target: { queue: QueueName.PlacementQueue },
} as const;

/**
 * The deployments' sweep: every deployment's handlers run, so that a replica whose agent stopped
 * reporting becomes STALE (DEGRADED) though no event comes.
 */
export const DEPLOYMENT_SWEEP = {
  name: "DeploymentSweep",
  rateSeconds: 60,
  target: { queue: QueueName.DeploymentQueue },
} as const;

export interface SweepDecl {
  readonly name: string;
  readonly rateSeconds: number;
  readonly target: { readonly queue: QueueName };
}

/** Every scheduled sweep: a scheduled event put on its queue. */
export const SWEEPS: readonly SweepDecl[] = [SWEEP, DEPLOYMENT_SWEEP];
