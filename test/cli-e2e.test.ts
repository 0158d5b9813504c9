/**
 * The real `cairn` binary against a real embedded runtime: each call is a child process
 * (`node bin/cairn.js … --runtime-file <dataDir>/runtime.json`) with no AWS settings in its
 * environment, so it finds Cairn through the runtime file alone.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { runCairn, stdoutJson, type Run } from "./support/cli.ts";
import { startTestRuntime, type TestRuntime } from "./support/runtime.ts";

/**
 * A session takes about 10 s here; the margins are for a machine busy with other work (sessions
 * took 40 s at a load average of 13).
 */
const SESSION_TEST_TIMEOUT_MS = 150_000;
const WAIT_MS = 90_000;

let rt: TestRuntime;
/** Session ids of every Session Submitted event the bus received. */
const submitted: string[] = [];

function cairn(...args: string[]): Promise<Run> {
  return runCairn(rt.dataDir, args);
}

const json = stdoutJson;

function spec(name: string, text: string): string {
  const path = join(rt.dataDir, name);
  writeFileSync(path, text);
  return path;
}

const SESSION_KEYS = [
  "sessionId",
  "name",
  "status",
  "result",
  "hpcState",
  "hpcAdmission",
  "queue",
  "priority",
  "tries",
  "runIndex",
  "runName",
  "retry",
  "avoidAgents",
  "pendingReason",
  "cancelRequestedAt",
  "createdAt",
  "updatedAt",
  "stage",
  "executionName",
  "executionArn",
  "kernels",
  "runs",
].sort();
const KERNEL_KEYS = [
  "index",
  "status",
  "agent",
  "exitCode",
  "condition",
  "failureCategory",
  "message",
  "error",
  "startedAt",
  "finishedAt",
].sort();
const RECORD_KEYS = [
  "seq",
  "handler",
  "result",
  "from",
  "to",
  "count",
  "message",
  "hpc",
  "firstAt",
  "lastAt",
].sort();
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
/** Asymmetric matchers are typed `any`; these say what they stand for. */
const matching = (pattern: RegExp): string => expect.stringMatching(pattern) as string;

beforeAll(async () => {
  rt = await startTestRuntime();
  rt.runtime.bus.putRule({
    name: "cli-test-submissions",
    eventPattern: { "detail-type": ["Session Submitted"] },
    targets: [
      {
        id: "recorder",
        invoke: (event) => {
          submitted.push(String((event.detail as { sessionId?: unknown }).sessionId));
          return Promise.resolve();
        },
      },
    ],
  });
});

afterAll(async () => {
  await rt?.stop();
});

