/**
 * What the dashboard reads and the one thing it writes, as ports: the store's repositories (the
 * reads `cairn get`, `job get` and `list` make), deployments with their routes and history (the
 * reads `cairn deployment get|list|routes` make), the status census, a cancel request put on the
 * bus exactly as `cairn cancel` puts it, and optionally the kernels' logs and the lifecycle
 * executions. `npm start` (local/dashboard.ts) and `cairn dashboard` (bin/cli/commands/dashboard.ts)
 * build them over the AWS SDK (dashboard/aws.ts); tests may pass their own.
 */
import type { DeploymentRepository } from "../functions/core/ports/deployments.ts";
import type { SessionCensus } from "../functions/core/ports/session-census.ts";
import type { AgentRepository } from "../functions/core/ports/agents.ts";
import type { JobRepository } from "../functions/core/ports/jobs.ts";
import type { FailureCategoryRepository } from "../functions/core/ports/failure-categories.ts";
import type { RetryCatalogRepository } from "../functions/core/ports/retry-catalog.ts";
import type { SessionRepository } from "../functions/core/ports/sessions.ts";

export type DashboardStore = Pick<
  SessionRepository,
  "getSession" | "getSessions" | "listHistory" | "listRuns" | "listSessionsByStatus" | "listRecentSessions"
> &
  Pick<JobRepository, "getJob"> &
  Pick<AgentRepository, "listAgents" | "allocationsOnAgent"> &
  Pick<RetryCatalogRepository, "listQueues" | "listRetryPolicies" | "getRetryConfig">;

/** Deployments, their routes and history; read only. */
export type DashboardDeployments = Pick<
  DeploymentRepository,
  "getDeployment" | "listDeployments" | "deploymentHistory"
>;

export interface LogLine {
  readonly timestamp: number;
  readonly stream: "stdout" | "stderr";
  /** The line's text, as the task wrote it. */
  readonly message: string;
}

/**
 * One kernel run's output: an agent's run's stream `<session>/<kernel>/run-<run>`, or, given the
 * run's task ARN, the stream a Fargate kernel's task writes (`cairn/kernel/<task id>`).
 */
export interface KernelLogs {
  /** The last `limit` lines and a token to follow from; undefined when the stream does not exist (yet). */
  tail(
    sessionId: string,
    kernelIndex: number,
    runIndex: number,
    limit: number,
    taskArn?: string,
  ): Promise<{ lines: LogLine[]; next: string } | undefined>;
  /** Lines written after `token` (from tail or an earlier follow). */
  follow(
    sessionId: string,
    kernelIndex: number,
    runIndex: number,
    token: string,
    taskArn?: string,
  ): Promise<{ lines: LogLine[]; next: string }>;
}

export interface ExecutionEvent {
  readonly id: number;
  readonly timestamp: number;
  readonly type: string;
  /** The state's name, when the event names one. */
  readonly state?: string;
  /** Error and cause of a failure event, for people. */
  readonly detail?: string;
}

/**
 * Where a session's lifecycle execution can be looked at; a deployment's and a route's are on
 * their own state machines beside it (deployments-page.ts familyExecutions).
 */
export type Executions =
  /** Deployed: the Step Functions console page of the execution (in the state machine's region). */
  | { readonly kind: "console"; readonly stateMachineArn: string }
  /** Local: the execution's history, read from the embedded engine and shown by the dashboard. */
  | {
      readonly kind: "local";
      readonly stateMachineArn: string;
      history(executionArn: string): Promise<ExecutionEvent[] | undefined>;
    }
  /** Not shown here; `why` says where to look instead. */
  | { readonly kind: "none"; readonly why?: string };

export interface DashboardDeps {
  readonly store: DashboardStore;
  readonly census: SessionCensus;
  /** Absent: the deployments pages say they are not known for this connection. */
  readonly deployments?: DashboardDeployments;
  /** The failure categories operators define, read-only; absent: the queues page shows none. */
  readonly failureCategories?: Pick<FailureCategoryRepository, "listFailureCategories">;
  /** Puts a `Session Cancel Requested` event for a session or a job id (`force`: Force Cancel). */
  cancel(id: string, reason: string, force: boolean): Promise<void>;
  /** Absent when the kernels' log group is not known. */
  readonly logs?: KernelLogs;
  readonly executions: Executions;
  /** Where the data comes from, shown in the header ("the local runtime", "stack Cairn"). */
  readonly where: string;
  /** An agent silent this long is shown as lost. @default 30000 (CAIRN_AGENT_TIMEOUT_MS's default) */
  readonly agentTimeoutMs?: number;
  /** @default Date.now */
  readonly nowMs?: () => number;
}
