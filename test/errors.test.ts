/**
 * Errors as data: each layer's errors share one root (CoreError for input the pure core refuses,
 * PortError for what the ports report, AppError for what the application refuses) with a stable `code`, `retryable` and, where known,
 * `retryAfterMs`. What retries and what does not is decided from those fields alone, so an error
 * rebuilt from its fields (as it crosses a Lambda or Step Functions boundary) is treated the same.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { PublishError } from "../functions/adapters/eventbridge/publisher.ts";
import { FargateTasksError } from "../functions/adapters/ecs/errors.ts";
import { AgentChannelError, QUEUE_NAME_HOLD_MS } from "../functions/adapters/sqs/agent-channel.ts";
import { DraftContentionError } from "../functions/app/drafts.ts";
import { AppError } from "../functions/app/errors.ts";
import { AgentUnreachableError, FargateUnavailableError } from "../functions/app/kernel-commands.ts";
import { rereadOnConflict } from "../functions/app/reread.ts";
import { isTransient, retryDelayMs } from "../functions/app/retryable.ts";
import { CensusError } from "../functions/app/stage-census.ts";
import {
  AlreadyExistsError,
  CapacityError,
  ConflictError,
  errorCode,
  hasCode,
  InvalidStoreRequestError,
  InUseError,
  NotFoundError,
  PortError,
  StoreUnavailableError,
  TransactionTooLargeError,
} from "../functions/core/ports/errors.ts";
import { DefaultTemplateError, TemplateNotFoundError } from "../functions/core/ports/templates.ts";
import { HandlerContractError } from "../functions/core/coordinator/errors.ts";
import { CoreError } from "../functions/core/errors.ts";
import { ConfigError } from "../functions/config.ts";
import { EntryTooLargeError } from "../functions/topology/put-events.ts";
import { SpecSyntaxError } from "../functions/core/spec.ts";
import { FailureCategoryNotFoundError } from "../functions/core/ports/failure-categories.ts";
import { caught, freshTable, newSession, T0, type TestTable } from "./store-fixtures.ts";

/** The error as a boundary delivers it: its own fields, none of its class. */
function rebuilt(error: Error): Error {
  const fields = JSON.parse(JSON.stringify({ ...error, name: error.name, message: error.message })) as object;
  return Object.assign(new Error(error.message), fields);
}

const pending = { status: "PENDING", version: 1 } as const;

describe("one error root per layer, its code and retryability as data", () => {
  const portErrors: readonly (readonly [PortError, string, boolean, number | undefined])[] = [
    [new ConflictError("s", pending, { status: "PENDING", version: 2 }), "CONFLICT", true, 0],
    [
      new StoreUnavailableError("applyWrite", 4, new Error("throttled")),
      "STORE_UNAVAILABLE",
      true,
      undefined,
    ],
    [new NotFoundError("session", "s"), "NOT_FOUND", false, undefined],
    [
      new CapacityError("s", "a", { cpu: 2, memoryMiB: 1 }, { cpu: 1, memoryMiB: 1 }),
      "CAPACITY",
      false,
      undefined,
    ],
    [new TransactionTooLargeError("s", "applyWrite", 101, 100), "TRANSACTION_TOO_LARGE", false, undefined],
    [new InvalidStoreRequestError("limit", "must be positive"), "INVALID_STORE_REQUEST", false, undefined],
    [new AlreadyExistsError("queue", "q"), "ALREADY_EXISTS", false, undefined],
    [new InUseError("retry policy", "p", ["q"]), "IN_USE", false, undefined],
    [new TemplateNotFoundError("t"), "NOT_FOUND", false, undefined],
    [new DefaultTemplateError(), "DEFAULT_TEMPLATE", false, undefined],
    [new FailureCategoryNotFoundError("c"), "NOT_FOUND", false, undefined],
    [new PublishError("PutEvents failed", true), "PUBLISH", true, undefined],
    [new PublishError("an entry over the request limit", false), "PUBLISH", false, undefined],
    [
      new FargateTasksError("RunTask: ThrottlingException", "ThrottlingException", true),
      "FARGATE_TASKS",
      true,
      undefined,
    ],
    [
      new FargateTasksError("RunTask: ClientException", "ClientException", false),
      "FARGATE_TASKS",
      false,
      undefined,
    ],
    [
      new AgentChannelError("queue name held", true, QUEUE_NAME_HOLD_MS),
      "AGENT_CHANNEL",
      true,
      QUEUE_NAME_HOLD_MS,
    ],
  ];

  test.each(portErrors)("%s: code %s, retryable %s, retry after %s ms", (error, code, retryable, delay) => {
    expect(error).toBeInstanceOf(PortError);
    expect(error).toMatchObject({ code, retryable });
    for (const seen of [error, rebuilt(error)]) {
      expect(errorCode(seen)).toBe(code);
      expect(isTransient(seen)).toBe(retryable);
      expect(retryDelayMs(seen)).toBe(delay);
    }
  });

  const appErrors: readonly (readonly [AppError, string, boolean])[] = [
    [new DraftContentionError("j"), "DRAFT_CONTENTION", true],
    [new CensusError("maxPerStatus: must be a positive integer"), "CENSUS", false],
    [new FargateUnavailableError("pool-1"), "FARGATE_UNAVAILABLE", false],
    [new AgentUnreachableError("a-1"), "AGENT_UNREACHABLE", false],
  ];

  test.each(appErrors)("%s: code %s, retryable %s", (error, code, retryable) => {
    expect(error).toBeInstanceOf(AppError);
    expect(error).toMatchObject({ code, retryable });
    expect(isTransient(rebuilt(error))).toBe(retryable);
  });

  const coreErrors: readonly (readonly [CoreError, string])[] = [
    [new SpecSyntaxError("yaml", 1, 1, "unexpected token"), "SPEC_SYNTAX"],
    [new HandlerContractError("ScheduleNewSessions", "s", "without its kernels"), "HANDLER_CONTRACT"],
    [new EntryTooLargeError("Session Submitted", 300_000), "ENTRY_TOO_LARGE"],
    [new ConfigError("environment variable CAIRN_TABLE_NAME is required"), "CONFIG"],
  ];

  test.each(coreErrors)("%s: code %s, never retryable (the same input fails the same way)", (error, code) => {
    expect(error).toBeInstanceOf(CoreError);
    expect(error).toMatchObject({ code, retryable: false });
    expect(isTransient(rebuilt(error))).toBe(false);
  });

  test("hasCode reads the code alone: a rebuilt conflict is one, a conflict by name only is not", () => {
    const conflict = new ConflictError("s", pending, undefined, "kernel 0 changed since it was read");
    expect(hasCode(rebuilt(conflict), "CONFLICT")).toBe(true);
    expect(hasCode(Object.assign(new Error("x"), { name: "ConflictError" }), "CONFLICT")).toBe(false);
    expect(hasCode(undefined, "CONFLICT")).toBe(false);
  });
});

