/**
 * Shared set-up for the store tests: a client for the run's DynamoDB Local, a fresh uniquely
 * named table per test file, and builders for sessions with literal epoch times.
 */
import { randomUUID } from "node:crypto";
import { DeleteTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { inject } from "vitest";
import {
  DynamoSessionStore,
  type DynamoSessionStoreOptions,
} from "../functions/adapters/dynamo/dynamo-session-store.ts";
import { createTable } from "../functions/adapters/dynamo/create-table.ts";
import type { EventsPort } from "../functions/core/ports/event-bus.ts";
import { storeRetryConfig, type StoreRetryOptions } from "../functions/adapters/dynamo/retry.ts";
import type {
  HistoryDraft,
  Kernel,
  Session,
  SessionSpec,
  SessionWithKernels,
} from "../functions/core/model.ts";
import type { KernelStatus, SessionStatus } from "../functions/core/status.ts";

export const T0 = 1_800_000_000_000;

/**
 * A client for DynamoDB Local with the store's retry strategy; no backoff unless `retry` asks
 * for one (random 0: every delay is 0), as conflicts between a test's own requests clear at once.
 */
export function localClient(retry: StoreRetryOptions = {}): DynamoDBClient {
  return new DynamoDBClient({
    ...storeRetryConfig({ random: () => 0, ...retry }),
    endpoint: inject("dynamoEndpoint"),
    region: "local",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
}

export interface TestTable {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  store(options?: Partial<DynamoSessionStoreOptions>): DynamoSessionStore;
  drop(): Promise<void>;
}

export async function freshTable(prefix: string): Promise<TestTable> {
  const client = localClient();
  const tableName = `${prefix}-${randomUUID()}`;
  await createTable(client, tableName);
  return {
    client,
    tableName,
    store: (options = {}) => new DynamoSessionStore({ client, tableName, ...options }),
    drop: async () => {
      await client.send(new DeleteTableCommand({ TableName: tableName }));
      client.destroy();
    },
  };
}

export function spec(overrides: Partial<SessionSpec> = {}): SessionSpec {
  const stages = {
    pending: 0,
    scheduled: 0,
    preparing: 0,
    prepared: 0,
    creating: 0,
    running: 0,
    terminating: 0,
  };
  return {
    name: "train",
    queue: "default",
    priority: 10,
    replicas: 2,
    resources: { cpu: 1, memoryMiB: 512 },
    command: ["python", "train.py"],
    env: { SEED: "7" },
    timeouts: {
      ...stages,
      pending: 600,
      scheduled: 300,
      preparing: 300,
      prepared: 300,
      creating: 300,
      running: 3600,
      terminating: 120,
    },
    maxTries: { ...stages, pending: 3, scheduled: 3, preparing: 3, prepared: 3, creating: 3 },
    ...overrides,
  };
}

export interface SessionOptions {
  readonly priority?: number;
  readonly createdAtMs?: number;
  readonly status?: SessionStatus;
  readonly kernelStatus?: KernelStatus;
  /** `null`: the stage has been claimed (no token). */
  readonly taskToken?: string | null;
  readonly replicas?: number;
  readonly resources?: { cpu: number; memoryMiB: number };
}

export function newSession(id: string, options: SessionOptions = {}): SessionWithKernels {
  const createdAtMs = options.createdAtMs ?? T0;
  const replicas = options.replicas ?? 2;
  const resources = options.resources ?? { cpu: 1, memoryMiB: 512 };
  const taskToken = options.taskToken === undefined ? `token-${id}` : options.taskToken;
  const session: Session = {
    id,
    spec: spec({ priority: options.priority ?? 10, replicas, resources }),
    status: options.status ?? "PENDING",
    version: 0,
    createdAtMs,
    updatedAtMs: createdAtMs,
    executionName: id,
    stage: {
      enteredAtMs: createdAtMs,
      expiresAtMs: createdAtMs + 600_000,
      ...(taskToken !== null ? { taskToken } : {}),
    },
    tries: 0,
    runIndex: 0,
  };
  const kernels: Kernel[] = Array.from({ length: replicas }, (_, index) => ({
    sessionId: id,
    index,
    status: options.kernelStatus ?? "PENDING",
    resources,
    statusChangedAtMs: createdAtMs,
  }));
  return { session, kernels };
}

/** Runs `fn` and returns what it threw (fails the test if it did not throw). */
export async function caught(fn: () => Promise<unknown>): Promise<Error & Record<string, unknown>> {
  try {
    await fn();
  } catch (error) {
    return error as Error & Record<string, unknown>;
  }
  throw new Error("expected the call to throw");
}

/** An events port that publishes nothing (a test that records some overrides those). */
export const SILENT_EVENTS: EventsPort = {
  statusChanged: () => Promise.resolve(),
  rejected: () => Promise.resolve(),
  requeued: () => Promise.resolve(),
  jobStateChanged: () => Promise.resolve(),
};

/** A placement pass's SKIPPED record of a PENDING session (merges with the same message). */
export function skip(sessionId: string, atMs: number, message: string): HistoryDraft {
  return {
    sessionId,
    handler: "ScheduleNewSessions",
    result: "SKIPPED",
    fromStatus: "PENDING",
    message,
    atMs,
  };
}

/** An agent's registration for store tests: incarnation `<agentId>-1`, 4 cpu and 4 GiB unless said. */
export function agentRegistration(
  agentId: string,
  capacity: { readonly cpu: number; readonly memoryMiB: number } = { cpu: 4, memoryMiB: 4096 },
  nowMs = T0,
) {
  return { agentId, incarnation: `${agentId}-1`, capacity, labels: {}, signingKey: "k".repeat(32), nowMs };
}
