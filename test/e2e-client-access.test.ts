/**
 * A CLI user is not an administrator of the table, and the docs' own `aws stepfunctions`
 * commands work with the docs' own policy: the embedded runtime enforces the stack's ClientPolicy
 * and OperatorPolicy statements (functions/topology/client-access.ts) for the credentials it
 * hands out, and a client no one here wrote — the AWS CLI, botocore's own signer — is refused
 * what the policies do not allow.
 */
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { startTestRuntime, type TestRuntime } from "./support/runtime.ts";
import { runCairn } from "./support/cli.ts";
import { runtimeDashboardDeps } from "../local/dashboard.ts";

const run = promisify(execFile);

let rt: TestRuntime;
const SESSION = "access-1";

beforeAll(async () => {
  rt = await startTestRuntime({ agents: 1 });
  await rt.submit({ sessionId: SESSION, spec: { name: "access", command: ["sleep", "600"] } });
  await rt.waitForStatus(SESSION, "RUNNING", 120_000);
}, 240_000);

afterAll(() => rt?.stop());

type Who = "client" | "operator" | "agent" | "stranger";

/** `aws <args> --endpoint-url <the runtime's edge>` with one of the runtime's credentials. */
async function aws(who: Who, args: readonly string[]): Promise<{ ok: boolean; out: string }> {
  const { info } = rt.runtime;
  const keys =
    who === "stranger"
      ? { accessKeyId: "AKIASTRANGER000000000", secretAccessKey: "not-a-key" }
      : info.credentials[who];
  try {
    const { stdout } = await run(
      "aws",
      [...args, "--endpoint-url", info.endpoints.edge, "--region", info.region, "--output", "json"],
      {
        env: {
          PATH: process.env["PATH"] ?? "",
          HOME: process.env["HOME"] ?? "",
          AWS_ACCESS_KEY_ID: keys.accessKeyId,
          AWS_SECRET_ACCESS_KEY: keys.secretAccessKey,
          AWS_CONFIG_FILE: "/dev/null",
          AWS_SHARED_CREDENTIALS_FILE: "/dev/null",
          AWS_MAX_ATTEMPTS: "1",
        },
      },
    );
    return { ok: true, out: stdout };
  } catch (error) {
    return { ok: false, out: String((error as { stderr?: string }).stderr ?? error) };
  }
}

const key = (pk: string, sk: string) => JSON.stringify({ pk: { S: pk }, sk: { S: sk } });