describe("sessions through the CLI", { timeout: SESSION_TEST_TIMEOUT_MS }, () => {
  test.concurrent("submit --wait of a hello spec: progress on stderr, exit 0, result succeeded", async () => {
    const run = await cairn(
      "submit",
      "-f",
      "examples/hello.yaml",
      "--id",
      "cli-hello-1",
      "--wait",
      "-o",
      "json",
    );
    expect(run.code, run.stderr).toBe(0);
    const view = json(run);
    expect(view).toMatchObject({
      sessionId: "cli-hello-1",
      name: "hello",
      status: "TERMINATED",
      result: "succeeded",
    });
    expect(run.stderr).toMatch(/^PENDING → SCHEDULED \(placed on agent-\d\)$/m);
    // The final record may carry how the run ended, e.g. "(every kernel exited 0)".
    expect(run.stderr).toMatch(/^TERMINATING → TERMINATED( \(.*\))?$/m);
  });

  test.concurrent("submit --wait of a failing command: exit 1, exit code 3 in the kernels", async () => {
    const run = await cairn(
      "submit",
      "examples/fail.yaml",
      "--id",
      "cli-fail-1",
      "--wait",
      "--output",
      "json",
    );
    expect(run.code, run.stderr).toBe(1);
    const view = json(run);
    expect(view).toMatchObject({ status: "TERMINATED", result: "failed" });
    expect(view["kernels"]).toEqual([
      expect.objectContaining({ index: 0, status: "TERMINATED", exitCode: 3 }),
    ]);
  });

  test.concurrent("cancel of a long sleep: the session ends with result cancelled", async () => {
    const file = spec("sleep.yaml", 'name: sleepy\ncommand: ["sleep", "300"]\n');
    const submit = await cairn("submit", file, "--id", "cli-sleep-1");
    // Accepted within the few seconds submit waits for the verdict: nothing said about pending.
    expect(submit).toMatchObject({ code: 0, stdout: "cli-sleep-1\n", stderr: "" });
    await rt.waitForStatus("cli-sleep-1", "RUNNING", WAIT_MS);

    const cancel = await cairn("cancel", "cli-sleep-1", "--reason", "e2e test");
    expect(cancel.code, cancel.stderr).toBe(0);
    expect(cancel.stdout).toContain("cancel requested for session cli-sleep-1");

    await rt.waitForEnd("cli-sleep-1", WAIT_MS);
    const view = json(await cairn("get", "cli-sleep-1", "-o", "json"));
    expect(["CANCELLED", "TERMINATED"]).toContain(view["status"]);
    expect(view).toMatchObject({ result: "cancelled", cancelRequestedAt: matching(ISO) });
  });

  test.concurrent("a spec with an unknown field: exit 2 naming it, nothing submitted", async () => {
    const file = spec("bad.yaml", "name: bad\ncommand: [/bin/true]\ncolour: blue\n");
    const run = await cairn("submit", "-f", file, "--id", "cli-bad-1", "--wait");
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("colour: unknown field");
    expect(run.stdout).toBe("");
    expect(await rt.store.getSession("cli-bad-1")).toBeUndefined();
  });

  test.concurrent(
    "submit --wait of a submission the control plane rejects: exit 2 with the reason",
    async () => {
      const file = spec("no-queue.yaml", "name: lost\nqueue: no-such-queue\ncommand: [/bin/true]\n");
      // --timeout bounds the wait: a submit that hangs on a rejection exits 124 instead.
      const run = await cairn("submit", file, "--id", "cli-noqueue-1", "--wait", "--timeout", "10");
      expect(run).toMatchObject({
        code: 2,
        stdout: "",
        stderr:
          'cairn: submission cli-noqueue-1 was rejected: detail.spec.queue: no queue named "no-such-queue" ' +
          "(create it with `cairn queue create`)\n",
      });
      // And `get` of the id says why there is nothing under it.
      const get = await cairn("get", "cli-noqueue-1");
      expect(get.code).toBe(3);
      expect(get.stderr).toMatch(
        /^cairn: session cli-noqueue-1 not found: its submission was rejected at \d{4}-\d\d-\d\dT[\d:.]+Z: detail\.spec\.queue: no queue named "no-such-queue"/,
      );
    },
  );

  test.concurrent("submit without --wait of a rejected submission: exit 2, no id printed", async () => {
    const file = spec("orphan.yaml", "name: orphan\nparent: no-such-parent\ncommand: [/bin/true]\n");
    const run = await cairn("submit", file, "--id", "cli-orphan-1");
    expect(run).toMatchObject({
      code: 2,
      stdout: "",
      stderr: "cairn: submission cli-orphan-1 was rejected: detail.spec.parent: no job no-such-parent\n",
    });
  });

  test.concurrent("get of an unknown session: exit 3", async () => {
    const run = await cairn("get", "no-such-session");
    expect(run).toMatchObject({ code: 3, stdout: "", stderr: "cairn: session no-such-session not found\n" });
  });
});

