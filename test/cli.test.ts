/**
 * The CLI without a runtime: argument parsing, help, the JSON views and text rendering (fixed
 * clock), session ids, --wait's follow loop on a simulated clock, where-is-Cairn resolution,
 * AWS error mapping, and runCli end to end against recording fakes.
 */
import { fakeCliIo, parseLine, simulatedClock, usageErrorOf } from "./support/cli-helpers.ts";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import { parseCommandLine, type Invocation } from "../bin/cli/args.ts";
import { explainAwsError } from "../bin/cli/aws-errors.ts";
import {
  describeStackOutputs,
  type CairnApi,
  type RetryAdmin,
  type SessionReader,
} from "../bin/cli/cairn-api.ts";
import { COMMAND_GROUPS, COMMANDS, GLOBAL_OPTIONS } from "../bin/cli/command-table.ts";
import { UnreachableError, UsageError, WaitTimeoutError } from "../bin/cli/errors.ts";
import { EXIT_CODE_HELP } from "../bin/cli/exit-codes.ts";
import { followSession } from "../bin/cli/follow.ts";
import type { CliIo } from "../bin/cli/io.ts";
import { runCli } from "../bin/cli/main.ts";
import {
  formatDuration,
  renderHistory,
  renderList,
  renderProgress,
  renderSession,
} from "../bin/cli/render.ts";
import { policyView, renderPolicy, renderPolicyList, retryConfigView } from "../bin/cli/retry-views.ts";
import { newSessionId } from "../bin/cli/session-id.ts";
import { MAX_DOCUMENT_BYTES, readSpecFile } from "../bin/cli/document-files.ts";
import { processIo } from "../bin/cli/process-io.ts";
import { spawnSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolveConnection, type TargetDeps } from "../bin/cli/target.ts";
import { executionArn, historyRecordView, historyView, listView, sessionView } from "../bin/cli/views.ts";
import { SESSION_ID_PATTERN, type PutEventsEntry } from "../functions/core/events.ts";
import type {
  HistoryRecord,
  Job,
  Queue,
  RunRecord,
  Session,
  SessionSpec,
  SessionWithKernels,
} from "../functions/core/model.ts";
import { AlreadyExistsError, InUseError, NotFoundError } from "../functions/core/ports/errors.ts";
import { RETRY_CONFIG_DEFAULTS, type RetryConfig } from "../functions/core/retry/config.ts";
import { parseRetryPolicyText } from "../functions/core/retry/policy-text.ts";
import { parseRetryPolicy, type RetryPolicy } from "../functions/core/retry/policy.ts";
import { SPEC_DEFAULTS } from "../functions/core/spec.ts";

// ---------------------------------------------------------------------------------------------
// Fixtures: literal epoch values, so every rendered time is known.

const T0 = Date.UTC(2026, 10, 21, 12, 0, 0); // 2026-11-21T12:00:00.000Z
const RUNTIME_FILE = {
  region: "local",
  tableName: "cairn",
  eventBusName: "cairn",
  stateMachineArn: "arn:aws:states:local:000000000000:stateMachine:SessionLifecycle",
  endpoints: {
    dynamoDb: "http://127.0.0.1:8000",
    stepFunctions: "http://127.0.0.1:8001",
    eventBridge: "http://127.0.0.1:8002",
    logs: "http://127.0.0.1:8003",
  },
  kernelLogGroupName: "/cairn/kernels",
  pid: 1,
};

function session(overrides: Partial<Session> = {}): Session {
  return {
    id: "hello-abc12345",
    spec: { ...SPEC_DEFAULTS, name: "hello", command: ["/bin/true"] },
    status: "RUNNING",
    version: 6,
    createdAtMs: T0,
    updatedAtMs: T0 + 4_000,
    executionName: "hello-abc12345",
    stage: { enteredAtMs: T0 + 4_000, expiresAtMs: T0 + 4_000 + 86_400_000 },
    tries: 0,
    runIndex: 0,
    ...overrides,
  };
}

const RUNNING: SessionWithKernels = {
  session: session(),
  kernels: [
    {
      sessionId: "hello-abc12345",
      index: 0,
      status: "RUNNING",
      resources: { cpu: 1, memoryMiB: 256 },
      agentId: "agent-1",
      startedAtMs: T0 + 3_500,
      statusChangedAtMs: T0 + 3_500,
    },
  ],
};

const FAILED: SessionWithKernels = {
  session: session({ status: "TERMINATED", updatedAtMs: T0 + 6_000 }),
  kernels: [
    {
      ...RUNNING.kernels[0]!,
      status: "TERMINATED",
      exitCode: 3,
      message: "about to fail\n(exit 3)",
      finishedAtMs: T0 + 5_750,
    },
  ],
};

function record(seq: number, fields: Partial<HistoryRecord>): HistoryRecord {
  return {
    sessionId: "hello-abc12345",
    seq,
    handler: "ScheduleNewSessions",
    result: "SUCCESS",
    fromStatus: "PENDING",
    count: 1,
    firstAtMs: T0 + seq * 1000,
    lastAtMs: T0 + seq * 1000,
    ...fields,
  };
}

const HISTORY: HistoryRecord[] = [
  record(0, { handler: "Submit", result: "SUBMITTED", toStatus: "PENDING" }),
  record(1, { result: "SKIPPED", message: "no agent has room for 1 kernel", count: 3, lastAtMs: T0 + 1_900 }),
  record(2, { toStatus: "SCHEDULED", message: "placed on agent-1" }),
];

// ---------------------------------------------------------------------------------------------

/** The help `cairn …argv` prints; fails the test if argv is not a request for help. */
function helpOf(...argv: string[]): string {
  const invocation = parseCommandLine(argv);
  if (invocation.kind !== "help") throw new Error(`${argv.join(" ")} parsed as ${invocation.kind}`);
  return invocation.text;
}

/** Help text with commander's line wrapping undone. */
const unwrapped = (text: string): string => text.replace(/\s+/g, " ");

describe("parseCommandLine", () => {
  const parse = parseLine;
  const usageError = usageErrorOf;

  test("submit with every option", () => {
    expect(parse("submit -f spec.yaml --id my-run-1 --wait --timeout 90 --output json")).toEqual({
      kind: "submit",
      file: "spec.yaml",
      sessionId: "my-run-1",
      wait: true,
      timeoutSeconds: 90,
      streamLogs: false,
      output: "json",
      target: {},
    });
  });

  test("the spec may be given as FILE, and `-` is stdin", () => {
    expect(parse("submit examples/hello.yaml")).toMatchObject({
      kind: "submit",
      file: "examples/hello.yaml",
    });
    expect(parse("submit -f -")).toMatchObject({ file: "-", wait: false, output: "text" });
    expect(parse("submit --file=x.json -o json")).toMatchObject({ file: "x.json", output: "json" });
  });

  test("global options go before or after the command", () => {
    const expected = { kind: "get", sessionId: "abc-1", output: "text", target: { runtimeFile: "rt.json" } };
    expect(parse("--runtime-file rt.json get abc-1")).toEqual(expected);
    expect(parse("get abc-1 --runtime-file rt.json")).toEqual(expected);
    expect(parse("get --runtime-file=rt.json abc-1")).toEqual(expected);
    expect(parse("--stack Cairn --region eu-west-1 --endpoint http://localhost:4566 list").kind).toBe("list");
    expect(parse("-o json get abc-1")).toMatchObject({ kind: "get", output: "json" });
    expect(parse("list --stack Cairn --region eu-west-1")).toMatchObject({
      target: { stack: "Cairn", region: "eu-west-1" },
    });
  });

  test("list: status is case-insensitive, limit defaults to 20", () => {
    expect(parse("list")).toEqual({
      kind: "list",
      limit: 20,
      output: "text",
      target: {},
      watch: false,
      view: "sokovan",
    });
    expect(parse("list --status terminated --limit 5")).toMatchObject({ status: "TERMINATED", limit: 5 });
  });

  test("cancel with and without a reason", () => {
    expect(parseCommandLine(["cancel", "abc-1", "--reason", "not needed any more"])).toMatchObject({
      kind: "cancel",
      sessionId: "abc-1",
      reason: "not needed any more",
    });
    expect(parse("cancel abc-1")).not.toHaveProperty("reason");
    expect(parse("cancel abc-1")).toMatchObject({ force: false });
    expect(parse("cancel abc-1 --force")).toMatchObject({ kind: "cancel", sessionId: "abc-1", force: true });
  });

  test("help: --help anywhere, -h, and `help COMMAND`", () => {
    const main = helpOf("--help");
    expect(main).toMatch(/^Usage: cairn <command> \[options\]$/m);
    expect(helpOf("-h")).toBe(main);
    expect(helpOf("help")).toBe(main);
    expect(helpOf("get", "--help")).toMatch(/^Usage: cairn get \[options\] <SESSION_ID>$/m);
    expect(helpOf("submit", "-h", "--no-such-flag")).toMatch(/^Usage: cairn submit \[options\] \[FILE\]$/m);
    expect(helpOf("--limit", "0", "list", "--help")).toMatch(/^Usage: cairn list \[options\]$/m);
    expect(helpOf("help", "list")).toBe(helpOf("list", "--help"));
  });

  test.each([
    [
      "",
      "missing command (expected one of submit, get, history, list, cancel, job, tasks, task, logs, retry-policy, failure-category, template, queue, retry-config, deployment, agent, dashboard)",
    ],
    [
      "launch x",
      'unknown command "launch" (expected one of submit, get, history, list, cancel, job, tasks, task, logs, retry-policy, failure-category, template, queue, retry-config, deployment, agent, dashboard)',
    ],
    ["get abc-1 --verbose", "unknown option --verbose"],
    ["list -x", "unknown option -x"],
    ["--id abc-1 get abc-1", "unknown option --id"],
    ["--frobnicate get abc-1", "unknown option --frobnicate"],
    ["get abc-1 --output=yaml", '--output must be text or json, got "yaml"'],
    ["get", "missing SESSION_ID"],
    ["get abc-1 def-2", 'unexpected argument "def-2"'],
    [
      "get Bad_Id",
      `SESSION_ID "Bad_Id" is not a session id: 3 to 63 lowercase letters, digits or '-', starting with a letter or digit`,
    ],
    ["submit", "missing the spec: -f FILE"],
    ["submit a.yaml -f b.yaml", 'give the spec once: either FILE or -f, not both ("a.yaml", "b.yaml")'],
    ["submit -f a.yaml --timeout 5", "--timeout only applies with --wait"],
    ["submit -f a.yaml --wait --timeout soon", '--timeout must be a positive number of seconds, got "soon"'],
    ["submit -f a.yaml --wait --timeout 0", '--timeout must be a positive number of seconds, got "0"'],
    ["submit -f a.yaml --wait=yes", "option --wait takes no value"],
    ["submit -f a.yaml --id", "option --id needs a value (--id ID)"],
    [
      "submit -f a.yaml --id --wait",
      'option --id needs a value, got "--wait" (write --id=--wait if that is the value)',
    ],
    ["submit -f a.yaml -f b.yaml", "option --file given more than once"],
    [
      "list --status done",
      '--status: unknown status "done" (expected one of PENDING, SCHEDULED, PREPARING, PREPARED, CREATING, RUNNING, TERMINATING, TERMINATED, CANCELLED)',
    ],
    ["list --limit 0", '--limit must be a whole number from 1 to 1000, got "0"'],
    ["list --limit 2.5", '--limit must be a whole number from 1 to 1000, got "2.5"'],
    ["list --limit 1001", '--limit must be a whole number from 1 to 1000, got "1001"'],
    [
      "list --runtime-file rt.json --stack Cairn",
      "--runtime-file is for the local runtime; it cannot be combined with --stack or --endpoint",
    ],
    ["list --endpoint localhost:4566", '--endpoint must be an http(s) URL, got "localhost:4566"'],
    [
      "help launch",
      'unknown command "launch" (expected one of submit, get, history, list, cancel, job, tasks, task, logs, retry-policy, failure-category, template, queue, retry-config, deployment, agent, dashboard)',
    ],
  ])("%j is an error: %s", (line, message) => {
    expect(usageError(line).message).toBe(message);
  });

  test("a usage error names the command whose help to read", () => {
    expect(usageError("get abc-1 --verbose").command).toBe("get");
    expect(usageError("launch").command).toBeUndefined();
  });

  test("--reason longer than an event may carry is refused up front", () => {
    expect(() => parseCommandLine(["cancel", "abc-1", "--reason", "x".repeat(4097)])).toThrow(
      "--reason must be at most 4096 characters, got 4097",
    );
  });
});

