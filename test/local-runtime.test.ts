/**
 * The embedded runtime's own faults: every endpoint on loopback only, DynamoDB Local's own port
 * refusing a kernel every key but the control plane's, a runtime killed with SIGKILL cleaned up by
 * the next start, `--data-dir` keeping the table across restarts, and every `npm start` option
 * validated.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { DynamoDBClient, GetItemCommand, ListTablesCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { runLogPaths } from "../agent/work-dir.ts";
import { agentPk, AGENT_SK } from "../functions/adapters/dynamo/keys.ts";
import { sessionResult } from "../functions/core/sessions.ts";
import { AGENT_READABLE_ATTRIBUTES } from "../functions/topology/client-access.ts";
import { pidFilePath, recoverStaleRuntime, startTicks, type PidFileContents } from "../local/pid-file.ts";
import { startRuntime } from "../local/runtime.ts";
import { parseStartArgs } from "../local/start-options.ts";
import { runCairn, stdoutJson } from "./support/cli.ts";
import { startTestRuntime, type TestRuntime } from "./support/runtime.ts";
import { until } from "./support/until.ts";

const MAIN = resolve("local/main.ts");
const PROBE = fileURLToPath(new URL("fixtures/dynamodb-probe/probe.ts", import.meta.url));

interface Attempt {
  readonly port: number;
  readonly key: string;
  readonly operation: string;
  readonly outcome: string;
  readonly read?: unknown;
}

describe("npm start options", () => {
  test.each([
    [["--sweep-seconds", "0"], '--sweep-seconds must be a whole number from 1 to 86400, got "0"'],
    [["--sweep-seconds", "0.5"], '--sweep-seconds must be a whole number from 1 to 86400, got "0.5"'],
    [["--sweep-seconds", "1e3"], '--sweep-seconds must be a whole number from 1 to 86400, got "1e3"'],
    [["--agents=-1"], '--agents must be a whole number from 0 to 64, got "-1"'],
    [["--agents", "65"], '--agents must be a whole number from 0 to 64, got "65"'],
    [["--agent-cpu", "0"], '--agent-cpu must be a whole number from 1 to 1024, got "0"'],
    [
      ["--agent-memory-mib", "lots"],
      '--agent-memory-mib must be a whole number from 1 to 16777216, got "lots"',
    ],
    [["--sfn-port", "70000"], '--sfn-port must be a whole number from 1 to 65535, got "70000"'],
    [["--events-port", "0"], '--events-port must be a whole number from 1 to 65535, got "0"'],
    [
      ["--sfn-port", "9000", "--events-port", "9000"],
      "--sfn-port and --events-port must differ, both are 9000",
    ],
    [["--data-dir", ""], '--data-dir must name a directory, got ""'],
    [
      ["--dynamodb-endpoint", "localhost:8000"],
      '--dynamodb-endpoint must be an http:// or https:// URL, got "localhost:8000"',
    ],
    [
      ["--dynamodb-endpoint", "nonsense"],
      '--dynamodb-endpoint must be an http:// or https:// URL, got "nonsense"',
    ],
    [["--table-name", "mine"], "--table-name needs --dynamodb-endpoint"],
    [
      ["--dynamodb-endpoint", "http://127.0.0.1:8000", "--table-name", "a/b"],
      '--table-name must be 3 to 255 of a-z A-Z 0-9 _ . - (DynamoDB\'s rule), got "a/b"',
    ],
    [["--dashboard-port", "65536"], '--dashboard-port must be a whole number from 0 to 65535, got "65536"'],
    [
      ["--sfn-port", "9000", "--dashboard-port", "9000"],
      "--dashboard-port must differ from --sfn-port and --events-port, got 9000",
    ],
    [["--submission-filter", ""], '--submission-filter must name a module, got ""'],
    [
      ["--submission-filter", "f.mjs", "--submission-filter-on-failure", "maybe"],
      '--submission-filter-on-failure must be accept or reject, got "maybe"',
    ],
    [
      ["--submission-filter", "f.mjs", "--submission-filter-timeout-ms", "0"],
      '--submission-filter-timeout-ms must be a whole number from 1 to 900000, got "0"',
    ],
    [
      ["--submission-filter-on-failure", "accept"],
      "--submission-filter-timeout-ms and --submission-filter-on-failure need --submission-filter",
    ],
    [["--sweep"], "Unknown option '--sweep'"],
    [["extra"], "Unexpected argument 'extra'"],
  ])("%j is refused: %s", (argv, message) => {
    expect(() => parseStartArgs(argv)).toThrow(message);
  });

  test("defaults: in memory under .cairn; --data-dir keeps the table on disk", () => {
    expect(parseStartArgs([])).toEqual({
      kind: "start",
      dashboardPort: 0,
      options: {
        agents: 4,
        restartAgents: true,
        agentCapacity: { cpu: 4, memoryMiB: 4096 },
        dataDir: ".cairn",
        ports: { stepFunctions: 0, eventBridge: 0 },
        handlerLogLevel: "warn",
      },
    });
    expect(parseStartArgs(["--data-dir", "/tmp/x", "--sweep-seconds", "5"])).toMatchObject({
      options: { dataDir: "/tmp/x", persistent: true, sweepMs: 5000 },
    });
  });

  test("--dynamodb-endpoint: the table in that DynamoDB Local (default name cairn), --data-dir then not persistent", () => {
    const parsed = parseStartArgs(["--dynamodb-endpoint", "http://127.0.0.1:8000", "--data-dir", "/tmp/x"]);
    expect(parsed).toMatchObject({
      options: { dataDir: "/tmp/x", dynamoDb: { endpoint: "http://127.0.0.1:8000" } },
    });
    expect(parsed.kind === "start" && parsed.options.persistent).toBeFalsy();
    expect(
      parseStartArgs(["--dynamodb-endpoint", "https://db.example:8000", "--table-name", "cairn.dev-1"]),
    ).toMatchObject({
      options: { dynamoDb: { endpoint: "https://db.example:8000", tableName: "cairn.dev-1" } },
    });
  });

  test("--submission-filter names the filter module, its timeout and its failure mode", () => {
    expect(parseStartArgs(["--submission-filter", "./filter.mjs"])).toMatchObject({
      options: { submissionFilter: { module: "./filter.mjs" } },
    });
    expect(
      parseStartArgs([
        "--submission-filter",
        "./filter.mjs",
        "--submission-filter-timeout-ms",
        "2000",
        "--submission-filter-on-failure",
        "accept",
      ]),
    ).toMatchObject({
      options: { submissionFilter: { module: "./filter.mjs", timeoutMs: 2000, onFailure: "accept" } },
    });
  });

  test("npm start --sweep-seconds 0 exits 2 with the reason, before starting anything", () => {
    const run = spawnSync(process.execPath, [MAIN, "--sweep-seconds", "0"], { encoding: "utf8" });
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(
      /^cairn: --sweep-seconds must be a whole number from 1 to 86400, got "0"\nusage:/,
    );
  });
});

/** Listening TCP sockets of the given processes, as `ss -ltnp` shows them: "addr:port". */
function listening(pids: readonly number[]): string[] {
  const out = spawnSync("ss", ["-ltnpH"], { encoding: "utf8" });
  if (out.status !== 0) throw new Error(`ss failed: ${out.stderr}`);
  return out.stdout
    .split("\n")
    .filter((line) => pids.some((pid) => line.includes(`pid=${pid},`)))
    .map((line) => line.trim().split(/\s+/)[3]!);
}