describe("the table, through the runtime's DynamoDB endpoint, with the AWS CLI", () => {
  const table = () => rt.runtime.info.tableName;

  test("given a client, when it reads an agent item whole or asks for its signing key, then AccessDeniedException; the attributes the dashboard shows it may read", async () => {
    const agentKey = key("AGENT#agent-1", "AGENT");
    // The key is there: the functions (and the agent, through its queue) have it.
    const { store } = rt;
    expect((await store.getAgent("agent-1"))?.signingKey).toMatch(/.{32,}/);

    const whole = await aws("client", ["dynamodb", "get-item", "--table-name", table(), "--key", agentKey]);
    expect(whole.ok).toBe(false);
    expect(whole.out).toContain("AccessDeniedException");
    expect(whole.out).toContain("dynamodb:GetItem");

    const asked = await aws("client", [
      "dynamodb",
      "get-item",
      "--table-name",
      table(),
      "--key",
      agentKey,
      "--projection-expression",
      "id, signingKey",
    ]);
    expect(asked.ok).toBe(false);
    expect(asked.out).toContain("AccessDeniedException");

    // An operator's rights add writes only: the key stays out of reach.
    expect(
      (await aws("operator", ["dynamodb", "get-item", "--table-name", table(), "--key", agentKey])).ok,
    ).toBe(false);

    const shown = await aws("client", [
      "dynamodb",
      "get-item",
      "--table-name",
      table(),
      "--key",
      agentKey,
      "--projection-expression",
      "pk, sk, id, #c, incarnation",
      "--expression-attribute-names",
      JSON.stringify({ "#c": "capacity" }),
    ]);
    expect(shown.ok, shown.out).toBe(true);
    const item = (JSON.parse(shown.out) as { Item: Record<string, unknown> }).Item;
    expect(Object.keys(item).sort()).toEqual(["capacity", "id", "incarnation", "pk", "sk"]);
  }, 180_000);

  test("given a client or an operator, when it writes a session or an agent, then AccessDeniedException and nothing changes", async () => {
    const before = await rt.store.getSession(SESSION);
    for (const who of ["client", "operator"] as const) {
      const put = await aws(who, [
        "dynamodb",
        "put-item",
        "--table-name",
        table(),
        "--item",
        JSON.stringify({ pk: { S: "SESSION#forged" }, sk: { S: "SESSION" }, status: { S: "RUNNING" } }),
      ]);
      expect(put.ok, who).toBe(false);
      expect(put.out).toContain("AccessDeniedException");
      expect(put.out).toContain("dynamodb:PutItem");

      const update = await aws(who, [
        "dynamodb",
        "update-item",
        "--table-name",
        table(),
        "--key",
        key(`SESSION#${SESSION}`, "SESSION"),
        "--update-expression",
        "SET #s = :s",
        "--expression-attribute-names",
        JSON.stringify({ "#s": "status" }),
        "--expression-attribute-values",
        JSON.stringify({ ":s": { S: "TERMINATED" } }),
      ]);
      expect(update.ok, who).toBe(false);
      expect(update.out).toContain("AccessDeniedException");

      const agent = await aws(who, [
        "dynamodb",
        "update-item",
        "--table-name",
        table(),
        "--key",
        key("AGENT#agent-1", "AGENT"),
        "--update-expression",
        "SET free.cpu = :c",
        "--expression-attribute-values",
        JSON.stringify({ ":c": { N: "1000" } }),
      ]);
      expect(agent.ok, who).toBe(false);
      expect(agent.out).toContain("AccessDeniedException");
    }
    expect(await rt.store.getSession("forged")).toBeUndefined();
    expect((await rt.store.getSession(SESSION))?.session.version).toBe(before?.session.version);
  }, 180_000);

  test("given a client, when it reads a session and queries an index as the CLI does, then it may", async () => {
    const got = await aws("client", [
      "dynamodb",
      "get-item",
      "--table-name",
      table(),
      "--key",
      key(`SESSION#${SESSION}`, "SESSION"),
      "--consistent-read",
    ]);
    expect(got.ok, got.out).toBe(true);
    expect(JSON.parse(got.out)).toMatchObject({ Item: { id: { S: SESSION } } });

    const roster = await aws("client", [
      "dynamodb",
      "query",
      "--table-name",
      table(),
      "--index-name",
      "gsi3",
      "--key-condition-expression",
      "gsi3pk = :p",
      "--expression-attribute-values",
      JSON.stringify({ ":p": { S: "AGENTS" } }),
    ]);
    expect(roster.ok, roster.out).toBe(true);
    expect(JSON.parse(roster.out)).toMatchObject({ Count: 1 });
  }, 180_000);

  test("given an operator, when it writes a template item, then it may; a client may not", async () => {
    const item = JSON.stringify({ pk: { S: "TEMPLATE#scratch" }, sk: { S: "NOTE" }, name: { S: "x" } });
    const asClient = await aws("client", ["dynamodb", "put-item", "--table-name", table(), "--item", item]);
    expect(asClient.ok).toBe(false);
    expect(asClient.out).toContain("AccessDeniedException");
    const asOperator = await aws("operator", [
      "dynamodb",
      "put-item",
      "--table-name",
      table(),
      "--item",
      item,
    ]);
    expect(asOperator.ok, asOperator.out).toBe(true);
    const deleted = await aws("operator", [
      "dynamodb",
      "delete-item",
      "--table-name",
      table(),
      "--key",
      key("TEMPLATE#scratch", "NOTE"),
    ]);
    expect(deleted.ok, deleted.out).toBe(true);
  }, 180_000);

  test("given an operator, when it puts an item of its own partitions into the control plane's indexes, then the index keys are refused, a roster entry is ignored, and sessions still run", async () => {
    const put = (item: Record<string, string>) =>
      aws("operator", [
        "dynamodb",
        "put-item",
        "--table-name",
        table(),
        "--item",
        JSON.stringify(Object.fromEntries(Object.entries(item).map(([k, v]) => [k, { S: v }]))),
      ]);
    // The status and target indexes are the control plane's: a queue item there would be read
    // as a waiting session by every scheduling pass.
    const shards = [0, 1, 2, 3];
    for (const shard of shards) {
      const status = await put({
        pk: `QUEUE#poison-${shard}`,
        sk: "SESSION",
        gsi1pk: `STATUS#PENDING#${shard}`,
        gsi1sk: "0000000000#0#000000000000000#poison",
      });
      expect(status.ok, status.out).toBe(false);
      expect(status.out).toContain("AccessDeniedException");
      const target = await put({
        pk: `QUEUE#poison-${shard}`,
        sk: "SESSION",
        gsi2pk: `TARGET#PENDING#${shard}`,
        gsi1sk: "0000000000#0#000000000000000#poison",
      });
      expect(target.ok, target.out).toBe(false);
      expect(target.out).toContain("AccessDeniedException");
    }
    // The listings index holds the operators' own rosters, so an operator item may name a roster:
    // the control plane's (agents, sessions by creation, deployments, limited jobs) read only
    // items of their own partitions.
    const rosters = ["AGENTS", "CREATED#0", "DEPLOYMENTS", "JOBS_WITH_RUN_TIME_LIMIT", "TEMPLATES"];
    for (const roster of rosters) {
      const entry = await put({
        pk: `QUEUE#roster-${roster.toLowerCase().replace(/\W/g, "-")}`,
        sk: "QUEUE",
        gsi3pk: roster,
        gsi3sk: "0",
      });
      expect(entry.ok, entry.out).toBe(true);
    }
    expect((await rt.store.listAgents()).map((a) => a.id)).toEqual(["agent-1"]);
    const listed = await runCairn(rt.dataDir, ["list", "-o", "json"]);
    expect(listed.code, listed.stderr).toBe(0);
    await rt.submit({ sessionId: "after-poison", spec: { name: "after", command: ["/bin/true"] } });
    await rt.waitForStatus("after-poison", "TERMINATED", 120_000);
  }, 240_000);

  test("given a client or an operator, when it sends an agent's kernel report, heartbeat or registration, then AccessDeniedException and the kernel runs on", async () => {
    const running = await rt.store.getSession(SESSION);
    const agentId = running!.kernels[0]!.agentId!;
    const entries = [
      [
        "Kernel Status Changed",
        { agentId, sessionId: SESSION, kernelIndex: 0, runIndex: 0, status: "TERMINATED", exitCode: 0 },
      ],
      ["Agent Heartbeat", { agentId, capacity: { cpu: 1e9, memoryMiB: 1e9 } }],
      ["Agent Registration Requested", { agentId: "phantom", capacity: { cpu: 1e9, memoryMiB: 1e9 } }],
    ] as const;
    for (const who of ["client", "operator"] as const) {
      for (const [detailType, detail] of entries) {
        const put = await aws(who, [
          "events",
          "put-events",
          "--entries",
          JSON.stringify([
            {
              EventBusName: rt.runtime.info.eventBusName,
              Source: "cairn.agent",
              DetailType: detailType,
              Detail: JSON.stringify(detail),
            },
          ]),
        ]);
        expect(put.ok, `${who} ${detailType}`).toBe(false);
        expect(put.out).toContain("AccessDeniedException");
        expect(put.out).toContain("events:source");
      }
    }
    expect((await rt.store.getSession(SESSION))?.kernels[0]?.status).toBe("RUNNING");
    expect(await rt.store.getAgent("phantom")).toBeUndefined();
  }, 180_000);

  test("given an agent's credentials, when it reads the table (another agent's key), writes it, or sends a client's or the control plane's events, then AccessDeniedException", async () => {
    const read = await aws("agent", [
      "dynamodb",
      "get-item",
      "--table-name",
      table(),
      "--key",
      key("AGENT#agent-1", "AGENT"),
      "--projection-expression",
      "signingKey",
    ]);
    expect(read.ok).toBe(false);
    expect(read.out).toContain("AccessDeniedException");
    const write = await aws("agent", [
      "dynamodb",
      "put-item",
      "--table-name",
      table(),
      "--item",
      JSON.stringify({ pk: { S: "QUEUE#agent-made" }, sk: { S: "QUEUE" }, name: { S: "agent-made" } }),
    ]);
    expect(write.ok).toBe(false);
    expect(write.out).toContain("AccessDeniedException");
    for (const [source, detailType] of [
      ["cairn.client", "Session Cancel Requested"],
      ["cairn.control-plane", "Session Status Changed"],
    ] as const) {
      const put = await aws("agent", [
        "events",
        "put-events",
        "--entries",
        JSON.stringify([
          {
            EventBusName: rt.runtime.info.eventBusName,
            Source: source,
            DetailType: detailType,
            Detail: JSON.stringify({ sessionId: SESSION }),
          },
        ]),
      ]);
      expect(put.ok, source).toBe(false);
      expect(put.out).toContain("AccessDeniedException");
    }
    expect((await rt.store.getSession(SESSION))?.session.cancelRequestedAtMs).toBeUndefined();
  }, 180_000);

  test("given credentials the runtime never made, then UnrecognizedClientException", async () => {
    const stranger = await aws("stranger", ["dynamodb", "describe-table", "--table-name", table()]);
    expect(stranger.ok).toBe(false);
    expect(stranger.out).toContain("UnrecognizedClientException");
  }, 180_000);
});