describe("help", () => {
  test("the main help lists every command and group, global option and exit code", () => {
    const help = helpOf("--help");
    for (const [name, def] of Object.entries(COMMANDS).filter(([name]) => !name.includes(" "))) {
      expect(help).toMatch(new RegExp(`^  ${name} `, "m"));
      expect(unwrapped(help)).toContain(` ${def.summary} `);
    }
    for (const [group, summary] of Object.entries(COMMAND_GROUPS)) {
      expect(help).toMatch(new RegExp(`^  ${group} `, "m"));
      expect(unwrapped(help)).toContain(` ${summary} `);
    }
    for (const [flags, description] of GLOBAL_OPTIONS)
      expect(unwrapped(help)).toContain(`${flags} ${description}`);
    for (const [code, text] of EXIT_CODE_HELP) expect(help).toContain(`${String(code).padEnd(3)}  ${text}`);
    expect(help).toMatch(/^ {2}124 {2}submit --wait --timeout/m);
  });

  test.each(Object.keys(COMMAND_GROUPS))("`%s --help` lists the group's commands", (group) => {
    const help = helpOf(group, "--help");
    expect(help).toContain(`Usage: cairn ${group} <`);
    for (const [name, def] of Object.entries(COMMANDS).filter(([name]) => name.startsWith(`${group} `))) {
      expect(help).toMatch(new RegExp(`^  ${name.slice(group.length + 1)} `, "m"));
      expect(unwrapped(help)).toContain(` ${def.summary} `);
    }
  });

  test.each(Object.keys(COMMANDS))("`%s --help` lists the command's options and exit codes", (name) => {
    const def = COMMANDS[name];
    if (def === undefined) throw new Error(name);
    const help = helpOf(...name.split(" "), "--help");
    expect(help).toContain(`Usage: cairn ${name} [options]`);
    expect(unwrapped(help)).toContain(def.summary);
    for (const [flags, description] of [...def.options, ...GLOBAL_OPTIONS])
      expect(unwrapped(help)).toContain(`${flags} ${description}`);
    for (const code of def.exitCodes) expect(help).toMatch(new RegExp(`^  ${code} `, "m"));
    if (def.details !== undefined) expect(help).toContain(def.details);
  });
});

describe("views (the JSON output)", () => {
  test("a running session: every field present, null where unknown, ISO times", () => {
    expect(sessionView(RUNNING, RUNTIME_FILE.stateMachineArn)).toEqual({
      sessionId: "hello-abc12345",
      name: "hello",
      status: "RUNNING",
      result: null,
      hpcState: "Running",
      hpcAdmission: null,
      queue: "default",
      priority: 0,
      tries: 0,
      runIndex: 0,
      runName: "hello-abc12345",
      retry: null,
      avoidAgents: [],
      pendingReason: null,
      cancelRequestedAt: null,
      createdAt: "2026-11-21T12:00:00.000Z",
      updatedAt: "2026-11-21T12:00:04.000Z",
      stage: { enteredAt: "2026-11-21T12:00:04.000Z", expiresAt: "2026-11-22T12:00:04.000Z" },
      executionName: "hello-abc12345",
      executionArn: "arn:aws:states:local:000000000000:execution:SessionLifecycle:hello-abc12345",
      kernels: [
        {
          index: 0,
          status: "RUNNING",
          agent: "agent-1",
          exitCode: null,
          condition: null,
          failureCategory: null,
          message: null,
          error: null,
          startedAt: "2026-11-21T12:00:03.500Z",
          finishedAt: null,
        },
      ],
      runs: [],
    });
  });

  test("result follows sessionResult: failed when a kernel exits non-zero", () => {
    const view = sessionView(FAILED, undefined);
    expect(view.result).toBe("failed");
    expect(view.kernels[0]).toMatchObject({ exitCode: 3, finishedAt: "2026-11-21T12:00:05.750Z" });
    expect(view.executionArn).toBeNull();
  });

  test("execution ARN from the state machine's ARN, in any partition", () => {
    expect(executionArn("arn:aws-cn:states:cn-north-1:123456789012:stateMachine:Life", "s-1")).toBe(
      "arn:aws-cn:states:cn-north-1:123456789012:execution:Life:s-1",
    );
    expect(executionArn("not-an-arn", "s-1")).toBeNull();
  });

  test("history records and list entries", () => {
    expect(historyView("hello-abc12345", HISTORY.slice(1, 2))).toEqual({
      sessionId: "hello-abc12345",
      records: [
        {
          seq: 1,
          handler: "ScheduleNewSessions",
          result: "SKIPPED",
          from: "PENDING",
          to: null,
          count: 3,
          message: "no agent has room for 1 kernel",
          hpc: null,
          firstAt: "2026-11-21T12:00:01.000Z",
          lastAt: "2026-11-21T12:00:01.900Z",
        },
      ],
      runs: [],
    });
    expect(listView([RUNNING], true)).toEqual({
      sessions: [
        {
          sessionId: "hello-abc12345",
          name: "hello",
          status: "RUNNING",
          result: null,
          irisState: "RUNNING",
          hpcState: "Running",
          queue: "default",
          priority: 0,
          pendingReason: null,
          createdAt: "2026-11-21T12:00:00.000Z",
          updatedAt: "2026-11-21T12:00:04.000Z",
        },
      ],
      truncated: true,
    });
  });
});