describe("reading sessions back", () => {
  test("the bus received the valid submissions and never the invalid one", () => {
    expect(submitted).toEqual(expect.arrayContaining(["cli-hello-1", "cli-fail-1", "cli-sleep-1"]));
    expect(submitted).not.toContain("cli-bad-1");
  });

  test("get --output json: every field, ISO times, the execution ARN", async () => {
    const view = json(await cairn("get", "cli-hello-1", "-o", "json"));
    expect(Object.keys(view).sort()).toEqual(SESSION_KEYS);
    expect(view).toMatchObject({
      status: "TERMINATED",
      result: "succeeded",
      hpcState: "Finished",
      queue: "default",
      priority: 0,
      runIndex: 0,
      runName: "cli-hello-1",
      executionName: "cli-hello-1",
      executionArn: "arn:aws:states:local:000000000000:execution:SessionLifecycle:cli-hello-1",
      createdAt: matching(ISO),
      stage: { enteredAt: matching(ISO), expiresAt: matching(ISO) },
    });
    const kernels = view["kernels"] as Record<string, unknown>[];
    expect(kernels.map((k) => Object.keys(k).sort())).toEqual([KERNEL_KEYS]);
    expect(kernels[0]).toMatchObject({ exitCode: 0, agent: matching(/^agent-\d$/) });
  });

  test("get in text: a compact block", async () => {
    const run = await cairn("get", "cli-hello-1");
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(
      /^session cli-hello-1 \(hello\)\n {2}status +TERMINATED \(succeeded; Sokovan's session status\)\n/,
    );
    expect(run.stdout).toMatch(/^ {2}KERNEL +STATUS +AGENT +EXIT/m);
  });

  test("history --output json: seq order from SUBMITTED to TERMINATED", async () => {
    const view = json(await cairn("history", "cli-fail-1", "-o", "json"));
    const records = view["records"] as Record<string, unknown>[];
    expect(view["sessionId"]).toBe("cli-fail-1");
    expect(Array.isArray(view["runs"])).toBe(true);
    for (const record of records) expect(Object.keys(record).sort()).toEqual(RECORD_KEYS);
    expect(records.map((r) => r["seq"])).toEqual(records.map((_, i) => i));
    expect(records[0]).toMatchObject({
      handler: "Submit",
      result: "SUBMITTED",
      from: "PENDING",
      hpc: ["Submitted", "Validating", "Queued"],
    });
    expect(records.slice(1).every((r) => r["hpc"] === null)).toBe(true);
    expect(records.at(-1)).toMatchObject({ to: "TERMINATED", firstAt: matching(ISO) });
    const table = await cairn("history", "cli-fail-1");
    expect(table.stdout).toMatch(/^SEQ +AT +HANDLER +RESULT +STATUS +COUNT +MESSAGE\n0 /);
  });

  test("list --status TERMINATED --output json", async () => {
    const view = json(await cairn("list", "--status", "TERMINATED", "-o", "json"));
    const sessions = view["sessions"] as Record<string, unknown>[];
    expect(view["truncated"]).toBe(false);
    expect(sessions.map((s) => s["sessionId"])).toEqual(
      expect.arrayContaining(["cli-hello-1", "cli-fail-1"]),
    );
    for (const s of sessions) {
      expect(Object.keys(s).sort()).toEqual(
        [
          "sessionId",
          "name",
          "status",
          "result",
          "irisState",
          "hpcState",
          "queue",
          "priority",
          "pendingReason",
          "createdAt",
          "updatedAt",
        ].sort(),
      );
      expect(s["status"]).toBe("TERMINATED");
    }
  });

  test("a runtime that is gone: exit 4 with the start hint", async () => {
    const elsewhere = join(rt.dataDir, "no-runtime-here");
    const run = await runCairn(elsewhere, ["list"]);
    expect(run.code).toBe(4);
    expect(run.stderr).toBe(
      `cairn: no local runtime found at ${join(elsewhere, "runtime.json")} — start one with \`npm start\`, or pass --stack/--endpoint\n`,
    );
  });
});
