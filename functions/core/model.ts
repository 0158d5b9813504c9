/**
 * Cairn's domain model: one vocabulary for sessions, kernels, agents and history
 * (docs/concepts.md). Pure data; no I/O. Times are epoch milliseconds (`…AtMs`) unless the name
 * says otherwise.
 */
import type { Executor, FargateArchitecture } from "./fargate.ts";
import { isFargatePool } from "./fargate-pool.ts";
import type { HandlerName } from "./handlers.ts";
import type { RetryState } from "./retry/state.ts";
import type { SchedulingResult } from "./scheduling.ts";
import type {
  AttemptOutcome,
  JobState,
  KernelStatus,
  SessionStatus,
  TerminationCondition,
  WaitingSessionStatus,
} from "./status.ts";

export interface ResourceRequest {
  readonly cpu: number;
  readonly memoryMiB: number;
}

/** Per-stage values keyed by the lower-case stage name, as users write them in specs. */
export type StageKey = Lowercase<WaitingSessionStatus>;
export const STAGE_KEYS = [
  "pending",
  "scheduled",
  "preparing",
  "prepared",
  "creating",
  "running",
  "terminating",
] as const satisfies readonly StageKey[];

export function stageKey(status: WaitingSessionStatus): StageKey {
  return status.toLowerCase() as StageKey;
}

export type StageTimeouts = Readonly<Record<StageKey, number>>;
/**
 * A spec's timeouts: each waiting stage's expiry and, optionally, the whole job's run-time limit
 * (`job`, seconds from when its first task started running; HPC Pack's job run time). No default.
 */
export type SpecTimeouts = StageTimeouts & { readonly job?: number };
export type StageMaxTries = Readonly<Record<StageKey, number>>;

/** What a user submits, after validation and defaults (see spec.ts). */
export interface SessionSpec {
  readonly name: string;
  readonly queue: string;
  readonly priority: number;
  /** Tasks of the job this spec describes. */
  readonly replicas: number;
  /**
   * `true` (the default): the tasks are one gang, the kernels of one session, placed
   * all-or-nothing and retried together. `false`: each task is its own session.
   */
  readonly coscheduled?: boolean;
  /** Co-scheduled only: at most this many of the gang's tasks on one agent. @default 1 */
  readonly perAgent?: number;
  /** FAILED tasks the job tolerates before it fails and kills the rest. @default 0 */
  readonly maxTaskFailures?: number;
  /** Returns to PENDING one run may make before it starts; the next ends the session FAILED. @default 5 */
  readonly maxPendingReturns?: number;
  /**
   * A run preempted while running goes back to the queue (HPC Pack: Queued); with `false` it
   * ends the session FAILED instead (HPC Pack: a task that is not rerunnable). @default true
   */
  readonly rerunnable?: boolean;
  /** Seconds a task may wait to be placed before it is UNSCHEDULABLE (sets `timeouts.pending`). */
  readonly schedulingTimeout?: number;
  /** The parent job: when it ends other than SUCCEEDED, this job is cancelled. */
  readonly parent?: string;
  /** Only agents carrying all these labels may run the kernels. */
  readonly nodeSelector?: Readonly<Record<string, string>>;
  /** Where the kernels run: on agents, or each as an ECS task on Fargate. @default "agent" */
  readonly executor?: Executor;
  /** Fargate only (and required there): the container image each kernel's task runs `command` in. */
  readonly image?: string;
  /** Fargate only: the CPU architecture the image is built for. @default "x86_64" */
  readonly architecture?: FargateArchitecture;
  /** Per kernel. */
  readonly resources: ResourceRequest;
  readonly command: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  /** Expiry timer of each waiting stage, and the job's run-time limit (`job`), in seconds. */
  readonly timeouts: SpecTimeouts;
  /** Handler tries allowed in each stage before GIVE_UP. */
  readonly maxTries: StageMaxTries;
  /** Retry budgets the user set explicitly, and the session's own retry policies. */
  readonly retry?: RetrySpec;
  /** The job template it was validated against; absent: Default. */
  readonly template?: string;
}

/**
 * A spec's retry settings. The budgets have no defaults here on purpose: a budget the user wrote
 * caps retries even under policies, one they did not write does not (see core/retry).
 */
export interface RetrySpec {
  readonly maxRetriesFailure?: number;
  readonly maxRetriesPreemption?: number;
  /**
   * Runs that could not start because of the cluster, retried automatically before the session
   * ends Failed (HPC Pack's automatic retry on cluster failure; retry/start-failures.ts). @default 3
   */
  readonly maxRetriesStart?: number;
  /** Policies added after the queue's (first match wins over the concatenated rules). */
  readonly policies?: readonly string[];
}