describe("text rendering (time passed in)", () => {
  const NOW = T0 + 65_000;

  test("a running session", () => {
    expect(renderSession(sessionView(RUNNING, RUNTIME_FILE.stateMachineArn), NOW)).toBe(
      [
        "session hello-abc12345 (hello)",
        "  status     RUNNING (Sokovan's session status)",
        "  hpc        Running (HPC Pack's state)",
        "  queue      default, priority 0",
        "  run        hello-abc12345 (run 0), 0 tries in this stage",
        "  created    2026-11-21T12:00:00.000Z (1m05s ago)",
        "  updated    2026-11-21T12:00:04.000Z (1m01s ago)",
        "  stage      entered 2026-11-21T12:00:04.000Z, expires 2026-11-22T12:00:04.000Z",
        "  execution  arn:aws:states:local:000000000000:execution:SessionLifecycle:hello-abc12345",
        "  KERNEL  STATUS   AGENT    EXIT  CONDITION  STARTED                   RAN     MESSAGE",
        "  0       RUNNING  agent-1  -     -          2026-11-21T12:00:03.500Z  1m01s…  -",
      ].join("\n"),
    );
  });

  test("an ended session shows its result, not its stage; messages are one line", () => {
    const text = renderSession(sessionView(FAILED, undefined), NOW);
    expect(text).toContain("  status     TERMINATED (failed; Sokovan's session status)\n");
    expect(text).not.toContain("  stage ");
    expect(text).toContain("  execution  hello-abc12345\n");
    expect(text).toMatch(
      / {2}0 +TERMINATED +agent-1 +3 +- +2026-11-21T12:00:03.500Z +2\.3s +about to fail \(exit 3\)$/,
    );
  });

  test("history table", () => {
    expect(renderHistory(historyView("hello-abc12345", HISTORY))).toBe(
      [
        "SEQ  AT                        HANDLER              RESULT     STATUS               COUNT  MESSAGE",
        "0    2026-11-21T12:00:00.000Z  Submit               SUBMITTED  PENDING              1      HPC Submitted → Validating → Queued",
        "1    2026-11-21T12:00:01.000Z  ScheduleNewSessions  SKIPPED    PENDING (kept)       3      no agent has room for 1 kernel",
        "2    2026-11-21T12:00:02.000Z  ScheduleNewSessions  SUCCESS    PENDING → SCHEDULED  1      placed on agent-1",
      ].join("\n"),
    );
    expect(renderHistory(historyView("x-1", []))).toBe("session x-1 has no history yet");
  });

  test("list table, with the waiting reason of unfinished sessions and a truncation note", () => {
    const waiting = session({ id: "big-1", status: "PENDING", pendingReason: "no agent has room" });
    const list = listView([{ session: waiting, kernels: [] }, FAILED], true);
    expect(renderList(list, undefined, NOW)).toBe(
      [
        "SESSION         NAME   STATUS (SOKOVAN)     QUEUE    PRIORITY  CREATED    WAITING",
        "big-1           hello  PENDING              default  0         1m05s ago  no agent has room",
        "hello-abc12345  hello  TERMINATED (failed)  default  0         1m05s ago  -",
        "(more sessions match; raise --limit)",
      ].join("\n"),
    );
    // One vocabulary at a time, named in the header: Iris's job states, or HPC Pack's.
    expect(renderList(list, undefined, NOW, { view: "iris", colour: false }).split("\n").slice(0, 3)).toEqual(
      [
        "SESSION         NAME   STATE (IRIS)   QUEUE    PRIORITY  CREATED    WAITING",
        "big-1           hello  PENDING        default  0         1m05s ago  no agent has room",
        // The fixture's kernel ended without an outcome report: Iris reads it as its worker's failure.
        "hello-abc12345  hello  WORKER_FAILED  default  0         1m05s ago  -",
      ],
    );
    expect(renderList(list, undefined, NOW, { view: "hpc", colour: false }).split("\n").slice(0, 3)).toEqual([
      "SESSION         NAME   STATE (HPC PACK)  QUEUE    PRIORITY  CREATED    WAITING",
      "big-1           hello  Queued            default  0         1m05s ago  no agent has room",
      "hello-abc12345  hello  Failed            default  0         1m05s ago  -",
    ]);
    // On a terminal, how it ended in its colour (failed: red), the padding outside the colour.
    expect(renderList(list, undefined, NOW, { view: "sokovan", colour: true }).split("\n")[2]).toBe(
      "hello-abc12345  hello  \u001b[31mTERMINATED (failed)\u001b[0m  default  0         1m05s ago  -",
    );
    expect(renderList(listView([], false), "RUNNING", NOW)).toBe("no sessions in RUNNING");
    expect(renderList(listView([], false), undefined, NOW)).toBe("no sessions");
  });

  test("progress lines for --wait", () => {
    const lines = HISTORY.map((r) => renderProgress(historyRecordView(r)));
    expect(lines).toEqual([
      "PENDING: submitted",
      "PENDING: ScheduleNewSessions SKIPPED (no agent has room for 1 kernel)",
      "PENDING → SCHEDULED (placed on agent-1)",
    ]);
  });

  test.each([
    [400, "0.4s"],
    [59_949, "59.9s"],
    [60_000, "1m00s"],
    [3_599_000, "59m59s"],
    [3_600_000, "1h00m"],
    [90_000_000, "1d01h"],
  ])("formatDuration(%i) = %s", (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});

describe("session ids", () => {
  test("the spec's name, then eight random characters", () => {
    expect(newSessionId("hello", () => 0)).toBe("hello-aaaaaaaa");
    expect(newSessionId("Train.Model_v2", () => 0.999)).toBe("train-model-v2-99999999");
    expect(newSessionId("___", () => 0.5)).toBe("session-ssssssss");
    expect(newSessionId("x".repeat(128), () => 0)).toHaveLength(63);
  });

  test("every spec name gives an id the events accept", () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 128 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (name, r) => SESSION_ID_PATTERN.test(newSessionId(name, () => r)),
      ),
    );
  });
});

