/**
 * The store's retry side against DynamoDB Local: retry policies, queues and the retry config
 * (create, read, list, update, delete, and every conflict), and the requeue write (run record,
 * runIndex, retry state, avoided agents, kernels reset) committed all or nothing.
 */
import { GetItemCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { retryPolicyPk, runSk, sessionPk } from "../functions/adapters/dynamo/keys.ts";
import { RequestCounter } from "../functions/adapters/dynamo/metrics.ts";
import { MAX_KERNELS_PER_SESSION } from "../functions/adapters/dynamo/new-session.ts";
import type { SessionWrite } from "../functions/core/effects.ts";
import { placeHistory } from "../functions/core/history.ts";
import type { Kernel, RunRecord, SessionWithKernels } from "../functions/core/model.ts";
import { parseRetryConfig, RETRY_CONFIG_DEFAULTS } from "../functions/core/retry/config.ts";
import { parseRetryPolicy, type RetryPolicy } from "../functions/core/retry/policy.ts";
import { parseRetryPolicyText } from "../functions/core/retry/policy-text.ts";
import { runRecord } from "../functions/core/runs.ts";
import { caught, freshTable, newSession, T0, type TestTable } from "./store-fixtures.ts";

const COMPLEX_POLICY_YAML = `
apiVersion: cairn.dev/v1
kind: RetryPolicy
metadata:
  name: ml-training
spec:
  retryLimit: 5
  defaultAction: Fail
  backoff:
    initialDelay: 1.5s
    maxDelay: 1h30m
    multiplier: 2.5
  antiAffinity:
    mode: node
  rules:
    - action: Retry
      containerName: "*"
      onExitCodes: { operator: In, values: [137, 143] }
      retryLimit: 3
      backoff: { initialDelay: 250ms }
    - action: Fail
      containerName: 1
      onExitCodes: { operator: NotIn, values: [1, 2, 3] }
    - action: Retry
      onConditions: [OOMKilled, Evicted]
      antiAffinity: { mode: none }
    - action: Retry
      onTerminationMessage: { pattern: "CUDA (error|out of memory)" }
      backoff: { maxDelay: 10m, multiplier: 1 }
    - action: Retry
      onFailureCategory: [infrastructure, network.flaky]
`;

function simplePolicy(name: string, retryLimit = 2): RetryPolicy {
  return parseRetryPolicy({
    apiVersion: "cairn.dev/v1",
    kind: "RetryPolicy",
    metadata: { name },
    spec: {
      retryLimit,
      rules: [{ action: "Retry", onConditions: ["Preempted"] }],
    },
  });
}

describe("retry policies", () => {
  let table: TestTable;
  beforeAll(async () => {
    table = await freshTable("cairn-store-policies");
  });
  afterAll(() => table.drop());

  test("a policy with every matcher kind and durations reads back exactly as parsed", async () => {
    const store = table.store();
    const policy = parseRetryPolicyText(COMPLEX_POLICY_YAML);
    await store.createRetryPolicy(policy, T0);
    expect(await store.getRetryPolicy("ml-training")).toEqual(policy);
    // Stored in document form (durations as written), versioned and listed in the roster.
    const { Item } = await table.client.send(
      new GetItemCommand({
        TableName: table.tableName,
        Key: { pk: { S: retryPolicyPk("ml-training") }, sk: { S: "RETRY_POLICY" } },
      }),
    );
    expect(Item?.["document"]?.M?.["spec"]?.M?.["backoff"]?.M?.["maxDelay"]).toEqual({ S: "1h30m" });
    expect(Item?.["version"]).toEqual({ N: "1" });
    expect(Item?.["gsi3pk"]).toEqual({ S: "RETRY_POLICIES" });
  });

  test("create, list in name order, update, delete; absent names read as undefined", async () => {
    const store = table.store();
    await store.createRetryPolicy(simplePolicy("crud-b"), T0);
    await store.createRetryPolicy(simplePolicy("crud-a"), T0);
    const names = (await store.listRetryPolicies()).map((p) => p.name);
    expect(names.filter((n) => n.startsWith("crud-"))).toEqual(["crud-a", "crud-b"]);

    await store.updateRetryPolicy(simplePolicy("crud-a", 9), T0 + 1);
    expect((await store.getRetryPolicy("crud-a"))?.retryLimit).toBe(9);

    await store.deleteRetryPolicy("crud-a");
    expect(await store.getRetryPolicy("crud-a")).toBeUndefined();
    expect((await store.listRetryPolicies()).map((p) => p.name)).not.toContain("crud-a");
  });

  test("conflicts: a taken name, updating or deleting an absent policy", async () => {
    const store = table.store();
    await store.createRetryPolicy(simplePolicy("taken", 1), T0);
    expect(await caught(() => store.createRetryPolicy(simplePolicy("taken", 7), T0))).toMatchObject({
      name: "AlreadyExistsError",
      code: "ALREADY_EXISTS",
      message: "retry policy taken already exists",
    });
    expect((await store.getRetryPolicy("taken"))?.retryLimit).toBe(1);
    expect(await caught(() => store.updateRetryPolicy(simplePolicy("nobody"), T0))).toMatchObject({
      code: "NOT_FOUND",
      entity: "retry policy",
      id: "nobody",
    });
    expect(await store.getRetryPolicy("nobody")).toBeUndefined();
    expect(await caught(() => store.deleteRetryPolicy("nobody"))).toMatchObject({ code: "NOT_FOUND" });
  });

  test("a hand-built policy the parser would refuse is refused before anything is sent", async () => {
    const metrics = new RequestCounter();
    const store = table.store({ metrics });
    const bad: RetryPolicy = {
      ...simplePolicy("bad"),
      rules: [{ action: "Retry", matchers: [{ kind: "exitCodes", operator: "In", values: [0] }] }],
    };
    expect(await caught(() => store.createRetryPolicy(bad, T0))).toMatchObject({
      code: "INVALID_STORE_REQUEST",
      field: "policy.spec.rules[0].onExitCodes.values[0]",
    });
    expect(
      await caught(() => store.createRetryPolicy({ ...simplePolicy("x"), name: "bad name!" }, T0)),
    ).toMatchObject({
      code: "INVALID_STORE_REQUEST",
      field: "policy.name",
    });
    expect(metrics.operations).toBe(0);
  });
});

describe("queues", () => {
  let table: TestTable;
  beforeAll(async () => {
    table = await freshTable("cairn-store-queues");
    const store = table.store();
    for (const name of ["infra", "ml", "spare"]) await store.createRetryPolicy(simplePolicy(name), T0);
  });
  afterAll(() => table.drop());

  test("create, get, list, update (times kept and moved), delete", async () => {
    const store = table.store();
    const created = await store.createQueue({ name: "gpu", priority: 5, retryPolicies: ["infra"] }, T0);
    expect(created).toEqual({
      name: "gpu",
      priority: 5,
      retryPolicies: ["infra"],
      createdAtMs: T0,
      updatedAtMs: T0,
    });
    expect(await store.getQueue("gpu")).toEqual(created);
    await store.createQueue({ name: "batch", priority: -3, retryPolicies: [] }, T0);
    expect((await store.listQueues()).map((q) => q.name)).toEqual(["batch", "gpu"]);

    const updated = await store.updateQueue(
      { name: "gpu", priority: 7, retryPolicies: ["ml", "infra"] },
      T0 + 500,
    );
    expect(updated).toEqual({
      name: "gpu",
      priority: 7,
      retryPolicies: ["ml", "infra"],
      createdAtMs: T0,
      updatedAtMs: T0 + 500,
    });
    expect(await store.getQueue("gpu")).toEqual(updated);

    await store.deleteQueue("batch");
    await store.deleteQueue("gpu");
    expect(await store.getQueue("gpu")).toBeUndefined();
    expect(await store.listQueues()).toEqual([]);
  });

  test("conflicts: a taken name, an absent queue, an unknown policy (nothing written)", async () => {
    const store = table.store();
    await store.createQueue({ name: "dup", priority: 0, retryPolicies: [] }, T0);
    expect(
      await caught(() => store.createQueue({ name: "dup", priority: 1, retryPolicies: ["infra"] }, T0)),
    ).toMatchObject({ code: "ALREADY_EXISTS", entity: "queue", id: "dup" });
    // The failed create did not attach its policy: infra is still deletable afterwards.
    expect((await store.getQueue("dup"))?.priority).toBe(0);

    expect(
      await caught(() =>
        store.createQueue({ name: "orphan", priority: 0, retryPolicies: ["infra", "ghost"] }, T0),
      ),
    ).toMatchObject({ code: "NOT_FOUND", entity: "retry policy", id: "ghost" });
    expect(await store.getQueue("orphan")).toBeUndefined();
    expect(await store.getRetryPolicy("ghost")).toBeUndefined();

    expect(
      await caught(() => store.updateQueue({ name: "dup", priority: 0, retryPolicies: ["ghost"] }, T0)),
    ).toMatchObject({ code: "NOT_FOUND", entity: "retry policy", id: "ghost" });
    expect(await store.getQueue("dup")).toMatchObject({ retryPolicies: [] });

    expect(
      await caught(() => store.updateQueue({ name: "absent", priority: 0, retryPolicies: [] }, T0)),
    ).toMatchObject({ code: "NOT_FOUND", entity: "queue", id: "absent" });
    expect(await caught(() => store.deleteQueue("absent"))).toMatchObject({
      code: "NOT_FOUND",
      entity: "queue",
    });
    await store.deleteQueue("dup");
  });

  test("a policy attached to queues cannot be deleted until every queue lets it go", async () => {
    const store = table.store();
    await store.createQueue({ name: "q-one", priority: 0, retryPolicies: ["spare", "infra"] }, T0);
    await store.createQueue({ name: "q-two", priority: 0, retryPolicies: ["spare"] }, T0);
    expect(await caught(() => store.deleteRetryPolicy("spare"))).toMatchObject({
      name: "InUseError",
      code: "IN_USE",
      usedBy: ["q-one", "q-two"],
      message: "retry policy spare is in use by q-one, q-two",
    });
    // An update detaching it, then a delete of the other queue, release it.
    await store.updateQueue({ name: "q-one", priority: 0, retryPolicies: ["infra"] }, T0 + 1);
    expect(await caught(() => store.deleteRetryPolicy("spare"))).toMatchObject({ usedBy: ["q-two"] });
    await store.deleteQueue("q-two");
    await store.deleteRetryPolicy("spare");
    expect(await store.getRetryPolicy("spare")).toBeUndefined();
    // Updating a policy keeps its references.
    await store.updateRetryPolicy(simplePolicy("infra", 4), T0 + 2);
    expect(await caught(() => store.deleteRetryPolicy("infra"))).toMatchObject({ usedBy: ["q-one"] });
    await store.deleteQueue("q-one");
  });

  test("Fargate settings are stored and read back; an update without them removes them", async () => {
    const store = table.store();
    const fargate = { capacityProvider: "FARGATE_SPOT", vcpuQuota: 6.5 } as const;
    const created = await store.createQueue({ name: "spot", priority: 0, retryPolicies: [], fargate }, T0);
    expect(created.fargate).toEqual(fargate);
    expect(await store.getQueue("spot")).toEqual(created);
    expect((await store.listQueues()).find((q) => q.name === "spot")?.fargate).toEqual(fargate);

    const moved = { capacityProvider: "FARGATE", vcpuQuota: 16 } as const;
    await store.updateQueue({ name: "spot", priority: 0, retryPolicies: [], fargate: moved }, T0 + 1);
    expect((await store.getQueue("spot"))?.fargate).toEqual(moved);
    await store.updateQueue({ name: "spot", priority: 0, retryPolicies: [] }, T0 + 2);
    expect(await store.getQueue("spot")).not.toHaveProperty("fargate");
    await store.deleteQueue("spot");
  });

  test("bad queues are refused before anything is sent, naming the field", async () => {
    const metrics = new RequestCounter();
    const store = table.store({ metrics });
    const cases = [
      [{ name: "x y", priority: 0, retryPolicies: [] }, "queue.name"],
      [{ name: "q", priority: 1.5, retryPolicies: [] }, "queue.priority"],
      [{ name: "q", priority: 5000, retryPolicies: [] }, "queue.priority"],
      [{ name: "q", priority: 0, retryPolicies: ["infra", "infra"] }, "queue.retryPolicies[1]"],
      [
        { name: "q", priority: 0, retryPolicies: Array.from({ length: 17 }, (_, i) => `p${i}`) },
        "queue.retryPolicies",
      ],
      [
        { name: "q", priority: 0, retryPolicies: [], fargate: { capacityProvider: "FARGATE", vcpuQuota: 0 } },
        "queue.fargate.vcpuQuota",
      ],
      [
        {
          name: "q",
          priority: 0,
          retryPolicies: [],
          fargate: { capacityProvider: "EC2" as "FARGATE", vcpuQuota: 4 },
        },
        "queue.fargate.capacityProvider",
      ],
    ] as const;
    for (const [queue, field] of cases) {
      expect(await caught(() => store.createQueue(queue, T0))).toMatchObject({
        code: "INVALID_STORE_REQUEST",
        field,
      });
    }
    expect(metrics.operations).toBe(0);
  });
});

describe("retry config", () => {
  let table: TestTable;
  beforeAll(async () => {
    table = await freshTable("cairn-store-config");
  });
  afterAll(() => table.drop());

  test("absent until set; a set replaces it whole; invalid values are refused", async () => {
    const store = table.store();
    expect(await store.getRetryConfig()).toBeUndefined();
    const config = parseRetryConfig({
      enabled: false,
      globalMaxRetries: 7,
      defaultPolicyName: "infra",
      defaultBackoff: { initialDelay: "2.5s", maxDelay: "1h", multiplier: 3 },
    });
    await store.putRetryConfig(config, T0);
    expect(await store.getRetryConfig()).toEqual(config);
    await store.putRetryConfig(RETRY_CONFIG_DEFAULTS, T0 + 1);
    expect(await store.getRetryConfig()).toEqual(RETRY_CONFIG_DEFAULTS);
    expect(
      await caught(() => store.putRetryConfig({ ...RETRY_CONFIG_DEFAULTS, globalMaxRetries: -1 }, T0)),
    ).toMatchObject({ code: "INVALID_STORE_REQUEST", field: "config.globalMaxRetries" });
    expect(await store.getRetryConfig()).toEqual(RETRY_CONFIG_DEFAULTS);
  });
});

describe("requeue write", () => {
  let table: TestTable;
  beforeAll(async () => {
    table = await freshTable("cairn-store-requeue");
  });
  afterAll(() => table.drop());

  /** A session in TERMINATING whose kernels finished their first run, kernel 1 OOM-killed. */
  function finishedRun(id: string, replicas = 2): SessionWithKernels {
    const base = newSession(id, { status: "TERMINATING", kernelStatus: "TERMINATED", replicas });
    const kernels: Kernel[] = base.kernels.map((k) => ({
      ...k,
      agentId: `agent-${k.index}`,
      startedAtMs: T0 + 100,
      finishedAtMs: T0 + 900,
      ...(k.index === 1
        ? { exitCode: 137, condition: "OOMKilled", outcome: "FAILED", message: "killed", error: "oom" }
        : { exitCode: 0, outcome: "SUCCEEDED" }),
    }));
    return { session: base.session, kernels };
  }

  function runOf(id: string, kernels: readonly Kernel[]): RunRecord {
    return {
      sessionId: id,
      runIndex: 0,
      name: id,
      outcome: "FAILED",
      startedAtMs: T0 + 100,
      endedAtMs: T0 + 900,
      decision: "retry",
      reason: "rule ml#0 matched OOMKilled on kernel 1 (retry 1 of 3)",
      delayMs: 1500,
      avoidAgentId: "agent-1",
      kernels: kernels.map((k) => ({
        index: k.index,
        status: k.status,
        ...(k.agentId !== undefined ? { agentId: k.agentId } : {}),
        ...(k.outcome !== undefined ? { outcome: k.outcome } : {}),
        ...(k.exitCode !== undefined ? { exitCode: k.exitCode } : {}),
        ...(k.condition !== undefined ? { condition: k.condition } : {}),
        ...(k.message !== undefined ? { message: k.message } : {}),
        startedAtMs: T0 + 100,
        finishedAtMs: T0 + 900,
      })),
    };
  }

  function requeue(input: SessionWithKernels, nowMs = T0 + 1_000): SessionWrite {
    const id = input.session.id;
    return {
      sessionId: id,
      expected: { status: "TERMINATING", version: input.session.version },
      nowMs,
      status: "PENDING",
      stage: { enteredAtMs: nowMs, expiresAtMs: nowMs + 600_000, taskToken: `token-${id}-1` },
      tries: "reset",
      runIndex: "increment",
      retry: { failureCount: 1, preemptionCount: 0, totalRetries: 1, ruleRetries: { "ml#0": 1 } },
      avoidAgentIds: ["agent-1"],
      run: runOf(id, input.kernels),
      kernels: input.kernels.map((k) => ({
        index: k.index,
        status: "PENDING",
        agentId: null,
        resetRun: true,
      })),
      history: placeHistory(undefined, [
        {
          sessionId: id,
          handler: "Retry",
          result: "REQUEUED",
          fromStatus: "TERMINATING",
          toStatus: "PENDING",
          message: "run 0 failed; retry 1 in 1.5s",
          atMs: nowMs,
        },
      ]),
    };
  }

  test("a Fargate kernel's task ARN stays in its run's record when the requeue clears it from the kernel", async () => {
    const store = table.store();
    const id = "requeue-task";
    const taskArn = "arn:aws:ecs:us-east-1:123456789012:task/cairn/0123456789abcdef0123456789abcdef";
    await store.createSession(newSession(id, { replicas: 1, status: "TERMINATING" }));
    const s0 = (await store.getSession(id))!;
    await store.applyWrite({
      sessionId: id,
      expected: { status: "TERMINATING", version: s0.session.version },
      nowMs: T0,
      kernels: [{ index: 0, status: "TERMINATED", taskArn, exitCode: 1, outcome: "FAILED" }],
    });
    const s1 = (await store.getSession(id))!;
    expect(s1.kernels[0]?.taskArn).toBe(taskArn);
    await store.applyWrite({
      sessionId: id,
      expected: { status: "TERMINATING", version: s1.session.version },
      nowMs: T0,
      run: runRecord(s1, { decision: "retry", reason: "failed" }, T0),
      kernels: [{ index: 0, status: "PENDING", agentId: null, taskArn: null, resetRun: true }],
    });
    expect((await store.getSession(id))?.kernels[0]?.taskArn).toBeUndefined();
    const [run] = await store.listRuns(id);
    expect(run?.kernels[0]?.taskArn).toBe(taskArn);
    expect(run).toEqual(runRecord(s1, { decision: "retry", reason: "failed" }, T0));
  });

  test("run record, runIndex + 1, retry state, avoided agents and clean kernels commit together", async () => {
    const store = table.store();
    const input = finishedRun("requeue-1");
    await store.createSession(input);
    const write = requeue(input);
    expect(await store.applyWrite(write)).toEqual({ sessionId: "requeue-1", version: 1 });

    const after = await store.getSession("requeue-1");
    expect(after?.session).toMatchObject({
      status: "PENDING",
      runIndex: 1,
      tries: 0,
      retry: write.retry,
      avoidAgentIds: ["agent-1"],
      lastHistory: { result: "REQUEUED", toStatus: "PENDING" },
    });
    // Nothing of the previous run is left on the kernels; the run record keeps it.
    expect(after?.kernels).toEqual(
      input.kernels.map((k) => ({
        sessionId: "requeue-1",
        index: k.index,
        status: "PENDING",
        resources: k.resources,
        statusChangedAtMs: T0 + 1_000,
        // Written once by the requeue (the fixture's kernels were never written before).
        version: 1,
      })),
    );
    expect(await store.listRuns("requeue-1")).toEqual([write.run]);
    expect(await store.listHistory("requeue-1")).toHaveLength(1);
    // The run record lives in the session's partition; the session-with-kernels Query skips it.
    const { Item } = await table.client.send(
      new GetItemCommand({
        TableName: table.tableName,
        Key: { pk: { S: sessionPk("requeue-1") }, sk: { S: runSk(0) } },
      }),
    );
    expect(Item?.["type"]).toEqual({ S: "RUN" });
    // Kept 90 days (and an hour) from the run's end, like the session once it ends.
    expect(Item?.["expiresAtEpochSec"]).toEqual({
      N: String(Math.ceil(write.run!.endedAtMs / 1000) + 90 * 86_400 + 3_600),
    });

    // The next run's placement clears the avoided agents; a reset applies before the patch's fields.
    await store.applyWrite({
      sessionId: "requeue-1",
      expected: { status: "PENDING", version: 1 },
      nowMs: T0 + 2_000,
      avoidAgentIds: null,
      kernels: [{ index: 0, resetRun: true, exitCode: 3, startedAtMs: T0 + 1_900 }],
    });
    const cleared = await store.getSession("requeue-1");
    expect(cleared?.session.avoidAgentIds).toBeUndefined();
    expect(cleared?.session.retry).toEqual(write.retry);
    expect(cleared?.kernels[0]).toMatchObject({ exitCode: 3, startedAtMs: T0 + 1_900 });
    expect(cleared?.kernels[0]?.finishedAtMs).toBeUndefined();
  });

  test("runs list in run order across several requeues", async () => {
    const store = table.store();
    const input = finishedRun("requeue-order");
    await store.createSession(input);
    await store.applyWrite(requeue(input));
    const second = {
      ...requeue(input, T0 + 5_000),
      expected: { status: "TERMINATING", version: 2 },
    } as const;
    // Back to TERMINATING for the second run's end (the lifecycle's walk, condensed).
    await store.applyWrite({
      sessionId: "requeue-order",
      expected: { status: "PENDING", version: 1 },
      nowMs: T0 + 4_000,
      status: "TERMINATING",
      stage: { enteredAtMs: T0 + 4_000, expiresAtMs: T0 + 5_000 },
    });
    await store.applyWrite({
      ...second,
      run: { ...second.run!, runIndex: 1, name: "requeue-order.1", decision: "finished" },
      history: second.history!.map((h) => ({ ...h, seq: 2 })),
    });
    const runs = await store.listRuns("requeue-order");
    expect(runs.map((r) => [r.runIndex, r.name, r.decision])).toEqual([
      [0, "requeue-order", "retry"],
      [1, "requeue-order.1", "finished"],
    ]);
    expect((await store.getSession("requeue-order"))?.session.runIndex).toBe(2);
    expect(await store.listRuns("requeue-nobody")).toEqual([]);
  });

  test("all or nothing: a missing kernel or an already recorded run writes nothing", async () => {
    const store = table.store();
    const input = finishedRun("requeue-atomic");
    await store.createSession(input);
    const write = requeue(input);

    const missingKernel = await caught(() =>
      store.applyWrite({ ...write, kernels: [...write.kernels!, { index: 5, resetRun: true }] }),
    );
    expect(missingKernel).toMatchObject({ code: "NOT_FOUND", entity: "kernel", id: "requeue-atomic/5" });
    expect(await store.getSession("requeue-atomic")).toEqual(input);
    expect(await store.listRuns("requeue-atomic")).toEqual([]);
    expect(await store.listHistory("requeue-atomic")).toEqual([]);

    // A run record already there (a replay): the session guard passes, the run's does not.
    await store.applyWrite({
      sessionId: "requeue-atomic",
      expected: { status: "TERMINATING", version: 0 },
      nowMs: T0 + 950,
      run: write.run!,
    });
    const replay = await caught(() =>
      store.applyWrite({ ...write, expected: { status: "TERMINATING", version: 1 } }),
    );
    expect(replay).toMatchObject({
      code: "CONFLICT",
      reason: "run 0 of the session is already recorded",
    });
    const stored = await store.getSession("requeue-atomic");
    expect(stored?.session).toMatchObject({ status: "TERMINATING", version: 1, runIndex: 0 });
    expect(stored?.session.retry).toBeUndefined();
    expect(stored?.kernels).toEqual(input.kernels.map((k) => ({ ...k })));
    expect(await store.listHistory("requeue-atomic")).toEqual([]);
  });

  test("a requeue of the widest gang is one write of its item and the run's record; a wider one is refused unsent", async () => {
    const metrics = new RequestCounter();
    const store = table.store({ metrics });
    const input = finishedRun("requeue-large", MAX_KERNELS_PER_SESSION);
    await store.createSession(input);
    const before = metrics.operations;
    const itemsBefore = metrics.items;
    const readsBefore = metrics.reads.requests;
    await store.applyWrite(requeue(input));
    // Every kernel reset does not fit one update field by field: the session is read, and its
    // item (kernels written whole, the history record in it) goes with the run's record.
    expect(metrics.reads.requests - readsBefore).toBe(1);
    expect(metrics.items - itemsBefore).toBe(2);
    expect(metrics.operations - before).toBe(1);
    const stored = (await store.getSession("requeue-large"))!;
    expect(stored.session.runIndex).toBe(1);
    expect(stored.kernels.every((k) => k.status === "PENDING" && k.exitCode === undefined)).toBe(true);

    expect(
      await caught(() =>
        store.createSession(newSession("too-many-kernels", { replicas: MAX_KERNELS_PER_SESSION + 1 })),
      ),
    ).toMatchObject({ code: "INVALID_STORE_REQUEST", field: "kernels" });
    expect(metrics.operations - before).toBe(1);
  });

  test("bad retry fields are refused before anything is sent, naming the field", async () => {
    const metrics = new RequestCounter();
    const store = table.store({ metrics });
    const input = finishedRun("requeue-bad");
    const write = requeue(input);
    const cases: [SessionWrite, string][] = [
      [{ ...write, run: { ...write.run!, sessionId: "someone-else" } }, "run.sessionId"],
      [{ ...write, run: { ...write.run!, outcome: "MAYBE" as RunRecord["outcome"] } }, "run.outcome"],
      [{ ...write, run: { ...write.run!, runIndex: -1 } }, "run.runIndex"],
      [{ ...write, retry: { ...write.retry!, totalRetries: 1.5 } }, "retry.totalRetries"],
      [{ ...write, retry: { ...write.retry!, ruleRetries: { "ml#0": -1 } } }, "retry.ruleRetries.ml#0"],
      [{ ...write, avoidAgentIds: [""] }, "avoidAgentIds[0]"],
    ];
    for (const [bad, field] of cases) {
      expect(await caught(() => store.applyWrite(bad))).toMatchObject({
        code: "INVALID_STORE_REQUEST",
        field,
      });
    }
    expect(metrics.operations).toBe(0);
  });
});