/** The waiting stage the lifecycle execution is in, recorded when the stage is entered. */
export interface StageRecord {
  readonly enteredAtMs: number;
  /** Callback token of the waiting state; absent once an outcome has claimed it. */
  readonly taskToken?: string;
  /**
   * The token an outcome claimed (moved here from `taskToken`, so no other run targets the stage)
   * and when: the claimer completes it next. The claim lives in the table, not in the claimer's
   * memory, so a claimer that dies between the two leaves it for the sweep, which gives the token
   * back once the claim is older than any claimer lives (Coordinator's claim recovery).
   */
  readonly claimedToken?: string;
  readonly claimedAtMs?: number;
  /** Expiry deadline of the stage (enteredAtMs + timeout). */
  readonly expiresAtMs: number;
  /**
   * The state entry that wrote this record (its `$$.State.EnteredTime`), with the session status
   * its identity: a retried attempt of the same entry brings a new token and replaces this one.
   */
  readonly entryAtMs?: number;
  /** The attempt (`$$.State.RetryCount`) whose token this is: only a later attempt replaces it. */
  readonly attempt?: number;
}

export interface Session {
  readonly id: string;
  readonly spec: SessionSpec;
  readonly status: SessionStatus;
  /** Incremented by every write to the session item; writes are conditional on it. */
  readonly version: number;
  readonly createdAtMs: number;
  readonly updatedAtMs: number;
  /** Name of the lifecycle execution (= session id). */
  readonly executionName: string;
  readonly stage: StageRecord;
  /** Handler tries spent in the current stage; reset when the status changes. */
  readonly tries: number;
  /** The run (attempt) index; 0 for the first run. */
  readonly runIndex: number;
  /**
   * When the session first went back to PENDING after leaving it (queue-order.ts): from then on it
   * is served before new sessions of its priority. Absent: never requeued.
   */
  readonly requeuedAtMs?: number;
  /** Why the session is still waiting (the latest skip reason), for `cairn get`. */
  readonly pendingReason?: string;
  readonly cancelRequestedAtMs?: number;
  /** Retry counters across runs (budgets, per-rule and total retries). Absent before any retry. */
  readonly retry?: RetryState;
  /** Agents the next placement must avoid (anti-affinity `node`: the latest failed run's). */
  readonly avoidAgentIds?: readonly string[];
  /** The latest history record, mirrored on the session so merging needs no extra read. */
  readonly lastHistory?: HistoryRecord;
  /** Set when the session is one task of a job of independent tasks (`coscheduled: false`). */
  readonly task?: TaskIdentity;
  /** Why the cancel was requested (a user, the job's failure, a parent's end), for people. */
  readonly cancelReason?: string;
  /**
   * A force cancel was asked for at this time (HPC Pack's Force Cancel): the run's end
   * is not waited for — TERMINATING kills the kernels without a grace period and ends them at once,
   * whether or not their agents confirm it.
   */
  readonly cancelForcedAtMs?: number;
  /** Set when a higher-priority session preempted this run; cleared when it is queued again. */
  readonly preemption?: PreemptionMark;
  /** Set when the session backs a deployment's route: its start command carries it. */
  readonly service?: ServiceBinding;
  /**
   * What validation checked of the submission that created the session (history.ts
   * admissionSummary): the message of its first history record, Submit SUBMITTED. Absent on a
   * session created before it was recorded, and on one stored ended by a failed validation.
   */
  readonly admission?: string;
}

/**
 * What makes a session one replica of a deployment: the route it backs, the pinned
 * port if any, and how its agent probes it. Validated by ServiceBindingSchema (service-binding.ts).
 */
export interface ServiceBinding {
  readonly deploymentId: string;
  readonly routeId: string;
  readonly port?: number;
  readonly probe: {
    readonly path: string;
    readonly intervalSeconds: number;
    readonly timeoutSeconds: number;
  };
}

/** Who preempted a session's run, and when (the preemption is under way until it is PENDING). */
export interface PreemptionMark {
  readonly atMs: number;
  /** The session that needed the capacity. */
  readonly by: string;
  readonly byPriority: number;
}

/** Which task of which job a session runs. */
export interface TaskIdentity {
  readonly jobId: string;
  readonly index: number;
  readonly count: number;
}

/**
 * A submission: one or more tasks. A co-scheduled job is one session whose kernels are
 * its tasks (session id = job id); a job of independent tasks is one session per task
 * (`<job id>-t<index>`). The job's state is derived from its tasks (core/jobs.ts); only the final
 * state is stored, once, so cascades run exactly once.
 */
export interface Job {
  readonly id: string;
  readonly spec: SessionSpec;
  readonly sessionIds: readonly string[];
  readonly parentId?: string;
  /** Jobs that named this one as their parent. */
  readonly childIds: readonly string[];
  readonly createdAtMs: number;
  readonly final?: {
    readonly state: JobState;
    readonly reason: string;
    readonly atMs: number;
  };
}

