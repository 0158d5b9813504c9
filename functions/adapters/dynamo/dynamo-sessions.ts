/**
 * The sessions' port (SessionRepository) on DynamoDB: one item per session holding its kernels
 * and first history records (docs/data-model.md), later history records and runs as items beside
 * it, and the sharded indexes that list sessions by status, by target and by creation.
 */

import type { KernelPatch, SessionWrite } from "../../core/effects.ts";
import type { HistoryRecord, RunRecord, Session, SessionWithKernels } from "../../core/model.ts";
import { InvalidStoreRequestError, NotFoundError, StoreUnavailableError } from "../../core/ports/errors.ts";

import {
  type AppliedWrite,
  type CreateSessionResult,
  type HistoryQuery,
  type SessionState,
  type SessionRepository,
  type TargetQuery,
} from "../../core/ports/sessions.ts";
import { type Page, type PageRequest } from "../../core/ports/paging.ts";

import { SESSION_STATUSES, type SessionStatus } from "../../core/status.ts";

import { tableKey, type ConditionFailure, type DynamoRequests } from "./dynamo-requests.ts";

import { transactionError } from "./failures.ts";
import { MergedIndexStream, type PageFetcher } from "./index-stream.ts";
import {
  historyFromItem,
  INLINE_HISTORY_MAX,
  inlineHistoryFromItem,
  runFromItem,
  sessionFromItem,
  type Item,
} from "./item-codec.ts";
import {
  createdPk,
  historySk,
  queueSkAbovePriority,
  queueSkBelowPriority,
  RUN_SK_PREFIX,
  SESSION_SK,
  isSessionItemKey,
  sessionIdFromPk,
  sessionPk,
  sessionStatusPk,
  targetPk,
  claimedPk,
} from "./keys.ts";

import { planCreateSession } from "./new-session.ts";
import { sendSessionWrite, sessionOf } from "./session-send.ts";

import { decodeCursor, encodeCursor } from "./paging.ts";

import { historyExpiry, planKernelPatches, planSessionWrite } from "./session-write.ts";
import { LISTING_INDEX, STATUS_INDEX, TARGET_INDEX } from "../../topology/table-schema.ts";
import { isExpired } from "./retention.ts";
import { type StoreLayout } from "./transaction-plan.ts";
import { requireCount, requireId, requireKnown, requireLimit, requireNonEmpty } from "./validation.ts";

const MAX_QUERY_LIMIT = 1000;
/** Sessions a per-queue read looks at, at most (TargetQuery.scanLimit). */
const MAX_SCAN_LIMIT = 10_000;
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

/** Where the session items are, and how long what ends is kept. */
export interface SessionTable {
  readonly requests: DynamoRequests;
  readonly layout: StoreLayout;
  /** Rounds of a creation whose id keeps changing hands. */
  readonly maxAttempts: number;
  /** Epoch ms, for TTL checks of history and runs. */
  readonly clock: () => number;
}

export class DynamoSessions implements SessionRepository {
  readonly tableName: string;
  readonly shards: number;
  protected readonly requests: DynamoRequests;
  protected readonly layout: StoreLayout;
  protected readonly maxAttempts: number;
  protected readonly clock: () => number;

