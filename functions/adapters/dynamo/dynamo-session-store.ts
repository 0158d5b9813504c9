/**
 * The DynamoDB implementation of the store's ports (SessionRepository, AgentRepository,
 * JobRepository, RetryCatalogRepository: SessionStore; single table, see docs/data-model.md).
 * Every request goes through one place (dynamo-requests.ts) that counts writes for the metrics
 * hook; throttling and transaction conflicts are retried by the client's
 * own retry strategy (retry.ts, storeRetryConfig).
 * Nothing is read from the environment: the caller passes the client and the table name.
 */
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { JobDraft } from "../../core/model.ts";
import type { KernelPatch, SessionWrite } from "../../core/effects.ts";
import type {
  Agent,
  HistoryRecord,
  Kernel,
  Job,
  Queue,
  RunRecord,
  Session,
  SessionWithKernels,
} from "../../core/model.ts";
import { InvalidStoreRequestError, NotFoundError, StoreUnavailableError } from "../../core/ports/errors.ts";
import {
  type AgentHeartbeat,
  type AgentRegistration,
  type Allocation,
  type ReservationRequest,
  type AgentLossRequest,
  type AgentRepository,
} from "../../core/ports/agents.ts";
import {
  type AppliedWrite,
  type CreateSessionResult,
  type HistoryQuery,
  type SessionState,
  type SessionRepository,
  type TargetQuery,
} from "../../core/ports/sessions.ts";
import { type Page, type PageRequest } from "../../core/ports/paging.ts";
import { type JobRepository, type SubmissionRejection } from "../../core/ports/jobs.ts";
import { type RetryCatalogRepository } from "../../core/ports/retry-catalog.ts";
import type { RetryConfig } from "../../core/retry/config.ts";
import type { RetryPolicy } from "../../core/retry/policy.ts";
import { SESSION_STATUSES, type SessionStatus } from "../../core/status.ts";
import { AgentCapacity } from "./agent-capacity.ts";
import { expiredBefore, itemAbsent } from "./conditions.ts";
import { DraftItems } from "./draft-items.ts";
import { DynamoRequests, tableKey, type ConditionFailure } from "./dynamo-requests.ts";
import { any } from "./expressions.ts";
import { transactionError } from "./failures.ts";
import { MergedIndexStream, type PageFetcher } from "./index-stream.ts";
import {
  historyFromItem,
  INLINE_HISTORY_MAX,
  inlineHistoryFromItem,
  inlineKernelsFromItem,
  ItemType,
  kernelFromItem,
  runFromItem,
  sessionFromItem,
  toItem,
  type Item,
} from "./item-codec.ts";
import {
  createdPk,
  DEDUP_SK,
  dedupPk,
  historySk,
  KERNEL_SK_PREFIX,
  kernelSk,
  queueSkAbovePriority,
  queueSkBelowPriority,
  RUN_SK_PREFIX,
  SESSION_SK,
  sessionIdFromPk,
  sessionPk,
  sessionStatusPk,
  targetPk,
} from "./keys.ts";
import type { StoreMetricsSink } from "./metrics.ts";
import { planCreateSession } from "./new-session.ts";
import { KernelItemSessions, transactSession } from "./session-form.ts";
import { decodeCursor, encodeCursor } from "./paging.ts";
import type { QueueInput } from "./resource-items.ts";
import { JobItems } from "./job-items.ts";
import { RejectionItems } from "./rejection-items.ts";
import { RetryResources } from "./retry-resources.ts";
import {
  historyExpiry,
  planInlineKernelPatches,
  planInlineSessionWrite,
  planKernelPatches,
  planSessionWrite,
} from "./session-write.ts";
import { LISTING_INDEX, STATUS_INDEX, TARGET_INDEX } from "../../topology/table-schema.ts";
import { EXECUTION_NAME_RESERVED_DAYS, isExpired } from "./retention.ts";
import { MAX_TRANSACTION_ITEMS, type StoreLayout } from "./transaction-plan.ts";
import { requireCount, requireId, requireKnown, requireLimit, requireNonEmpty } from "./validation.ts";

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

const MAX_QUERY_LIMIT = 1000;
const DEFAULT_PAGE = 50;