describe("a running runtime", () => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startTestRuntime({ agents: 1, ownDynamoDb: true });
  }, 60_000);
  afterAll(() => rt?.stop());

  test("ss -ltnp: every embedded endpoint listens on 127.0.0.1 only, DynamoDB Local included", () => {
    const pids = JSON.parse(readFileSync(pidFilePath(rt.dataDir), "utf8")) as PidFileContents;
    const jvm = pids.dynamoDb!.pid;
    const all = listening([process.pid, jvm, ...pids.agents.map((a) => a.pid)]);
    const dynamoPort = new URL(rt.runtime.tableEndpoint).port;
    expect(listening([jvm])).toEqual([`127.0.0.1:${dynamoPort}`]);
    // Every endpoint the CLI is given is among them, and nothing listens anywhere else.
    for (const endpoint of Object.values(rt.runtime.info.endpoints)) {
      expect(all).toContain(new URL(endpoint).host);
    }
    expect(all.filter((address) => !address.startsWith("127.0.0.1:"))).toEqual([]);
  });

  test("DynamoDB Local runs with telemetry off", () => {
    const pids = JSON.parse(readFileSync(pidFilePath(rt.dataDir), "utf8")) as PidFileContents;
    const cmdline = readFileSync(`/proc/${pids.dynamoDb!.pid}/cmdline`, "utf8").split("\0");
    expect(cmdline).toContain("-disableTelemetry");
    expect(cmdline).toContain("-inMemory");
  });

  // The table holds every agent's signing key, and DynamoDB Local listens on a loopback port any
  // process on the host can reach. A real kernel stands in for an attacker: it finds every
  // listening port and asks each for the table with a made-up key and with the keys the runtime
  // file gives clients. DynamoDB Local refuses them all as DynamoDB refuses an unknown key, so
  // nothing of the table reaches the kernel; the runtime itself (its functions, its gate) goes on
  // working.
  test("a kernel probing DynamoDB Local's own port: it refuses every key but the control plane's: made-up and client keys get UnrecognizedClientException, nothing is read; the gate still serves what the client may read", async () => {
    const id = `ddb-probe-${Date.now().toString(36)}`;
    await rt.submit({ sessionId: id, spec: { name: "probe", command: [process.execPath, PROBE] } });
    const ended = await rt.waitForEnd(id, 90_000);
    // The runtime works: the session ran and ended through the functions, which reach the
    // same DynamoDB Local with the control plane's key.
    expect(sessionResult(ended)).toBe("succeeded");
    const out = readFileSync(runLogPaths(join(rt.dataDir, "work"), id, 0, 0).stdout, "utf8");
    const attempts = out
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Attempt);

    // The kernel found DynamoDB Local's port, and tried it with every key it had.
    const dynamoPort = Number(new URL(rt.runtime.tableEndpoint).port);
    const onDynamo = attempts.filter((a) => a.port === dynamoPort);
    expect(new Set(onDynamo.map((a) => a.key))).toEqual(new Set(["made-up", "client", "operator"]));
    expect(onDynamo).toHaveLength(9);
    for (const a of onDynamo) {
      expect(a, `${a.key} ${a.operation}`).toMatchObject({
        outcome: "UnrecognizedClientException: The security token included in the request is invalid.",
      });
    }
    // The gate answers the client's key as its policy says (the client may not scan the table).
    const gatePort = Number(new URL(rt.runtime.info.endpoints.dynamoDb).port);
    const gateScan = attempts.find(
      (a) => a.port === gatePort && a.key === "client" && a.operation === "Scan",
    );
    expect(gateScan?.outcome).toMatch(/^AccessDeniedException: /);

    // The agent's signing key is in the table, and nowhere in what the kernel got.
    const agent = (await rt.store.getAgent(ended.kernels[0]!.agentId!))!;
    expect(agent.signingKey).toBeTruthy();
    expect(out).not.toContain(agent.signingKey);
    // Nor did this runtime's gate give a client's key more than its policy allows. (Other ports
    // on a shared machine, another run's unauthenticated test database say, are not this
    // runtime's.)
    const ours = attempts.filter((a) => a.port === dynamoPort || a.port === gatePort);
    expect(ours.filter((a) => a.operation !== "ListTables" && a.outcome === "ok")).toEqual([]);

    // What the client's policy allows still gets through the gate, which passes it on signed
    // with the one key DynamoDB Local accepts: the agent, without its signing key.
    const viaGate = new DynamoDBClient({
      endpoint: rt.runtime.info.endpoints.dynamoDb,
      region: rt.runtime.info.region,
      credentials: rt.runtime.info.credentials.client,
    });
    try {
      const read = await viaGate.send(
        new GetItemCommand({
          TableName: rt.runtime.info.tableName,
          Key: { pk: { S: agentPk(agent.id) }, sk: { S: AGENT_SK } },
          ProjectionExpression: AGENT_READABLE_ATTRIBUTES.map((_, i) => `#a${i}`).join(", "),
          ExpressionAttributeNames: Object.fromEntries(
            AGENT_READABLE_ATTRIBUTES.map((a, i) => [`#a${i}`, a]),
          ),
        }),
      );
      expect(read.Item?.["id"]?.S).toBe(agent.id);
      expect(read.Item?.["signingKey"]).toBeUndefined();
    } finally {
      viaGate.destroy();
    }
  }, 120_000);
});

