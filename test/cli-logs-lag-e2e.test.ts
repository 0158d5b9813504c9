/**
 * Task output through the real `cairn` binary when CloudWatch Logs lags, as it does on AWS:
 * the embedded runtime's logs fault switch (`logsFaults.visibilityDelayMs`, local/logs/faults.ts)
 * keeps every put event unreadable for a while, so a task's last lines are not readable yet when
 * its end is reported. The lag here is twice the CLI's settle time (LOG_SETTLE_MS): a reader
 * that guessed the end by time would miss the tail; the CLI reads each run until it has read as
 * many events as the run's agent said its stream holds (`logEventCount`, with the run's end).
 * `submit --wait --stream-logs` must still print each task's every line, and before that task's
 * end; `cairn logs` right after the tasks ended must not miss a tail.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { runCli } from "../bin/cli/main.ts";
import { processIo } from "../bin/cli/process-io.ts";
import { runCairn, type Run } from "./support/cli.ts";
import { startTestRuntime, type TestRuntime } from "./support/runtime.ts";

const TEST_TIMEOUT_MS = 90_000;
/** Twice the CLI's LOG_SETTLE_MS (bin/cli/commands/logs.ts): long enough to hide a run's tail. */
const VISIBILITY_DELAY_MS = 4_000;
const LINES = 6;

let rt: TestRuntime;

function cairn(...args: string[]): Promise<Run> {
  return runCairn(rt.dataDir, args);
}

/**
 * The CLI in this process (its modules loaded once), so a read can start within milliseconds of
 * an event rather than after a process start: as the binary runs it, with no AWS settings.
 */
async function cairnHere(...args: string[]): Promise<Run> {
  let stdout = "";
  let stderr = "";
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith("AWS_")));
  const code = await runCli([...args, "--runtime-file", join(rt.dataDir, "runtime.json")], {
    ...processIo(),
    env,
    colour: false,
    stdout: (text) => void (stdout += text + "\n"),
    stderr: (text) => void (stderr += text + "\n"),
  });
  return { code, stdout, stderr };
}

/** A job of 3 independent tasks, each writing LINES numbered lines to stderr and one to stdout. */
function spec(name: string): string {
  const path = join(rt.dataDir, `${name}.yaml`);
  writeFileSync(
    path,
    [
      `name: ${name}`,
      "replicas: 3",
      "coscheduled: false",
      "resources: { cpu: 0.25, memoryMiB: 64 }",
      "command:",
      "  - /bin/sh",
      "  - -c",
      `  - for n in $(seq 1 ${LINES}); do echo "task $CAIRN_TASK_INDEX line $n" >&2; done; echo "out $CAIRN_TASK_INDEX"`,
    ].join("\n"),
  );
  return path;
}

/** The lines of `text` that are task `i`'s numbered output, in the order printed. */
function numbered(text: string, i: number, prefixed: boolean): string[] {
  const prefix = prefixed ? `[task ${i}] ` : "";
  return text.split("\n").filter((l) => l.startsWith(`${prefix}task ${i} line `));
}

const expected = (i: number, prefixed: boolean) =>
  Array.from({ length: LINES }, (_, n) => `${prefixed ? `[task ${i}] ` : ""}task ${i} line ${n + 1}`);

beforeAll(async () => {
  rt = await startTestRuntime({ agents: 3, logsFaults: { visibilityDelayMs: VISIBILITY_DELAY_MS } });
});

afterAll(async () => {
  await rt?.stop();
});

describe("task output while CloudWatch Logs lags", { timeout: TEST_TIMEOUT_MS }, () => {
  test.concurrent(
    "submit --wait --stream-logs: every task's every line, each before its task's end",
    async () => {
      const run = await cairn("submit", spec("lag-stream"), "--id", "lag-stream", "--wait", "--stream-logs");
      expect(run.code, run.stderr).toBe(0);
      for (const i of [0, 1, 2]) {
        // Nothing lost, nothing twice, in the order written.
        expect(numbered(run.stderr, i, true), run.stderr).toEqual(expected(i, true));
        expect(run.stdout.split("\n").filter((l) => l === `[task ${i}] out ${i}`)).toHaveLength(1);
        // In order: the task's last line before its end.
        const ended = run.stderr.indexOf(`[task ${i}] RUNNING → TERMINATING`);
        expect(ended, run.stderr).toBeGreaterThan(
          run.stderr.indexOf(`[task ${i}] task ${i} line ${LINES}\n`),
        );
      }
      expect(run.stderr).toMatch(/^job SUCCEEDED: all 3 tasks succeeded$/m);
    },
  );

  test.concurrent("logs as soon as every task has ended: no task's tail is missing", async () => {
    const submitted = await cairn("submit", spec("lag-read"), "--id", "lag-read");
    expect(submitted.code, submitted.stderr).toBe(0);
    // Loads the CLI's modules here before the moment that counts.
    await cairnHere("logs", "lag-read");
    // The moment each task's agent has reported its exit, its last lines were put but are not
    // readable yet.
    for (const i of [0, 1, 2]) {
      await rt.waitFor(
        `lag-read-t${i}`,
        (s) => s.kernels.every((k) => k.finishedAtMs !== undefined),
        "its kernel's exit reported",
      );
    }
    const [all, one] = await Promise.all([
      cairnHere("logs", "lag-read"),
      cairnHere("logs", "lag-read", "--task", "2"),
    ]);
    expect(all.code, all.stderr).toBe(0);
    for (const i of [0, 1, 2]) {
      expect(numbered(all.stderr, i, true), all.stderr).toEqual(expected(i, true));
      expect(all.stdout).toContain(`[task ${i}] out ${i}\n`);
    }
    expect(one.code, one.stderr).toBe(0);
    expect(numbered(one.stderr, 2, false)).toEqual(expected(2, false));
    expect(one.stdout).toBe("out 2\n");
    // What the CLI read by: each run's count, reported by its agent, on the kernel and the run's record.
    for (const i of [0, 1, 2]) {
      const s = await rt.waitForEnd(`lag-read-t${i}`, 30_000);
      expect(s.kernels[0]?.logEventCount).toBe(LINES + 1);
      const runs = await rt.store.listRuns(`lag-read-t${i}`);
      expect(runs.map((r) => r.kernels[0]?.logEventCount)).toEqual([LINES + 1]);
    }
  });
});