  constructor(table: SessionTable) {
    this.requests = table.requests;
    this.layout = table.layout;
    this.tableName = table.layout.tableName;
    this.shards = table.layout.shards;
    this.maxAttempts = table.maxAttempts;
    this.clock = table.clock;
  }

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
    return item === undefined ? undefined : sessionOf(item);
  }

  /** Many sessions in few requests: one consistent BatchGetItem (100 keys a request). */
  async getSessions(sessionIds: readonly string[]): Promise<SessionWithKernels[]> {
    const ids = [...new Set(sessionIds)];
    ids.forEach((id, i) => requireId(`sessionIds[${i}]`, id));
    if (ids.length === 0) return [];
    if (ids.length === 1) {
      const one = await this.getSession(ids[0]!);
      return one ? [one] : [];
    }
    const items = await this.requests.batchGet(
      "getSessions",
      ids.map((id) => ({ pk: { S: sessionPk(id) }, sk: { S: SESSION_SK } })),
    );
    return items.flatMap((item) => (item ? [sessionOf(item)] : []));
  }

  async targetsByStatus(query: TargetQuery): Promise<SessionWithKernels[]> {
    requireNonEmpty("statuses", query.statuses);
    query.statuses.forEach((s, i) => requireKnown(`statuses[${i}]`, s, SESSION_STATUSES));
    requireLimit("limit", query.limit, MAX_QUERY_LIMIT);
    const targetable = query.targetableOnly === true;
    const claimed = query.claimedOnly === true;
    if (targetable && claimed) {
      throw new InvalidStoreRequestError("claimedOnly", "cannot be combined with targetableOnly");
    }
    const queues = query.queues === undefined ? undefined : new Set(query.queues);
    if (queues !== undefined) {
      requireNonEmpty("queues", query.queues ?? []);
      query.queues?.forEach((q, i) => requireId(`queues[${i}]`, q));
    }
    if (query.scanLimit !== undefined) {
      if (queues === undefined) throw new InvalidStoreRequestError("scanLimit", "is only read with queues");
      requireLimit("scanLimit", query.scanLimit, MAX_SCAN_LIMIT);
    }
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
        targetable || claimed
          ? this.indexFetcher(
              TARGET_INDEX,
              "gsi2pk",
              (claimed ? claimedPk : targetPk)(status, shard),
              query.limit,
              range,
            )
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
        (!claimed || s.session.stage.claimedToken !== undefined) &&
        (below === undefined || s.session.spec.priority < below) &&
        (above === undefined || s.session.spec.priority > above),
      queues === undefined ? undefined : { queues, scanLimit: query.scanLimit ?? query.limit },
    );
  }

  async applyWrite(
    write: SessionWrite,
    options: { readonly returnSession?: boolean } = {},
  ): Promise<AppliedWrite> {
    // Returning the session as written makes the guards on the kernels it leaves alone needless
    // when the write is one UpdateItem (no later history record, no run record).
    const unguarded =
      options.returnSession === true && write.kernelGuards !== undefined
        ? { ...write, kernelGuards: undefined }
        : undefined;
    const returning =
      unguarded !== undefined && planSessionWrite(unguarded, this.layout).items.length === 1
        ? unguarded
        : undefined;
    const outcome = await sendSessionWrite(this.requests, {
      operation: "applyWrite",
      sessionId: write.sessionId,
      plan: (current) => planSessionWrite(returning ?? write, this.layout, current),
      expected: write.expected,
      ...(options.returnSession === true ? { returnSession: true } : {}),
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
    const outcome = await sendSessionWrite(this.requests, {
      operation: "patchKernels",
      sessionId,
      plan: (current) => planKernelPatches(sessionId, patches, nowMs, this.layout, current),
      expected: undefined,
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
   * INLINE_HISTORY_MAX) and the later ones, written as items, by seq. Records past their retention are left
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

  // ------------------------------------------------------------------------------- internals

  protected readSessionItem(sessionId: string, operation = "read session"): Promise<Item | undefined> {
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

  /**
   * Pulls candidates in index order and keeps those the re-read item still qualifies: `limit` in
   * all, or with `perQueue`, `limit` of each of its queues, reading at most `scanLimit` (the
   * index holds keys only: a session's queue is known once its item is read).
   */
  private async collectSessions(
    stream: MergedIndexStream,
    limit: number,
    keep: (s: SessionWithKernels) => boolean,
    perQueue?: { readonly queues: ReadonlySet<string>; readonly scanLimit: number },
  ): Promise<SessionWithKernels[]> {
    const out: SessionWithKernels[] = [];
    const seen = new Set<string>();
    const counts = new Map<string, number>();
    const count = (queue: string) => counts.get(queue) ?? 0;
    const done = () =>
      perQueue === undefined
        ? out.length >= limit
        : seen.size >= perQueue.scanLimit || [...perQueue.queues].every((q) => count(q) >= limit);
    while (!done()) {
      const ids: string[] = [];
      const batch =
        perQueue === undefined ? limit - out.length : Math.min(limit, perQueue.scanLimit - seen.size);
      while (ids.length < batch) {
        const entry = await stream.next();
        if (entry === undefined) break;
        if (!isSessionItemKey(entry["pk"]?.S, entry["sk"]?.S)) continue;
        const id = sessionIdFromPk(entry["pk"]?.S ?? "");
        if (seen.has(id)) continue;
        seen.add(id);
        ids.push(id);
      }
      if (ids.length === 0) break;
      for (const s of await this.getSessions(ids)) {
        if (!keep(s)) continue;
        if (perQueue === undefined) {
          if (out.length < limit) out.push(s);
          continue;
        }
        const queue = s.session.spec.queue;
        if (!perQueue.queues.has(queue) || count(queue) >= limit) continue;
        counts.set(queue, count(queue) + 1);
        out.push(s);
      }
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
      const sessions = entries.filter((e) => isSessionItemKey(e["pk"]?.S, e["sk"]?.S));
      const items = await this.requests.batchGet(
        `list ${kind}`,
        sessions.map((e) => tableKey(e)),
      );
      last = entries.at(-1)?.[sortKey]?.S;
      sessions.forEach((entry, i) => {
        const item = items[i];
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
