/**
 * The DynamoDB implementation of the store's ports (SessionRepository, AgentRepository,
 * JobRepository, RetryCatalogRepository, DraftRepository: SessionStore; single table, see
 * docs/data-model.md).
 * Every request goes through one place (dynamo-requests.ts) that counts writes for the metrics
 * hook; throttling and transaction conflicts are retried by the client's
 * own retry strategy (retry.ts, storeRetryConfig).
 * Nothing is read from the environment: the caller passes the client and the table name.
 */
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { Agent, Job, JobDraft, Queue, SessionWithKernels } from "../../core/model.ts";
import type { DraftRepository } from "../../core/ports/drafts.ts";
import {
  type AgentHeartbeat,
  type AgentRegistration,
  type Allocation,
  type ReservationRequest,
  type AgentLossRequest,
  type AgentRepository,
} from "../../core/ports/agents.ts";

import { type JobRepository, type SubmissionRejection } from "../../core/ports/jobs.ts";
import { type RetryCatalogRepository } from "../../core/ports/retry-catalog.ts";
import type { RetryConfig } from "../../core/retry/config.ts";
import type { RetryPolicy } from "../../core/retry/policy.ts";

import { AgentCapacity } from "./agent-capacity.ts";
import { expiredBefore, itemAbsent } from "./conditions.ts";
import { DraftItems } from "./draft-items.ts";
import { DynamoRequests } from "./dynamo-requests.ts";
import { DynamoSessions } from "./dynamo-sessions.ts";
import { any } from "./expressions.ts";
import { ItemType, toItem } from "./item-codec.ts";
import { DEDUP_SK, dedupPk } from "./keys.ts";
import type { StoreMetricsSink } from "./metrics.ts";
import { planCreateSession } from "./new-session.ts";

import type { QueueInput } from "./resource-items.ts";
import { JobItems } from "./job-items.ts";
import { RejectionItems } from "./rejection-items.ts";
import { RetryResources } from "./retry-resources.ts";

import { EXECUTION_NAME_RESERVED_DAYS } from "./retention.ts";
import { MAX_TRANSACTION_ITEMS } from "./transaction-plan.ts";
import { requireId, requireLimit } from "./validation.ts";

export interface DynamoSessionStoreOptions {
  /**
   * Build it with `...storeRetryConfig()` (retry.ts): its retry strategy is the only retry of
   * throttling and transaction conflicts; the store sends each request once.
   */
  readonly client: DynamoDBClient;
  readonly tableName: string;
  /** Partitions per status in the sharded indexes. May grow later, never shrink. Default 4. */
  readonly shards?: number;
  /** History records expire this long after they were last seen. Default 30. */
  readonly historyRetentionDays?: number;
  /**
   * Ended sessions (their kernels and runs), finished jobs and lost agents expire this long
   * after their end (retention.ts). Default 90, the least that keeps a session's id taken for as
   * long as Step Functions keeps its execution's name.
   */
  readonly retentionDays?: number;
  /**
   * Rounds of a read-and-write loop whose condition keeps failing on a changed item (a
   * creation, a heartbeat, a queue update), the first included. Default 6. Transport retries
   * are the client's (storeRetryConfig).
   */
  readonly maxAttempts?: number;
  /** Epoch ms, for TTL checks (history reads, recordOnce). Default Date.now. */
  readonly clock?: () => number;
  /** Receives every request sent (see metrics.ts). */
  readonly metrics?: StoreMetricsSink;
}

/**
 * The whole store (SessionStore) on one table, as the wiring builds it: the sessions' adapter
 * (dynamo-sessions.ts), with the other repositories' adapters beside it, each behind its port.
 */