describe("an agent's command queue, through the runtime's SQS endpoint, with the AWS CLI", () => {
  test("given a client or an operator, when it reads or writes an agent's queue, then AccessDenied; an agent may read its queue but never send a command", async () => {
    const queueName = `${rt.runtime.info.agentQueuePrefix}agent-1`;
    const found = await aws("agent", ["sqs", "get-queue-url", "--queue-name", queueName]);
    expect(found.ok, found.out).toBe(true);
    const queueUrl = (JSON.parse(found.out) as { QueueUrl: string }).QueueUrl;
    const command = JSON.stringify({ type: "command", forged: true });
    for (const who of ["client", "operator"] as const) {
      for (const args of [
        ["sqs", "get-queue-url", "--queue-name", queueName],
        ["sqs", "receive-message", "--queue-url", queueUrl],
        ["sqs", "send-message", "--queue-url", queueUrl, "--message-body", command],
        ["sqs", "purge-queue", "--queue-url", queueUrl],
      ]) {
        const out = await aws(who, args);
        expect(out.ok, `${who} ${args[1]}`).toBe(false);
        expect(out.out).toContain("AccessDenied");
      }
    }
    // Commands come only from the control plane: an agent's credentials cannot forge one.
    const forged = await aws("agent", [
      "sqs",
      "send-message",
      "--queue-url",
      queueUrl,
      "--message-body",
      command,
    ]);
    expect(forged.ok).toBe(false);
    expect(forged.out).toContain("AccessDenied");
    expect(forged.out).toContain("sqs:SendMessage");
  }, 180_000);
});