/** A job not yet submitted (core/drafts.ts): HPC Pack's Configuring. */
export interface JobDraft {
  readonly id: string;
  readonly spec: SessionSpec;
  /** 1 when created; every edit adds one, as do the start and the release of a submission. */
  readonly version: number;
  readonly createdAtMs: number;
  readonly updatedAtMs: number;
  /**
   * The spec as its sender wrote it (before defaults), when the sender sent it so: the draft is
   * submitted as written, so a job template's defaults apply to the fields it left unset.
   */
  readonly written?: unknown;
  /** Set when a submission of the draft began (its event): the draft can no longer change. */
  readonly submitting?: { readonly eventId: string; readonly atMs: number };
}

export interface Kernel {
  readonly sessionId: string;
  readonly index: number;
  readonly status: KernelStatus;
  readonly resources: ResourceRequest;
  readonly agentId?: string;
  /**
   * The agent's incarnation the kernel was placed with: its commands are for that incarnation,
   * and a copy of the agent from another (an older one, cached) is read again before sending.
   */
  readonly agentIncarnation?: string;
  readonly exitCode?: number;
  /**
   * A Fargate kernel's ECS task, once RunTask started it: stops go to it, and an event
   * of another task (an earlier one's, late) is not this kernel's. Cleared with the run.
   */
  readonly taskArn?: string;
  readonly condition?: TerminationCondition;
  /** Termination message, error text, or why the kernel ended. */
  readonly message?: string;
  /** The category the agent classified the failure into (e.g. `cuda_error`), if it did. */
  readonly failureCategory?: string;
  /**
   * Events the run's log stream holds, as its agent counted them when it reported the run's end
   * (KernelStatusChangedDetail.logEventCount): absent for a run that has not ended, a Fargate
   * kernel's, or an agent's that does not say.
   */
  readonly logEventCount?: number;
  readonly outcome?: AttemptOutcome;
  /** The latest preparation failure reported by the agent; cleared when preparation is retried. */
  readonly error?: string;
  readonly startedAtMs?: number;
  readonly finishedAtMs?: number;
  readonly statusChangedAtMs: number;
  /**
   * Counts the writes to the kernel's item (absent: none yet). A patch made from a read names the
   * version it read (KernelPatch.expectedVersion), so kernel reports need not guard on the
   * session's version, and a stage entry and a report collide only where they touch one kernel.
   */
  readonly version?: number;
}

export interface SessionWithKernels {
  readonly session: Session;
  readonly kernels: readonly Kernel[];
}

export interface Agent {
  readonly id: string;
  /** Declared at registration; a heartbeat cannot raise it. */
  readonly capacity: ResourceRequest;
  readonly free: ResourceRequest;
  readonly lastHeartbeatAtMs: number;
  readonly version: number;
  /** Node labels, matched by a spec's `nodeSelector`. */
  readonly labels?: Readonly<Record<string, string>>;
  /** The registered process (a fresh id per agent start); its reports carry it. */
  readonly incarnation?: string;
  /** The key the incarnation signs its reports with (sent to it on its own queue only). */
  readonly signingKey?: string;
  readonly registeredAtMs?: number;
  /** Declared lost (silent past the liveness window): fenced until it registers again. */
  readonly lostAtMs?: number;
  /** Shutting down: takes no new work, finishes (stops) what it has. */
  readonly draining?: boolean;
}

/**
 * An agent work may be placed on: registered, heard from within the window, not lost or
 * draining. A queue's Fargate pool (fargate-pool.ts) has no process to fall silent: it is live
 * unless draining, whatever its heartbeat says.
 */
export function isLiveAgent(agent: Agent, nowMs: number, timeoutMs: number): boolean {
  if (isFargatePool(agent.id)) return agent.draining !== true;
  return (
    agent.lastHeartbeatAtMs >= nowMs - timeoutMs && agent.lostAtMs === undefined && agent.draining !== true
  );
}

/**
 * An outcome recorded in a session's history. CANCELLED marks a honoured cancel request;
 * SUBMITTED is the first record of every session (the execution's first PENDING entry);
 * REQUEUED marks a finished run that is retried (TERMINATING → PENDING, runIndex + 1).
 * PREEMPTED marks a session preempted for a higher-priority one (RUNNING → TERMINATING, or
 * back to PENDING from a stage before RUNNING). FAILED ends a run that can never start (its
 * returns to PENDING are used up, or its error cannot clear): the session goes to TERMINATED.
 */
export type HistoryResult =
  SchedulingResult | "CANCELLED" | "SUBMITTED" | "REQUEUED" | "PREEMPTED" | "AGENT_LOST" | "FAILED";