describe("a runtime on a DynamoDB it did not start (the test suite's own DynamoDB Local)", () => {
  test("it creates its table there, records no database process, and leaves the database running at stop", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "cairn-external-db-"));
    const endpoint = inject("dynamoEndpoint");
    const tableName = `cairn-external-${process.pid}`;
    const runtime = await startRuntime({
      dataDir,
      agents: 0,
      log: () => {},
      dynamoDb: { endpoint, tableName },
    });
    const ddb = new DynamoDBClient({
      endpoint,
      region: "local",
      credentials: { accessKeyId: "local", secretAccessKey: "local" },
    });
    try {
      // The functions use that database; clients are given the gate in front of it.
      expect(runtime.tableEndpoint).toBe(endpoint);
      expect(runtime.info.tableName).toBe(tableName);
      expect(runtime.info.endpoints.dynamoDb).not.toBe(endpoint);
      expect(runtime.dynamoDbPid).toBeUndefined();
      const pids = JSON.parse(readFileSync(pidFilePath(dataDir), "utf8")) as PidFileContents;
      expect(pids.dynamoDb).toBeUndefined();
      await runtime.stop();
      // The database answers after the runtime's stop, with the table still in it.
      const tables = await ddb.send(new ListTablesCommand({}));
      expect(tables.TableNames).toContain(tableName);
    } finally {
      ddb.destroy();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  test("a database that does not answer fails the start naming it, and leaves nothing behind", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "cairn-external-db-"));
    try {
      await expect(
        startRuntime({ dataDir, agents: 0, log: () => {}, dynamoDb: { endpoint: "http://127.0.0.1:1" } }),
      ).rejects.toThrow(/^the DynamoDB at http:\/\/127\.0\.0\.1:1 did not answer: .*ECONNREFUSED/);
      expect(existsSync(pidFilePath(dataDir))).toBe(false);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  test.each([
    [{ persistent: true }, "dynamoDb and persistent exclude each other"],
    [{ ports: { dynamoDb: 8000 } }, "dynamoDb and ports.dynamoDb exclude each other"],
  ])("%o with dynamoDb is refused before anything starts", async (extra, message) => {
    const dataDir = mkdtempSync(join(tmpdir(), "cairn-external-db-"));
    try {
      await expect(
        startRuntime({
          dataDir,
          agents: 0,
          log: () => {},
          dynamoDb: { endpoint: "http://127.0.0.1:1" },
          ...extra,
        }),
      ).rejects.toThrow(message);
      expect(existsSync(pidFilePath(dataDir))).toBe(false);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

/** `npm start` as a user runs it, in its own process, so that it can be killed. */
class StartedRuntime {
  readonly child: ChildProcess;
  stderr = "";
  stdout = "";
  readonly ready: Promise<void>;
  constructor(dataDir: string, extraArgs: readonly string[] = []) {
    // A sweep every 5 s, as the other end-to-end tests' runtimes (test/support/runtime.ts): nothing
    // here waits on the sweep, and each sweep reads every stage's targets from DynamoDB Local.
    this.child = spawn(
      process.execPath,
      [MAIN, "--data-dir", dataDir, "--agents", "1", "--sweep-seconds", "5", ...extraArgs],
      {
        env: {
          ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("AWS_"))),
          // Its record for the user goes here, not into the real user's state directory.
          XDG_STATE_HOME: join(dataDir, "state"),
        },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    this.child.stderr!.on("data", (chunk: Buffer) => (this.stderr += chunk.toString()));
    this.ready = new Promise((done, fail) => {
      this.child.stdout!.on("data", (chunk: Buffer) => {
        this.stdout += chunk.toString();
        if (this.stdout.includes("cairn ready")) done();
      });
      this.child.once("exit", (code) => fail(new Error(`npm start exited ${code}:\n${this.stderr}`)));
    });
  }
  exited(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return Promise.resolve();
    return new Promise((done) => this.child.once("exit", () => done()));
  }
}

/** The process started at `ticks` still runs: a zombie waiting for its new parent to reap it does not. */
function isAlive(pid: number, ticks: string | undefined): boolean {
  if (ticks === undefined || startTicks(pid) !== ticks) return false;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

/** Kernel processes started under `workRoot` (the agent puts its termination log there). */
function kernelPids(workRoot: string): number[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        return readFileSync(`/proc/${name}/environ`, "latin1").includes(`CAIRN_TERMINATION_LOG=${workRoot}`);
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** A data directory and the `npm start` processes of one describe block, all stopped after it. */
function npmStarts(prefix: string): {
  readonly dataDir: string;
  readonly start: (extraArgs?: readonly string[]) => StartedRuntime;
} {
  const dataDir = mkdtempSync(join(tmpdir(), prefix));
  const started: StartedRuntime[] = [];
  afterAll(async () => {
    for (const s of started) {
      s.child.kill("SIGINT");
      await s.exited();
    }
    rmSync(dataDir, { recursive: true, force: true });
  });
  return {
    dataDir,
    start: (extraArgs = []) => {
      const runtime = new StartedRuntime(dataDir, extraArgs);
      started.push(runtime);
      return runtime;
    },
  };
}

describe("npm start killed with SIGKILL, then started again with the same --data-dir", () => {
  const { dataDir, start } = npmStarts("cairn-restart-");

  test("the next start stops the agents and kernels left behind, says so, and finds the sessions", async () => {
    const first = start();
    await first.ready;
    const finished = await runCairn(dataDir, ["submit", "examples/hello.yaml", "--id", "done-1", "--wait"]);
    expect(finished.code, finished.stderr).toBe(0);
    // The ready line names the dashboard, on loopback, and it lists the session.
    const dashboardUrl = /dashboard (http:\/\/127\.0\.0\.1:\d+\/);/.exec(first.stdout)?.[1];
    expect(dashboardUrl, first.stdout).toBeDefined();
    const listPage = await fetch(dashboardUrl!);
    expect(listPage.status).toBe(200);
    expect(await listPage.text()).toContain('data-session="done-1"');
    const kernels = await startSleepingKernel(dataDir);
    const pids = JSON.parse(readFileSync(pidFilePath(dataDir), "utf8")) as PidFileContents;
    const [agent] = pids.agents;

    // An agent that does not notice its runtime is gone (stopped here, so that it cannot: a live
    // one may exit on its own) keeps its kernels running.
    process.kill(agent!.pid, "SIGSTOP");
    first.child.kill("SIGKILL");
    await first.exited();
    // The fault: nothing stopped them, and the runtime file still points at dead endpoints.
    expect(isAlive(agent!.pid, agent!.startTicks)).toBe(true);
    expect(kernels.every((k) => isAlive(k.pid, k.ticks))).toBe(true);
    expect(existsSync(join(dataDir, "runtime.json"))).toBe(true);
    // DynamoDB Local notices its stdin closing and exits by itself.
    await until(
      "DynamoDB Local exits",
      () => (isAlive(pids.dynamoDb!.pid, pids.dynamoDb!.startTicks) ? undefined : true),
      30_000,
      200,
    );

    const second = start();
    await second.ready;
    // One line says what happened and everything done about it.
    const recovered = second.stderr
      .split("\n")
      .find((line) =>
        line.startsWith(`cairn: the earlier runtime (pid ${pids.runtime.pid}) did not stop cleanly; `),
      );
    expect(recovered, second.stderr).toBeDefined();
    expect(recovered).toContain(`cleaned up after it: stopped agent agent-1 (pid ${agent!.pid}); `);
    expect(recovered).toContain(
      `; stopped ${kernels.length} kernel process(es) of agent agent-1 (pids ${kernels.map((k) => k.pid).join(", ")})`,
    );
    expect(recovered).toContain(`; removed the stale ${join(dataDir, "runtime.json")}`);
    // The session that was running lost its in-memory execution, and the start says so.
    expect(second.stderr).toMatch(/sessions that were mid-lifecycle when the runtime stopped \(sleepy-1\)/);
    expect(isAlive(agent!.pid, agent!.startTicks)).toBe(false);
    expect(kernels.some((k) => isAlive(k.pid, k.ticks))).toBe(false);

    // --data-dir kept the table: the finished session and its history are still there.
    const view = stdoutJson(await runCairn(dataDir, ["get", "done-1", "-o", "json"]));
    expect(view).toMatchObject({ status: "TERMINATED", result: "succeeded" });
    const history = await runCairn(dataDir, ["history", "done-1"]);
    expect(history.code, history.stderr).toBe(0);
    expect(history.stdout).toMatch(/TERMINATING → TERMINATED/);
    const sleepy = await runCairn(dataDir, ["get", "sleepy-1", "-o", "json"]);
    expect(sleepy.code, sleepy.stderr).toBe(0);

    second.child.kill("SIGINT");
    await second.exited();
    expect(second.child.exitCode).toBe(0);
    // A clean stop leaves nothing for the next start to recover.
    expect(existsSync(pidFilePath(dataDir))).toBe(false);
    expect(existsSync(join(dataDir, "runtime.json"))).toBe(false);
  }, 180_000);
});

describe("npm start, one of its agents killed with kill -9", () => {
  const { dataDir, start } = npmStarts("cairn-agent-kill-");

  test("it says how the agent exited at once, restarts it with backoff, and the restarted agent stops the kernels left behind", async () => {
    // Its table in the suite's DynamoDB Local: this is about the agents, and a JVM of its own would
    // add nothing to it.
    const runtime = start([
      "--dynamodb-endpoint",
      inject("dynamoEndpoint"),
      "--table-name",
      `cairn-agent-kill-${process.pid}`,
    ]);
    await runtime.ready;
    const kernels = await startSleepingKernel(dataDir);
    const agentPid = () =>
      (JSON.parse(readFileSync(pidFilePath(dataDir), "utf8")) as PidFileContents).agents[0]!.pid;
    const first = agentPid();
    /** `npm start` reports the agent's `n`-th SIGKILL in a row, and the backoff it doubles. */
    const killReported = (pid: number, n: number) =>
      until(
        `exit ${n} is reported`,
        () =>
          runtime.stderr.includes(
            `cairn: agent agent-1 (pid ${pid}) was killed by SIGKILL; restarting it in ${2 ** (n - 1)} s (${n} exit(s) in a row)`,
          )
            ? true
            : undefined,
        10_000,
        100,
      );

    process.kill(first, "SIGKILL");
    // The agent's kernel outlives it (kernels run detached)…
    expect(kernels.every((k) => isAlive(k.pid, k.ticks))).toBe(true);
    await killReported(first, 1);
    await until(
      "agent-1 restarted",
      () => (/cairn: agent agent-1 restarted \(pid (\d+)\)/.exec(runtime.stderr) ? true : undefined),
      30_000,
      200,
    );
    const second = Number(/cairn: agent agent-1 restarted \(pid (\d+)\)/.exec(runtime.stderr)![1]);
    expect(second).not.toBe(first);
    // …until the restarted agent stops what its killed run left behind, and says so: in cgroup
    // mode by the dead agent's cgroup, otherwise by the kernels' marked environment.
    const said = new RegExp(
      `agent agent-1: (containment: stopped the processes of ${kernels.length} kernel run\\(s\\) an agent process that died left behind|` +
        `stopped ${kernels.length} kernel process\\(es\\) an earlier run of this agent left behind)`,
    );
    // In cgroup mode any agent that starts on the host reaps the cgroups of agents that died, and
    // other test files start agents meanwhile: when one of them got there first, it said so in its
    // own output, and the dead agent's cgroup must be gone.
    const deadCgroup = new RegExp(`cgroup v2 in (\\S+-${first}) `).exec(runtime.stderr)?.[1];
    if (deadCgroup === undefined || said.test(runtime.stderr)) expect(runtime.stderr).toMatch(said);
    else expect(existsSync(deadCgroup), `${deadCgroup} reaped by another agent on this host`).toBe(false);
    // The kernels of the killed run, by pid and start time: the session's next run may already have
    // a kernel of its own on the restarted agent, in the same work directory.
    await until(
      "the orphaned kernel is gone",
      () => (kernels.some((k) => isAlive(k.pid, k.ticks)) ? undefined : true),
      10_000,
      100,
    );
    // The runtime's records name the new process.
    await until(
      "the pid file names the restarted agent",
      () => (agentPid() === second ? true : undefined),
      10_000,
      100,
    );

    // Killed again at once: the next restart waits twice as long.
    process.kill(second, "SIGKILL");
    await killReported(second, 2);
    await until(
      "agent-1 restarted again",
      () => (runtime.stderr.match(/cairn: agent agent-1 restarted/g)?.length === 2 ? true : undefined),
      30_000,
      200,
    );

    runtime.child.kill("SIGINT");
    await runtime.exited();
    expect(runtime.child.exitCode).toBe(0);
    // A stop is not an exit to report.
    expect(runtime.stderr.match(/was killed by|exited with code/g)?.length).toBe(2);
  }, 180_000);
});

describe("npm start --dynamodb-endpoint: the table in a DynamoDB Local that outlives the runtime", () => {
  const { dataDir, start } = npmStarts("cairn-external-start-");

  test("a session run under one start is found by the next, and no JVM is started or stopped", async () => {
    const args = [
      "--dynamodb-endpoint",
      inject("dynamoEndpoint"),
      "--table-name",
      `cairn-start-${process.pid}`,
    ];
    const first = start(args);
    await first.ready;
    expect(first.stderr).toContain(
      `cairn: using DynamoDB at ${inject("dynamoEndpoint")}, table cairn-start-`,
    );
    expect(first.stderr).not.toContain("starting DynamoDB Local");
    const pids = JSON.parse(readFileSync(pidFilePath(dataDir), "utf8")) as PidFileContents;
    expect(pids.dynamoDb).toBeUndefined();
    const finished = await runCairn(dataDir, ["submit", "examples/hello.yaml", "--id", "kept-1", "--wait"]);
    expect(finished.code, finished.stderr).toBe(0);
    first.child.kill("SIGINT");
    await first.exited();
    expect(first.child.exitCode).toBe(0);

    const second = start(args);
    await second.ready;
    const view = stdoutJson(await runCairn(dataDir, ["get", "kept-1", "-o", "json"]));
    expect(view).toMatchObject({ status: "TERMINATED", result: "succeeded" });
  }, 90_000);
});

describe("the pid file", () => {
  test("a recorded pid now used by another process is left alone", () => {
    const dir = mkdtempSync(join(tmpdir(), "cairn-pids-"));
    const stranger = spawn("sleep", ["60"], { stdio: "ignore" });
    try {
      const contents: PidFileContents = {
        runtime: { pid: 999_999_999, startTicks: "1" },
        // The same pid, another start time: not the process the file recorded.
        dynamoDb: { pid: stranger.pid!, startTicks: "1" },
        agents: [],
      };
      writeFileSync(pidFilePath(dir), JSON.stringify(contents));
      expect(recoverStaleRuntime(dir)).toEqual([]);
      expect(startTicks(stranger.pid!)).toBeDefined();
      expect(existsSync(pidFilePath(dir))).toBe(false);
    } finally {
      stranger.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a runtime still alive with the same data directory is not touched: the start refuses", () => {
    const dir = mkdtempSync(join(tmpdir(), "cairn-pids-"));
    const live = spawn("sleep", ["60"], { stdio: "ignore" });
    try {
      const contents: PidFileContents = {
        runtime: { pid: live.pid!, startTicks: startTicks(live.pid!)! },
        agents: [],
      };
      writeFileSync(pidFilePath(dir), JSON.stringify(contents));
      expect(() => recoverStaleRuntime(dir)).toThrow(
        `another embedded runtime (pid ${live.pid}) is running with data directory ${dir}: stop it first`,
      );
      expect(existsSync(pidFilePath(dir))).toBe(true);
    } finally {
      live.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * Submits a kernel that sleeps for ten minutes as session sleepy-1 and waits until its processes
 * run; returns them with their start times (a pid reused later is not mistaken for one of them).
 */
async function startSleepingKernel(dataDir: string): Promise<{ pid: number; ticks: string | undefined }[]> {
  const specFile = join(dataDir, "sleep.yaml");
  writeFileSync(specFile, 'name: sleepy\ncommand: ["sleep", "600"]\n');
  const submitted = await runCairn(dataDir, ["submit", specFile, "--id", "sleepy-1"]);
  expect(submitted.code, submitted.stderr).toBe(0);
  const workRoot = join(dataDir, "work");
  await until(
    "the sleep kernel runs",
    () => (kernelPids(workRoot).length > 0 ? true : undefined),
    30_000,
    200,
  );
  return kernelPids(workRoot).map((pid) => ({ pid, ticks: startTicks(pid) }));
}