describe("spec files", () => {
  const io = (text: string) => ({ cwd: "/work", readFile: () => text, readStdin: () => text });

  test("every problem, each with its field path", () => {
    const read = () =>
      readSpecFile("bad.yaml", io("name: x\ncommand: [a]\nfoo: 1\nresources: {cpu: 0, gpu: 1}\n"));
    expect(read).toThrow(
      [
        "invalid session spec bad.yaml (3 problems):",
        "  resources.cpu: must be greater than 0",
        "  resources.gpu: unknown field (expected one of cpu, memoryMiB)",
        "  foo: unknown field (expected one of name, queue, priority, replicas, coscheduled, perAgent, maxTaskFailures, schedulingTimeout, parent, nodeSelector, executor, image, architecture, resources, command, env, timeouts, maxTries, maxPendingReturns, rerunnable, retry, template)",
      ].join("\n"),
    );
  });

  test("syntax errors and unreadable files", () => {
    expect(() => readSpecFile("-", io("name: [x"))).toThrow(
      /^\(stdin\): invalid session spec: YAML syntax error at line 1/,
    );
    const missing = {
      cwd: "/work",
      readStdin: () => "",
      readFile: () => {
        throw Object.assign(new Error("ENOENT: no such file"), { code: "ENOENT" });
      },
    };
    expect(() => readSpecFile("nope.yaml", missing)).toThrow("cannot read the spec nope.yaml: no such file");
  });

  test("a valid spec comes back with defaults applied", () => {
    expect(readSpecFile("-", io('{"name": "j", "command": ["true"]}'))).toMatchObject({
      queue: "default",
      replicas: 1,
    });
  });

  test("a file is size-checked before it is parsed: /dev/zero fails at once", () => {
    expect(() => readSpecFile("/dev/zero", processIo())).toThrow(
      `cannot read the spec /dev/zero: it is larger than ${MAX_DOCUMENT_BYTES} bytes, the most a session spec can be`,
    );
  });

  test("cairn submit - < /dev/zero exits 2 with the reason, having read no more than the limit", () => {
    const zero = openSync("/dev/zero", "r");
    try {
      const run = spawnSync(process.execPath, ["bin/cairn.js", "submit", "-"], {
        stdio: [zero, "pipe", "pipe"],
        encoding: "utf8",
        env: Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("AWS_"))),
      });
      expect(run.status, run.stderr).toBe(2);
      expect(run.stderr).toContain(
        `cannot read the spec (stdin): it is larger than ${MAX_DOCUMENT_BYTES} bytes, the most a session spec can be`,
      );
    } finally {
      closeSync(zero);
    }
  });

  test("a spec of exactly the limit is read; one byte more is not", () => {
    const dir = mkdtempSync(join(tmpdir(), "cairn-spec-"));
    try {
      const spec = '{"name": "j", "command": ["true"]}';
      const atLimit = join(dir, "at-limit.json");
      writeFileSync(atLimit, spec + " ".repeat(MAX_DOCUMENT_BYTES - spec.length));
      expect(readSpecFile(atLimit, processIo())).toMatchObject({ name: "j" });
      const over = join(dir, "over.json");
      writeFileSync(over, spec + " ".repeat(MAX_DOCUMENT_BYTES - spec.length + 1));
      expect(() => readSpecFile(over, processIo())).toThrow(/it is larger than 409600 bytes/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test.each([
    [
      '{"name": "j", "command": ["true"], "command": ["rm", "-rf", "x"]}',
      'line 1, column 36: duplicate key "command"',
    ],
    [
      '{"name": "j",\n "command": ["true"],\n "resources": {"cpu": 1, "cpu": 64}}',
      'line 3, column 26: duplicate key "cpu" in resources',
    ],
    [
      '{"name": "j", "command": ["true"], "env": {"A": "1", "\\u0041": "2"}}',
      'line 1, column 54: duplicate key "A" in env',
    ],
  ])("duplicate keys in a JSON spec are an error naming the key: %s", (text, reason) => {
    expect(() => readSpecFile("dup.json", io(text))).toThrow(
      `dup.json: invalid session spec: JSON syntax error at ${reason}`,
    );
  });

  test("equal keys in different objects are not duplicates", () => {
    const text = '{"name": "j", "command": ["true"], "env": {"name": "x"}, "nodeSelector": {"env": "y"}}';
    expect(readSpecFile("ok.json", io(text))).toMatchObject({ env: { name: "x" } });
  });
});

// ---------------------------------------------------------------------------------------------
// --wait on a simulated clock: a fake store replays a scripted session.

/** A store whose session advances one scripted step per read. */
function scriptedStore(
  steps: readonly (SessionWithKernels | undefined)[],
  history: readonly HistoryRecord[],
) {
  let reads = 0;
  const historyReads: number[] = [];
  const store: Pick<SessionReader, "getSession" | "listHistory"> = {
    getSession: () => Promise.resolve(steps[Math.min(reads++, steps.length - 1)]),
    listHistory: (_id, query) => {
      const from = query?.fromSeq ?? 0;
      historyReads.push(from);
      // The history visible at this step: one record per step seen so far.
      return Promise.resolve(history.filter((r) => r.seq >= from && r.seq < reads));
    },
  };
  return { store, historyReads };
}

describe("followSession", () => {
  test("reports each new record once, in order, and returns the ended session", async () => {
    const clock = simulatedClock(T0);
    const ended = { ...FAILED };
    const { store, historyReads } = scriptedStore([undefined, RUNNING, RUNNING, ended], HISTORY);
    const lines: string[] = [];
    const result = await followSession("hello-abc12345", { store, ...clock, progress: (l) => lines.push(l) });
    expect(result).toBe(ended);
    expect(lines).toEqual([
      "PENDING: submitted",
      "PENDING: ScheduleNewSessions SKIPPED (no agent has room for 1 kernel)",
      "PENDING → SCHEDULED (placed on agent-1)",
    ]);
    // History is read from where the last read ended, never from the start again.
    expect(historyReads).toEqual([0, 2, 3]);
    expect(clock.sleeps).toEqual([500, 500, 500]);
  });

  test("times out with the last status seen, sleeping no longer than the time left", async () => {
    const clock = simulatedClock(T0);
    const { store } = scriptedStore([RUNNING], []);
    const error = await followSession("hello-abc12345", {
      store,
      ...clock,
      progress: () => {},
      timeoutSeconds: 1.2,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WaitTimeoutError);
    expect((error as WaitTimeoutError).lastStatus).toBe("RUNNING");
    expect((error as Error).message).toBe(
      "timed out after 1.2 s waiting for session hello-abc12345 (last status RUNNING); it keeps going: " +
        "follow it with `cairn get hello-abc12345`, or stop it with `cairn cancel hello-abc12345`",
    );
    expect(clock.sleeps).toEqual([500, 500, 200]);
  });

  test("says once that a session is slow to be recorded", async () => {
    const clock = simulatedClock(T0);
    const { store } = scriptedStore([undefined], []);
    const lines: string[] = [];
    await expect(
      followSession("x-1", {
        store,
        ...clock,
        progress: (l) => lines.push(l),
        timeoutSeconds: 5,
        notRecordedNoticeMs: 2_000,
      }),
    ).rejects.toThrow("timed out after 5 s: session x-1 was never recorded");
    expect(lines).toEqual([
      "session x-1 is not recorded yet after 2 s; is the control plane processing events? (still waiting)",
    ]);
  });
});

// ---------------------------------------------------------------------------------------------

describe("resolveConnection", () => {
  const deps = (overrides: Partial<TargetDeps> = {}): TargetDeps => ({
    cwd: "/work",
    env: {},
    readFile: () => JSON.stringify(RUNTIME_FILE),
    stackOutputs: () => Promise.reject(new Error("no stack lookups expected")),
    ...overrides,
  });
  const enoent = () => {
    throw Object.assign(new Error("ENOENT"), { code: "ENOENT" });
  };

  test("the local runtime file by default, relative to the working directory", async () => {
    const paths: string[] = [];
    const connection = await resolveConnection(
      {},
      deps({ readFile: (p) => (paths.push(p), JSON.stringify(RUNTIME_FILE)) }),
    );
    expect(paths).toEqual(["/work/.cairn/runtime.json"]);
    expect(connection).toEqual({
      where: "the local runtime (.cairn/runtime.json)",
      hint: "is `npm start` still running? Otherwise start one with `npm start`, or pass --stack/--endpoint",
      region: "local",
      credentials: { accessKeyId: "local", secretAccessKey: "local" },
      endpoints: { dynamoDb: "http://127.0.0.1:8000", eventBridge: "http://127.0.0.1:8002" },
      tableName: "cairn",
      eventBusName: "cairn",
      stateMachineArn: RUNTIME_FILE.stateMachineArn,
      logs: { readable: true, logGroupName: "/cairn/kernels", endpoint: "http://127.0.0.1:8003" },
    });
  });

  test("the kernel log group: from the runtime file, a stack's KernelLogGroupName, or the environment with --endpoint", async () => {
    const { kernelLogGroupName: _, ...older } = RUNTIME_FILE;
    await expect(
      resolveConnection({}, deps({ readFile: () => JSON.stringify(older) })),
    ).resolves.toMatchObject({
      logs: {
        readable: false,
        why:
          "the runtime file .cairn/runtime.json names no kernel log group and CloudWatch Logs endpoint " +
          "(kernelLogGroupName, endpoints.logs: an older runtime): restart it (`npm start`) to read logs",
      },
    });
    const outputs = { TableName: "t", EventBusName: "b", StateMachineArn: "arn:sm" };
    await expect(
      resolveConnection({ stack: "Cairn" }, deps({ stackOutputs: () => Promise.resolve(outputs) })),
    ).resolves.toMatchObject({
      logs: {
        readable: false,
        why:
          "stack Cairn lacks the output KernelLogGroupName: it was deployed before kernel output went to " +
          "CloudWatch Logs; deploy it again (`cdk deploy`) to read logs",
      },
    });
    const withLogs = { ...outputs, KernelLogGroupName: "Cairn-KernelLogs-1" };
    const stack = await resolveConnection(
      { stack: "Cairn", endpoint: "http://localhost:4566" },
      deps({ stackOutputs: () => Promise.resolve(withLogs) }),
    );
    expect(stack.logs).toEqual({
      readable: true,
      logGroupName: "Cairn-KernelLogs-1",
      endpoint: "http://localhost:4566",
    });
    const env = { CAIRN_TABLE_NAME: "t", CAIRN_EVENT_BUS_NAME: "b", CAIRN_KERNEL_LOG_GROUP_NAME: "/k" };
    const endpoint = await resolveConnection({ endpoint: "http://localhost:4566" }, deps({ env }));
    expect(endpoint.logs).toEqual({ readable: true, logGroupName: "/k", endpoint: "http://localhost:4566" });
  });

  test("no runtime file: where it looked, and how to start one", async () => {
    await expect(resolveConnection({}, deps({ readFile: enoent }))).rejects.toThrow(
      new UnreachableError(
        "no local runtime found: no .cairn/runtime.json in /work or a directory above it — " +
          "start one with `npm start`, or pass --stack/--endpoint",
      ),
    );
  });

  test("a runtime file that is not one", async () => {
    await expect(resolveConnection({ runtimeFile: "x.json" }, deps({ readFile: () => "{" }))).rejects.toThrow(
      "the runtime file x.json is not JSON",
    );
    await expect(
      resolveConnection({}, deps({ readFile: () => JSON.stringify({ ...RUNTIME_FILE, tableName: 7 }) })),
    ).rejects.toThrow(/not a Cairn runtime file \(tableName: expected a string, got a number\)/);
  });

  test("--stack reads the three outputs, with the region and endpoint given", async () => {
    const requests: unknown[] = [];
    const connection = await resolveConnection(
      { stack: "Cairn", endpoint: "http://localhost:4566" },
      deps({
        env: { AWS_REGION: "eu-west-1", CAIRN_SHARDS: "8" },
        stackOutputs: (request) => {
          requests.push(request);
          return Promise.resolve({
            TableName: "t1",
            EventBusName: "b1",
            StateMachineArn: "arn:sm",
            Other: "x",
          });
        },
      }),
    );
    expect(requests).toEqual([{ stack: "Cairn", region: "eu-west-1", endpoint: "http://localhost:4566" }]);
    expect(connection).toMatchObject({
      where: "stack Cairn at http://localhost:4566",
      region: "eu-west-1",
      endpoints: { dynamoDb: "http://localhost:4566", eventBridge: "http://localhost:4566" },
      tableName: "t1",
      eventBusName: "b1",
      stateMachineArn: "arn:sm",
      shards: 8,
    });
    expect(connection).not.toHaveProperty("credentials");
  });

  test("--stack without the outputs names the missing keys", async () => {
    await expect(
      resolveConnection(
        { stack: "Other" },
        deps({ stackOutputs: () => Promise.resolve({ TableName: "t", Url: "u" }) }),
      ),
    ).rejects.toThrow(
      "stack Other lacks the outputs EventBusName, StateMachineArn (it has: TableName, Url); is it the Cairn stack, fully deployed?",
    );
  });

  test("--endpoint alone takes the names from the functions' environment, or says what it needs", async () => {
    const env = { CAIRN_TABLE_NAME: "t", CAIRN_EVENT_BUS_NAME: "b" };
    await expect(
      resolveConnection({ endpoint: "http://localhost:4566", region: "us-east-1" }, deps({ env })),
    ).resolves.toMatchObject({
      region: "us-east-1",
      tableName: "t",
      eventBusName: "b",
    });
    await expect(resolveConnection({ endpoint: "http://localhost:4566" }, deps())).rejects.toThrow(
      /--endpoint needs --stack NAME/,
    );
  });

  test("--region alone and a bad CAIRN_SHARDS are usage errors", async () => {
    await expect(resolveConnection({ region: "eu-west-1" }, deps())).rejects.toBeInstanceOf(UsageError);
    await expect(resolveConnection({}, deps({ env: { CAIRN_SHARDS: "0" } }))).rejects.toThrow(
      'environment variable CAIRN_SHARDS must be a whole number from 1 to 100, got "0"',
    );
  });
});

describe("explainAwsError", () => {
  const place = { where: "the local runtime (rt.json)", hint: "is it running?", resources: "table cairn" };

  test("connection refused, also inside an AggregateError (dual-stack connect)", () => {
    const refused = (address: string) =>
      Object.assign(new Error(`connect ECONNREFUSED ${address}:8000`), {
        code: "ECONNREFUSED",
        address,
        port: 8000,
      });
    expect(explainAwsError(refused("127.0.0.1"), place)?.message).toBe(
      "cannot reach the local runtime (rt.json): connection refused (127.0.0.1:8000) — is it running?",
    );
    const aggregate = new AggregateError([refused("::1"), refused("127.0.0.1")], "");
    expect(explainAwsError(aggregate, place)).toMatchObject({
      exitCode: 4,
      message: expect.stringContaining("(::1:8000)") as string,
    });
  });

  test("credentials, missing resources and the region", () => {
    const named = (name: string, message: string) => Object.assign(new Error(message), { name });
    expect(
      explainAwsError(named("CredentialsProviderError", "Could not load credentials"), place)?.message,
    ).toMatch(/^no AWS credentials found for the local runtime/);
    expect(
      explainAwsError(named("ResourceNotFoundException", "Requested resource not found"), place)?.message,
    ).toBe("the local runtime (rt.json): Requested resource not found (table cairn) — is it running?");
    expect(explainAwsError(named("UnrecognizedClientException", "bad token"), place)?.message).toBe(
      "the local runtime (rt.json) refused the credentials: bad token",
    );
    expect(explainAwsError(new Error("Region is missing"), place)).toMatchObject({ exitCode: 2 });
  });

  test("anything else is not an access problem", () => {
    expect(explainAwsError(new TypeError("x is undefined"), place)).toBeUndefined();
  });
});

// ---------------------------------------------------------------------------------------------
// --stack against a local server speaking CloudFormation's query protocol.

describe("describeStackOutputs", () => {
  let server: Server;
  let endpoint: string;
  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = "";
      req.on("data", (chunk: Buffer) => (body += chunk.toString()));
      req.on("end", () => {
        const form = new URLSearchParams(body);
        res.setHeader("content-type", "text/xml");
        if (form.get("Action") !== "DescribeStacks" || form.get("StackName") !== "Cairn") {
          res.statusCode = 400;
          res.end(
            `<ErrorResponse><Error><Type>Sender</Type><Code>ValidationError</Code>` +
              `<Message>Stack with id ${form.get("StackName")} does not exist</Message></Error><RequestId>r</RequestId></ErrorResponse>`,
          );
          return;
        }
        const output = (key: string, value: string) =>
          `<member><OutputKey>${key}</OutputKey><OutputValue>${value}</OutputValue></member>`;
        res.end(
          `<DescribeStacksResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/"><DescribeStacksResult><Stacks><member>` +
            `<StackName>Cairn</StackName><StackStatus>CREATE_COMPLETE</StackStatus><CreationTime>2026-11-21T12:00:00Z</CreationTime>` +
            `<Outputs>${output("TableName", "Cairn-Table-1")}${output("EventBusName", "cairn-bus")}${output("StateMachineArn", "arn:aws:states:eu-west-1:1:stateMachine:L")}</Outputs>` +
            `</member></Stacks></DescribeStacksResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></DescribeStacksResponse>`,
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // Credentials the SDK's default chain finds; put back after, as the file's workers are shared.
    if (process.env["AWS_ACCESS_KEY_ID"] === undefined) vi.stubEnv("AWS_ACCESS_KEY_ID", "test");
    if (process.env["AWS_SECRET_ACCESS_KEY"] === undefined) vi.stubEnv("AWS_SECRET_ACCESS_KEY", "test");
  });
  afterAll(async () => {
    vi.unstubAllEnvs();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  test("outputs by key, through the real SDK client", async () => {
    await expect(describeStackOutputs({ stack: "Cairn", region: "eu-west-1", endpoint })).resolves.toEqual({
      TableName: "Cairn-Table-1",
      EventBusName: "cairn-bus",
      StateMachineArn: "arn:aws:states:eu-west-1:1:stateMachine:L",
    });
  });

  test("a missing stack is exit 4, named with its region", async () => {
    const error = await describeStackOutputs({ stack: "Nope", region: "eu-west-1", endpoint }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(UnreachableError);
    expect((error as Error).message).toBe(
      `stack Nope at ${endpoint} not found in region eu-west-1 (deploy it with \`cdk deploy\`)`,
    );
  });
});

// ---------------------------------------------------------------------------------------------
// runCli against recording fakes: exit codes, stdout/stderr, and what was (not) sent.

interface FakeWorld {
  readonly io: CliIo;
  readonly out: string[];
  readonly err: string[];
  readonly puts: PutEventsEntry[];
  readonly opened: number[];
  readonly admin: FakeAdmin;
}

/**
 * Retry policies, queues and the config in memory, with the store's contract: the same errors
 * (real classes, so codes and messages match), policies checked on attach, in-use on delete.
 */
class FakeAdmin implements RetryAdmin {
  readonly policies = new Map<string, RetryPolicy>();
  readonly queues = new Map<string, Queue>();
  config: RetryConfig | undefined;
  writes = 0;

  createRetryPolicy(policy: RetryPolicy): Promise<void> {
    if (this.policies.has(policy.name))
      return Promise.reject(new AlreadyExistsError("retry policy", policy.name));
    this.writes++;
    this.policies.set(policy.name, policy);
    return Promise.resolve();
  }
  updateRetryPolicy(policy: RetryPolicy): Promise<void> {
    if (!this.policies.has(policy.name))
      return Promise.reject(new NotFoundError("retry policy", policy.name));
    this.writes++;
    this.policies.set(policy.name, policy);
    return Promise.resolve();
  }
  getRetryPolicy(name: string): Promise<RetryPolicy | undefined> {
    return Promise.resolve(this.policies.get(name));
  }
  listRetryPolicies(): Promise<RetryPolicy[]> {
    return Promise.resolve([...this.policies.values()].sort((a, b) => a.name.localeCompare(b.name)));
  }
  deleteRetryPolicy(name: string): Promise<void> {
    if (!this.policies.has(name)) return Promise.reject(new NotFoundError("retry policy", name));
    const users = [...this.queues.values()].filter((q) => q.retryPolicies.includes(name)).map((q) => q.name);
    if (users.length > 0) return Promise.reject(new InUseError("retry policy", name, users.sort()));
    this.writes++;
    this.policies.delete(name);
    return Promise.resolve();
  }
  createQueue(input: Omit<Queue, "createdAtMs" | "updatedAtMs">, nowMs: number): Promise<Queue> {
    if (this.queues.has(input.name)) return Promise.reject(new AlreadyExistsError("queue", input.name));
    const missing = input.retryPolicies.find((p) => !this.policies.has(p));
    if (missing !== undefined) return Promise.reject(new NotFoundError("retry policy", missing));
    const queue = { ...input, createdAtMs: nowMs, updatedAtMs: nowMs };
    this.writes++;
    this.queues.set(input.name, queue);
    return Promise.resolve(queue);
  }
  updateQueue(input: Omit<Queue, "createdAtMs" | "updatedAtMs">, nowMs: number): Promise<Queue> {
    const current = this.queues.get(input.name);
    if (current === undefined) return Promise.reject(new NotFoundError("queue", input.name));
    const missing = input.retryPolicies.find((p) => !this.policies.has(p));
    if (missing !== undefined) return Promise.reject(new NotFoundError("retry policy", missing));
    const queue = { ...input, createdAtMs: current.createdAtMs, updatedAtMs: nowMs };
    this.writes++;
    this.queues.set(input.name, queue);
    return Promise.resolve(queue);
  }
  getQueue(name: string): Promise<Queue | undefined> {
    return Promise.resolve(this.queues.get(name));
  }
  listQueues(): Promise<Queue[]> {
    return Promise.resolve([...this.queues.values()].sort((a, b) => a.name.localeCompare(b.name)));
  }
  deleteQueue(name: string): Promise<void> {
    if (!this.queues.delete(name)) return Promise.reject(new NotFoundError("queue", name));
    this.writes++;
    return Promise.resolve();
  }
  getRetryConfig(): Promise<RetryConfig | undefined> {
    return Promise.resolve(this.config);
  }
  putRetryConfig(config: RetryConfig): Promise<void> {
    this.writes++;
    this.config = config;
    return Promise.resolve();
  }
}

function jobOf(id: string, spec: SessionSpec): Job {
  return { id, spec, sessionIds: [id], childIds: [], createdAtMs: T0 };
}

function fakeWorld(
  sessions: Record<string, SessionWithKernels> = {},
  files: Record<string, string> = {},
  storeOverrides: Partial<SessionReader> = {},
  /** The id the fake bus gives each event (none: a bus that returns no ids). */
  eventId?: string,
): FakeWorld {
  const puts: PutEventsEntry[] = [];
  const opened: number[] = [];
  const admin = new FakeAdmin();
  const store: SessionReader = {
    getSession: (id) => Promise.resolve(sessions[id]),
    getSessions: (ids) =>
      Promise.resolve(ids.flatMap((id) => (sessions[id] === undefined ? [] : [sessions[id]]))),
    getJob: () => Promise.resolve(undefined),
    listHistory: () => Promise.resolve(HISTORY),
    listRuns: () => Promise.resolve([]),
    listRecentSessions: () => Promise.resolve({ items: Object.values(sessions).map((s) => s.session) }),
    listSessionsByStatus: (status) =>
      Promise.resolve({
        items: Object.values(sessions)
          .map((s) => s.session)
          .filter((s) => s.status === status),
      }),
    ...storeOverrides,
  };
  const api: CairnApi = {
    store,
    admin,
    // Not read by these commands (`cairn dashboard`'s).
    agents: {} as CairnApi["agents"],
    census: {} as CairnApi["census"],
    eventBusName: "cairn",
    stateMachineArn: RUNTIME_FILE.stateMachineArn,
    logs: { readable: false, why: "no logs in this fake" },
    put: (entry) => {
      puts.push(entry);
      return Promise.resolve(eventId);
    },
    close: () => {},
  };
  const { io, out, err } = fakeCliIo(
    { "/work/.cairn/runtime.json": JSON.stringify(RUNTIME_FILE), ...files },
    {
      nowMs: () => T0 + 65_000,
      sleep: () => Promise.resolve(),
      openApi: () => {
        opened.push(1);
        return Promise.resolve(api);
      },
      stackOutputs: () => Promise.reject(new Error("unexpected")),
    },
  );
  return { io, out, err, puts, opened, admin };
}

describe("runCli", () => {
  test("submit: validates, generates an id, puts one Session Submitted entry and prints the id", async () => {
    const world = fakeWorld({}, { "/work/hello.yaml": "name: hello\ncommand: [/bin/true]\n" });
    expect(await runCli(["submit", "-f", "hello.yaml"], world.io)).toBe(0);
    expect(world.out).toEqual(["hello-aaaaaaaa"]);
    expect(world.puts).toHaveLength(1);
    expect(world.puts[0]).toMatchObject({
      Source: "cairn.client",
      DetailType: "Session Submitted",
      EventBusName: "cairn",
    });
    expect(JSON.parse(world.puts[0]!.Detail)).toMatchObject({
      sessionId: "hello-aaaaaaaa",
      spec: { name: "hello" },
    });
  });

  test("submit of a submission the control plane rejects: exit 2 with the reason, no id printed", async () => {
    const reason = 'detail.spec.queue: no queue named "gpu" (create it with `cairn queue create`)';
    const world = fakeWorld(
      {},
      { "/work/hello.yaml": "name: hello\ncommand: [/bin/true]\nqueue: gpu\n" },
      {
        listRejections: (id) =>
          Promise.resolve([
            { id, eventId: "evt-older", reason: "an earlier submission's", atMs: T0 },
            { id, eventId: "evt-1", reason, atMs: T0 + 1 },
          ]),
      },
      "evt-1",
    );
    expect(await runCli(["submit", "hello.yaml", "--id", "mine-1", "--wait"], world.io)).toBe(2);
    expect(world.out).toEqual([]);
    expect(world.err).toEqual([`cairn: submission mine-1 was rejected: ${reason}`]);
  });

  test("submit whose verdict does not come in time: the id, and a note that it is still pending", async () => {
    const world = fakeWorld(
      {},
      { "/work/hello.yaml": "name: hello\ncommand: [/bin/true]\n" },
      {
        listRejections: (id) => Promise.resolve([{ id, eventId: "evt-other", reason: "not ours", atMs: T0 }]),
      },
      "evt-1",
    );
    expect(await runCli(["submit", "hello.yaml", "--id", "mine-1"], world.io)).toBe(0);
    expect(world.out).toEqual(["mine-1"]);
    expect(world.err).toEqual([
      "mine-1 is not accepted yet after 5 s; still pending (`cairn get mine-1` says whether it was accepted or rejected)",
    ]);
  });

  test("submit under an id another spec holds: its own event's rejection is the verdict, not the other's job", async () => {
    const reason =
      'detail.sessionId: mine-1 is taken by another submission (name "first"); choose another id';
    let polls = 0;
    const world = fakeWorld(
      {},
      { "/work/hello.yaml": "name: hello\ncommand: [/bin/true]\n" },
      {
        // Someone else's job holds the id; this event's rejection is recorded a moment later.
        getJob: (id) =>
          Promise.resolve(world.puts.length === 0 ? undefined : jobOf(id, { ...sentSpec(), name: "first" })),
        listRejections: (id) =>
          Promise.resolve(polls++ < 2 ? [] : [{ id, eventId: "evt-1", reason, atMs: T0 }]),
      },
      "evt-1",
    );
    const sentSpec = () => (JSON.parse(world.puts[0]!.Detail) as { spec: SessionSpec }).spec;
    expect(await runCli(["submit", "hello.yaml", "--id", "mine-1"], world.io)).toBe(2);
    expect(world.err).toEqual([`cairn: submission mine-1 was rejected: ${reason}`]);
  });

  test("submit accepted: its job is recorded with its spec (the queue's priority added)", async () => {
    const world = fakeWorld(
      {},
      { "/work/hello.yaml": "name: hello\ncommand: [/bin/true]\n" },
      {
        getJob: (id) =>
          Promise.resolve(world.puts.length === 0 ? undefined : jobOf(id, { ...sentSpec(), priority: 5 })),
        listRejections: () => Promise.resolve([]),
      },
      "evt-1",
    );
    const sentSpec = () => (JSON.parse(world.puts[0]!.Detail) as { spec: SessionSpec }).spec;
    expect(await runCli(["submit", "hello.yaml", "--id", "mine-1"], world.io)).toBe(0);
    expect(world.out).toEqual(["mine-1"]);
    expect(world.err).toEqual([]);
  });

  test("get of a rejected id says why it is missing", async () => {
    const world = fakeWorld(
      {},
      {},
      {
        listRejections: (id) =>
          Promise.resolve([{ id, eventId: "evt-1", reason: "detail.spec.parent: no job p-1", atMs: T0 }]),
      },
    );
    expect(await runCli(["get", "mine-1"], world.io)).toBe(3);
    expect(world.err).toEqual([
      "cairn: session mine-1 not found: its submission was rejected at 2026-11-21T12:00:00.000Z: detail.spec.parent: no job p-1",
    ]);
  });

  test("submit --output json prints {sessionId}", async () => {
    const world = fakeWorld({}, { "/work/hello.yaml": "name: hello\ncommand: [/bin/true]\n" });
    expect(await runCli(["submit", "hello.yaml", "--id", "mine-1", "-o", "json"], world.io)).toBe(0);
    expect(JSON.parse(world.out.join("\n"))).toEqual({ sessionId: "mine-1" });
  });

  test("an invalid spec: exit 2, every problem printed, Cairn never contacted", async () => {
    const world = fakeWorld({}, { "/work/bad.yaml": "name: bad\ncommand: [x]\ncolour: blue\n" });
    expect(await runCli(["submit", "-f", "bad.yaml", "--runtime-file", "/nowhere.json"], world.io)).toBe(2);
    expect(world.err).toEqual([
      "cairn: invalid session spec bad.yaml (1 problem):\n  colour: unknown field (expected one of name, queue, priority, replicas, coscheduled, perAgent, maxTaskFailures, schedulingTimeout, parent, nodeSelector, executor, image, architecture, resources, command, env, timeouts, maxTries, maxPendingReturns, rerunnable, retry, template)",
    ]);
    expect(world.opened).toEqual([]);
    expect(world.puts).toEqual([]);
  });

  test("submit --id of an id taken by another spec: exit 2, nothing sent", async () => {
    const world = fakeWorld(
      { "hello-abc12345": FAILED },
      { "/work/hello.yaml": "name: hello\ncommand: [/bin/false]\n" },
    );
    expect(await runCli(["submit", "hello.yaml", "--id", "hello-abc12345", "--wait"], world.io)).toBe(2);
    expect(world.err[0]).toBe(
      'cairn: --id hello-abc12345 is taken by another session (name "hello", TERMINATED); choose another id or leave --id out',
    );
    expect(world.puts).toEqual([]);
  });

  test("submit --wait of an id already submitted with the same spec follows it without resending", async () => {
    const world = fakeWorld(
      { "hello-abc12345": FAILED },
      { "/work/hello.json": JSON.stringify(FAILED.session.spec) },
    );
    expect(
      await runCli(["submit", "hello.json", "--id", "hello-abc12345", "--wait", "-o", "json"], world.io),
    ).toBe(1);
    expect(world.puts).toEqual([]);
    expect(world.err).toEqual([
      "session hello-abc12345 already exists with this spec (TERMINATED); not sent again",
      "submitted hello-abc12345; waiting for it to end (Ctrl-C stops waiting, not the session)",
      "PENDING: submitted",
      "PENDING: ScheduleNewSessions SKIPPED (no agent has room for 1 kernel)",
      "PENDING → SCHEDULED (placed on agent-1)",
    ]);
    expect(JSON.parse(world.out.join("\n"))).toEqual(sessionView(FAILED, RUNTIME_FILE.stateMachineArn));
  });

  test("get/history of an unknown session: exit 3", async () => {
    for (const command of ["get", "history", "cancel"]) {
      const world = fakeWorld();
      expect(await runCli([command, "nope-123"], world.io)).toBe(3);
      expect(world.err).toEqual(["cairn: session nope-123 not found"]);
      expect(world.puts).toEqual([]);
    }
  });

  test("cancel puts a cancel request for a live session, and nothing for an ended one", async () => {
    const live = fakeWorld({ "hello-abc12345": RUNNING });
    expect(await runCli(["cancel", "hello-abc12345", "--reason", "enough"], live.io)).toBe(0);
    expect(live.puts.map((p) => [p.DetailType, JSON.parse(p.Detail) as unknown])).toEqual([
      ["Session Cancel Requested", { sessionId: "hello-abc12345", reason: "enough" }],
    ]);
    expect(live.out).toEqual([
      "cancel requested for session hello-abc12345 (it was RUNNING); follow it with `cairn get hello-abc12345`",
    ]);
    const ended = fakeWorld({ "hello-abc12345": FAILED });
    expect(await runCli(["cancel", "hello-abc12345", "-o", "json"], ended.io)).toBe(0);
    expect(ended.puts).toEqual([]);
    expect(JSON.parse(ended.out.join(""))).toEqual({
      sessionId: "hello-abc12345",
      cancelRequested: false,
      status: "TERMINATED",
    });
  });

  test("no runtime file: exit 4 with the start hint", async () => {
    const world = fakeWorld();
    expect(await runCli(["list", "--runtime-file", "missing.json"], world.io)).toBe(4);
    expect(world.err).toEqual([
      "cairn: no local runtime found at missing.json — start one with `npm start`, or pass --stack/--endpoint",
    ]);
  });

  test("a refused connection while running a command: exit 4", async () => {
    const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:8000"), {
      code: "ECONNREFUSED",
      address: "127.0.0.1",
      port: 8000,
    });
    const world = fakeWorld({}, {}, { getSession: () => Promise.reject(refused) });
    expect(await runCli(["get", "abc-123"], world.io)).toBe(4);
    expect(world.err).toEqual([
      "cairn: cannot reach the local runtime (.cairn/runtime.json): connection refused (127.0.0.1:8000) — " +
        "is `npm start` still running? Otherwise start one with `npm start`, or pass --stack/--endpoint",
    ]);
  });

  test("usage errors: exit 2 and a pointer to the help; --help: exit 0 on stdout", async () => {
    const bad = fakeWorld();
    expect(await runCli(["list", "--colour"], bad.io)).toBe(2);
    expect(bad.err).toEqual(["cairn: unknown option --colour", "see `cairn list --help`"]);
    const help = fakeWorld();
    expect(await runCli(["history", "--help"], help.io)).toBe(0);
    expect(help.out.join("")).toContain("Usage: cairn history [options] <SESSION_ID>");
    expect(help.opened).toEqual([]);
  });

  test("list renders the table with the injected time", async () => {
    const world = fakeWorld({ "hello-abc12345": RUNNING });
    expect(await runCli(["list", "--status", "running"], world.io)).toBe(0);
    expect(world.out.join("\n")).toBe(
      [
        "SESSION         NAME   STATUS (SOKOVAN)  QUEUE    PRIORITY  CREATED    WAITING",
        "hello-abc12345  hello  RUNNING           default  0         1m05s ago  -",
      ].join("\n"),
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Retries: runs in get/history, and the retry-policy, queue and retry-config commands.

const POLICY_YAML = [
  "apiVersion: cairn.dev/v1",
  "kind: RetryPolicy",
  "metadata: { name: infra }",
  "spec:",
  "  retryLimit: 3",
  "  backoff: { initialDelay: 10s, maxDelay: 5m }",
  "  antiAffinity: { mode: node }",
  "  rules:",
  '    - { action: Retry, containerName: "*", onConditions: [OOMKilled, Evicted] }',
  "    - { action: Retry, onExitCodes: { operator: In, values: [137, 143] }, retryLimit: 1 }",
  "    - { action: Fail, onExitCodes: { operator: NotIn, values: [1] } }",
  '    - { action: Retry, onTerminationMessage: { pattern: "CUDA error" }, backoff: { multiplier: 3 } }',
  "    - { action: Retry, onFailureCategory: [network] }",
  "",
].join("\n");

const BAD_POLICY_YAML = [
  "apiVersion: cairn.dev/v1",
  "kind: RetryPolicy",
  "metadata: { name: infra }",
  "spec:",
  "  retryLimit: -1",
  "  rules:",
  "    - { action: Retry, onExitCodes: { operator: In, values: [0] } }",
  "    - { action: Retry }",
  "",
].join("\n");

const RUNS: RunRecord[] = [
  {
    sessionId: "hello-abc12345",
    runIndex: 0,
    name: "hello-abc12345",
    outcome: "FAILED",
    startedAtMs: T0 + 3_500,
    endedAtMs: T0 + 5_750,
    decision: "retry",
    reason: "infra#0 matched condition OOMKilled on kernel 0 (retry 1 of 3)",
    delayMs: 10_000,
    avoidAgentId: "agent-1",
    kernels: [
      {
        index: 0,
        agentId: "agent-1",
        status: "TERMINATED",
        outcome: "FAILED",
        exitCode: 137,
        condition: "OOMKilled",
        failureCategory: "oom",
        message: "out of\nmemory",
        startedAtMs: T0 + 3_500,
        finishedAtMs: T0 + 5_750,
      },
      { index: 1, agentId: "agent-2", status: "TERMINATED", outcome: "SUCCEEDED", exitCode: 0 },
    ],
  },
];

const RETRIED: SessionWithKernels = {
  session: session({
    runIndex: 1,
    retry: { failureCount: 1, preemptionCount: 0, totalRetries: 1, ruleRetries: { "infra#0": 1 } },
    avoidAgentIds: ["agent-1"],
  }),
  kernels: RUNNING.kernels,
};

describe("retry commands: parsing", () => {
  const parse = (...argv: string[]): Invocation => parseCommandLine(argv);
  const usage = (...argv: string[]): string => {
    try {
      parse(...argv);
    } catch (error) {
      expect(error).toBeInstanceOf(UsageError);
      return (error as UsageError).message;
    }
    throw new Error(`${argv.join(" ")} parsed without error`);
  };

  test("two-word commands, with options before, between and after the words", () => {
    expect(parse("retry-policy", "create", "-f", "p.yaml")).toEqual({
      kind: "retry-policy create",
      file: "p.yaml",
      output: "text",
      target: {},
    });
    expect(parse("-o", "yaml", "retry-policy", "get", "infra")).toMatchObject({
      kind: "retry-policy get",
      name: "infra",
      output: "yaml",
    });
    expect(parse("queue", "--priority=-5", "create", "gpu", "--retry-policy", "infra, ml")).toEqual({
      kind: "queue create",
      name: "gpu",
      priority: -5,
      retryPolicies: ["infra", "ml"],
      output: "text",
      target: {},
    });
    expect(parse("queue", "update", "gpu", "--retry-policy", "")).toMatchObject({ retryPolicies: [] });
    expect(parse("queue", "list", "-o", "json")).toMatchObject({ kind: "queue list", output: "json" });
    expect(
      parse(
        "retry-config",
        "set",
        "--enabled",
        "false",
        "--global-max-retries",
        "5",
        "--default-policy",
        "infra",
        "--default-backoff-initial",
        "1s",
        "--default-backoff-max",
        "2m",
        "--default-backoff-multiplier",
        "1.5",
      ),
    ).toMatchObject({
      kind: "retry-config set",
      changes: {
        enabled: false,
        globalMaxRetries: 5,
        defaultPolicyName: "infra",
        initialDelay: "1s",
        maxDelay: "2m",
        multiplier: 1.5,
      },
    });
  });

  test("help for a group and for one of its commands", () => {
    expect(helpOf("queue", "--help")).toMatch(/^Usage: cairn queue </m);
    expect(helpOf("help", "queue")).toBe(helpOf("queue", "--help"));
    expect(helpOf("help", "queue", "create")).toMatch(/^Usage: cairn queue create \[options\] <NAME>$/m);
    expect(helpOf("retry-policy", "get", "-h")).toMatch(
      /^Usage: cairn retry-policy get \[options\] <NAME>$/m,
    );
    const help = helpOf("retry-policy", "--help");
    expect(help).toContain("Usage: cairn retry-policy <create|update|get|delete|list> [options]");
    for (const action of ["create", "update", "get", "delete", "list"])
      expect(help).toMatch(new RegExp(`^  ${action} `, "m"));
    expect(helpOf("retry-policy", "create", "--help")).toContain("kind: RetryPolicy");
  });

  test.each([
    [["queue"], "missing what to do with queue (expected one of create, update, get, delete, list)"],
    [
      ["queue", "make", "x"],
      'unknown queue command "make" (expected one of create, update, get, delete, list)',
    ],
    [["retry-policy", "create"], "missing the policy: -f FILE"],
    [
      ["retry-policy", "get", "bad name"],
      `NAME "bad name" is not a valid name: 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit`,
    ],
    [["queue", "get", "gpu", "-o", "yaml"], '--output must be text or json, got "yaml"'],
    [["retry-policy", "get", "x", "-o", "xml"], '--output must be text, json or yaml, got "xml"'],
    [
      ["queue", "update", "gpu"],
      "nothing to change: give --priority, --retry-policy, --capacity-provider, --vcpu-quota or --no-fargate",
    ],
    [
      ["queue", "create", "gpu", "--priority", "1.5"],
      '--priority must be a whole number from -1000 to 1000, got "1.5"',
    ],
    [
      ["queue", "create", "gpu", "--priority", "5000"],
      '--priority must be a whole number from -1000 to 1000, got "5000"',
    ],
    [["queue", "create", "gpu", "--retry-policy", "a,b,a"], "--retry-policy lists a twice"],
    [["retry-config", "set"], "nothing to change: give at least one setting (see the options)"],
    [["retry-config", "set", "--enabled", "yes"], '--enabled must be true or false, got "yes"'],
    [
      ["retry-config", "set", "--global-max-retries", "-1"],
      'option --global-max-retries needs a value, got "-1" (write --global-max-retries=-1 if that is the value)',
    ],
    [
      ["retry-config", "set", "--global-max-retries", "two"],
      '--global-max-retries must be a whole number, got "two"',
    ],
    [
      ["retry-config", "set", "--default-backoff-multiplier", "x"],
      '--default-backoff-multiplier must be a number, got "x"',
    ],
  ])("%j is an error: %s", (argv, message) => {
    expect(usage(...argv)).toBe(message);
  });
});

describe("retry views and rendering", () => {
  const NOW = T0 + 65_000;

  test("get: run name, retry counters, avoided agents and finished runs, every field present", () => {
    const view = sessionView(RETRIED, undefined, RUNS);
    expect(view).toMatchObject({
      runIndex: 1,
      runName: "hello-abc12345.1",
      retry: { failureCount: 1, preemptionCount: 0, totalRetries: 1, ruleRetries: { "infra#0": 1 } },
      avoidAgents: ["agent-1"],
    });
    expect(view.runs).toEqual([
      {
        runIndex: 0,
        name: "hello-abc12345",
        outcome: "FAILED",
        decision: "retry",
        reason: "infra#0 matched condition OOMKilled on kernel 0 (retry 1 of 3)",
        delayMs: 10_000,
        avoidAgentId: "agent-1",
        startedAt: "2026-11-21T12:00:03.500Z",
        endedAt: "2026-11-21T12:00:05.750Z",
        kernels: [
          {
            index: 0,
            status: "TERMINATED",
            agent: "agent-1",
            outcome: "FAILED",
            exitCode: 137,
            condition: "OOMKilled",
            failureCategory: "oom",
            message: "out of\nmemory",
            startedAt: "2026-11-21T12:00:03.500Z",
            finishedAt: "2026-11-21T12:00:05.750Z",
          },
          {
            index: 1,
            status: "TERMINATED",
            agent: "agent-2",
            outcome: "SUCCEEDED",
            exitCode: 0,
            condition: null,
            failureCategory: null,
            message: null,
            startedAt: null,
            finishedAt: null,
          },
        ],
      },
    ]);
  });

  test("the session block lists the runs, failed kernels only, one line each", () => {
    const text = renderSession(sessionView(RETRIED, undefined, RUNS), NOW);
    expect(text).toContain("  run        hello-abc12345.1 (run 1), 0 tries in this stage\n");
    expect(text).toContain("  retries    1 counted (1 failure, 0 preemptions)\n");
    expect(text).toContain("  avoiding   agent-1\n");
    expect(text.split("\n").slice(-3)).toEqual([
      "  runs:",
      "    RUN  NAME            OUTCOME  DECISION                             ENDED                     FAILED KERNELS                                       REASON",
      '    0    hello-abc12345  FAILED   retry after 10.0s, avoiding agent-1  2026-11-21T12:00:05.750Z  k0@agent-1 exit 137 OOMKilled [oom] "out of memory"  infra#0 matched condition OOMKilled on kernel 0 (retry 1 of 3)',
    ]);
    expect(renderHistory(historyView("hello-abc12345", HISTORY, RUNS))).toMatch(/\n\nruns:\nRUN {2}NAME/);
  });

  test("a policy as text, as its document, and a config view with the flags' units", () => {
    const policy = parseRetryPolicyText(POLICY_YAML);
    expect(renderPolicy(policy)).toBe(
      [
        "retry policy infra",
        "  retryLimit     3",
        "  defaultAction  Fail",
        "  backoff        initial 10s, max 5m",
        "  antiAffinity   node",
        "  RULE  ACTION  KERNEL        MATCH                         LIMIT  BACKOFF  ANTI-AFFINITY",
        "  0     Retry   *             condition OOMKilled, Evicted  -      -        -",
        "  1     Retry   first failed  exit code in 137, 143         1      -        -",
        "  2     Fail    first failed  exit code not in 1            -      -        -",
        "  3     Retry   first failed  message /CUDA error/          -      x3       -",
        "  4     Retry   first failed  category network              -      -        -",
      ].join("\n"),
    );
    expect(parseRetryPolicy(policyView(policy))).toEqual(policy);
    expect(renderPolicyList([])).toBe("no retry policies");
    expect(retryConfigView(RETRY_CONFIG_DEFAULTS, false)).toEqual({
      enabled: true,
      globalMaxRetries: 20,
      defaultPolicyName: "default",
      defaultBackoff: { initialDelay: "0s", maxDelay: "10m", multiplier: 2 },
      stored: false,
    });
  });
});

test("a rule combining matchers shows them all, joined by and (Armada ANDs a rule's conditions)", () => {
  const policy = parseRetryPolicy({
    apiVersion: "armadaproject.io/v1",
    kind: "RetryPolicy",
    metadata: { name: "oom-in-1" },
    spec: {
      rules: [
        {
          action: "Retry",
          containerName: 1,
          onConditions: ["OOMKilled"],
          onExitCodes: { operator: "In", values: [137] },
          onTerminationMessage: { pattern: "(?i)cuda" },
        },
      ],
    },
  });
  expect(renderPolicy(policy).split("\n").slice(-1)).toEqual([
    "  0     Retry   1       exit code in 137 and condition OOMKilled and message /(?i)cuda/  -      -        -",
  ]);
  expect(parseRetryPolicy(policyView(policy))).toEqual(policy);
});

test("a policy's includeInitContainers is shown in its document and noted under its rules", () => {
  const policy = parseRetryPolicyText(
    [
      "apiVersion: armadaproject.io/v1",
      "kind: RetryPolicy",
      "metadata: { name: init }",
      "spec:",
      "  rules:",
      "    - { action: Retry, includeInitContainers: true, onExitCodes: { operator: In, values: [137] } }",
      "    - { action: Fail, onConditions: [OOMKilled] }",
      "    - { action: Fail, includeInitContainers: false, onExitCodes: { operator: In, values: [1] } }",
      "",
    ].join("\n"),
  );
  expect(renderPolicy(policy)).toBe(
    [
      "retry policy init",
      "  retryLimit     - (the global cap)",
      "  defaultAction  Fail",
      "  backoff        -",
      "  antiAffinity   -",
      "  RULE  ACTION  KERNEL        MATCH                LIMIT  BACKOFF  ANTI-AFFINITY",
      "  0     Retry   first failed  exit code in 137     -      -        -",
      "  1     Fail    first failed  condition OOMKilled  -      -        -",
      "  2     Fail    first failed  exit code in 1       -      -        -",
      "  includeInitContainers (rule 0: true, rule 2: false): Cairn kernels have no init containers, so it matches nothing extra",
    ].join("\n"),
  );
  expect(policyView(policy).spec.rules?.map((rule) => rule.includeInitContainers)).toEqual([
    true,
    undefined,
    false,
  ]);
});

describe("runCli: retry policies, queues and the retry config", () => {
  const files = {
    "/work/infra.yaml": POLICY_YAML,
    "/work/bad.yaml": BAD_POLICY_YAML,
  };

  test("create stores the validated policy; get -o yaml prints a document create accepts back", async () => {
    const world = fakeWorld({}, files);
    expect(await runCli(["retry-policy", "create", "-f", "infra.yaml"], world.io)).toBe(0);
    expect(world.out).toEqual(["created retry policy infra"]);
    expect(world.admin.policies.get("infra")).toEqual(parseRetryPolicyText(POLICY_YAML));

    const get = fakeWorld({}, files);
    get.admin.policies.set("infra", parseRetryPolicyText(POLICY_YAML));
    expect(await runCli(["retry-policy", "get", "infra", "-o", "yaml"], get.io)).toBe(0);
    const yaml = get.out.join("\n");
    expect(yaml).toMatch(/^apiVersion: cairn.dev\/v1\nkind: RetryPolicy\n/);
    expect(parseRetryPolicyText(yaml)).toEqual(get.admin.policies.get("infra"));
    expect(await runCli(["retry-policy", "get", "infra", "-o", "json"], get.io)).toBe(0);
    expect(parseRetryPolicyText(get.out.at(-1)!)).toEqual(get.admin.policies.get("infra"));
  });

  test("an invalid policy file: exit 2, every problem as <path>: <reason>, Cairn never contacted", async () => {
    const world = fakeWorld({}, files);
    expect(await runCli(["retry-policy", "create", "bad.yaml"], world.io)).toBe(2);
    expect(world.err).toEqual([
      [
        "cairn: invalid retry policy bad.yaml (3 problems):",
        "  spec.retryLimit: must be at least 0",
        "  spec.rules[0].onExitCodes.values[0]: exit code 0 never matches (it means success)",
        "  spec.rules[1]: must have a matcher: one or more of onExitCodes, onConditions, onTerminationMessage, onFailureCategory",
      ].join("\n"),
    ]);
    expect(world.opened).toEqual([]);
    expect(world.admin.writes).toBe(0);
    const syntax = fakeWorld({}, { "/work/broken.yaml": "spec: [\n" });
    expect(await runCli(["retry-policy", "update", "-f", "broken.yaml"], syntax.io)).toBe(2);
    expect(syntax.err[0]).toMatch(
      /^cairn: broken.yaml: invalid retry policy: syntax error at line \d+, column \d+: /,
    );
    const missing = fakeWorld();
    expect(await runCli(["retry-policy", "create", "-f", "nope.yaml"], missing.io)).toBe(2);
    expect(missing.err).toEqual(["cairn: cannot read the retry policy nope.yaml: no such file"]);
  });

  test("conflicts: a taken name and a policy in use are exit 2, an absent one exit 3", async () => {
    const world = fakeWorld({}, files);
    expect(await runCli(["retry-policy", "create", "-f", "infra.yaml"], world.io)).toBe(0);
    expect(await runCli(["retry-policy", "create", "-f", "infra.yaml"], world.io)).toBe(2);
    expect(world.err).toEqual([
      "cairn: retry policy infra already exists (change it with `cairn retry-policy update`)",
    ]);
    expect(await runCli(["queue", "create", "gpu", "--retry-policy", "infra"], world.io)).toBe(0);
    world.err.length = 0;
    expect(await runCli(["retry-policy", "delete", "infra"], world.io)).toBe(2);
    expect(world.err).toEqual([
      "cairn: retry policy infra is in use by gpu (detach it first, e.g. `cairn queue update gpu --retry-policy …` without infra)",
    ]);
    world.err.length = 0;
    for (const argv of [
      ["retry-policy", "delete", "ghost"],
      ["retry-policy", "get", "ghost"],
      ["queue", "get", "ghost"],
      ["queue", "delete", "ghost"],
      ["queue", "update", "ghost", "--priority", "1"],
    ]) {
      expect(await runCli(argv, world.io)).toBe(3);
    }
    expect(world.err).toEqual([
      "cairn: retry policy ghost not found",
      "cairn: retry policy ghost not found",
      "cairn: queue ghost not found",
      "cairn: queue ghost not found",
      "cairn: queue ghost not found",
    ]);
  });

  test("queue create names every unknown policy and stores nothing; update keeps what is not given", async () => {
    const world = fakeWorld({}, files);
    await runCli(["retry-policy", "create", "-f", "infra.yaml"], world.io);
    expect(await runCli(["queue", "create", "gpu", "--retry-policy", "ghost,infra,phantom"], world.io)).toBe(
      2,
    );
    expect(world.err).toEqual([
      "cairn: unknown retry policies ghost, phantom: create them first with `cairn retry-policy create -f FILE`",
    ]);
    expect(world.admin.queues.size).toBe(0);

    expect(
      await runCli(
        ["queue", "create", "gpu", "--priority", "5", "--retry-policy", "infra", "-o", "json"],
        world.io,
      ),
    ).toBe(0);
    expect(JSON.parse(world.out.at(-1)!)).toEqual({
      name: "gpu",
      priority: 5,
      retryPolicies: ["infra"],
      createdAt: "2026-11-21T12:01:05.000Z",
      updatedAt: "2026-11-21T12:01:05.000Z",
    });
    expect(await runCli(["queue", "update", "gpu", "--priority", "7"], world.io)).toBe(0);
    expect(world.admin.queues.get("gpu")).toMatchObject({ priority: 7, retryPolicies: ["infra"] });
    expect(await runCli(["queue", "update", "gpu", "--retry-policy", ""], world.io)).toBe(0);
    expect(world.admin.queues.get("gpu")).toMatchObject({ priority: 7, retryPolicies: [] });
    world.out.length = 0;
    expect(await runCli(["queue", "list"], world.io)).toBe(0);
    expect(world.out).toEqual([
      [
        "NAME  PRIORITY  RETRY-POLICIES  UPDATED",
        "gpu   7         -               2026-11-21T12:01:05.000Z",
      ].join("\n"),
    ]);
    expect(await runCli(["queue", "delete", "gpu"], world.io)).toBe(0);
    expect(await runCli(["retry-policy", "delete", "infra"], world.io)).toBe(0);
    expect(world.admin.policies.size).toBe(0);
  });

  test("retry-config: the defaults until set; set merges its flags and validates the whole", async () => {
    const world = fakeWorld();
    expect(await runCli(["retry-config", "get", "-o", "json"], world.io)).toBe(0);
    expect(JSON.parse(world.out[0]!)).toMatchObject({ stored: false, globalMaxRetries: 20 });
    expect(
      await runCli(
        ["retry-config", "set", "--global-max-retries", "5", "--default-backoff-initial", "10s"],
        world.io,
      ),
    ).toBe(0);
    expect(world.admin.config).toEqual({
      ...RETRY_CONFIG_DEFAULTS,
      globalMaxRetries: 5,
      defaultBackoff: { ...RETRY_CONFIG_DEFAULTS.defaultBackoff, initialDelayMs: 10_000 },
    });
    expect(await runCli(["retry-config", "set", "--enabled", "false"], world.io)).toBe(0);
    expect(world.admin.config).toMatchObject({ enabled: false, globalMaxRetries: 5 });

    const writes = world.admin.writes;
    world.err.length = 0;
    expect(
      await runCli(
        ["retry-config", "set", "--default-backoff-max", "5s", "--default-backoff-multiplier", "0.5"],
        world.io,
      ),
    ).toBe(2);
    expect(world.err).toEqual([
      [
        "cairn: invalid retry configuration (2 problems):",
        "  defaultBackoff.multiplier (--default-backoff-multiplier): must be at least 1",
        "  defaultBackoff.maxDelay (--default-backoff-max): must be at least initialDelay (10s)",
      ].join("\n"),
    ]);
    expect(world.admin.writes).toBe(writes);
  });

  test("get and history show the finished runs (JSON: runs next to records)", async () => {
    const world = fakeWorld({ "hello-abc12345": RETRIED }, {}, { listRuns: () => Promise.resolve(RUNS) });
    expect(await runCli(["get", "hello-abc12345", "-o", "json"], world.io)).toBe(0);
    expect(JSON.parse(world.out[0]!)).toMatchObject({
      runName: "hello-abc12345.1",
      runs: [{ runIndex: 0, name: "hello-abc12345", decision: "retry" }],
    });
    expect(await runCli(["history", "hello-abc12345", "-o", "json"], world.io)).toBe(0);
    const history = JSON.parse(world.out[1]!) as { records: unknown[]; runs: unknown[] };
    expect(history.records).toHaveLength(3);
    expect(history.runs).toEqual(sessionView(RETRIED, undefined, RUNS).runs);
  });
});