describe("the docs' `aws stepfunctions` commands, with the client's credentials", () => {
  const executionArn = () =>
    `${rt.runtime.info.stateMachineArn.replace(":stateMachine:", ":execution:")}:${SESSION}`;

  test("given a session's execution, when a client describes it and reads its history, then it may", async () => {
    const described = await aws("client", [
      "stepfunctions",
      "describe-execution",
      "--execution-arn",
      executionArn(),
    ]);
    expect(described.ok, described.out).toBe(true);
    expect(JSON.parse(described.out)).toMatchObject({ status: "RUNNING", name: SESSION });

    const history = await aws("client", [
      "stepfunctions",
      "get-execution-history",
      "--execution-arn",
      executionArn(),
      "--max-items",
      "5",
    ]);
    expect(history.ok, history.out).toBe(true);
    expect((JSON.parse(history.out) as { events: unknown[] }).events.length).toBeGreaterThan(0);
  }, 180_000);

  test("given a client, when it would stop the execution or list the state machines, then AccessDeniedException; unknown keys are refused", async () => {
    const stop = await aws("client", ["stepfunctions", "stop-execution", "--execution-arn", executionArn()]);
    expect(stop.ok).toBe(false);
    expect(stop.out).toContain("AccessDeniedException");
    expect((await rt.store.getSession(SESSION))?.session.status).toBe("RUNNING");

    const list = await aws("client", ["stepfunctions", "list-state-machines"]);
    expect(list.ok).toBe(false);
    expect(list.out).toContain("AccessDeniedException");

    const stranger = await aws("stranger", [
      "stepfunctions",
      "describe-execution",
      "--execution-arn",
      executionArn(),
    ]);
    expect(stranger.ok).toBe(false);
    expect(stranger.out).toContain("UnrecognizedClientException");
  }, 180_000);
});