export class DynamoSessionStore
  extends DynamoSessions
  implements AgentRepository, JobRepository, RetryCatalogRepository, DraftRepository
{
  private readonly agents: AgentCapacity;
  private readonly resources: RetryResources;
  private readonly jobs: JobItems;
  private readonly drafts: DraftItems;
  private readonly rejections: RejectionItems;

  constructor(options: DynamoSessionStoreOptions) {
    const shards = options.shards ?? 4;
    const historyRetentionDays = options.historyRetentionDays ?? 30;
    const retentionDays = options.retentionDays ?? EXECUTION_NAME_RESERVED_DAYS;
    const maxAttempts = options.maxAttempts ?? 6;
    requireId("tableName", options.tableName);
    requireLimit("shards", shards, 100);
    requireLimit("historyRetentionDays", historyRetentionDays, 3650);
    requireLimit("retentionDays", retentionDays, 3650);
    requireLimit("maxAttempts", maxAttempts, 20);
    super({
      requests: new DynamoRequests(options.client, options.tableName, options.metrics),
      layout: { tableName: options.tableName, shards, historyRetentionDays, retentionDays },
      maxAttempts,
      clock: options.clock ?? Date.now,
    });
    this.agents = new AgentCapacity(this.requests, this.layout, maxAttempts);
    this.resources = new RetryResources(this.requests, this.layout, maxAttempts);
    this.jobs = new JobItems(this.requests, this.layout);
    this.drafts = new DraftItems(this.requests);
    this.rejections = new RejectionItems(this.requests, this.clock);
  }

  // ---------------------------------------------------------------------- agents and capacity

  heartbeatAgent(heartbeat: AgentHeartbeat): Promise<Agent> {
    return this.agents.heartbeat(heartbeat);
  }

  registerAgent(registration: AgentRegistration): Promise<{ agent: Agent; previous?: Agent }> {
    return this.agents.register(registration);
  }

  markAgentLost(request: AgentLossRequest): Promise<boolean> {
    return this.agents.markLost(request);
  }

  getAgent(agentId: string): Promise<Agent | undefined> {
    return this.agents.getAgent(agentId);
  }

  listAgents(): Promise<Agent[]> {
    return this.agents.listAgents();
  }

  reserveCapacity(request: ReservationRequest): Promise<Allocation[]> {
    return this.agents.reserve(request);
  }

  reserveCapacityTogether(requests: readonly ReservationRequest[]): Promise<(Allocation[] | undefined)[]> {
    return this.agents.reserveTogether(requests);
  }

  releaseCapacity(sessionId: string, known?: SessionWithKernels): Promise<Allocation[]> {
    return this.agents.release(sessionId, known);
  }

  /** The session's allocations. Not on the ports (no component asks it); tests assert with it. */
  allocationsOf(sessionId: string): Promise<Allocation[]> {
    return this.agents.allocationsOf(sessionId);
  }

  allocationsOnAgent(agentId: string): Promise<Allocation[]> {
    return this.agents.allocationsOnAgent(agentId);
  }

  // ------------------------------------------------------------------------------------ jobs

  createJob(job: Job): Promise<{ created: boolean; job: Job }> {
    return this.jobs.create(job);
  }

  async createJobWithSessions(
    job: Job,
    sessions: readonly SessionWithKernels[],
  ): Promise<{ created: boolean }> {
    const jobPlan = this.jobs.planCreate(job);
    const plans = sessions.map((s) => planCreateSession(s, this.layout));
    const size = jobPlan.items.length + plans.reduce((n, p) => n + p.items.length, 0);
    if (size > MAX_TRANSACTION_ITEMS) return { created: false };
    const failure = await this.requests.transact("createJobWithSessions", {
      items: [...jobPlan.items, ...plans.flatMap((p) => p.items)],
      roles: [...jobPlan.roles, ...plans.flatMap((p) => p.roles)],
    });
    return { created: failure === undefined };
  }

  getJob(jobId: string): Promise<Job | undefined> {
    return this.jobs.get(jobId);
  }

  getJobs(jobIds: readonly string[]): Promise<Job[]> {
    return this.jobs.getMany(jobIds);
  }

  addChildJob(parentId: string, childId: string): Promise<Job | undefined> {
    return this.jobs.addChild(parentId, childId);
  }

  finishJob(jobId: string, final: NonNullable<Job["final"]>): Promise<boolean> {
    return this.jobs.finish(jobId, final);
  }

  listJobsWithRunTimeLimit(): Promise<Job[]> {
    return this.jobs.listWithRunTimeLimit();
  }

  // ---------------------------------------------------------------------------------- drafts

  getDraft(jobId: string): Promise<JobDraft | undefined> {
    return this.drafts.getDraft(jobId);
  }

  createDraft(draft: JobDraft): Promise<boolean> {
    return this.drafts.createDraft(draft);
  }

  replaceDraft(draft: JobDraft, expectedVersion: number): Promise<boolean> {
    return this.drafts.replaceDraft(draft, expectedVersion);
  }

  deleteDraft(jobId: string, expectedVersion: number): Promise<boolean> {
    return this.drafts.deleteDraft(jobId, expectedVersion);
  }

  // ------------------------------------------------- retry policies, queues and retry config

  createRetryPolicy(policy: RetryPolicy, nowMs: number): Promise<void> {
    return this.resources.createRetryPolicy(policy, nowMs);
  }

  updateRetryPolicy(policy: RetryPolicy, nowMs: number): Promise<void> {
    return this.resources.updateRetryPolicy(policy, nowMs);
  }

  getRetryPolicy(name: string): Promise<RetryPolicy | undefined> {
    return this.resources.getRetryPolicy(name);
  }

  listRetryPolicies(): Promise<RetryPolicy[]> {
    return this.resources.listRetryPolicies();
  }

  deleteRetryPolicy(name: string): Promise<void> {
    return this.resources.deleteRetryPolicy(name);
  }

  createQueue(queue: QueueInput, nowMs: number): Promise<Queue> {
    return this.resources.createQueue(queue, nowMs);
  }

  updateQueue(queue: QueueInput, nowMs: number): Promise<Queue> {
    return this.resources.updateQueue(queue, nowMs);
  }

  getQueue(name: string): Promise<Queue | undefined> {
    return this.resources.getQueue(name);
  }

  listQueues(): Promise<Queue[]> {
    return this.resources.listQueues();
  }

  deleteQueue(name: string): Promise<void> {
    return this.resources.deleteQueue(name);
  }

  getRetryConfig(): Promise<RetryConfig | undefined> {
    return this.resources.getRetryConfig();
  }

  putRetryConfig(config: RetryConfig, nowMs: number): Promise<void> {
    return this.resources.putRetryConfig(config, nowMs);
  }

  // ------------------------------------------------------------------------ rejected submissions

  recordRejection(rejection: SubmissionRejection, ttlSeconds: number): Promise<void> {
    return this.rejections.record(rejection, ttlSeconds);
  }

  listRejections(id: string): Promise<SubmissionRejection[]> {
    return this.rejections.list(id);
  }

  // ---------------------------------------------------------------------------- de-duplication

  /**
   * True the first time `key` is seen within `ttlSeconds`, false after (at-least-once consumers).
   * Not on the ports: no component uses it yet; its tests do.
   */
  async recordOnce(key: string, ttlSeconds: number): Promise<boolean> {
    requireId("key", key);
    requireLimit("ttlSeconds", ttlSeconds, 366 * 86_400);
    const nowMs = this.clock();
    const nowSec = Math.floor(nowMs / 1000);
    return this.requests.putItem(
      "recordOnce",
      {
        Item: toItem({
          pk: dedupPk(key),
          sk: DEDUP_SK,
          type: ItemType.DEDUP,
          firstSeenAtMs: nowMs,
          expiresAtEpochSec: nowSec + ttlSeconds,
        }),
      },
      any(itemAbsent, expiredBefore(nowSec)),
    );
  }
}
