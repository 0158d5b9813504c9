/**
 * Starts the embedded runtime for an end-to-end test file, with fast timers and a private data
 * directory, plus an SDK-level client for submitting and reading sessions. One runtime per test
 * file: the runtime configures the process environment as Lambda would. Its table is a table of
 * its own in the run's one DynamoDB Local (test/support/global-setup.ts), dropped at stop: a JVM
 * per runtime cost the suite more CPU than anything else it runs, most of it compiling the same
 * code again in every JVM.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DeleteTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { inject } from "vitest";
import { EventBridgeClient, PutEventsCommand } from "@aws-sdk/client-eventbridge";
import { DynamoSessionStore } from "../../functions/adapters/dynamo/dynamo-session-store.ts";
import { DetailType, toPutEventsEntry, type EventDetailInput } from "../../functions/core/events.ts";
import type { SessionWithKernels } from "../../functions/core/model.ts";
import {
  SESSION_STATUSES,
  TERMINAL_SESSION_STATUSES,
  type SessionStatus,
} from "../../functions/core/status.ts";
import { startRuntime, type Runtime, type RuntimeOptions } from "../../local/runtime.ts";
import { storeRetryConfig } from "../../functions/adapters/dynamo/retry.ts";

export interface TestRuntime {
  readonly runtime: Runtime;
  readonly store: DynamoSessionStore;
  readonly dataDir: string;
  /**
   * Puts one raw entry (valid or not) on the bus through the SDK, as a client (default) or with
   * the agents' credentials (only they may send `cairn.agent` events).
   */
  put(entry: { Source: string; DetailType: string; Detail: string }, as?: "client" | "agent"): Promise<void>;
  submit(detail: EventDetailInput<"Session Submitted">): Promise<void>;
  cancel(sessionId: string, reason?: string): Promise<void>;
  /** Polls until `predicate` holds for the session, or fails with the last state seen. */
  waitFor(
    sessionId: string,
    predicate: (s: SessionWithKernels) => boolean,
    what: string,
    timeoutMs?: number,
  ): Promise<SessionWithKernels>;
  waitForStatus(sessionId: string, status: SessionStatus, timeoutMs?: number): Promise<SessionWithKernels>;
  waitForEnd(sessionId: string, timeoutMs?: number): Promise<SessionWithKernels>;
  stop(): Promise<void>;
}

