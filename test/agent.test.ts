/**
 * The local agent with real child processes: small `node -e` programs (process.execPath) and
 * /bin/sh. No timing assertions beyond generous bounds; waits are on reports and log lines.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, chmodSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, test } from "vitest";
import {
  LocalAgent,
  type KernelLaunch,
  type KernelReport,
  type LocalAgentOptions,
  type LogLine,
} from "../agent/index.ts";
import { processTrees, ProcessTreeSampler, readPssBytes, readRssBytes } from "../agent/proc-table.ts";

const workRoot = mkdtempSync(join(tmpdir(), "cairn-agent-test-"));
const NODE = process.execPath;
const agents: LocalAgent[] = [];
let sessionCounter = 0;

afterEach(async () => {
  await Promise.all(agents.splice(0).map((agent) => agent.shutdown({ graceMs: 0 })));
});
afterAll(() => rmSync(workRoot, { recursive: true, force: true }));

interface Harness {
  readonly agent: LocalAgent;
  readonly reports: KernelReport[];
  readonly warnings: string[];
  /** Resolves with the first report (past or future) matching; fails after 10 s. */
  readonly waitForReport: (match: (r: KernelReport) => boolean) => Promise<KernelReport>;
}

function newAgent(options: Partial<LocalAgentOptions> = {}): Harness {
  const reports: KernelReport[] = [];
  const warnings: string[] = [];
  const waiters: { match: (r: KernelReport) => boolean; resolve: (r: KernelReport) => void }[] = [];
  const agent = new LocalAgent({
    id: "agent-t",
    capacity: { cpu: 8, memoryMiB: 8192 },
    workRoot,
    memoryPollMs: 50,
    warn: (message) => warnings.push(message),
    info: () => undefined,
    ...options,
    onReport: (report) => {
      reports.push(report);
      for (const waiter of [...waiters]) {
        if (waiter.match(report)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(report);
        }
      }
      options.onReport?.(report);
    },
  });
  agents.push(agent);
  return {
    agent,
    reports,
    warnings,
    waitForReport: (match) => {
      const seen = reports.find(match);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no matching report within 10 s; got ${JSON.stringify(reports)}`)),
          10_000,
        );
        waiters.push({
          match,
          resolve: (r) => {
            clearTimeout(timer);
            resolve(r);
          },
        });
      });
    },
  };
}

function launch(command: string[], overrides: Partial<KernelLaunch> = {}): KernelLaunch {
  return {
    sessionId: `s${++sessionCounter}`,
    kernelIndex: 0,
    numKernels: 1,
    runIndex: 0,
    command,
    env: {},
    cpu: 1,
    memoryMiB: 256,
    ...overrides,
  };
}

const terminated = (l: KernelLaunch) => (r: KernelReport) =>
  r.sessionId === l.sessionId &&
  r.kernelIndex === l.kernelIndex &&
  r.runIndex === l.runIndex &&
  (r.status === "TERMINATED" || r.status === "ERROR");

/** Running, as opposed to gone or a zombie waiting for init to reap it. */
function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

describe("running a kernel", () => {
  test("the program sees its identity (Cairn's and Iris's names), spec env and a minimal base env; output and exit code are captured", async () => {
    const { agent, reports, waitForReport } = newAgent({
      baseEnv: { PATH: process.env.PATH, HOME: "/home/cairn", AWS_SECRET_ACCESS_KEY: "must-not-leak" },
    });
    const script = `
      const keys = ["CAIRN_SESSION_ID","CAIRN_TASK_INDEX","CAIRN_NUM_TASKS","CAIRN_TASK_ID","CAIRN_RUN_INDEX",
        "CAIRN_AGENT_ID","CAIRN_TERMINATION_LOG","IRIS_TASK_ID","IRIS_TASK_INDEX","IRIS_NUM_TASKS",
        "GREETING","HOME","AWS_SECRET_ACCESS_KEY"];
      console.log(JSON.stringify({ cwd: process.cwd(), env: Object.fromEntries(keys.map((k) => [k, process.env[k]])) }));
      console.error("warning: to stderr");
      process.exitCode = 3;`;
    const l = launch([NODE, "-e", script], {
      kernelIndex: 2,
      numKernels: 4,
      runIndex: 1,
      env: { GREETING: "hello" },
      jobId: "job-7",
    });
    await agent.prepare(l);
    await agent.start(l);
    const end = await waitForReport(terminated(l));
    const paths = agent.logPaths(l.sessionId, 2, 1);

    expect(reports.map((r) => r.status)).toEqual(["PULLING", "PREPARED", "RUNNING", "TERMINATED"]);
    expect(reports[2]?.pid).toBeGreaterThan(0);
    expect(end).toMatchObject({
      agentId: "agent-t",
      status: "TERMINATED",
      exitCode: 3,
      failureCategory: "user_error",
      pid: reports[2]?.pid,
    });
    expect(end.signal).toBeUndefined();
    expect(end.condition).toBeUndefined();
    expect(paths.workDir).toBe(join(workRoot, l.sessionId, "2", "run-1"));

    const seen = JSON.parse(readFileSync(paths.stdout, "utf8")) as {
      cwd: string;
      env: Record<string, unknown>;
    };
    expect(seen.cwd).toBe(paths.workDir);
    expect(seen.env).toEqual({
      CAIRN_SESSION_ID: l.sessionId,
      CAIRN_TASK_INDEX: "2",
      CAIRN_NUM_TASKS: "4",
      CAIRN_TASK_ID: "job-7/task-2",
      CAIRN_RUN_INDEX: "1",
      CAIRN_AGENT_ID: "agent-t",
      CAIRN_TERMINATION_LOG: paths.terminationLog,
      // Iris's names for the same identity (its co-scheduling design's environment variables).
      IRIS_TASK_ID: "job-7/task-2",
      IRIS_TASK_INDEX: "2",
      IRIS_NUM_TASKS: "4",
      GREETING: "hello",
      HOME: "/home/cairn",
    });
    expect(readFileSync(paths.stderr, "utf8")).toBe("warning: to stderr\n");
    const lines = await agent.readLogs(l.sessionId, 2, 1);
    // Two pipes: their relative order is not guaranteed, only each stream's own.
    expect(lines.map((line) => [line.stream, line.text])).toEqual(
      expect.arrayContaining([
        ["stdout", readFileSync(paths.stdout, "utf8").trimEnd()],
        ["stderr", "warning: to stderr"],
      ]) as unknown,
    );
    expect(lines).toHaveLength(2);
    expect(agent.running()).toEqual([]);
  });

  test("CAIRN_TASK_ID falls back to the session id; a shell program runs without a shell wrapper", async () => {
    const { agent, waitForReport } = newAgent();
    const l = launch(["sh", "-c", 'echo "$CAIRN_TASK_ID"; exit 0'], { kernelIndex: 1, numKernels: 2 });
    await agent.start(l);
    expect(await waitForReport(terminated(l))).toMatchObject({ status: "TERMINATED", exitCode: 0 });
    expect((await agent.readLogs(l.sessionId, 1, 0)).map((x) => x.text)).toEqual([`${l.sessionId}/task-1`]);
  });

  test("the termination log becomes the report's message, trimmed and capped at 4 KiB", async () => {
    const { agent, waitForReport } = newAgent();
    const short = launch([
      "/bin/sh",
      "-c",
      'printf "\\n  checkpoint 41 written  \\n" > "$CAIRN_TERMINATION_LOG"; exit 1',
    ]);
    const long = launch([
      NODE,
      "-e",
      `require("fs").writeFileSync(process.env.CAIRN_TERMINATION_LOG, "é".repeat(5000))`,
    ]);
    await Promise.all([agent.start(short), agent.start(long)]);
    expect(await waitForReport(terminated(short))).toMatchObject({
      exitCode: 1,
      message: "checkpoint 41 written",
    });
    const longEnd = await waitForReport(terminated(long));
    expect(longEnd.exitCode).toBe(0);
    expect(Buffer.byteLength(longEnd.message ?? "")).toBe(4096);
    expect(longEnd.message).toBe("é".repeat(2048));
  });

  test("when the main process exits, the rest of its process group is killed (as in a container)", async () => {
    const { agent, waitForReport } = newAgent();
    const l = launch(["/bin/sh", "-c", "sleep 60 & echo $!; exit 0"]);
    await agent.start(l);
    expect(await waitForReport(terminated(l))).toMatchObject({ exitCode: 0 });
    const [line] = await agent.readLogs(l.sessionId, 0, 0);
    const sleepPid = Number(line?.text);
    expect(sleepPid).toBeGreaterThan(0);
    await expect.poll(() => isAlive(sleepPid), { timeout: 5000 }).toBe(false);
  });
});

describe("preparing", () => {
  test("a missing executable is an ERROR naming it; a non-executable file says so; no process starts", async () => {
    const { agent, reports, waitForReport } = newAgent();
    const missing = launch(["no-such-program-cairn", "--flag"]);
    await agent.prepare(missing);
    expect(reports).toEqual([
      expect.objectContaining({ sessionId: missing.sessionId, status: "PULLING" }) as unknown,
      expect.objectContaining({
        sessionId: missing.sessionId,
        status: "ERROR",
        failureCategory: "executable_not_found",
      }) as unknown,
    ]);
    expect(reports[1]?.message).toMatch(/^executable "no-such-program-cairn" not found on PATH/);

    const script = join(workRoot, "not-executable.sh");
    writeFileSync(script, "#!/bin/sh\necho hi\n");
    chmodSync(script, 0o644);
    const notExecutable = launch([script]);
    await agent.prepare(notExecutable);
    expect((await waitForReport(terminated(notExecutable))).message).toBe(
      `executable "${script}" is not executable (mode 0644)`,
    );

    // Not final: once the program is fixed, preparing the same run again succeeds.
    chmodSync(script, 0o755);
    await agent.prepare(notExecutable);
    expect(reports.at(-1)).toMatchObject({ sessionId: notExecutable.sessionId, status: "PREPARED" });

    const relative = launch(["./missing/tool"]);
    await agent.start(relative);
    expect((await waitForReport(terminated(relative))).message).toMatch(
      /^executable "\.\/missing\/tool" not found at \//,
    );
    expect(reports.filter((r) => r.status === "RUNNING")).toEqual([]);
  });

  test("prepare creates the work directory and is idempotent; a prepared kernel that is stopped never runs", async () => {
    const { agent, reports } = newAgent();
    const l = launch([NODE, "-e", "0"]);
    await agent.prepare(l);
    await agent.prepare(l);
    expect(existsSync(agent.logPaths(l.sessionId, 0, 0).workDir)).toBe(true);
    expect(reports.map((r) => r.status)).toEqual(["PULLING", "PREPARED", "PULLING", "PREPARED"]);

    await agent.stop(l.sessionId, 0, { reason: "cancelled by user" });
    await agent.start(l); // a late duplicate start for an ended run is ignored
    expect(reports.map((r) => [r.status, r.message, r.failureCategory])).toEqual([
      ["PULLING", undefined, undefined],
      ["PREPARED", undefined, undefined],
      ["PULLING", undefined, undefined],
      ["PREPARED", undefined, undefined],
      // Stopped on request without a condition: the control plane's decision, not a failure.
      ["TERMINATED", "cancelled by user", undefined],
    ]);
  });

  test("every report echoes the placement of the launch it answers; a launch without one gives reports without one", async () => {
    const { agent, reports, waitForReport } = newAgent();
    const first = launch([NODE, "-e", "0"], { placement: 0 });
    await agent.prepare(first);
    await agent.stop(first.sessionId, 0, {});
    // The run is placed again on this agent: its reports must not pass for the first placement's.
    const again = { ...first, placement: 1 };
    await agent.prepare(again);
    await agent.start(again);
    await waitForReport((r) => terminated(again)(r) && r.placement === 1);
    expect(reports.map((r) => [r.status, r.placement])).toEqual([
      ["PULLING", 0],
      ["PREPARED", 0],
      ["TERMINATED", 0],
      ["PULLING", 1],
      ["PREPARED", 1],
      ["RUNNING", 1],
      ["TERMINATED", 1],
    ]);

    const legacy = launch([NODE, "-e", "0"]);
    await agent.start(legacy);
    const end = await waitForReport(terminated(legacy));
    expect(end.status).toBe("TERMINATED");
    expect("placement" in end).toBe(false);
  });

  test("bad input is rejected with the field named", async () => {
    const { agent } = newAgent();
    await expect(agent.start(launch(["x"], { kernelIndex: 2, numKernels: 2 }))).rejects.toMatchObject({
      code: "InvalidAgentInput",
      field: "launch.kernelIndex",
    });
    await expect(agent.prepare(launch(["x"], { sessionId: "../etc" }))).rejects.toThrow(
      /^launch\.sessionId: must not be "\." or "\.\." nor contain "\/"/,
    );
    await expect(agent.prepare(launch([]))).rejects.toThrow(
      "launch.command: must be a non-empty array of strings",
    );
    await expect(agent.stop("s", 0, { graceMs: -1 })).rejects.toThrow(
      "graceMs: must be a finite number >= 0",
    );
    expect(
      () => new LocalAgent({ id: "a", capacity: { cpu: 0, memoryMiB: 1 }, workRoot, onReport: () => {} }),
    ).toThrow("capacity.cpu: must be a finite number > 0");
  });
});

describe("failure categories (core/retry/failure-categories.ts)", () => {
  test.each([
    // [what the kernel does, exit code, signal, category]
    ["is SIGKILLed", "kill -KILL $$", 137, "SIGKILL", "killed"],
    ["exits 137 (a shell's report of a SIGKILLed child)", "exit 137", 137, undefined, "killed"],
    ["is SIGTERMed by someone else", "kill -TERM $$", 143, "SIGTERM", "terminated"],
    ["crashes (SIGSEGV)", "kill -SEGV $$", 139, "SIGSEGV", "crashed"],
    ["exits 1", "exit 1", 1, undefined, "user_error"],
    ["runs a command that is not there", "no-such-command-cairn", 127, undefined, "command_not_found"],
    ["exits 0", "exit 0", 0, undefined, undefined],
  ] as const)(
    "a kernel that %s is reported with its category",
    async (_, script, exitCode, signal, category) => {
      const { agent, waitForReport } = newAgent();
      const l = launch(["/bin/sh", "-c", script]);
      await agent.start(l);
      const end = await waitForReport(terminated(l));
      expect(end.status).toBe("TERMINATED");
      expect(end.exitCode).toBe(exitCode);
      expect(end.signal).toBe(signal);
      expect(end.failureCategory).toBe(category);
    },
  );
});

describe("memory enforcement", () => {
  test("a tree above its memory request is SIGKILLed and reported OOMKilled/137; a modest one is not", async () => {
    const { agent, waitForReport } = newAgent();
    // The allocating node runs as a child of sh: the whole tree's memory counts.
    const hog = `const held = []; for (let i = 0; i < 20; i++) held.push(Buffer.alloc(10 << 20, 1)); setTimeout(() => {}, 20000);`;
    const big = launch(["/bin/sh", "-c", `"${NODE}" -e '${hog}'; echo unreachable`], { memoryMiB: 96 });
    const modest = launch(
      [NODE, "-e", "const b = Buffer.alloc(8 << 20, 1); setTimeout(() => console.log(b.length), 800);"],
      {
        memoryMiB: 96,
      },
    );
    await Promise.all([agent.start(big), agent.start(modest)]);

    const bigEnd = await waitForReport(terminated(big));
    expect(bigEnd).toMatchObject({
      status: "TERMINATED",
      exitCode: 137,
      signal: "SIGKILL",
      condition: "OOMKilled",
      failureCategory: "oom",
    });
    // Resident sets above the request: judged by their proportional set size.
    expect(bigEnd.message).toMatch(/^proportional set size \d+ MiB exceeded the 96 MiB request$/);
    expect(Number(/ (\d+) MiB exceeded/.exec(bigEnd.message ?? "")?.[1])).toBeGreaterThan(96);

    const modestEnd = await waitForReport(terminated(modest));
    expect(modestEnd).toMatchObject({ status: "TERMINATED", exitCode: 0 });
    expect(modestEnd.condition).toBeUndefined();
    expect(modestEnd.failureCategory).toBeUndefined();
    expect(agent.memoryPollStats().ticks).toBeGreaterThan(0);
  });
});

describe("stopping", () => {
  test("stop SIGTERMs, waits the grace period for a program that ignores it, then SIGKILLs", async () => {
    const { agent, waitForReport } = newAgent();
    const script = `process.on("SIGTERM", () => console.log("got SIGTERM, ignoring")); console.log("ready"); setInterval(() => {}, 1000);`;
    const l = launch([NODE, "-e", script]);
    const ready = new Promise<void>((resolve) => agent.onLog((line) => line.text === "ready" && resolve()));
    await agent.start(l);
    await ready;

    const startedMs = performance.now();
    await agent.stop(l.sessionId, 0, { graceMs: 600, condition: "Preempted", reason: "preempted by s-high" });
    const tookMs = performance.now() - startedMs;

    expect(tookMs).toBeGreaterThanOrEqual(500);
    expect(tookMs).toBeLessThan(5000);
    expect(await waitForReport(terminated(l))).toMatchObject({
      exitCode: 137,
      signal: "SIGKILL",
      condition: "Preempted",
      message: "preempted by s-high",
      failureCategory: "preempted",
    });
    expect((await agent.readLogs(l.sessionId, 0, 0)).map((x) => x.text)).toContain("got SIGTERM, ignoring");
    await agent.stop(l.sessionId, 0); // already ended: resolves at once
    await agent.stop("never-seen", 3);
  });

  test("a program that honours SIGTERM ends with 143; its children die with it", async () => {
    const { agent, waitForReport } = newAgent();
    const l = launch(["/bin/sh", "-c", "sleep 60 & echo $!; wait"]);
    const firstLine = new Promise<string>((resolve) => agent.onLog((line) => resolve(line.text)));
    await agent.start(l);
    const sleepPid = Number(await firstLine);
    expect(agent.running()).toEqual([
      expect.objectContaining({ sessionId: l.sessionId, cpu: 1, memoryMiB: 256, stopping: false }) as unknown,
    ]);

    await Promise.all([agent.stop(l.sessionId, 0, { graceMs: 10_000 }), agent.stop(l.sessionId, 0)]);
    const end = await waitForReport(terminated(l));
    expect(end).toMatchObject({ exitCode: 143, signal: "SIGTERM" });
    // Stopped on request, without a condition: no failure of the kernel's, no category.
    expect(end.failureCategory).toBeUndefined();
    await expect.poll(() => isAlive(sleepPid), { timeout: 5000 }).toBe(false);
  });

  test("shutdown stops every kernel and refuses new ones", async () => {
    const { agent, reports, waitForReport } = newAgent();
    const a = launch(["/bin/sh", "-c", "sleep 60"]);
    const b = launch(["/bin/sh", "-c", "sleep 60"]);
    await Promise.all([agent.start(a), agent.start(b)]);
    expect(agent.running()).toHaveLength(2);
    await agent.shutdown({ graceMs: 2000 });
    expect(agent.running()).toEqual([]);
    expect(reports.filter((r) => r.status === "TERMINATED").map((r) => r.message)).toEqual([
      "agent agent-t shut down",
      "agent agent-t shut down",
    ]);
    const late = launch(["/bin/sh", "-c", "exit 0"]);
    await agent.start(late);
    expect(await waitForReport(terminated(late))).toMatchObject({
      status: "ERROR",
      message: "agent agent-t is shutting down",
      failureCategory: "start_failed",
    });
  });
});

test("killAllNow SIGKILLs every kernel synchronously, for a process exit hook", async () => {
  const { agent, waitForReport } = newAgent();
  const l = launch(["/bin/sh", "-c", "trap '' TERM; sleep 60"]);
  await agent.start(l);
  agent.killAllNow();
  expect(await waitForReport(terminated(l))).toMatchObject({ exitCode: 137, signal: "SIGKILL" });
});

describe("bookkeeping", () => {
  test("start is idempotent, capacity is enforced, and usage follows running kernels", async () => {
    const { agent, reports, waitForReport } = newAgent({ capacity: { cpu: 1.5, memoryMiB: 1024 } });
    const l = launch(["/bin/sh", "-c", "sleep 60"], { cpu: 1, memoryMiB: 512 });
    await Promise.all([agent.start(l), agent.start(l)]);
    await agent.start(l);
    expect(reports.filter((r) => r.status === "RUNNING")).toHaveLength(1);
    expect(agent.usage()).toEqual({
      capacity: { cpu: 1.5, memoryMiB: 1024 },
      allocated: { cpu: 1, memoryMiB: 512 },
      free: { cpu: 0.5, memoryMiB: 512 },
      runningKernels: 1,
    });

    const tooBig = launch(["/bin/sh", "-c", "exit 0"], { cpu: 1, memoryMiB: 128 });
    await agent.start(tooBig);
    expect((await waitForReport(terminated(tooBig))).message).toBe(
      "insufficient capacity on agent agent-t: the kernel requests cpu 1, memory 128 MiB; free are cpu 0.5, memory 512 MiB",
    );

    const nextRun = { ...l, runIndex: 1 };
    await agent.start(nextRun);
    expect((await waitForReport(terminated(nextRun))).message).toMatch(
      new RegExp(`^kernel 0 of session ${l.sessionId} is still running run 0 \\(pid \\d+\\)$`),
    );

    await agent.stop(l.sessionId, 0, { graceMs: 0 });
    expect(await waitForReport(terminated(l))).toMatchObject({ exitCode: 137 });
    expect(agent.usage().allocated).toEqual({ cpu: 0, memoryMiB: 0 });
  });

  test("a throwing onReport is logged and the agent carries on", async () => {
    const { agent, reports, warnings, waitForReport } = newAgent({
      onReport: () => {
        throw new Error("listener exploded");
      },
    });
    const l = launch(["/bin/sh", "-c", "exit 5"]);
    await agent.start(l);
    expect(await waitForReport(terminated(l))).toMatchObject({ exitCode: 5 });
    expect(reports.map((r) => r.status)).toEqual(["RUNNING", "TERMINATED"]);
    expect(warnings).toEqual([
      "onReport threw on a RUNNING report; carrying on",
      "onReport threw on a TERMINATED report; carrying on",
    ]);
  });
});

describe("logs", () => {
  test("followLogs yields lines while the kernel runs and ends when it ends", async () => {
    const { agent } = newAgent({ followPollMs: 50 });
    const trigger = join(workRoot, `go-${sessionCounter}`);
    const script = `
      const fs = require("fs");
      console.log("first");
      console.error("to stderr");
      const wait = setInterval(() => {
        if (!fs.existsSync(${JSON.stringify(trigger)})) return;
        clearInterval(wait);
        process.stdout.write("second\\nno newline at the end");
      }, 20);`;
    const l = launch([NODE, "-e", script]);
    await agent.prepare(l);
    const follow = agent.followLogs(l.sessionId, 0, 0); // before the kernel starts
    await agent.start(l);

    const seen: LogLine[] = [];
    for await (const line of follow) {
      seen.push(line);
      if (line.text === "first") {
        // Only written once the kernel is given the go-ahead, so this line arrived live.
        expect(agent.running().map((k) => k.sessionId)).toEqual([l.sessionId]);
        writeFileSync(trigger, "go");
      }
    }
    const textsOf = (stream: string) => seen.filter((x) => x.stream === stream).map((x) => x.text);
    expect(textsOf("stdout")).toEqual(["first", "second", "no newline at the end"]);
    expect(textsOf("stderr")).toEqual(["to stderr"]);
    expect(seen.every((x) => x.sessionId === l.sessionId && x.runIndex === 0 && x.atMs > 0)).toBe(true);
    expect(agent.running()).toEqual([]);
    // Once ended, following replays the file and stops.
    const replay: string[] = [];
    for await (const line of agent.followLogs(l.sessionId, 0, 0)) replay.push(line.text);
    expect(replay).toHaveLength(4);
  });

  test("reading logs of a run that never existed names it", async () => {
    const { agent } = newAgent();
    await expect(agent.readLogs("nobody", 0, 0)).rejects.toMatchObject({
      code: "LogsNotFound",
      message: expect.stringContaining("no logs for session nobody kernel 0 run 0") as unknown,
    });
  });
});

describe("process trees from /proc", () => {
  test("a kernel's tree is its group plus every descendant, including ones that left the group", () => {
    const table = [
      { pid: 100, ppid: 50, pgrp: 100, rssBytes: 0 }, // the kernel
      { pid: 101, ppid: 100, pgrp: 100, rssBytes: 0 }, // its child
      { pid: 102, ppid: 101, pgrp: 102, rssBytes: 0 }, // a grandchild that called setsid
      { pid: 103, ppid: 1, pgrp: 100, rssBytes: 0 }, // an orphan still in the group
      { pid: 200, ppid: 1, pgrp: 200, rssBytes: 0 }, // someone else
      { pid: 201, ppid: 200, pgrp: 200, rssBytes: 0 },
    ];
    const trees = processTrees(table, [100, 300]);
    expect([...(trees.get(100) ?? [])].sort()).toEqual([100, 101, 102, 103]);
    expect(trees.get(300)).toEqual([]);
  });

  test("a process whose environment reads as empty (mid-exec) is looked at again, and found by its run's token once it has one", () => {
    // A /proc of our own making: the run's shell (100), its grandchild that called setsid and was
    // re-parented to init (150, caught between two execs: no environment yet), kthreadd (2) and
    // a kernel thread (3), whose environments are always empty.
    const proc = mkdtempSync(join(tmpdir(), "cairn-fake-proc-"));
    try {
      const write = (pid: number, ppid: number, pgrp: number, environ: string) => {
        mkdirSync(join(proc, String(pid)), { recursive: true });
        // State, ppid, pgrp, then 16 fields to the start time (the 22nd), vsize and rss.
        const fields = ["S", ppid, pgrp, ...Array.from({ length: 16 }, () => 0), 4242 + pid, 0, 0];
        writeFileSync(join(proc, String(pid), "stat"), `${pid} (p${pid}) ${fields.join(" ")}\n`);
        writeFileSync(join(proc, String(pid), "environ"), environ);
      };
      const token = "run-token-1";
      write(100, 1, 100, `PATH=/bin\0CAIRN_KERNEL_RUN=${token}\0`);
      write(150, 1, 150, "");
      write(2, 0, 0, "");
      write(3, 2, 0, "");
      const sampler = new ProcessTreeSampler({ tokenName: "CAIRN_KERNEL_RUN", procRoot: proc });
      const first = sampler.sample([{ pid: 100, token }]);
      expect(first.trees.get(token)?.pids).toEqual([100]);
      // The exec completes: the grandchild's environment is its run's.
      writeFileSync(join(proc, "150", "environ"), `CAIRN_KERNEL_RUN=${token}\0`);
      const second = sampler.sample([{ pid: 100, token }]);
      expect([...(second.trees.get(token)?.pids ?? [])].sort()).toEqual([100, 150]);
      // Only the grandchild's environment was read again: the kernel threads stay outsiders.
      expect(second.environReads).toBe(1);
    } finally {
      rmSync(proc, { recursive: true, force: true });
    }
  });

  test("the sampler reads known outsiders once, environments once a process, and sums resident memory as VmRSS reports it", () => {
    const sampler = new ProcessTreeSampler({ tokenName: "CAIRN_KERNEL_RUN" });
    const root = { pid: process.pid, token: "no-such-token" };
    const first = sampler.sample([root]);
    const second = sampler.sample([root]);
    expect(first.statReads).toBeGreaterThan(0);
    expect(first.environReads).toBe(first.statReads);
    expect(second.statReads).toBeLessThan(second.processCount);
    // Only processes born between the two samples are new.
    expect(second.environReads).toBeLessThan(first.environReads);
    const rssBytes = second.trees.get("no-such-token")?.rssBytes ?? 0;
    const vmRssBytes = readRssBytes(process.pid);
    expect(rssBytes).toBeGreaterThan(vmRssBytes * 0.8);
    expect(rssBytes).toBeLessThan(vmRssBytes * 1.25);
  });

  test("a process's proportional set size comes from smaps_rollup: at most its resident set; a gone process holds 0", () => {
    const pss = readPssBytes(process.pid);
    expect(typeof pss).toBe("number");
    expect(pss).toBeGreaterThan(0);
    // Shared library pages count only in part: never more than the resident set.
    expect(pss).toBeLessThanOrEqual(readRssBytes(process.pid) * 1.05);
    expect(readPssBytes(2 ** 22 + 7)).toBe(0);
  });
});