describe("the cairn CLI with a submitter's credentials only", () => {
  /** A data directory whose runtime file is a submitter's: the client's credentials, no operator's. */
  function submitterDataDir(): string {
    const info = JSON.parse(readFileSync(join(rt.dataDir, "runtime.json"), "utf8")) as {
      credentials: Record<string, unknown>;
    };
    expect(info.credentials["operator"]).toBeDefined();
    delete info.credentials["operator"];
    const dir = join(rt.dataDir, "submitter");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "runtime.json"), JSON.stringify(info), { mode: 0o600 });
    return dir;
  }

  test("given ClientPolicy's rights, then get, list and queue list work, and queue create is refused with AccessDenied", async () => {
    const dir = submitterDataDir();
    const cairn = (args: string[]) => runCairn(dir, args);
    const got = await cairn(["get", SESSION]);
    expect(got.code, got.stderr).toBe(0);
    expect(got.stdout).toContain(SESSION);
    const listed = await cairn(["list"]);
    expect(listed.code, listed.stderr).toBe(0);
    expect((await cairn(["queue", "list"])).code).toBe(0);

    const created = await cairn(["queue", "create", "gpu", "--priority", "5"]);
    expect(created.code).not.toBe(0);
    expect(created.stderr).toMatch(/not authorized to perform: dynamodb:(PutItem|UpdateItem)/);

    // The runtime's own user has the operator's rights as well.
    const asOperator = await runCairn(rt.dataDir, ["queue", "create", "gpu", "--priority", "5"]);
    expect(asOperator.code, asOperator.stderr).toBe(0);
  }, 180_000);

  test("given ClientPolicy's rights, then every operator's command is refused with AccessDenied and nothing changes: templates, retry policies, failure categories, the retry configuration", async () => {
    const dir = submitterDataDir();
    const cairn = (args: string[]) => runCairn(dir, args);
    const file = (name: string, text: string) => {
      writeFileSync(join(dir, name), text);
      return join(dir, name);
    };
    const category = file(
      "cuda.yaml",
      'apiVersion: cairn.dev/v1\nkind: FailureCategory\nmetadata: { name: cuda_error }\nspec:\n  rules:\n    - onTerminationMessage: { pattern: "(?i)cuda error" }\n',
    );
    const defaultTemplate = await cairn(["template", "get", "Default", "-o", "json"]);
    expect(defaultTemplate.code, defaultTemplate.stderr).toBe(0);
    const template = file(
      "small.json",
      JSON.stringify({ ...(JSON.parse(defaultTemplate.stdout) as object), name: "small" }),
    );
    const before = (await cairn(["retry-config", "get", "-o", "json"])).stdout;
    for (const args of [
      ["template", "create", "-f", template],
      ["template", "update", "-f", file("default.json", defaultTemplate.stdout)],
      ["retry-policy", "create", "-f", "examples/retry-policies/infra.yaml"],
      ["failure-category", "create", "-f", category],
      ["retry-config", "set", "--global-max-retries", "7"],
    ]) {
      const refused = await cairn(args);
      expect(refused.code, args.join(" ")).not.toBe(0);
      expect(refused.stderr, args.join(" ")).toMatch(
        /not authorized to perform: dynamodb:(PutItem|UpdateItem|DeleteItem)/,
      );
    }
    expect((await cairn(["retry-config", "get", "-o", "json"])).stdout).toBe(before);
    expect((await cairn(["template", "list"])).stdout).not.toMatch(/^small\b/m);
    expect((await cairn(["failure-category", "list"])).stdout).not.toContain("cuda_error");
    expect((await cairn(["retry-policy", "list"])).stdout).not.toMatch(/^infra\b/m);
  }, 180_000);
});

describe("npm start's dashboard, which reads with the client's credentials", () => {
  test("given ClientPolicy's rights, then its agents, queues, policies, counts and an execution's history all read", async () => {
    const { info } = rt.runtime;
    const dashboard = runtimeDashboardDeps(info, "the test's runtime");
    const { deps } = dashboard;
    try {
      const [agent] = await deps.store.listAgents();
      expect(agent).toMatchObject({ id: "agent-1" });
      expect(agent).not.toHaveProperty("signingKey");
      await deps.store.listQueues();
      await deps.store.listRetryPolicies();
      await deps.store.getRetryConfig();
      expect((await deps.census.countSessions("RUNNING")).count).toBeGreaterThanOrEqual(1);
      expect(await deps.store.getSession(SESSION)).toBeDefined();
      if (deps.executions.kind !== "local") throw new Error("expected the local executions");
      const executionArn = `${info.stateMachineArn.replace(":stateMachine:", ":execution:")}:${SESSION}`;
      expect((await deps.executions.history(executionArn))?.length).toBeGreaterThan(0);
    } finally {
      dashboard.close();
    }
  }, 180_000);
});