/** `ownDynamoDb`: the runtime starts a DynamoDB Local of its own, for tests of that JVM itself. */
export async function startTestRuntime(
  options: RuntimeOptions & { readonly ownDynamoDb?: boolean } = {},
): Promise<TestRuntime> {
  const { ownDynamoDb, ...runtimeOptions } = options;
  const dataDir = mkdtempSync(join(tmpdir(), "cairn-e2e-"));
  const ownDatabase =
    ownDynamoDb === true || options.persistent === true || options.ports?.dynamoDb !== undefined;
  const runtime = await startRuntime({
    dataDir,
    ...(ownDatabase
      ? {}
      : { dynamoDb: { endpoint: inject("dynamoEndpoint"), tableName: `cairn-e2e-${randomUUID()}` } }),
    // Two agents unless a test asks for more: capacity tests count on filling both.
    agents: 2,
    // An idle runtime's cost is its heartbeats and sweeps (each sweep reads every stage's targets
    // on every shard). Measured for 20 s with nothing submitted: 4.9 s of CPU with heartbeats every
    // 500 ms and a sweep every second, 3.4 s with either at these values (docs/performance.md). A
    // test that waits on the sweep (a job's run-time limit) asks for a faster one.
    heartbeatMs: 2_000,
    sweepMs: 5_000,
    // A failed message comes back after its queue's visibility timeout, as on AWS: seconds here,
    // not the stack's minute and a half.
    queueVisibilityTimeoutMs: 3_000,
    terminationGraceMs: 1_000,
    log: () => {},
    handlerLogLevel: "error",
    ...runtimeOptions,
  });
  const { info } = runtime;
  const ddb = new DynamoDBClient({
    endpoint: runtime.tableEndpoint,
    region: info.region,
    credentials: runtime.tableCredential,
    ...storeRetryConfig(),
  });
  const store = new DynamoSessionStore({ client: ddb, tableName: info.tableName });
  // A client's credentials, as the CLI uses them: it may send client events only.
  const clients = {
    client: new EventBridgeClient({
      endpoint: info.endpoints.eventBridge,
      region: info.region,
      credentials: info.credentials.client,
    }),
    agent: new EventBridgeClient({
      endpoint: info.endpoints.eventBridge,
      region: info.region,
      credentials: info.credentials.agent,
    }),
  };
  const put = async (
    entry: { Source: string; DetailType: string; Detail: string },
    as: "client" | "agent" = "client",
  ) => {
    const out = await clients[as].send(
      new PutEventsCommand({ Entries: [{ ...entry, EventBusName: info.eventBusName }] }),
    );
    if (out.FailedEntryCount) throw new Error(`PutEvents rejected the entry: ${JSON.stringify(out.Entries)}`);
  };
  const waitFor: TestRuntime["waitFor"] = async (sessionId, predicate, what, timeoutMs = 30_000) => {
    const deadline = Date.now() + timeoutMs;
    let last: SessionWithKernels | undefined;
    while (Date.now() < deadline) {
      last = await store.getSession(sessionId);
      if (last && predicate(last)) return last;
      await new Promise((r) => setTimeout(r, 100));
    }
    const history = (await store.listHistory(sessionId)).map(
      (h) =>
        `${h.seq} ${h.handler} ${h.result} ${h.fromStatus}->${h.toStatus ?? "="} x${h.count} ${h.message ?? ""}`,
    );
    throw new Error(
      `session ${sessionId} did not reach ${what} within ${timeoutMs} ms; history:\n  ${history.join("\n  ")}\nlast seen: ` +
        JSON.stringify(
          last && {
            status: last.session.status,
            pendingReason: last.session.pendingReason,
            kernels: last.kernels.map((k) => ({
              status: k.status,
              agentId: k.agentId,
              exitCode: k.exitCode,
            })),
          },
        ),
    );
  };
  return {
    runtime,
    store,
    dataDir,
    put,
    submit: (detail) => put(toPutEventsEntry(info.eventBusName, DetailType.SessionSubmitted, detail)),
    cancel: (sessionId, reason) =>
      put(
        toPutEventsEntry(info.eventBusName, DetailType.SessionCancelRequested, {
          sessionId,
          ...(reason !== undefined ? { reason } : {}),
        }),
      ),
    waitFor,
    waitForStatus: (id, status, timeoutMs) =>
      waitFor(id, (s) => s.session.status === status, status, timeoutMs),
    waitForEnd: (id, timeoutMs) =>
      waitFor(id, (s) => TERMINAL_SESSION_STATUSES.has(s.session.status), "a terminal status", timeoutMs),
    stop: async () => {
      clients.client.destroy();
      clients.agent.destroy();
      await runtime.stop();
      rmSync(dataDir, { recursive: true, force: true });
      if (!ownDatabase) {
        await ddb.send(new DeleteTableCommand({ TableName: info.tableName }));
      }
      ddb.destroy();
    },
  };
}

/**
 * The lifecycle invariant, for any e2e test to call after a scenario has settled: no session that
 * is still under way lacks a RUNNING lifecycle execution (nothing stranded), and no session that
 * has ended still holds a task token (nothing left for a late callback). Fails naming each
 * offending session.
 */
export async function assertLifecycleInvariants(t: TestRuntime): Promise<void> {
  const problems: string[] = [];
  const executionsArn = t.runtime.info.stateMachineArn.replace(":stateMachine:", ":execution:");
  for (const status of SESSION_STATUSES) {
    let cursor: string | undefined;
    do {
      const page = await t.store.listSessionsByStatus(status, {
        limit: 100,
        ...(cursor !== undefined ? { cursor } : {}),
      });
      for (const session of page.items) {
        if (TERMINAL_SESSION_STATUSES.has(session.status)) {
          if (session.stage.taskToken !== undefined) {
            problems.push(`${session.id} is ${session.status} but still holds a task token`);
          }
          continue;
        }
        const execution = await t.runtime.stepFunctions
          .describeExecution({ executionArn: `${executionsArn}:${session.executionName}` })
          .catch((error: unknown) => ({ status: `missing (${String(error)})` }));
        if (execution.status !== "RUNNING") {
          problems.push(`${session.id} is ${session.status} but its execution is ${execution.status}`);
        }
      }
      cursor = page.cursor;
    } while (cursor !== undefined);
  }
  if (problems.length > 0) throw new Error(`lifecycle invariants broken:\n  ${problems.join("\n  ")}`);
}