export interface HistoryRecord {
  readonly sessionId: string;
  /** Position in the session's history, from 0. */
  readonly seq: number;
  readonly handler: HandlerName | "Lifecycle" | "Cancel" | "Submit" | "Retry" | "Preempt" | "Liveness";
  readonly result: HistoryResult;
  readonly fromStatus: SessionStatus;
  /** Absent when the status was maintained. */
  readonly toStatus?: SessionStatus;
  readonly message?: string;
  /** How many identical outcomes this record stands for (merged). */
  readonly count: number;
  readonly firstAtMs: number;
  readonly lastAtMs: number;
}

/** A history record before it is placed (seq) or merged (count). */
export type HistoryDraft = Omit<HistoryRecord, "seq" | "count" | "firstAtMs" | "lastAtMs"> & {
  readonly atMs: number;
};

/**
 * What moves a lifecycle execution from one stage to the next: the coordinator completes a
 * stage's callback with this as output, and the next state's entry applies it.
 */
export interface StageTransition {
  readonly from: SessionStatus;
  readonly to: SessionStatus;
  readonly result: HistoryResult;
  readonly handler: HistoryRecord["handler"];
  readonly message?: string;
  /** The run that just ended, recorded with this transition (out of TERMINATING). */
  readonly run?: RunRecord;
  /**
   * The run that just ended, already in the table (the coordinator wrote its record when it
   * claimed the stage): the callback payload carries the index, never the record (256 KiB).
   */
  readonly runIndex?: number;
  /**
   * The session as the sender of the transition last wrote it (its claim of the stage): the
   * entry of the next state starts from this copy instead of reading the session. Every write
   * planned from it is guarded by the versions in it, so a copy gone stale costs a read and a
   * second try, never a wrong write. Absent where it would not fit a callback's payload.
   */
  readonly known?: SessionWithKernels;
  /**
   * The first entry's transition only: the execution's input as it was started, whose `known`
   * is the session as its submission created it (null, or absent from an older input, when not
   * known: the entry reads the session then).
   */
  readonly start?: { readonly known?: SessionWithKernels | null };
  /**
   * A return to PENDING that a budget counted (a preemption or an agent loss while BUILDING,
   * building-loss.ts): the retry state to store, that budget charged. Absent: a free return.
   */
  readonly charged?: RetryState;
  /** Present when the run is retried (result REQUEUED, TERMINATING → PENDING). */
  readonly requeue?: {
    readonly retry: RetryState;
    readonly avoidAgentIds: readonly string[];
    /** The durable wait before the next run, in the state machine's Wait state. */
    readonly delaySeconds: number;
  };
}

/** One kernel's part in a finished run. */
export interface RunKernelRecord {
  readonly index: number;
  readonly agentId?: string;
  /** A Fargate kernel's ECS task in this run (Kernel.taskArn): its output is the task's stream. */
  readonly taskArn?: string;
  readonly status: KernelStatus;
  readonly outcome?: AttemptOutcome;
  readonly exitCode?: number;
  readonly condition?: TerminationCondition;
  readonly message?: string;
  readonly failureCategory?: string;
  /** Events the run's log stream holds (Kernel.logEventCount). */
  readonly logEventCount?: number;
  readonly startedAtMs?: number;
  readonly finishedAtMs?: number;
}

/** One finished run (attempt) of a session: how it ended and what was decided. */
export interface RunRecord {
  readonly sessionId: string;
  readonly runIndex: number;
  /** The run's name (core/retry/naming.ts): the session id, then `<id>.<n>` for retries. */
  readonly name: string;
  /** SUCCEEDED when every kernel succeeded; otherwise the deciding failed kernel's outcome. */
  readonly outcome: AttemptOutcome;
  readonly startedAtMs?: number;
  readonly endedAtMs: number;
  /** Whether the session runs again. */
  readonly decision: "retry" | "finished";
  /** What decided, for people: the rule or budget and the counts it read. */
  readonly reason: string;
  /** The wait before the next run, when retried. */
  readonly delayMs?: number;
  readonly avoidAgentId?: string;
  readonly kernels: readonly RunKernelRecord[];
}

/** A queue: a priority added to its sessions' own, and retry policies that always apply. */
export interface Queue {
  readonly name: string;
  readonly priority: number;
  readonly retryPolicies: readonly string[];
  /** How the queue's Fargate sessions run; absent: the queue has no Fargate settings of its own. */
  readonly fargate?: QueueFargateSettings;
  readonly createdAtMs: number;
  readonly updatedAtMs: number;
}

/** A queue's Fargate settings, validated by queue-settings.ts. */
export interface QueueFargateSettings {
  /** FARGATE_SPOT's interruptions become Cairn preemptions, retried under the preemption budget. */
  readonly capacityProvider: "FARGATE" | "FARGATE_SPOT";
  /** vCPUs the queue's running Fargate kernels may hold at once: placement waits beyond it. */
  readonly vcpuQuota: number;
}