describe("the store's refusals against DynamoDB Local: retried by code when retryable, passed on when not", () => {
  let table: TestTable;
  beforeAll(async () => {
    table = await freshTable("cairn-errors");
  });
  afterAll(() => table.drop());

  test("a write another writer got to first (CONFLICT) is planned again from a fresh read and lands", async () => {
    const store = table.store();
    await store.createSession(newSession("e-conflict"));
    const stale = (await store.getSession("e-conflict"))!;
    // Another writer moves the session on after our read.
    await store.applyWrite({
      sessionId: "e-conflict",
      expected: stale.session,
      nowMs: T0 + 1,
      tries: "increment",
    });
    const seen: (string | undefined)[] = [];
    const applied = await rereadOnConflict(async (n, conflict) => {
      seen.push(errorCode(conflict));
      const read = n === 1 ? stale : (await store.getSession("e-conflict"))!;
      return store.applyWrite({
        sessionId: "e-conflict",
        expected: read.session,
        nowMs: T0 + 2,
        tries: "increment",
      });
    });
    expect(seen).toEqual([undefined, "CONFLICT"]);
    expect(applied.version).toBe(2);
    expect((await store.getSession("e-conflict"))!.session.tries).toBe(2);
  });

  test("a write to a session that is not there (NOT_FOUND) is not retried", async () => {
    const store = table.store();
    let calls = 0;
    const error = await caught(() =>
      rereadOnConflict(() => {
        calls++;
        return store.applyWrite({ sessionId: "e-absent", expected: pending, nowMs: T0, tries: "increment" });
      }),
    );
    expect(calls).toBe(1);
    expect(error).toMatchObject({ code: "NOT_FOUND", retryable: false, entity: "session", id: "e-absent" });
    expect(isTransient(error)).toBe(false);
  });

  test("a reservation an agent has no room for (CAPACITY) is permanent for that request", async () => {
    const store = table.store();
    await store.heartbeatAgent({ agentId: "e-agent", capacity: { cpu: 1, memoryMiB: 512 }, nowMs: T0 });
    await store.createSession(
      newSession("e-capacity", { replicas: 1, resources: { cpu: 2, memoryMiB: 512 } }),
    );
    const error = await caught(() =>
      store.reserveCapacity({
        sessionId: "e-capacity",
        expected: { status: "PENDING", version: 0 },
        nowMs: T0 + 1,
        placements: [{ kernelIndex: 0, agentId: "e-agent", resources: { cpu: 2, memoryMiB: 512 } }],
      }),
    );
    expect(error).toMatchObject({ code: "CAPACITY", retryable: false, agentId: "e-agent" });
    expect(isTransient(error)).toBe(false);
    expect(retryDelayMs(error)).toBeUndefined();
  });
});
