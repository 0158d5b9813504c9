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

import { DynamoAgents } from "./agent-capacity.ts";
import { expiredBefore, itemAbsent } from "./conditions.ts";
import { DynamoDrafts } from "./draft-items.ts";
import { DynamoRequests } from "./dynamo-requests.ts";
import { DynamoSessions } from "./dynamo-sessions.ts";
import { any } from "./expressions.ts";
import { ItemType, toItem } from "./item-codec.ts";
import { DEDUP_SK, dedupPk } from "./keys.ts";
import type { StoreMetricsSink } from "./metrics.ts";

import type { QueueInput } from "./resource-items.ts";
import { DynamoJobs } from "./job-items.ts";
import { DynamoRetryCatalog } from "./retry-resources.ts";

import { EXECUTION_NAME_RESERVED_DAYS } from "./retention.ts";
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
  /** Each repository's own adapter, over the same table and requests. */
  readonly agents: DynamoAgents;
  readonly jobs: DynamoJobs;
  readonly drafts: DynamoDrafts;
  readonly catalog: DynamoRetryCatalog;

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
    this.agents = new DynamoAgents(this.requests, this.layout, maxAttempts);
    this.jobs = new DynamoJobs(this.requests, this.layout, this.clock);
    this.drafts = new DynamoDrafts(this.requests);
    this.catalog = new DynamoRetryCatalog(this.requests, this.layout, maxAttempts);
  }

  /** The session's allocations. Not on the ports (no component asks it); tests assert with it. */
  allocationsOf(sessionId: string): Promise<Allocation[]> {
    return this.agents.allocationsOf(sessionId);
  }

  // agents and capacity: DynamoAgents (agent-capacity.ts)

  heartbeatAgent(heartbeat: AgentHeartbeat): Promise<Agent> {
    return this.agents.heartbeatAgent(heartbeat);
  }

  registerAgent(registration: AgentRegistration): Promise<{ agent: Agent; previous?: Agent }> {
    return this.agents.registerAgent(registration);
  }

  markAgentLost(request: AgentLossRequest): Promise<boolean> {
    return this.agents.markAgentLost(request);
  }

  getAgent(agentId: string): Promise<Agent | undefined> {
    return this.agents.getAgent(agentId);
  }

  listAgents(): Promise<Agent[]> {
    return this.agents.listAgents();
  }

  reserveCapacity(request: ReservationRequest): Promise<Allocation[]> {
    return this.agents.reserveCapacity(request);
  }

  reserveCapacityTogether(requests: readonly ReservationRequest[]): Promise<(Allocation[] | undefined)[]> {
    return this.agents.reserveCapacityTogether(requests);
  }

  releaseCapacity(sessionId: string, known?: SessionWithKernels): Promise<Allocation[]> {
    return this.agents.releaseCapacity(sessionId, known);
  }

  allocationsOnAgent(agentId: string): Promise<Allocation[]> {
    return this.agents.allocationsOnAgent(agentId);
  }

  // jobs and rejected submissions: DynamoJobs (job-items.ts)

  createJob(job: Job): Promise<{ created: boolean; job: Job }> {
    return this.jobs.createJob(job);
  }

  createJobWithSessions(job: Job, sessions: readonly SessionWithKernels[]): Promise<{ created: boolean }> {
    return this.jobs.createJobWithSessions(job, sessions);
  }

  getJob(jobId: string): Promise<Job | undefined> {
    return this.jobs.getJob(jobId);
  }

  getJobs(jobIds: readonly string[]): Promise<Job[]> {
    return this.jobs.getJobs(jobIds);
  }

  addChildJob(parentId: string, childId: string): Promise<Job | undefined> {
    return this.jobs.addChildJob(parentId, childId);
  }

  finishJob(jobId: string, final: NonNullable<Job["final"]>): Promise<boolean> {
    return this.jobs.finishJob(jobId, final);
  }

  listJobsWithRunTimeLimit(): Promise<Job[]> {
    return this.jobs.listJobsWithRunTimeLimit();
  }

  recordRejection(rejection: SubmissionRejection, ttlSeconds: number): Promise<void> {
    return this.jobs.recordRejection(rejection, ttlSeconds);
  }

  listRejections(id: string): Promise<SubmissionRejection[]> {
    return this.jobs.listRejections(id);
  }

  // drafts: DynamoDrafts (draft-items.ts)

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

  // the retry catalog: DynamoRetryCatalog (retry-resources.ts)

  createRetryPolicy(policy: RetryPolicy, nowMs: number): Promise<void> {
    return this.catalog.createRetryPolicy(policy, nowMs);
  }

  updateRetryPolicy(policy: RetryPolicy, nowMs: number): Promise<void> {
    return this.catalog.updateRetryPolicy(policy, nowMs);
  }

  getRetryPolicy(name: string): Promise<RetryPolicy | undefined> {
    return this.catalog.getRetryPolicy(name);
  }

  listRetryPolicies(): Promise<RetryPolicy[]> {
    return this.catalog.listRetryPolicies();
  }

  deleteRetryPolicy(name: string): Promise<void> {
    return this.catalog.deleteRetryPolicy(name);
  }

  createQueue(queue: QueueInput, nowMs: number): Promise<Queue> {
    return this.catalog.createQueue(queue, nowMs);
  }

  updateQueue(queue: QueueInput, nowMs: number): Promise<Queue> {
    return this.catalog.updateQueue(queue, nowMs);
  }

  getQueue(name: string): Promise<Queue | undefined> {
    return this.catalog.getQueue(name);
  }

  listQueues(): Promise<Queue[]> {
    return this.catalog.listQueues();
  }

  deleteQueue(name: string): Promise<void> {
    return this.catalog.deleteQueue(name);
  }

  getRetryConfig(): Promise<RetryConfig | undefined> {
    return this.catalog.getRetryConfig();
  }

  putRetryConfig(config: RetryConfig, nowMs: number): Promise<void> {
    return this.catalog.putRetryConfig(config, nowMs);
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