/** A kernel's guard failed on an item that is there: it changed since it was read. */
function kernelChanged({ role, reason }: ConditionFailure): string | undefined {
  return role.kind === "kernel" && reason.Item !== undefined
    ? `kernel ${role.index} changed since it was read`
    : undefined;
}

/** A kernel's guard failed because the item is not there. */
function kernelMissing(sessionId: string): (failure: ConditionFailure) => Error | undefined {
  return ({ role }) =>
    role.kind === "kernel" ? new NotFoundError("kernel", `${sessionId}/${role.index}`) : undefined;
}

export class DynamoSessionStore
  implements SessionRepository, AgentRepository, JobRepository, RetryCatalogRepository
{
  readonly tableName: string;
  readonly shards: number;
  private readonly requests: DynamoRequests;
  private readonly agents: AgentCapacity;
  private readonly resources: RetryResources;
  private readonly jobs: JobItems;
  private readonly drafts: DraftItems;
  private readonly rejections: RejectionItems;
  private readonly layout: StoreLayout;
  private readonly maxAttempts: number;
  private readonly clock: () => number;
  private readonly kernelItems = new KernelItemSessions();

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
    this.tableName = options.tableName;
    this.shards = shards;
    this.maxAttempts = maxAttempts;
    this.layout = { tableName: options.tableName, shards, historyRetentionDays, retentionDays };
    this.requests = new DynamoRequests(options.client, options.tableName, options.metrics);
    this.agents = new AgentCapacity(this.requests, this.layout, maxAttempts, this.kernelItems);
    this.resources = new RetryResources(this.requests, this.layout, maxAttempts);
    this.jobs = new JobItems(this.requests, this.layout);
    this.drafts = new DraftItems(this.requests);
    this.clock = options.clock ?? Date.now;
    this.rejections = new RejectionItems(this.requests, this.clock);
  }

  // ------------------------------------------------------------------------------- sessions

  async createSession(input: SessionWithKernels): Promise<CreateSessionResult> {
    const plan = planCreateSession(input, this.layout);
    for (let attempt = 1; attempt <= this.maxAttempts; attempt++) {
      const failure = await this.requests.transact("createSession", plan);
      if (failure === undefined) {
        const kernels = [...input.kernels].sort((a, b) => a.index - b.index);
        return { created: true, session: { session: input.session, kernels } };
      }
      const existing = await this.getSession(input.session.id);
      if (existing !== undefined) return { created: false, session: existing };
      // The id was taken and is free again (deleted meanwhile): try once more.
    }
    throw new StoreUnavailableError("createSession", this.maxAttempts, "the session id kept changing hands");
  }

  async getSession(sessionId: string): Promise<SessionWithKernels | undefined> {
    requireId("sessionId", sessionId);
    const item = await this.requests.getItem("getSession", {
      pk: { S: sessionPk(sessionId) },
      sk: { S: SESSION_SK },
    });
    if (item === undefined) return undefined;
    const kernels = inlineKernelsFromItem(item);
    if (kernels !== undefined) return { session: sessionFromItem(item), kernels };
    // Its kernels are items of their own: the session and its kernels' items, read together in
    // one consistent Query.
    this.kernelItems.add(sessionId);
    return this.getSessionWithKernelItems(sessionId);
  }

  private async getSessionWithKernelItems(sessionId: string): Promise<SessionWithKernels | undefined> {
    const items = await this.requests.queryAll("getSession", {
      TableName: this.tableName,
      KeyConditionExpression: "#pk = :pk AND begins_with(#sk, :prefix)",
      ExpressionAttributeNames: { "#pk": "pk", "#sk": "sk" },
      ExpressionAttributeValues: { ":pk": { S: sessionPk(sessionId) }, ":prefix": { S: SESSION_SK } },
      ConsistentRead: true,
    });
    let session: Session | undefined;
    const kernels: Kernel[] = [];
    for (const item of items) {
      const sk = item["sk"]?.S ?? "";
      if (sk === SESSION_SK) session = sessionFromItem(item);
      else if (sk.startsWith(KERNEL_SK_PREFIX)) kernels.push(kernelFromItem(item));
    }
    return session === undefined
      ? undefined
      : { session, kernels: kernels.sort((a, b) => a.index - b.index) };
  }

  /**
   * Many sessions in few requests: one consistent BatchGetItem (100 keys a request) for the
   * session items, which hold their kernels. Sessions written before their item held the kernels
   * have them read in a second BatchGetItem (a session's kernels are `spec.replicas`, indexes 0
   * to replicas − 1, fixed at creation), after the sessions, as the Query of getSession reads
   * them (sort key order): BatchGetItem reads each item on its own, so a write landing between
   * the two reads leaves the session's version older than its kernels, and a write guarded by
   * that version fails. The other way round (a newer version over older kernels) a write could
   * pass its guard on kernels it never saw.
   */
  async getSessions(sessionIds: readonly string[]): Promise<SessionWithKernels[]> {
    const ids = [...new Set(sessionIds)];
    ids.forEach((id, i) => requireId(`sessionIds[${i}]`, id));
    if (ids.length === 0) return [];
    if (ids.length === 1) {
      const one = await this.getSession(ids[0]!);
      return one ? [one] : [];
    }
    const sessionItems = await this.requests.batchGet(
      "getSessions",
      ids.map((id) => ({ pk: { S: sessionPk(id) }, sk: { S: SESSION_SK } })),
    );
    const found = sessionItems.flatMap((item) =>
      item ? [{ session: sessionFromItem(item), kernels: inlineKernelsFromItem(item) }] : [],
    );
    const kernelKeys = found.flatMap(({ session, kernels }) => {
      if (kernels !== undefined) return [];
      this.kernelItems.add(session.id);
      return Array.from({ length: session.spec.replicas }, (_, index) => ({
        pk: { S: sessionPk(session.id) },
        sk: { S: kernelSk(index) },
      }));
    });
    const itemKernels = new Map<string, Kernel[]>();
    if (kernelKeys.length > 0) {
      for (const item of await this.requests.batchGet("getSessions", kernelKeys)) {
        if (item === undefined) continue;
        const kernel = kernelFromItem(item);
        const list = itemKernels.get(kernel.sessionId) ?? [];
        list.push(kernel);
        itemKernels.set(kernel.sessionId, list);
      }
    }
    return found.map(({ session, kernels }) => ({
      session,
      kernels: kernels ?? (itemKernels.get(session.id) ?? []).sort((a, b) => a.index - b.index),
    }));
  }

  async targetsByStatus(query: TargetQuery): Promise<SessionWithKernels[]> {
    requireNonEmpty("statuses", query.statuses);
    query.statuses.forEach((s, i) => requireKnown(`statuses[${i}]`, s, SESSION_STATUSES));
    requireLimit("limit", query.limit, MAX_QUERY_LIMIT);
    const targetable = query.targetableOnly === true;
    const statuses = new Set(query.statuses);
    // Lower priorities sort after higher ones: read from the end of the queue down to the floor,
    // or from its start up to the ceiling.
    const { belowPriority: below, abovePriority: above } = query;
    if (below !== undefined && above !== undefined) {
      throw new InvalidStoreRequestError("abovePriority", "cannot be combined with belowPriority");
    }
    const floor = below === undefined ? undefined : queueSkBelowPriority(below);
    const ceiling = above === undefined ? undefined : queueSkAbovePriority(above);
    if ((below !== undefined && floor === undefined) || (above !== undefined && ceiling === undefined)) {
      return [];
    }
    const range =
      below !== undefined
        ? { descending: true, atLeast: floor }
        : above !== undefined
          ? { lessThan: ceiling }
          : {};
    const fetchers = [...statuses].flatMap((status) =>
      this.shardIndexes().map((shard) =>
        targetable
          ? this.indexFetcher(TARGET_INDEX, "gsi2pk", targetPk(status, shard), query.limit, range)
          : this.indexFetcher(STATUS_INDEX, "gsi1pk", sessionStatusPk(status, shard), query.limit, range),
      ),
    );
    // Index entries are eventually consistent: each candidate is re-read and kept only if the
    // item itself still qualifies.
    return this.collectSessions(
      new MergedIndexStream(fetchers, "gsi1sk", below !== undefined),
      query.limit,
      (s) =>
        statuses.has(s.session.status) &&
        (!targetable || s.session.stage.taskToken !== undefined) &&
        (below === undefined || s.session.spec.priority < below) &&
        (above === undefined || s.session.spec.priority > above),
    );
  }

  async applyWrite(
    write: SessionWrite,
    options: { readonly returnSession?: boolean } = {},
  ): Promise<AppliedWrite> {
    // Returning the session as written makes the guards on the kernels it leaves alone needless,
    // when the write is one UpdateItem; the old form's transaction keeps them.
    const unguarded =
      options.returnSession === true && write.kernelGuards !== undefined
        ? planInlineSessionWrite({ ...write, kernelGuards: undefined }, this.layout)
        : undefined;
    const returning = unguarded?.items.length === 1 ? unguarded : undefined;
    const outcome = await transactSession(this.requests, this.kernelItems, {
      operation: "applyWrite",
      sessionId: write.sessionId,
      inline: returning ?? planInlineSessionWrite(write, this.layout),
      expected: write.expected,
      legacy: () => planSessionWrite(write, this.layout),
      ...(returning !== undefined ? { returnSession: true } : {}),
    });
    const { refused } = outcome;
    if (refused !== undefined) {
      throw await transactionError(
        write.sessionId,
        write.expected,
        refused,
        () => this.readSessionItem(write.sessionId),
        {
          clash: (failure) =>
            failure.role.kind === "run"
              ? `run ${failure.role.runIndex} of the session is already recorded`
              : kernelChanged(failure),
          other: kernelMissing(write.sessionId),
          sessionChecked: true,
        },
      );
    }
    return {
      sessionId: write.sessionId,
      version: write.expected.version + 1,
      ...(outcome.written !== undefined ? { session: outcome.written } : {}),
    };
  }

  async patchKernels(
    sessionId: string,
    expected: SessionState,
    patches: readonly KernelPatch[],
    nowMs: number,
  ): Promise<SessionWithKernels | undefined> {
    const outcome = await transactSession(this.requests, this.kernelItems, {
      operation: "patchKernels",
      sessionId,
      inline: planInlineKernelPatches(sessionId, patches, nowMs, this.layout),
      expected: undefined,
      legacy: () => planKernelPatches(sessionId, patches, nowMs, this.layout),
      returnSession: true,
    });
    if (outcome.refused === undefined) return outcome.written;
    throw await transactionError(
      sessionId,
      expected,
      outcome.refused,
      () => this.readSessionItem(sessionId),
      {
        clash: kernelChanged,
        other: kernelMissing(sessionId),
      },
    );
  }

  async listRuns(sessionId: string): Promise<RunRecord[]> {
    requireId("sessionId", sessionId);
    const items = await this.requests.queryAll("listRuns", {
      TableName: this.tableName,
      KeyConditionExpression: "#pk = :pk AND begins_with(#sk, :prefix)",
      ExpressionAttributeNames: { "#pk": "pk", "#sk": "sk" },
      ExpressionAttributeValues: { ":pk": { S: sessionPk(sessionId) }, ":prefix": { S: RUN_SK_PREFIX } },
      ConsistentRead: true,
    });
    // Past its expiry (TTL deletes lazily): a run of an earlier session of the same id, or one
    // ended longer ago than the retention.
    const nowMs = this.clock();
    return items.filter((item) => !isExpired(item, nowMs)).map(runFromItem);
  }

  /**
   * The session's history from `fromSeq`: the records its item holds (the first
   * INLINE_HISTORY_MAX) and the records written as items (later ones, and every record of a
   * session written before its item held them), by seq. Records past their retention are left
   * out, whether TTL has deleted their item yet or not.
   */
  async listHistory(sessionId: string, query: HistoryQuery = {}): Promise<HistoryRecord[]> {
    requireId("sessionId", sessionId);
    const fromSeq = query.fromSeq ?? 0;
    requireCount("fromSeq", fromSeq);
    const limit = query.limit ?? MAX_QUERY_LIMIT;
    requireLimit("limit", limit, MAX_QUERY_LIMIT);
    const nowMs = this.clock();
    const nowSec = Math.floor(nowMs / 1000);
    const bySeq = new Map<number, HistoryRecord>();
    if (fromSeq < INLINE_HISTORY_MAX) {
      const item = await this.readSessionItem(sessionId, "listHistory");
      for (const record of item === undefined ? [] : inlineHistoryFromItem(item)) {
        if (record.seq >= fromSeq && historyExpiry(record, this.layout) >= nowSec)
          bySeq.set(record.seq, record);
      }
    }
    let startKey: Item | undefined;
    do {
      const page = await this.requests.query("listHistory", {
        TableName: this.tableName,
        KeyConditionExpression: "#pk = :pk AND #sk BETWEEN :from AND :to",
        ExpressionAttributeNames: { "#pk": "pk", "#sk": "sk" },
        ExpressionAttributeValues: {
          ":pk": { S: sessionPk(sessionId) },
          ":from": { S: historySk(fromSeq) },
          ":to": { S: historySk(9_999_999_999) },
        },
        ConsistentRead: true,
        Limit: limit,
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      });
      for (const item of page.items) {
        // TTL deletes lazily; a record past its expiry is gone as far as readers are concerned.
        const expires = Number(item["expiresAtEpochSec"]?.N ?? Infinity);
        const record = historyFromItem(item);
        // A seq is either in the session item or an item of its own, never both.
        if (expires >= nowSec && !bySeq.has(record.seq)) bySeq.set(record.seq, record);
      }
      startKey = page.lastKey;
    } while (startKey !== undefined && bySeq.size < limit);
    return [...bySeq.values()].sort((a, b) => a.seq - b.seq).slice(0, limit);
  }

  // -------------------------------------------------------------------------------- listings

  async listSessionsByStatus(status: SessionStatus, page: PageRequest = {}): Promise<Page<Session>> {
    requireKnown("status", status, SESSION_STATUSES);
    const kind = `status:${status}`;
    return this.listPage(
      kind,
      page,
      false,
      (limit, after) =>
        this.shardIndexes().map((shard) =>
          this.indexFetcher(STATUS_INDEX, "gsi1pk", sessionStatusPk(status, shard), limit, { after }),
        ),
      (s) => s.status === status,
    );
  }

  /**
   * One page of the status's index entries (so the sweep's cost is bounded however few of them
   * qualify), keeping the sessions whose stage was entered before `enteredBeforeMs`.
   */
  async staleSessions(
    status: SessionStatus,
    enteredBeforeMs: number,
    page: PageRequest = {},
  ): Promise<Page<Session>> {
    requireKnown("status", status, SESSION_STATUSES);
    requireCount("enteredBeforeMs", enteredBeforeMs);
    const limit = page.limit ?? DEFAULT_PAGE;
    requireLimit("limit", limit, MAX_QUERY_LIMIT);
    const kind = `stale:${status}`;
    const after = page.cursor === undefined ? undefined : decodeCursor(page.cursor, kind);
    const stream = new MergedIndexStream(
      this.shardIndexes().map((shard) =>
        this.indexFetcher(STATUS_INDEX, "gsi1pk", sessionStatusPk(status, shard), limit, { after }),
      ),
      "gsi1sk",
      false,
    );
    const entries = await stream.take(limit);
    if (entries.length === 0) return { items: [] };
    const items = await this.requests.batchGet(
      `list ${kind}`,
      entries.map((e) => tableKey(e)),
    );
    const out = items.flatMap((item) => {
      if (item === undefined) return [];
      const session = sessionFromItem(item);
      return session.status === status && session.stage.enteredAtMs < enteredBeforeMs ? [session] : [];
    });
    const last = entries.at(-1)?.["gsi1sk"]?.S;
    const more = (await stream.next()) !== undefined;
    return more && last !== undefined ? { items: out, cursor: encodeCursor(kind, last) } : { items: out };
  }

  async listRecentSessions(page: PageRequest = {}): Promise<Page<Session>> {
    return this.listPage(
      "recent",
      page,
      true,
      (limit, after) =>
        this.shardIndexes().map((shard) =>
          this.indexFetcher(LISTING_INDEX, "gsi3pk", createdPk(shard), limit, { after, descending: true }),
        ),
      () => true,
    );
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

  // ------------------------------------------------------------------------------- internals

  private readSessionItem(sessionId: string, operation = "read session"): Promise<Item | undefined> {
    return this.requests.getItem(operation, { pk: { S: sessionPk(sessionId) }, sk: { S: SESSION_SK } });
  }

  private shardIndexes(): number[] {
    return Array.from({ length: this.shards }, (_, i) => i);
  }

  private indexFetcher(
    indexName: string,
    pkAttribute: string,
    pkValue: string,
    pageSize: number,
    range: {
      after?: string | undefined;
      atLeast?: string | undefined;
      lessThan?: string | undefined;
      descending?: boolean;
    } = {},
  ): PageFetcher {
    const sortAttribute = indexName === LISTING_INDEX ? "gsi3sk" : "gsi1sk";
    const bounds = [range.after, range.atLeast, range.lessThan].filter((b) => b !== undefined);
    if (bounds.length > 1) {
      throw new InvalidStoreRequestError("range", "after, atLeast and lessThan cannot be combined");
    }
    const bound =
      range.after !== undefined
        ? { op: range.descending ? "<" : ">", value: range.after }
        : range.atLeast
          ? { op: ">=", value: range.atLeast }
          : range.lessThan !== undefined
            ? { op: "<", value: range.lessThan }
            : undefined;
    return async (startKey) => {
      const page = await this.requests.query(`query ${indexName}`, {
        TableName: this.tableName,
        IndexName: indexName,
        KeyConditionExpression: bound === undefined ? "#pk = :pk" : `#pk = :pk AND #sk ${bound.op} :bound`,
        ExpressionAttributeNames: {
          "#pk": pkAttribute,
          ...(bound !== undefined ? { "#sk": sortAttribute } : {}),
        },
        ExpressionAttributeValues: {
          ":pk": { S: pkValue },
          ...(bound !== undefined ? { ":bound": { S: bound.value } } : {}),
        },
        ScanIndexForward: range.descending !== true,
        Limit: Math.min(Math.max(pageSize, 1), MAX_QUERY_LIMIT),
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      });
      return page;
    };
  }

  /** Pulls candidates in index order and keeps those the re-read item still qualifies. */
  private async collectSessions(
    stream: MergedIndexStream,
    limit: number,
    keep: (s: SessionWithKernels) => boolean,
  ): Promise<SessionWithKernels[]> {
    const out: SessionWithKernels[] = [];
    const seen = new Set<string>();
    while (out.length < limit) {
      const ids: string[] = [];
      while (ids.length < limit - out.length) {
        const entry = await stream.next();
        if (entry === undefined) break;
        const id = sessionIdFromPk(entry["pk"]?.S ?? "");
        if (seen.has(id)) continue;
        seen.add(id);
        ids.push(id);
      }
      if (ids.length === 0) break;
      for (const s of await this.getSessions(ids)) if (keep(s) && out.length < limit) out.push(s);
    }
    return out;
  }

  private async listPage(
    kind: string,
    page: PageRequest,
    descending: boolean,
    fetchers: (limit: number, after: string | undefined) => PageFetcher[],
    keep: (s: Session) => boolean,
  ): Promise<Page<Session>> {
    const limit = page.limit ?? DEFAULT_PAGE;
    requireLimit("limit", limit, MAX_QUERY_LIMIT);
    const after = page.cursor === undefined ? undefined : decodeCursor(page.cursor, kind);
    const sortKey = descending ? "gsi3sk" : "gsi1sk";
    const stream = new MergedIndexStream(fetchers(limit, after), sortKey, descending);
    const out: Session[] = [];
    let last: string | undefined;
    while (out.length < limit) {
      const entries = await stream.take(limit - out.length);
      if (entries.length === 0) return { items: out };
      const items = await this.requests.batchGet(
        `list ${kind}`,
        entries.map((e) => tableKey(e)),
      );
      entries.forEach((entry, i) => {
        const item = items[i];
        last = entry[sortKey]?.S;
        if (item !== undefined) {
          const session = sessionFromItem(item);
          if (keep(session)) out.push(session);
        }
      });
    }
    const more = (await stream.next()) !== undefined;
    return more && last !== undefined ? { items: out, cursor: encodeCursor(kind, last) } : { items: out };
  }
}
